//! The operator's dashboard (issue 19): visitors through the funnels to payment, refund, monthly
//! payments and retention, counted per funnel, campaign and keyword; admins only.

use serde_json::{Value, json};

use crate::auth::sign_up;
use crate::billing::{count, demo_billing, pay, start_checkout_signed_in, verified_admin};
use crate::helpers::{TestApp, get_with_cookie, post_with_cookie, settled, spawn_app_with};

const ADMIN: &str = "ops@example.com";

async fn view(app: &TestApp, visitor: &str, event: &str, path: &str, campaign: Value) {
    let response = post_with_cookie(
        app,
        "/api/events",
        &format!("vid={visitor}"),
        &json!({ "name": event, "path": path, "properties": campaign }),
    )
    .await;
    assert_eq!(response.status(), 201);
}

async fn report(app: &TestApp, admin: &str, query: &str) -> Value {
    let response = get_with_cookie(app, &format!("/api/admin/dashboard?{query}"), admin).await;
    let status = response.status();
    let body: Value = response.json().await.expect("json");
    assert_eq!(status, 200, "{body}");
    body
}

fn funnel<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["funnels"]
        .as_array()
        .expect("funnels")
        .iter()
        .find(|row| row["funnel"] == name)
        .unwrap_or_else(|| panic!("no {name} in {report}"))
}

fn row<'a>(report: &'a Value, key: &str) -> &'a Value {
    report["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|row| row["key"] == key)
        .unwrap_or_else(|| panic!("no row {key} in {report}"))
}

#[tokio::test]
async fn the_dashboard_counts_each_funnels_visitors_to_payment_refund_and_retention_per_campaign() {
    let app = spawn_app_with(|settings| settings.admin.emails = vec![ADMIN.to_owned()]).await;
    let (ann, bob, cat) = (
        "visitor-ann-0000000001",
        "visitor-bob-0000000002",
        "visitor-cat-0000000003",
    );
    // Ann and Cat come to the chat funnel from campaign c1's keyword 'printer'; Ann's second
    // view counts no second visitor. Bob asks the help funnel from campaign c2.
    let c1 = json!({"campaignid": "c1", "keyword": "printer", "utm_source": "google"});
    view(&app, ann, "chatbot_funnel_view", "/chat-help", c1.clone()).await;
    view(&app, ann, "chatbot_funnel_view", "/chat-help", c1.clone()).await;
    view(&app, cat, "chatbot_funnel_view", "/chat-help", c1).await;
    let response = post_with_cookie(
        &app,
        "/api/funnels/help",
        &format!("vid={bob}"),
        &json!({"issue": "My wifi keeps dropping", "campaignid": "c2", "keyword": "wifi"}),
    )
    .await;
    assert_eq!(response.status(), 200);

    // Ann buys the chat funnel's $1 trial, then has her fee back.
    let member = sign_up(&app, "ann@example.com", "secret1").await;
    let started = start_checkout_signed_in(
        &app,
        &format!("{member}; vid={ann}"),
        json!({"source": "chat_funnel", "campaignid": "c1", "keyword": "printer"}),
    )
    .await;
    pay(
        &app,
        started["sessionId"].as_str().expect("id"),
        "ann@example.com",
    )
    .await;
    let response = post_with_cookie(&app, "/api/billing/refund-fee", &member, &json!({})).await;
    assert_eq!(response.status(), 200);

    // Her first month is paid (the subscription's first invoice held only the fee, counted
    // already), and the payment event arrives twice: counted once.
    let mut found = app
        .db
        .query(
            "SELECT VALUE subscription_id FROM ONLY user WHERE email = 'ann@example.com' LIMIT 1",
        )
        .await
        .expect("query");
    let subscription: Option<String> = found.take(0).expect("subscription");
    let billing = demo_billing(&app);
    for (id, cents, reason) in [
        ("evt_first_invoice", 100, "subscription_create"),
        ("evt_month_1", 2000, "subscription_cycle"),
        ("evt_month_1", 2000, "subscription_cycle"),
    ] {
        billing
            .process_event(
                "demo",
                id,
                "invoice.paid",
                json!({}),
                Some(helpnow::domain::billing::BillingEvent::InvoicePaid {
                    customer_id: None,
                    subscription_id: subscription.clone(),
                    amount_paid: cents,
                    billing_reason: Some(reason.to_owned()),
                }),
            )
            .await
            .expect("the invoice is handled");
    }
    // Thirty days on, she is still subscribed.
    app.db
        .query(
            "LET $due = time::now() - 1s;
             UPDATE journey SET retain_at = $due WHERE retain_at != NONE;
             -- The retention pass reads them by their due time (migration 0022).
             FOR $d IN (SELECT VALUE record::id(id) FROM journey_due) {
                 DELETE type::record('journey_due', $d);
                 CREATE type::record('journey_due', [$due, $d[1], $d[2]]);
             };",
        )
        .await
        .and_then(|response| response.check())
        .expect("time passes");
    billing.run_upkeep().await.expect("upkeep");
    billing
        .run_upkeep()
        .await
        .expect("a second pass decides nothing again");
    assert_eq!(
        count(&app, "RETURN count((SELECT id FROM journey_due))").await,
        0,
        "decided"
    );

    // Nobody but a proved admin sees it.
    assert_eq!(
        get_with_cookie(&app, "/api/admin/dashboard", &member)
            .await
            .status(),
        404
    );
    assert_eq!(app.get("/api/admin/dashboard").await.status(), 404);
    let admin = verified_admin(&app, ADMIN).await;

    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let by_campaign = report(&app, &admin, &format!("from={today}&to={today}")).await;
    let chat = funnel(&by_campaign, "chat_funnel");
    assert_eq!(chat["visitors"], 2, "{chat}");
    assert_eq!(chat["checkout"], 1);
    assert_eq!(chat["trial"], 1);
    assert_eq!(chat["paid"], 1);
    assert_eq!(chat["retained"], 1);
    assert_eq!(chat["fee_cents"], 100);
    assert_eq!(chat["fee_refund_cents"], 100);
    assert_eq!(chat["subscription_cents"], 2000);
    assert_eq!(chat["net_cents"], 2000);
    assert_eq!(chat["net_cents_per_visitor"], 1000);
    let help = funnel(&by_campaign, "help_funnel");
    assert_eq!(
        (
            &help["visitors"],
            &help["first_message"],
            &help["final_message"]
        ),
        (&json!(1), &json!(1), &json!(1)),
        "{help}"
    );
    assert_eq!(by_campaign["total"]["visitors"], 3);
    let c1 = row(&by_campaign, "c1");
    assert_eq!((&c1["visitors"], &c1["trial"]), (&json!(2), &json!(1)));
    assert_eq!(c1["net_cents"], 2000);
    assert_eq!(row(&by_campaign, "c2")["visitors"], 1);

    // From a campaign to its keywords; by UTM source; by day.
    let keywords = report(
        &app,
        &admin,
        &format!("from={today}&to={today}&by=keyword&campaign=c1"),
    )
    .await;
    assert_eq!(
        keywords["rows"].as_array().map(Vec::len),
        Some(1),
        "{keywords}"
    );
    assert_eq!(row(&keywords, "printer")["visitors"], 2);
    let sources = report(
        &app,
        &admin,
        &format!("from={today}&to={today}&by=utm_source"),
    )
    .await;
    assert_eq!(row(&sources, "google")["visitors"], 2);
    assert_eq!(row(&sources, "")["visitors"], 1);
    let days = report(
        &app,
        &admin,
        &format!("from={today}&to={today}&by=day&funnel=help_funnel"),
    )
    .await;
    assert_eq!(row(&days, &today)["visitors"], 1);

    // A day with nobody is empty, not an error; a bad range is refused in words.
    let empty = report(&app, &admin, "from=2020-01-01&to=2020-01-31").await;
    assert_eq!(empty["total"]["visitors"], 0);
    assert!(empty["rows"].as_array().expect("rows").is_empty());
    let response = get_with_cookie(
        &app,
        "/api/admin/dashboard?from=2026-02-01&to=2026-01-01",
        &admin,
    )
    .await;
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["error"], "invalid_range");

    // Every table as CSV.
    let response = get_with_cookie(
        &app,
        &format!("/api/admin/dashboard?from={today}&to={today}&format=csv"),
        &admin,
    )
    .await;
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .expect("type")
            .starts_with("text/csv")
    );
    let csv = response.text().await.expect("csv");
    assert!(csv.starts_with("campaign,visitors,first_message"), "{csv}");
    assert!(
        csv.contains("\nc1,2,0,0,1,1,1,1,1.00,1.00,20.00,20.00,10.00,,,,,,\n"),
        "{csv}"
    );

    let live = get_with_cookie(&app, "/api/admin/live", &admin).await;
    assert_eq!(live.status(), 200);
    let live: Value = live.json().await.expect("json");
    assert!(live["funnelConversations"].is_i64(), "{live}");
    assert_eq!(
        get_with_cookie(&app, "/api/admin/live", &member)
            .await
            .status(),
        404
    );
}

/// The count of a step in the roll-ups, once the batched writes have landed and stopped.
async fn settled_count(app: &TestApp, funnel: &str, step: &str) -> i64 {
    settled(|| async {
        let mut response = app
            .db
            .query("SELECT VALUE math::sum(n) FROM analytics_daily WHERE funnel = $f AND step = $s GROUP ALL")
            .bind(("f", funnel.to_owned()))
            .bind(("s", step.to_owned()))
            .await
            .expect("query");
        let found: Option<i64> = response.take(0).expect("sum");
        found.unwrap_or(0)
    })
    .await
}

/// The rows of `sql` once they have stopped changing.
async fn settled_rows<T: surrealdb::types::SurrealValue + PartialEq + Clone>(
    app: &TestApp,
    sql: &str,
) -> Vec<T> {
    settled(|| async {
        let mut response = app.db.query(sql).await.expect("query");
        response.take::<Vec<T>>(0).expect("rows")
    })
    .await
}

#[tokio::test]
async fn a_chat_funnel_visitor_counts_once_from_its_campaign_however_often_it_joins() {
    let app = spawn_app_with(|_| {}).await;
    let auth = json!({
        "funnel": "chat", "visitorId": "journey-visitor-00000001",
        "campaignid": "c9", "keyword": "email"
    });
    let mut tab = crate::recovery::Client::join(&app, "/funnel", auth.clone(), None)
        .await
        .expect("joined");
    tab.event("conversation").await;
    let mut again = crate::recovery::Client::join(&app, "/funnel", auth, None)
        .await
        .expect("joined");
    again.event("conversation").await;
    let text = "My email will not send";
    assert_eq!(tab.call("send", json!({ "text": text })).await["ok"], true);
    tab.event_where("message", |message| message["role"] == "assistant")
        .await;

    assert_eq!(settled_count(&app, "chat_funnel", "first_message").await, 1);
    assert_eq!(settled_count(&app, "chat_funnel", "visitors").await, 1);
    let mut response = app
        .db
        .query("SELECT VALUE [campaignid, keyword] FROM analytics_daily WHERE step = 'visitors'")
        .await
        .expect("query");
    let keys: Vec<Value> = response.take(0).expect("keys");
    assert_eq!(keys, vec![json!(["c9", "email"])]);

    // The recorder says what it did with the steps: two joins and a first message recorded
    // (the second join counts nothing), none dropped.
    let mut metrics = String::new();
    for _ in 0..100 {
        metrics = app.get("/metrics").await.text().await.expect("body");
        if metrics
            .lines()
            .any(|line| line == "helpnow_journey_steps_total{outcome=\"recorded\"} 3")
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    for line in [
        "helpnow_journey_steps_total{outcome=\"recorded\"} 3",
        "helpnow_journey_steps_total{outcome=\"dropped\"} 0",
        "helpnow_journey_steps_queued 0",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in {metrics}");
    }
}

/// An app with an admin and the load generator's synthetic history of `events` over `days`
/// (`seed` fixes the history), up to now.
async fn app_with_history(
    events: u64,
    days: i64,
    campaigns: usize,
    seed: u64,
) -> (
    TestApp,
    chrono::DateTime<chrono::Utc>,
    helpnow::loadtest::seed::SeedTally,
) {
    use rand::SeedableRng;
    let app = spawn_app_with(|settings| settings.admin.emails = vec![ADMIN.to_owned()]).await;
    let now = chrono::Utc::now();
    let plan = helpnow::loadtest::seed::SeedPlan {
        events,
        days,
        campaigns,
        now,
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let tally = helpnow::loadtest::seed::seed(&app.db, &plan, &mut rng)
        .await
        .expect("seeded");
    (app, now, tally)
}

#[tokio::test]
async fn the_synthetic_history_reads_back_on_the_dashboard_as_it_was_written() {
    let (app, now, tally) = app_with_history(1_200, 20, 4, 7).await;
    assert!(tally.events >= 1_200 && tally.journeys > 100, "{tally:?}");
    let admin = verified_admin(&app, ADMIN).await;
    let from = (now - chrono::Duration::days(21)).format("%Y-%m-%d");
    let to = now.format("%Y-%m-%d");
    let shown = report(&app, &admin, &format!("from={from}&to={to}")).await;
    for (name, figures) in &tally.funnels {
        let expected = serde_json::to_value(figures).expect("json");
        let row = funnel(&shown, name);
        for field in [
            "visitors",
            "first_message",
            "final_message",
            "checkout",
            "trial",
            "paid",
            "retained",
            "fee_cents",
            "fee_refund_cents",
            "subscription_cents",
            "net_cents",
        ] {
            assert_eq!(
                row[field], expected[field],
                "{name} {field}: {row} against {expected}"
            );
        }
    }
    // The day table adds up to the same visitors.
    let days = report(&app, &admin, &format!("from={from}&to={to}&by=day")).await;
    let visitors: u64 = days["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|row| row["visitors"].as_u64().expect("count"))
        .sum();
    assert_eq!(visitors, tally.journeys);
}

#[tokio::test]
async fn packed_days_read_as_they_were_counted_and_a_late_step_counts_at_once() {
    let (app, now, _) = app_with_history(1_500, 12, 3, 11).await;
    let admin = verified_admin(&app, ADMIN).await;
    let range = format!(
        "from={}&to={}",
        (now - chrono::Duration::days(13)).format("%Y-%m-%d"),
        now.format("%Y-%m-%d")
    );
    let campaign = report(&app, &admin, &range).await["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|row| row["key"].as_str().expect("key").to_owned())
        .find(|key| !key.is_empty())
        .expect("a campaign");
    let queries: Vec<String> = [
        "by=campaign",
        "by=keyword",
        "by=utm_source",
        "by=utm_medium",
        "by=utm_campaign",
        "by=day",
        "by=week",
        "by=campaign&funnel=chat_funnel",
    ]
    .iter()
    .map(|by| format!("{range}&{by}"))
    .chain(
        ["keyword", "day", "utm_source"].map(|by| format!("{range}&by={by}&campaign={campaign}")),
    )
    .collect();
    // A keyword's figures: by keyword (each campaign's), by campaign, day and week (within a
    // campaign too), and by a UTM field (always read raw).
    let keyword = report(&app, &admin, &format!("{range}&by=keyword")).await["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|row| row["key"].as_str().expect("key").to_owned())
        .find(|key| !key.is_empty())
        .expect("a keyword");
    let keyword = keyword.replace(' ', "+");
    let queries: Vec<String> = queries
        .into_iter()
        .chain(
            [
                "by=keyword".to_owned(),
                "by=campaign".to_owned(),
                "by=day".to_owned(),
                format!("by=week&campaign={campaign}"),
                "by=utm_source".to_owned(),
            ]
            .map(|by| format!("{range}&{by}&keyword={keyword}")),
        )
        .collect();
    let mut before = Vec::new();
    for query in &queries {
        before.push(report(&app, &admin, query).await);
    }
    // By keyword, a row is one campaign's keyword, and says which.
    let pairs = before[1]["rows"].as_array().expect("rows");
    let campaigns: std::collections::BTreeSet<&str> = pairs
        .iter()
        .map(|row| row["campaign"].as_str().expect("a campaign on every row"))
        .collect();
    assert!(campaigns.len() > 1, "{campaigns:?}");

    // Every day with steps but today and yesterday packs: 11 of the 12 days' history, a day short
    // before 00:10, and also late in the day, when the first day's part of the history (from
    // now's time of day to midnight) may hold no step.
    let packed = helpnow::store::rollups::pack_due(&app.db, now)
        .await
        .expect("packed");
    assert!((10..=13).contains(&packed), "{packed} days packed");
    assert!(count(&app, "RETURN count((SELECT id FROM analytics_span))").await > 50);
    for (query, before) in queries.iter().zip(&before) {
        assert_eq!(&report(&app, &admin, query).await, before, "{query}");
    }
    assert_eq!(
        helpnow::store::rollups::pack_due(&app.db, now)
            .await
            .expect("nothing due"),
        0
    );

    // A payment now, on a journey that began on a packed day, counts at once.
    let mut response = app
        .db
        .query("SELECT visitor, funnel FROM journey WHERE campaignid = $c AND day < $cut LIMIT 1")
        .bind(("c", campaign.clone()))
        .bind((
            "cut",
            (now - chrono::Duration::days(3))
                .format("%Y-%m-%d")
                .to_string(),
        ))
        .await
        .expect("a journey");
    let journeys: Vec<Value> = response.take(0).expect("journeys");
    let (visitor, funnel_name) = (
        journeys[0]["visitor"].as_str().expect("visitor").to_owned(),
        journeys[0]["funnel"].as_str().expect("funnel").to_owned(),
    );
    let source = helpnow::domain::billing::CheckoutSource::parse(&funnel_name).expect("funnel");
    helpnow::store::journeys::record(
        &app.db,
        vec![
            helpnow::store::journeys::JourneyStep::new(
                &visitor,
                source,
                helpnow::domain::journey::Step::Subscription,
            )
            .key("evt_late")
            .cents(2_000),
        ],
    )
    .await
    .expect("recorded");
    assert_eq!(
        count(&app, "RETURN count((SELECT id FROM analytics_dirty))").await,
        1
    );
    let cents = |report: &Value| {
        funnel(report, &funnel_name)["subscription_cents"]
            .as_i64()
            .expect("cents")
    };
    let late = report(&app, &admin, &queries[0]).await;
    assert_eq!(cents(&late), cents(&before[0]) + 2_000);
    // And in its campaign's keywords.
    let rows_cents = |report: &Value| -> i64 {
        report["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|row| row["subscription_cents"].as_i64().expect("cents"))
            .sum()
    };
    let late_keywords = report(&app, &admin, &queries[8]).await;
    assert_eq!(rows_cents(&late_keywords), rows_cents(&before[8]) + 2_000);
    // The packer packs that day again, and the figures stay.
    assert_eq!(
        helpnow::store::rollups::pack_due(&app.db, now)
            .await
            .expect("packed again"),
        1
    );
    assert_eq!(
        count(&app, "RETURN count((SELECT id FROM analytics_dirty))").await,
        0
    );
    assert_eq!(report(&app, &admin, &queries[0]).await, late);
    assert_eq!(report(&app, &admin, &queries[8]).await, late_keywords);
}

#[tokio::test]
async fn events_and_journeys_older_than_the_retention_go_and_the_daily_figures_stay() {
    let app = spawn_app_with(|_| {}).await;
    view(
        &app,
        "visitor-old-00000000001",
        "chatbot_funnel_view",
        "/chat-help",
        json!({"campaignid": "c1"}),
    )
    .await;
    view(
        &app,
        "visitor-new-00000000002",
        "chatbot_funnel_view",
        "/chat-help",
        json!({"campaignid": "c1"}),
    )
    .await;
    // Both journeys recorded (behind the requests) before the first visitor came 400 days ago.
    assert_eq!(settled_count(&app, "chat_funnel", "visitors").await, 2);
    app.db
        .query(
            "UPDATE analytics_event SET created_at = time::now() - 400d WHERE visitor = 'visitor-old-00000000001';",
        )
        .await
        .expect("time passes");
    begun_days_ago(&app, "visitor-old-00000000001", 400).await;
    assert_eq!(
        count(&app, "RETURN count((SELECT id FROM journey_step))").await,
        0
    );
    let gone = helpnow::dashboard::forget_old(&app.db, 395)
        .await
        .expect("forgotten");
    assert_eq!(gone, 2, "the old visitor's event and journey");
    assert_eq!(
        count(&app, "RETURN count((SELECT id FROM analytics_event WHERE visitor = 'visitor-old-00000000001'))").await,
        0
    );
    assert_eq!(
        count(&app, "RETURN count((SELECT id FROM analytics_event))").await,
        1
    );
    assert_eq!(
        count(&app, "RETURN count((SELECT id FROM journey))").await,
        1
    );
    assert_eq!(
        count(&app, "RETURN count((SELECT id FROM journey_start))").await,
        1
    );
    // The dashboard still counts both visitors of that day.
    assert_eq!(settled_count(&app, "chat_funnel", "visitors").await, 2);
    assert_eq!(
        helpnow::dashboard::forget_old(&app.db, 0)
            .await
            .expect("kept"),
        0
    );
}

#[tokio::test]
async fn an_old_journeys_steps_go_with_it_and_no_one_elses() {
    let app = spawn_app_with(|_| {}).await;
    let step = |visitor: &str, step| {
        helpnow::store::journeys::JourneyStep::new(
            visitor,
            helpnow::domain::billing::CheckoutSource::ChatFunnel,
            step,
        )
    };
    use helpnow::domain::journey::Step;
    helpnow::store::journeys::record(
        &app.db,
        vec![
            step("visitor-old-00000000001", Step::FirstMessage),
            step("visitor-old-00000000001", Step::Subscription)
                .key("evt_1")
                .cents(2000),
            step("visitor-new-00000000002", Step::FirstMessage),
        ],
    )
    .await
    .expect("recorded");
    begun_days_ago(&app, "visitor-old-00000000001", 400).await;
    helpnow::dashboard::forget_old(&app.db, 30)
        .await
        .expect("forgotten");
    let mut response = app
        .db
        .query("SELECT VALUE record::id(id)[0] FROM journey_step")
        .await
        .expect("steps");
    let left: Vec<String> = response.take(0).expect("ids");
    assert_eq!(left, vec!["visitor-new-00000000002".to_owned()]);
}

/// Makes a visitor's journeys begin `days` ago: their `started_at`, and the id forgetting finds
/// them by (`journey_start:[started_at, visitor, funnel]`, migration 0022).
async fn begun_days_ago(app: &TestApp, visitor: &str, days: u32) {
    app.db
        .query(
            "LET $at = time::now() - <duration> $ago;
             FOR $j IN (SELECT * FROM journey WHERE visitor = $v) {
                 DELETE type::record('journey_start', [$j.started_at, $j.visitor, $j.funnel]);
                 UPDATE $j.id SET started_at = $at;
                 CREATE type::record('journey_start', [$at, $j.visitor, $j.funnel]);
             };",
        )
        .bind(("v", visitor.to_owned()))
        .bind(("ago", format!("{days}d")))
        .await
        .and_then(|response| response.check())
        .expect("time passes");
}

/// Runs `recorders` recorders at once, each recording a visit and a first message for
/// `visitors` chat funnel visitors named by `visitor(recorder, n)`, and answers the roll-ups'
/// sums per step, then how many journeys and steps there are.
async fn record_at_once(
    app: &TestApp,
    recorders: usize,
    visitors: usize,
    visitor: fn(usize, usize) -> String,
) -> (Vec<Value>, Option<i64>, Option<i64>) {
    use helpnow::domain::billing::CheckoutSource;
    use helpnow::domain::journey::Step;
    use helpnow::store::journeys::{JourneyStep, record};
    let running: Vec<_> = (0..recorders)
        .map(|recorder| {
            let db = app.db.clone();
            tokio::spawn(async move {
                let steps = (0..visitors)
                    .flat_map(|n| {
                        let visitor = visitor(recorder, n);
                        [Step::Visitors, Step::FirstMessage].map(|step| {
                            JourneyStep::new(&visitor, CheckoutSource::ChatFunnel, step)
                        })
                    })
                    .collect();
                record(&db, steps).await
            })
        })
        .collect();
    for recorder in running {
        recorder.await.expect("joined").expect("recorded");
    }
    let mut response = app
        .db
        .query(
            "SELECT step, math::sum(n) AS n FROM analytics_daily GROUP BY step ORDER BY step;
             count(SELECT id FROM journey); count(SELECT id FROM journey_step);",
        )
        .await
        .expect("sums");
    (
        response.take(0).expect("rows"),
        response.take(1).expect("journeys"),
        response.take(2).expect("steps"),
    )
}

/// Several recorders (one per process, and payments beside them) add to the same roll-up rows at
/// once: a transaction that loses the race runs again, and every step counts once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorders_adding_to_the_same_rows_at_once_count_every_step() {
    let app = spawn_app_with(|_| {}).await;
    let (sums, _, _) = record_at_once(&app, 8, 25, |recorder, n| {
        format!("visitor-race-{recorder:02}-{n:08}")
    })
    .await;
    assert_eq!(
        sums,
        vec![
            json!({ "step": "first_message", "n": 200 }),
            json!({ "step": "visitors", "n": 200 }),
        ]
    );
}

/// Recorders counting the same visitors at once (two processes hearing one visitor's tabs): a
/// chunk that finds a journey or step created after it read them runs again, and each visitor
/// and step counts once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorders_counting_the_same_visitors_at_once_count_each_once() {
    let app = spawn_app_with(|_| {}).await;
    let (sums, journeys, steps) =
        record_at_once(&app, 6, 40, |_, n| format!("visitor-same-{n:08}")).await;
    assert_eq!(
        sums,
        vec![
            json!({ "step": "first_message", "n": 40 }),
            json!({ "step": "visitors", "n": 40 }),
        ]
    );
    assert_eq!((journeys, steps), (Some(40), Some(40)));
}

#[tokio::test]
async fn a_page_load_is_a_page_view_and_the_help_forms_page_a_visitor_of_its_funnel_and_each_view_carries_the_first_touch()
 {
    let app = spawn_app_with(|_| {}).await;
    let response = app
        .get("/get-help?campaignid=c5&keyword=printer%20help")
        .await;
    assert_eq!(response.status(), 200);
    let visitor = crate::helpers::cookie_named(&response, "vid").expect("a visitor cookie");
    let visitor = visitor.trim_start_matches("vid=").to_owned();
    // Loaded again with the cookie: a second page view, no second visitor.
    let again = get_with_cookie(&app, "/get-help", &format!("vid={visitor}")).await;
    assert_eq!(again.status(), 200);
    assert_eq!(
        app.client
            .head(app.url("/landing"))
            .send()
            .await
            .expect("head")
            .status(),
        200
    );

    assert_eq!(settled_count(&app, "help_funnel", "visitors").await, 1);
    // Once the views have stopped coming: the two GETs', and none of the HEAD's.
    let views: Vec<Value> = settled_rows(
        &app,
        "SELECT path, visitor, properties, created_at FROM analytics_event WHERE name = 'page_view' ORDER BY created_at",
    )
    .await;
    assert_eq!(views.len(), 2, "a HEAD is no view: {views:?}");
    assert!(
        views
            .iter()
            .all(|view| view["path"] == "/get-help" && view["visitor"] == visitor.as_str()),
        "{views:?}"
    );
    assert!(
        views.iter().any(
            |view| view["properties"] == json!({"campaignid": "c5", "keyword": "printer help"})
        ),
        "{views:?}"
    );
    // A navigation inside the app is a page view the browser reports; it and the page loads
    // carry the visitor's first touch, the second load too though its address named no campaign.
    let response = post_with_cookie(
        &app,
        "/api/events",
        &format!("vid={visitor}"),
        &json!({ "name": "page_view", "path": "/login" }),
    )
    .await;
    assert_eq!(response.status(), 201);
    let mut response = app
        .db
        .query("SELECT VALUE first_touch FROM analytics_event WHERE name = 'page_view'")
        .await
        .expect("query");
    let touches: Vec<Value> = response.take(0).expect("first touches");
    assert_eq!(touches.len(), 3);
    assert!(
        touches
            .iter()
            .all(|touch| *touch == json!({"campaignid": "c5", "keyword": "printer help"})),
        "{touches:?}"
    );
    let mut response = app
        .db
        .query("SELECT VALUE [campaignid, keyword] FROM analytics_daily WHERE step = 'visitors'")
        .await
        .expect("query");
    let keys: Vec<Value> = response.take(0).expect("keys");
    assert_eq!(keys, vec![json!(["c5", "printer help"])]);
}

#[tokio::test]
async fn a_members_page_load_is_a_page_view_of_the_account() {
    let app = spawn_app_with(|_| {}).await;
    let member = sign_up(&app, "viewer@example.com", "secret1").await;
    let me: Value = get_with_cookie(&app, "/api/auth/me", &member)
        .await
        .json()
        .await
        .expect("json");
    let id = me["user"]["id"].as_str().expect("an id").to_owned();
    assert_eq!(
        get_with_cookie(&app, "/landing", &member).await.status(),
        200
    );
    assert_eq!(app.get("/landing").await.status(), 200);
    let mut users: Vec<Option<String>> = settled_rows(
        &app,
        "SELECT VALUE IF user != NONE { <string> record::id(user) } ELSE { NONE } FROM analytics_event WHERE name = 'page_view'",
    )
    .await;
    users.sort();
    assert_eq!(
        users,
        vec![None, Some(id)],
        "the member's view names the account, a visitor's none"
    );
}

/// An admin deletes an account on its owner's request: its subscription is canceled at once,
/// and the account goes with its tasks, chats, sessions, mails and the visitor it was, with that
/// visitor's funnel conversation, journeys and analytics events. Another account's data stays, and
/// so do the dashboard's daily figures, which hold no visitor.
#[tokio::test]
async fn deleting_an_account_cancels_its_subscription_and_takes_its_visitors_events_and_no_one_elses()
 {
    let app = spawn_app_with(|settings| settings.admin.emails = vec![ADMIN.to_owned()]).await;
    let (ann, bob) = ("visitor-ann-0000000001", "visitor-bob-0000000002");
    let c1 = json!({"campaignid": "c1", "keyword": "printer"});
    view(&app, ann, "chatbot_funnel_view", "/chat-help", c1.clone()).await;
    view(&app, bob, "chatbot_funnel_view", "/chat-help", c1).await;
    let response = post_with_cookie(
        &app,
        "/api/funnels/help",
        &format!("vid={ann}"),
        &json!({"issue": "My printer will not print", "campaignid": "c1"}),
    )
    .await;
    assert_eq!(response.status(), 200);

    // Ann buys the trial from that visit and keeps a task and a chat; Bob has an account too.
    let member = sign_up(&app, "ann@example.com", "secret1").await;
    let started = start_checkout_signed_in(
        &app,
        &format!("{member}; vid={ann}"),
        json!({"source": "chat_funnel", "campaignid": "c1", "keyword": "printer"}),
    )
    .await;
    pay(
        &app,
        started["sessionId"].as_str().expect("id"),
        "ann@example.com",
    )
    .await;
    let other = sign_up(&app, "bob@example.com", "secret1").await;
    for cookie in [&member, &other] {
        let response = post_with_cookie(
            &app,
            "/api/tasks",
            cookie,
            &json!({"name": "Back up photos", "items": ["Find the cable"]}),
        )
        .await;
        assert_eq!(response.status(), 201);
    }
    app.db
        .query(
            "LET $ann = (SELECT VALUE id FROM ONLY user WHERE email = 'ann@example.com' LIMIT 1);
             CREATE chat:ann SET user = $ann, title = 'Printer', updated_at = time::now();
             CREATE message:ann1 SET chat = chat:ann, role = 'user', content = 'It jams', created_at = time::now();",
        )
        .await
        .expect("a chat")
        .check()
        .expect("a chat");
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    assert_eq!(settled_count(&app, "chat_funnel", "visitors").await, 2);
    assert_eq!(settled_count(&app, "chat_funnel", "trial").await, 1);
    let mut found = app
        .db
        .query("SELECT VALUE record::id(id) FROM ONLY user WHERE email = 'ann@example.com' LIMIT 1")
        .await
        .expect("query");
    let ann_id: Option<String> = found.take(0).expect("her id");
    let ann_events = format!(
        "RETURN count((SELECT id FROM analytics_event WHERE visitor = 'visitor-ann-0000000001' \
         OR user = user:`{}`))",
        ann_id.expect("her account")
    );
    let ann_events = ann_events.as_str();
    assert!(count(&app, ann_events).await >= 3);
    let bob_events =
        "RETURN count((SELECT id FROM analytics_event WHERE visitor = 'visitor-bob-0000000002'))";
    assert_eq!(count(&app, bob_events).await, 1);
    // Her two journeys' starts (the chat and the help funnel), and the account and retention
    // clock of the one that bought, by the ids the upkeep and the deletion read (migration
    // 0022); Bob's start.
    let kept = |visitor: &str| {
        format!(
            "RETURN count((SELECT id FROM journey_start, journey_user, journey_due \
             WHERE record::id(id)[1] = '{visitor}'))"
        )
    };
    assert_eq!(count(&app, &kept(ann)).await, 4);
    assert_eq!(count(&app, &kept(bob)).await, 1);

    // Her chat is open in a browser.
    let (mut socket, joined) =
        crate::members::MemberSocket::open(&app, Some(&member), json!({})).await;
    assert_eq!(joined["joined"], true, "{joined}");
    socket.event("chat:ready").await;

    // Only a proved admin may, with their own password typed again, and not their own account;
    // the address must name an account.
    let delete_with = |cookie: String, email: &'static str, password: &'static str| {
        let app = &app;
        async move {
            post_with_cookie(
                app,
                "/api/admin/accounts/delete",
                &cookie,
                &json!({ "email": email, "password": password }),
            )
            .await
        }
    };
    // verified_admin's password.
    let delete = |cookie: String, email: &'static str| delete_with(cookie, email, "secret2-new");
    assert_eq!(delete(other.clone(), "ann@example.com").await.status(), 404);
    let admin = verified_admin(&app, ADMIN).await;
    let (status, body) =
        crate::auth::error_of(delete_with(admin.clone(), "ann@example.com", "").await).await;
    assert_eq!((status, &body["error"]), (400, &json!("password_required")));
    let (status, body) =
        crate::auth::error_of(delete_with(admin.clone(), "ann@example.com", "secret1").await).await;
    assert_eq!(
        (status, body["message"].as_str()),
        (401, Some("Incorrect password. Please try again.")),
        "a session left open is not enough: the admin's own password"
    );
    assert_eq!(
        count(
            &app,
            "RETURN count((SELECT id FROM user WHERE email = 'ann@example.com'))"
        )
        .await,
        1,
        "nothing deleted"
    );
    let (status, body) = crate::auth::error_of(delete(admin.clone(), ADMIN).await).await;
    assert_eq!((status, &body["error"]), (409, &json!("own_account")));
    let (status, body) =
        crate::auth::error_of(delete(admin.clone(), "nobody@example.com").await).await;
    assert_eq!(status, 404);
    assert_eq!(
        body["message"],
        "No account found with the address nobody@example.com."
    );
    let (status, body) = crate::auth::error_of(delete(admin.clone(), " ").await).await;
    assert_eq!(
        (status, body["message"].as_str()),
        (
            400,
            Some("Enter the email address of the account to delete.")
        )
    );

    let response = delete(admin.clone(), "Ann@Example.com").await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["subscriptionCanceled"], true, "{body}");
    assert_eq!(
        body["message"],
        "The account ann@example.com and everything it held were deleted. Its subscription was canceled."
    );
    let deleted = &body["deleted"];
    assert_eq!(
        (
            &deleted["tasks"],
            &deleted["chats"],
            &deleted["messages"],
            &deleted["visitors"],
            &deleted["funnelConversations"]
        ),
        (&json!(1), &json!(1), &json!(1), &json!(1), &json!(1)),
        "{body}"
    );

    // Her chat socket closed; her subscription ended at the provider (the demo's is the stored one), her sign-in is gone
    // and her address is free; nothing of her visits is left.
    assert_eq!(
        count(
            &app,
            "RETURN count((SELECT id FROM subscription WHERE status = 'canceled'))"
        )
        .await,
        1
    );
    let namespace = crate::members::NAMESPACE;
    let closed = socket
        .take(|packet| packet == format!("41{namespace},"))
        .await;
    assert_eq!(closed, format!("41{namespace},"));
    assert_eq!(
        get_with_cookie(&app, "/api/tasks", &member).await.status(),
        401
    );
    let response = app
        .post_json(
            "/api/auth/login",
            &json!({"email": "ann@example.com", "password": "secret1"}),
        )
        .await;
    assert_eq!(response.status(), 401);
    assert_eq!(count(&app, ann_events).await, 0);
    for sql in [
        "RETURN count((SELECT id FROM user WHERE email = 'ann@example.com'))",
        "RETURN count((SELECT id FROM visitor:`visitor-ann-0000000001`))",
        "RETURN count((SELECT id FROM journey WHERE visitor = 'visitor-ann-0000000001'))",
        "RETURN count((SELECT id FROM funnel_conversation WHERE visitor = visitor:`visitor-ann-0000000001`))",
        "RETURN count((SELECT id FROM chat)) + count((SELECT id FROM message))",
        "RETURN count((SELECT id FROM mail_outbox WHERE recipient = 'ann@example.com'))",
        "RETURN count((SELECT id FROM session WHERE user.email = NONE))",
    ] {
        assert_eq!(count(&app, sql).await, 0, "{sql}");
    }
    assert_eq!(count(&app, &kept(ann)).await, 0);
    // Bob's visit, account and task stay; so do the day's figures and the payment records.
    assert_eq!(count(&app, bob_events).await, 1);
    assert_eq!(count(&app, &kept(bob)).await, 1);
    let response = get_with_cookie(&app, "/api/tasks", &other).await;
    let tasks: Value = response.json().await.expect("json");
    assert_eq!(tasks["tasks"].as_array().map(Vec::len), Some(1));
    let figures = report(&app, &admin, &format!("from={today}&to={today}")).await;
    let chat = funnel(&figures, "chat_funnel");
    assert_eq!((&chat["visitors"], &chat["trial"]), (&json!(2), &json!(1)));
    assert_eq!(
        count(
            &app,
            "RETURN count((SELECT id FROM checkout_session WHERE status = 'complete'))"
        )
        .await,
        1
    );
    sign_up(&app, "ann@example.com", "secret1").await;
}

#[tokio::test]
async fn the_admin_endpoints_are_rate_limited_per_address_for_admins_and_strangers_alike() {
    let app = crate::helpers::spawn_app_with(|settings| {
        settings.admin.emails = vec![ADMIN.to_owned()];
    })
    .await;
    let admin = verified_admin(&app, ADMIN).await;
    let mut statuses = Vec::new();
    for _ in 0..70 {
        statuses.push(
            get_with_cookie(&app, "/api/admin/live", &admin)
                .await
                .status()
                .as_u16(),
        );
    }
    // 60 at once, then two a second (routes::admin::ADMIN_PER_ADDRESS).
    let served = statuses.iter().filter(|status| **status == 200).count();
    // (verified_admin asked once already.)
    assert!((55..=64).contains(&served), "{statuses:?}");
    assert_eq!(statuses.last(), Some(&429));
    assert_eq!(app.get("/api/admin/dashboard").await.status(), 429);
}
