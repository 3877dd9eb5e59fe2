//! A month of the drop-off's roll-ups on SurrealKV (issue 47), then the report's reads timed:
//! 30 days, 2 funnels, 4 flows of 2 versions, 10 campaigns of 5 keywords each, 3 process starts a
//! day, and 3,000 paid conversations (docs/benchmarks.md, "Flows as data").
//! `cargo run --release --example dropoff_month -- /tmp/dropoffdata` (a fresh folder).
use std::collections::BTreeMap;
use std::time::Instant;

use helpnow::flows::dropoff::{Query, report};
use helpnow::store::flow_tally::{Cohort, Counts, WAIT_CELLS, add};

#[tokio::main]
async fn main() {
    let dir = std::env::args().nth(1).expect("a folder");
    let mut settings = helpnow::config::Settings::load_from(
        std::path::Path::new("config"),
        helpnow::config::AppEnv::Test,
        std::collections::HashMap::new(),
    )
    .expect("settings")
    .database;
    settings.url = format!("surrealkv://{dir}");
    let db = helpnow::store::connect(&settings).await.expect("store");
    let start = chrono::NaiveDate::from_ymd_opt(2026, 10, 31).expect("day");
    let seeded = Instant::now();
    for day in 0..30 {
        let date = (start + chrono::Days::new(day))
            .format("%Y-%m-%d")
            .to_string();
        for writer in 0..3 {
            let mut counts = BTreeMap::new();
            for funnel in ["chat", "refundable"] {
                for flow in ["default", "email", "computer", "keyword"] {
                    for version in [1, 2] {
                        for campaign in 0..10 {
                            for keyword in 0..5 {
                                let c = Counts {
                                    n: [40, 30, 30, 20, 20, 15, 15, 6, 5],
                                    w: (0..WAIT_CELLS as u64).map(|i| i % 7).collect(),
                                };
                                counts.insert(
                                    Cohort {
                                        day: date.clone(),
                                        funnel: funnel.into(),
                                        flow: flow.into(),
                                        version,
                                        campaign: format!("77{campaign}"),
                                        keyword: format!("keyword {campaign} {keyword}"),
                                    },
                                    c,
                                );
                            }
                        }
                    }
                }
            }
            add(&db, &format!("writer{writer}"), &counts)
                .await
                .expect("add");
        }
    }
    db.query(
        "FOR $i IN 0..3000 {
            CREATE type::record('flow_paid', [
                time::format(d'2026-10-31T00:00:00Z' + <duration>(string::concat(<string>($i % 30), 'd')), '%Y-%m-%d'),
                string::concat('c', <string>$i), 'trial_paid']) CONTENT {
                funnel: 'chat', flow: 'default', version: 1, campaign: '770', keyword: 'keyword 0 0',
                step: 'trial_paid', at: time::now(), wait_ms: 20000 };
        };",
    )
    .await
    .expect("paid")
    .check()
    .expect("paid");
    println!("seeded in {:?}", seeded.elapsed());
    let range =
        helpnow::domain::journey::DayRange::parse("2026-10-31", "2026-11-29").expect("range");
    for (label, campaign, keyword) in [
        ("all", None, None),
        ("campaign", Some("773".to_owned()), None),
        ("keyword", None, Some("keyword 3 2".to_owned())),
        (
            "campaign and keyword",
            Some("773".to_owned()),
            Some("keyword 3 2".to_owned()),
        ),
    ] {
        let query = Query {
            range: range.clone(),
            funnel: None,
            flow: None,
            campaign,
            keyword,
        };
        for _ in 0..3 {
            let started = Instant::now();
            let answer = report(&db, &query).await.expect("report");
            println!(
                "{label}: {:?} ({} flows)",
                started.elapsed(),
                answer.flows.len()
            );
        }
    }
}
