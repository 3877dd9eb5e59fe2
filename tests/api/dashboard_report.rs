//! The dashboard's report (issue 52): its total follows the funnel, campaign and keyword chosen,
//! its funnels' table the campaign and keyword, and its keyword table is one row per campaign's
//! keyword; the same read raw and packed.

use serde_json::{Value, json};

use crate::billing::verified_admin;
use crate::helpers::{TestApp, spawn_app_with};
use helpnow::domain::billing::CheckoutSource;
use helpnow::domain::journey::Step;
use helpnow::store::journeys::{JourneyStep, record};

const ADMIN: &str = "ops@example.com";

/// One seeded journey: its funnel, campaign, keyword and steps (with cents).
struct Journey {
    name: &'static str,
    funnel: CheckoutSource,
    campaign: &'static str,
    keyword: &'static str,
    steps: &'static [(Step, i64)],
}

const JOURNEYS: [Journey; 7] = [
    Journey {
        name: "a",
        funnel: CheckoutSource::ChatFunnel,
        campaign: "c1",
        keyword: "printer",
        steps: &[(Step::Visitors, 0), (Step::Trial, 0), (Step::Fee, 100)],
    },
    Journey {
        name: "b",
        funnel: CheckoutSource::ChatFunnel,
        campaign: "c1",
        keyword: "wifi",
        steps: &[(Step::Visitors, 0)],
    },
    // Another spelling of c1's keyword 'printer': the same keyword.
    Journey {
        name: "c",
        funnel: CheckoutSource::HelpFunnel,
        campaign: "c1",
        keyword: "Printer",
        steps: &[
            (Step::Visitors, 0),
            (Step::Trial, 0),
            (Step::Paid, 0),
            (Step::Subscription, 2_000),
        ],
    },
    Journey {
        name: "d",
        funnel: CheckoutSource::ChatFunnel,
        campaign: "c2",
        keyword: "printer",
        steps: &[
            (Step::Visitors, 0),
            (Step::Fee, 100),
            (Step::FeeRefund, 100),
        ],
    },
    Journey {
        name: "e",
        funnel: CheckoutSource::HelpFunnel,
        campaign: "c2",
        keyword: "wifi",
        steps: &[(Step::Visitors, 0), (Step::Trial, 0), (Step::Fee, 300)],
    },
    // A keyword without a campaign, and a visitor with neither.
    Journey {
        name: "f",
        funnel: CheckoutSource::HelpFunnel,
        campaign: "",
        keyword: "wifi",
        steps: &[(Step::Visitors, 0), (Step::Fee, 50)],
    },
    Journey {
        name: "g",
        funnel: CheckoutSource::ChatFunnel,
        campaign: "",
        keyword: "",
        steps: &[(Step::Visitors, 0)],
    },
];

/// The figures compared: counts and cents.
const FIELDS: [&str; 7] = [
    "visitors",
    "trial",
    "paid",
    "fee_cents",
    "fee_refund_cents",
    "subscription_cents",
    "net_cents",
];

/// Records `journeys` on each of `days` (the days before today), each day's visitors their own.
async fn seed(
    app: &TestApp,
    now: chrono::DateTime<chrono::Utc>,
    days: &[i64],
    journeys: &[Journey],
) {
    let mut steps = Vec::new();
    for ago in days {
        let at = now - chrono::Duration::days(*ago);
        for journey in journeys {
            let visitor = format!("visitor-{}-{ago:02}-000000001", journey.name);
            let mut attribution = serde_json::Map::new();
            if !journey.campaign.is_empty() {
                attribution.insert("campaignid".into(), journey.campaign.into());
                let source = if journey.campaign == "c1" {
                    "google"
                } else {
                    "bing"
                };
                attribution.insert("utm_source".into(), source.into());
            }
            if !journey.keyword.is_empty() {
                attribution.insert("keyword".into(), journey.keyword.into());
            }
            for (step, cents) in journey.steps {
                steps.push(
                    JourneyStep::new(&visitor, journey.funnel, *step)
                        .attribution(Some(Value::Object(attribution.clone())))
                        .at(at)
                        .cents(*cents),
                );
            }
        }
    }
    record(&app.db, steps).await.expect("recorded");
}

/// The seeded figures of the journeys chosen, on `days` days.
fn expected(
    funnel: Option<&str>,
    campaign: Option<&str>,
    keyword: Option<&str>,
    days: i64,
) -> Value {
    let mut sums = [0i64; FIELDS.len()];
    for journey in JOURNEYS.iter().filter(|journey| {
        funnel.is_none_or(|f| f == journey.funnel.as_str())
            && campaign.is_none_or(|c| c == journey.campaign)
            && keyword.is_none_or(|k| k.eq_ignore_ascii_case(journey.keyword))
    }) {
        for (step, cents) in journey.steps {
            let (field, amount) = match step {
                Step::Visitors => (0, 1),
                Step::Trial => (1, 1),
                Step::Paid => (2, 1),
                Step::Fee => (3, *cents),
                Step::FeeRefund => (4, *cents),
                Step::Subscription => (5, *cents),
                _ => continue,
            };
            sums[field] += amount * days;
        }
    }
    sums[6] = sums[3] + sums[5] - sums[4];
    Value::Object(
        FIELDS
            .iter()
            .zip(sums)
            .map(|(field, sum)| ((*field).to_owned(), json!(sum)))
            .collect(),
    )
}

fn figures_of(value: &Value) -> Value {
    Value::Object(
        FIELDS
            .iter()
            .map(|field| ((*field).to_owned(), value[*field].clone()))
            .collect(),
    )
}

/// Each figure summed over `rows`.
fn summed<'a>(rows: impl Iterator<Item = &'a Value>) -> Value {
    let mut sums = [0i64; FIELDS.len()];
    for row in rows {
        for (sum, field) in sums.iter_mut().zip(FIELDS) {
            *sum += row[field]
                .as_i64()
                .unwrap_or_else(|| panic!("{field} in {row}"));
        }
    }
    Value::Object(
        FIELDS
            .iter()
            .zip(sums)
            .map(|(field, sum)| ((*field).to_owned(), json!(sum)))
            .collect(),
    )
}

/// The dashboard's answer to `query`, asked from an address of its own (the admin endpoints
/// allow 60 requests at once an address).
async fn report_from(app: &TestApp, admin: &str, address: &str, query: &str) -> Value {
    let response = app
        .client
        .get(app.url(&format!("/api/admin/dashboard?{query}")))
        .header("cookie", admin)
        .header("x-forwarded-for", address)
        .send()
        .await
        .expect("request reaches the server");
    let status = response.status();
    let body: Value = response.json().await.expect("json");
    assert_eq!(status, 200, "{query}: {body}");
    body
}

#[tokio::test]
async fn the_total_follows_the_funnel_campaign_and_keyword_chosen_and_adds_up_its_rows() {
    let app = spawn_app_with(|settings| settings.admin.emails = vec![ADMIN.to_owned()]).await;
    let admin = verified_admin(&app, ADMIN).await;
    let now = chrono::Utc::now();
    // Today's journeys are read raw; those of 5 days ago packed once the packer has run.
    seed(&app, now, &[0, 5], &JOURNEYS).await;
    let day = |ago: i64| {
        (now - chrono::Duration::days(ago))
            .format("%Y-%m-%d")
            .to_string()
    };
    let range = format!("from={}&to={}", day(6), day(0));

    let mut queries = Vec::new();
    for by in ["campaign", "keyword", "utm_source", "day", "week"] {
        for funnel in [None, Some("chat_funnel"), Some("help_funnel")] {
            for campaign in [None, Some("c1"), Some("c2")] {
                for keyword in [None, Some("printer"), Some("WiFi")] {
                    queries.push((by, funnel, campaign, keyword));
                }
            }
        }
    }
    let url =
        |(by, funnel, campaign, keyword): (&str, Option<&str>, Option<&str>, Option<&str>)| {
            let mut url = format!("{range}&by={by}");
            for (name, value) in [
                ("funnel", funnel),
                ("campaign", campaign),
                ("keyword", keyword),
            ] {
                if let Some(value) = value {
                    url.push_str(&format!("&{name}={value}"));
                }
            }
            url
        };

    let mut asked = 0;
    let mut before = Vec::new();
    for packed in [false, true] {
        if packed {
            let days = helpnow::store::rollups::pack_due(&app.db, now)
                .await
                .expect("packed");
            // 5 to 2 days ago (before 00:10, to 3 days ago).
            assert!((3..=4).contains(&days), "{days} days packed");
        }
        for (index, query) in queries.iter().enumerate() {
            let (by, funnel, campaign, keyword) = *query;
            let url = url(*query);
            asked += 1;
            let address = format!("10.52.{}.{}", asked / 200, asked % 200 + 1);
            let shown = report_from(&app, &admin, &address, &url).await;
            if packed {
                assert_eq!(shown, before[index], "{url}: the same read packed");
                continue;
            }
            assert_eq!(
                figures_of(&shown["total"]),
                expected(funnel, campaign, keyword, 2),
                "{url}: the total of the journeys chosen"
            );
            let rows = shown["rows"].as_array().expect("rows");
            assert_eq!(
                summed(rows.iter()),
                figures_of(&shown["total"]),
                "{url}: the rows add up to the total: {shown}"
            );
            // The funnels' table: every funnel's, within the campaign and keyword chosen.
            for (name, figures) in [
                (
                    "chat_funnel",
                    expected(Some("chat_funnel"), campaign, keyword, 2),
                ),
                (
                    "help_funnel",
                    expected(Some("help_funnel"), campaign, keyword, 2),
                ),
            ] {
                let row = shown["funnels"]
                    .as_array()
                    .expect("funnels")
                    .iter()
                    .find(|row| row["funnel"] == name);
                match row {
                    Some(row) => assert_eq!(figures_of(row), figures, "{url}: {name}"),
                    None => assert_eq!(figures["visitors"], 0, "{url}: {name} missing"),
                }
            }
            assert_eq!(shown["keyword"], json!(keyword), "{url}");
            assert_eq!(
                shown["total"]["cost"],
                Value::Null,
                "{url}: no costs loaded"
            );
            assert_eq!(
                shown["pending"],
                json!({"paid_from": day(6), "retained_from": day(6)}),
                "{url}"
            );
            // By keyword a row is a campaign's keyword; no other table has the campaign.
            assert!(
                rows.iter()
                    .all(|row| row.get("campaign").is_some_and(Value::is_string)
                        == (by == "keyword")
                        && row["cost"].is_null()),
                "{url}: {shown}"
            );
            before.push(shown);
        }
    }

    // By keyword: c1's 'printer' and 'Printer' are one row, apart from c2's and from the
    // keyword of no campaign.
    let keywords = &before[queries
        .iter()
        .position(|q| *q == ("keyword", None, None, None))
        .expect("asked")];
    let pairs: Vec<(String, String, i64)> = keywords["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|row| {
            (
                row["campaign"].as_str().expect("campaign").to_owned(),
                row["key"].as_str().expect("key").to_lowercase(),
                row["visitors"].as_i64().expect("visitors"),
            )
        })
        .collect();
    for pair in [
        ("c1", "printer", 4),
        ("c1", "wifi", 2),
        ("c2", "printer", 2),
        ("c2", "wifi", 2),
        ("", "wifi", 2),
        ("", "", 2),
    ] {
        assert!(
            pairs.contains(&(pair.0.to_owned(), pair.1.to_owned(), pair.2)),
            "{pair:?} in {pairs:?}"
        );
    }
    assert_eq!(pairs.len(), 6, "{pairs:?}");

    // A keyword across campaigns, by campaign: each campaign's part of it.
    let wifi = &before[queries
        .iter()
        .position(|q| *q == ("campaign", None, None, Some("WiFi")))
        .expect("asked")];
    let campaigns: Vec<(&str, i64)> = wifi["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|row| {
            (
                row["key"].as_str().expect("key"),
                row["visitors"].as_i64().expect("visitors"),
            )
        })
        .collect();
    assert_eq!(campaigns, [("", 2), ("c1", 2), ("c2", 2)]);

    // CSV: by keyword, the campaign after the keyword, and the cost columns (empty: none loaded).
    let response = app
        .client
        .get(app.url(&format!(
            "/api/admin/dashboard?{range}&by=keyword&campaign=c2&format=csv"
        )))
        .header("cookie", &admin)
        .header("x-forwarded-for", "10.52.9.9")
        .send()
        .await
        .expect("csv");
    assert_eq!(response.status(), 200);
    let csv = response.text().await.expect("csv");
    let lines: Vec<&str> = csv.lines().collect();
    assert!(
        lines[0].starts_with("keyword,campaign,visitors,")
            && lines[0].ends_with(
                ",net_per_visitor_usd,cost_usd,clicks,cost_per_visitor_usd,cost_per_trial_usd,roas,profit_usd"
            ),
        "{csv}"
    );
    // c2's wifi: 2 visitors, 2 trials, $6 in fees: $3.00 a visitor.
    assert!(
        lines.contains(&"wifi,c2,2,0,0,0,2,0,0,6.00,0.00,0.00,6.00,3.00,,,,,,"),
        "{csv}"
    );
}

/// Two campaigns' journeys (as Google Ads numbers campaigns) for the costs' test.
const COSTED: [Journey; 3] = [
    Journey {
        name: "p",
        funnel: CheckoutSource::ChatFunnel,
        campaign: "21000000001",
        keyword: "printer repair",
        steps: &[(Step::Visitors, 0), (Step::Trial, 0), (Step::Fee, 100)],
    },
    Journey {
        name: "q",
        funnel: CheckoutSource::HelpFunnel,
        campaign: "21000000001",
        keyword: "wifi",
        steps: &[(Step::Visitors, 0)],
    },
    Journey {
        name: "r",
        funnel: CheckoutSource::ChatFunnel,
        campaign: "21000000002",
        keyword: "printer repair",
        steps: &[(Step::Visitors, 0), (Step::Fee, 100)],
    },
];

/// Uploads an ads report as the page does.
async fn upload(app: &TestApp, admin: &str, file: String) {
    let response = app
        .client
        .post(app.url("/api/admin/costs"))
        .header("cookie", admin)
        .header("origin", "http://127.0.0.1:8080")
        .header("content-type", "text/csv")
        .header("x-forwarded-for", "10.53.0.1")
        .body(file)
        .send()
        .await
        .expect("request reaches the server");
    let status = response.status();
    let body: Value = response.json().await.expect("json");
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn rows_and_the_total_set_what_the_ads_cost_against_what_their_visitors_brought() {
    let app = spawn_app_with(|settings| settings.admin.emails = vec![ADMIN.to_owned()]).await;
    let admin = verified_admin(&app, ADMIN).await;
    let now = chrono::Utc::now();
    seed(&app, now, &[0, 5], &COSTED).await;
    let day = |ago: i64| {
        (now - chrono::Duration::days(ago))
            .format("%Y-%m-%d")
            .to_string()
    };
    let (d0, d5) = (day(0), day(5));
    // Campaign 1 cost $1.60 over the two days; campaign 3 $1,234.56 and brought nobody.
    upload(
        &app,
        &admin,
        format!(
            "Campaign report\r\nDay,Campaign ID,Campaign,Clicks,Currency code,Cost\r\n\
             {d5},21000000001,Printers,\"1,000\",USD,1.10\r\n\
             {d0},21000000001,Printers,100,USD,0.50\r\n\
             {d5},21000000003,Idle,10,USD,\"1,234.56\"\r\n"
        ),
    )
    .await;
    // And its keyword 'printer repair' 90 cents, however the report writes it.
    upload(
        &app,
        &admin,
        format!(
            "Search keyword report\r\nDay,Campaign ID,Campaign,Keyword,Match type,Clicks,Currency code,Cost\r\n\
             {d5},21000000001,Printers,[printer repair],Exact match,30,USD,0.70\r\n\
             {d0},21000000001,Printers,Printer Repair,Phrase match,5,USD,0.20\r\n"
        ),
    )
    .await;
    let range = format!("from={}&to={d0}", day(6));
    let mut asked = 0;
    let mut ask = |query: String| {
        asked += 1;
        let address = format!("10.53.1.{asked}");
        let app = &app;
        let admin = &admin;
        async move { report_from(app, admin, &address, &query).await }
    };
    let row = |report: &Value, key: &str, campaign: Option<&str>| -> Value {
        report["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .find(|row| {
                row["key"] == key && campaign.is_none_or(|campaign| row["campaign"] == campaign)
            })
            .unwrap_or_else(|| panic!("no row {key} in {report}"))
            .clone()
    };

    let campaigns = ask(format!("{range}&by=campaign")).await;
    // 4 visitors, 2 trials and $2 of fees for $1.60.
    assert_eq!(
        row(&campaigns, "21000000001", None)["cost"],
        json!({
            "cost_cents": 160, "clicks": 1100, "cost_per_visitor_cents": 40,
            "cost_per_trial_cents": 80, "roas": 1.25, "profit_cents": 40
        })
    );
    let idle = row(&campaigns, "21000000003", None);
    assert_eq!(idle["visitors"], 0);
    assert_eq!(
        idle["cost"],
        json!({
            "cost_cents": 123_456, "clicks": 10, "cost_per_visitor_cents": null,
            "cost_per_trial_cents": null, "roas": 0.0, "profit_cents": -123_456
        })
    );
    assert_eq!(row(&campaigns, "21000000002", None)["cost"], Value::Null);
    assert_eq!(campaigns["total"]["visitors"], 6);
    assert_eq!(campaigns["total"]["cost"]["cost_cents"], 123_616);
    assert_eq!(campaigns["total"]["cost"]["profit_cents"], 400 - 123_616);
    // The cost is not per funnel: the chat funnel's figures against the whole cost.
    let chat = ask(format!("{range}&by=campaign&funnel=chat_funnel")).await;
    assert_eq!(row(&chat, "21000000001", None)["cost"]["cost_cents"], 160);
    assert_eq!(
        row(&chat, "21000000001", None)["cost"]["cost_per_visitor_cents"],
        80
    );

    // A campaign's keywords: the keyword's own cost.
    let keywords = ask(format!("{range}&by=keyword&campaign=21000000001")).await;
    assert_eq!(
        row(&keywords, "printer repair", Some("21000000001"))["cost"],
        json!({
            "cost_cents": 90, "clicks": 35, "cost_per_visitor_cents": 45,
            "cost_per_trial_cents": 45, "roas": 2.22, "profit_cents": 110
        })
    );
    assert_eq!(
        row(&keywords, "wifi", Some("21000000001"))["cost"],
        Value::Null
    );
    assert_eq!(keywords["total"]["cost"]["cost_cents"], 160);
    let keyword = ask(format!("{range}&by=campaign&keyword=printer+repair")).await;
    assert_eq!(keyword["total"]["visitors"], 4);
    assert_eq!(keyword["total"]["cost"]["cost_cents"], 90);
    assert_eq!(row(&keyword, "21000000002", None)["cost"], Value::Null);

    // Each day every campaign's cost.
    let days = ask(format!("{range}&by=day")).await;
    assert_eq!(row(&days, &d5, None)["cost"]["cost_cents"], 110 + 123_456);
    assert_eq!(row(&days, &d0, None)["cost"]["clicks"], 100);
    let sources = ask(format!("{range}&by=utm_source")).await;
    assert!(
        sources["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .all(|row| row["cost"].is_null()),
        "{sources}"
    );

    // The CSV's cost columns.
    let response = app
        .client
        .get(app.url(&format!("/api/admin/dashboard?{range}&format=csv")))
        .header("cookie", &admin)
        .header("x-forwarded-for", "10.53.2.1")
        .send()
        .await
        .expect("csv");
    let csv = response.text().await.expect("csv");
    assert!(
        csv.contains(
            "\n21000000001,4,0,0,0,2,0,0,2.00,0.00,0.00,2.00,0.50,1.60,1100,0.40,0.80,1.25,0.40\n"
        ),
        "{csv}"
    );
    assert!(
        csv.contains(
            "\n21000000003,0,0,0,0,0,0,0,0.00,0.00,0.00,0.00,0.00,1234.56,10,,,0.00,-1234.56\n"
        ),
        "{csv}"
    );
}
