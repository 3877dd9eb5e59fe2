//! The drop-off by flow version (issue 47): visitors driven through the real chat funnel over
//! its socket, a checkout by the button and one by itself, a payment on the demo checkout and a
//! first month paid; the endpoint's counts, medians and CSV, by campaign and keyword; admins only.

use std::time::{Duration, Instant};

use helpnow::loadtest::client::Client;
use serde_json::{Value, json};

use crate::billing::{invoice_paid, pay, verified_admin};
use crate::flows::{publish, published_script};
use crate::funnel_socket::{ack, exchange, join as join_funnel, next_event, target_at};
use crate::helpers::{TestApp, get_with_cookie, spawn_app_with};

const ADMIN: &str = "flows-admin@example.com";

const STEPS: [&str; 10] = [
    "joined",
    "first_message",
    "first_reply",
    "second_message",
    "second_reply",
    "third_message",
    "final_message",
    "checkout",
    "trial_paid",
    "month_paid",
];

/// A visitor joins the chat funnel from an ad's `campaignid` and `keyword`.
async fn join(
    app: &TestApp,
    visitor: &str,
    campaign: Option<&str>,
    keyword: Option<&str>,
) -> Client {
    let mut auth = json!({ "funnel": "chat", "visitorId": visitor });
    if let Some(campaign) = campaign {
        auth["campaignid"] = json!(campaign);
    }
    if let Some(keyword) = keyword {
        auth["keyword"] = json!(keyword);
    }
    join_funnel(&target_at(&app.address), &auth, None).await.0
}

/// The whole chat: three messages, the last answered by the final message.
pub(crate) async fn to_the_final_message(client: &mut Client) {
    exchange(client, "my printer will not print").await;
    exchange(client, "I restarted it and it still does not print").await;
    let last = exchange(client, "I tried restarting the printer and the computer").await;
    assert_eq!(last["isFinal"], true, "{last}");
}

/// Follows the funnel's checkout link to the demo checkout and pays it.
pub(crate) async fn pay_checkout(app: &TestApp, url: &str, email: &str) {
    let response = app.get(url).await;
    assert_eq!(response.status(), 303, "{url}");
    let location = response.headers()["location"]
        .to_str()
        .expect("a location")
        .to_owned();
    let session = location
        .strip_prefix("/demo-checkout/")
        .unwrap_or_else(|| panic!("the demo checkout: {location}"));
    pay(app, session, email).await;
}

async fn report(app: &TestApp, admin: &str, query: &str) -> Value {
    let response = get_with_cookie(app, &format!("/api/admin/flows/dropoff?{query}"), admin).await;
    let status = response.status();
    let body: Value = response.json().await.expect("json");
    assert_eq!(status, 200, "{body}");
    body
}

/// Each flow version's counts of a report: `{flow: {version: [count per step]}}`.
fn counts(report: &Value) -> Value {
    let mut flows = serde_json::Map::new();
    for flow in report["flows"].as_array().expect("flows") {
        let mut versions = serde_json::Map::new();
        for version in flow["versions"].as_array().expect("versions") {
            let steps: Vec<Value> = version["steps"]
                .as_array()
                .expect("steps")
                .iter()
                .map(|step| step["count"].clone())
                .collect();
            versions.insert(version["version"].to_string(), Value::Array(steps));
        }
        flows.insert(
            flow["name"].as_str().expect("name").to_owned(),
            Value::Object(versions),
        );
    }
    Value::Object(flows)
}

/// One flow version's step of a report.
fn step<'a>(report: &'a Value, flow: &str, version: u64, step: &str) -> &'a Value {
    report["flows"]
        .as_array()
        .expect("flows")
        .iter()
        .find(|f| f["name"] == flow)
        .and_then(|f| {
            f["versions"]
                .as_array()
                .expect("versions")
                .iter()
                .find(|v| v["version"] == version)
        })
        .and_then(|v| {
            v["steps"]
                .as_array()
                .expect("steps")
                .iter()
                .find(|s| s["step"] == step)
        })
        .unwrap_or_else(|| panic!("no {flow} {version} {step} in {report}"))
}

/// The report's counts once they are `expected`: the counts are written about every second,
/// so the report is asked again (no faster than the admin limit allows) for up to 20 s.
async fn counts_arrive(app: &TestApp, admin: &str, query: &str, expected: &Value) -> Value {
    let started = Instant::now();
    loop {
        let answer = report(app, admin, query).await;
        if counts(&answer) == *expected || started.elapsed() > Duration::from_secs(20) {
            assert_eq!(counts(&answer), *expected, "{query}: {answer}");
            return answer;
        }
        tokio::time::sleep(Duration::from_millis(700)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dropoff_counts_each_step_of_each_flow_version_by_campaign_and_keyword() {
    let app = spawn_app_with(|settings| settings.admin.emails = vec![ADMIN.to_owned()]).await;
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();

    assert_eq!(app.get("/api/admin/flows/dropoff").await.status(), 404);
    let admin = verified_admin(&app, ADMIN).await;

    // Six visitors of the chat funnel join, each then going a known way. The five with a keyword
    // that names no flow follow the keyword flow; the one without, the default flow.
    let (mut ann, mut bob, mut cat, mut dan, eve, fay) = (
        join(
            &app,
            "dropoff-ann-000000001",
            Some("c1"),
            Some("Printer Help"),
        )
        .await,
        join(
            &app,
            "dropoff-bob-000000002",
            Some("c1"),
            Some("printer help "),
        )
        .await,
        join(&app, "dropoff-cat-000000003", Some("c1"), Some("toner")).await,
        join(&app, "dropoff-dan-000000004", Some("c2"), Some("wifi")).await,
        join(&app, "dropoff-eve-000000005", Some("c2"), Some("WiFi")).await,
        join(&app, "dropoff-fay-000000006", None, None).await,
    );
    // Then version 2 of the keyword flow is published (quicker to type and to open the
    // checkout): the six keep version 1; Gus, who comes after, follows version 2.
    let (version, mut script) = published_script(&app, &admin, "keyword").await;
    assert_eq!(version, 1);
    script["typingDelayMinMs"] = json!(500);
    script["typingDelayMaxMs"] = json!(600);
    script["autoCheckoutAfterS"] = json!(5);
    assert_eq!(
        publish(&app, &admin, "keyword", &script).await,
        (200, json!({ "version": 2 }))
    );

    // Ann (campaign c1, 'Printer Help'): the whole chat, the button, pays, then a month.
    let ann = async {
        to_the_final_message(&mut ann).await;
        let id = ann
            .emit_with_ack("checkout", json!({}))
            .await
            .expect("sent");
        let answer = ack(&mut ann, id).await;
        let url = answer["url"].as_str().expect("a checkout url").to_owned();
        pay_checkout(&app, &url, "ann-dropoff@example.com").await;
    };
    // Bob (c1, 'printer help '): the whole chat, then waits for the automatic checkout.
    let bob = async {
        to_the_final_message(&mut bob).await;
        let checkout = next_event(&mut bob, "checkout").await;
        assert!(checkout["url"].is_string(), "{checkout}");
    };
    // Cat (c1, 'toner'): the whole chat, then leaves before the checkout.
    let cat = async {
        to_the_final_message(&mut cat).await;
        cat.close().await;
    };
    // Dan (c2, 'wifi'): one message and its reply, then leaves.
    let dan = async {
        exchange(&mut dan, "my wifi keeps dropping").await;
        dan.close().await;
    };
    // Eve (c2, 'WiFi') and Fay (no ad) leave at once.
    let gone = async {
        eve.close().await;
        fay.close().await;
    };
    // Gus (c1, 'Printer Help'), on version 2: the whole chat and the automatic checkout.
    let gus = async {
        let mut gus = join(
            &app,
            "dropoff-gus-000000007",
            Some("c1"),
            Some("Printer Help"),
        )
        .await;
        to_the_final_message(&mut gus).await;
        let checkout = next_event(&mut gus, "checkout").await;
        assert!(checkout["url"].is_string(), "{checkout}");
    };
    tokio::join!(ann, bob, cat, dan, gone, gus);

    // Ann's first month is paid (the payment event comes twice: counted once).
    let mut found = app
        .db
        .query("SELECT VALUE subscription_id FROM ONLY user WHERE email = 'ann-dropoff@example.com' LIMIT 1")
        .await
        .expect("query");
    let subscription: Option<String> = found.take(0).expect("subscription");
    assert!(subscription.is_some(), "the checkout began a subscription");
    for _ in 0..2 {
        invoice_paid(&app, "evt_dropoff_month_1", subscription.clone(), 2000).await;
    }

    // Nobody but a proved admin sees it.
    let member = crate::auth::sign_up(&app, "member-dropoff@example.com", "secret1").await;
    assert_eq!(
        get_with_cookie(&app, "/api/admin/flows/dropoff", &member)
            .await
            .status(),
        404
    );

    // Each version has its own counts: version 2's visitor adds nothing to version 1's.
    let range = format!("from={today}&to={today}");
    let all = counts_arrive(
        &app,
        &admin,
        &range,
        &json!({
            "default": { "1": [1, 0, 0, 0, 0, 0, 0, 0, 0, 0] },
            "keyword": {
                "1": [5, 4, 4, 3, 3, 3, 3, 2, 1, 1],
                "2": [1, 1, 1, 1, 1, 1, 1, 1, 0, 0],
            },
        }),
    )
    .await;
    assert_eq!(all["steps"], json!(STEPS));
    assert_eq!((&all["from"], &all["to"]), (&json!(today), &json!(today)));
    let checkout = step(&all, "keyword", 1, "checkout");
    assert_eq!(
        (&checkout["button"], &checkout["automatic"]),
        (&json!(1), &json!(1)),
        "{checkout}"
    );
    let checkout = step(&all, "keyword", 2, "checkout");
    assert_eq!(
        (&checkout["button"], &checkout["automatic"]),
        (&json!(0), &json!(1)),
        "{checkout}"
    );
    let keyword = all["flows"]
        .as_array()
        .expect("flows")
        .iter()
        .find(|flow| flow["name"] == "keyword")
        .expect("the keyword flow");
    let versions: Vec<&Value> = keyword["versions"]
        .as_array()
        .expect("versions")
        .iter()
        .map(|version| &version["version"])
        .collect();
    assert_eq!(versions, [2, 1], "side by side, newest first");
    // The time spent at each step before the next: known wherever someone went on.
    for name in [
        "joined",
        "first_message",
        "first_reply",
        "second_message",
        "second_reply",
        "third_message",
        "final_message",
        "checkout",
        "trial_paid",
    ] {
        let figures = step(&all, "keyword", 1, name);
        assert!(
            figures["medianMsToNext"].as_u64().is_some(),
            "{name}: {figures}"
        );
        assert!(
            figures.get("button").is_none() || name == "checkout",
            "{figures}"
        );
    }
    assert_eq!(
        step(&all, "keyword", 1, "month_paid")["medianMsToNext"],
        Value::Null
    );
    assert_eq!(
        step(&all, "default", 1, "joined")["medianMsToNext"],
        Value::Null,
        "Fay left"
    );
    // Replies come after a typing delay of 1.5-2.5 s: a first reply's wait is within its bucket.
    let typing = step(&all, "keyword", 1, "first_message")["medianMsToNext"]
        .as_u64()
        .expect("a median");
    assert!((1_000..=3_000).contains(&typing), "{typing}");

    // By campaign; by keyword, in any campaign or in one; matched trimmed and case-blind.
    counts_arrive(
        &app,
        &admin,
        &format!("{range}&campaign=c1"),
        &json!({ "keyword": {
            "1": [3, 3, 3, 3, 3, 3, 3, 2, 1, 1],
            "2": [1, 1, 1, 1, 1, 1, 1, 1, 0, 0],
        } }),
    )
    .await;
    counts_arrive(
        &app,
        &admin,
        &format!("{range}&keyword=PRINTER%20HELP"),
        &json!({ "keyword": {
            "1": [2, 2, 2, 2, 2, 2, 2, 2, 1, 1],
            "2": [1, 1, 1, 1, 1, 1, 1, 1, 0, 0],
        } }),
    )
    .await;
    let wifi = counts_arrive(
        &app,
        &admin,
        &format!("{range}&campaign=c2&keyword=wifi"),
        &json!({ "keyword": { "1": [2, 1, 1, 0, 0, 0, 0, 0, 0, 0] } }),
    )
    .await;
    assert_eq!(
        step(&wifi, "keyword", 1, "first_reply")["medianMsToNext"],
        Value::Null
    );
    counts_arrive(
        &app,
        &admin,
        &format!("{range}&campaign=c2&keyword=printer%20help"),
        &json!({}),
    )
    .await;
    counts_arrive(
        &app,
        &admin,
        &format!("{range}&flow=default"),
        &json!({ "default": { "1": [1, 0, 0, 0, 0, 0, 0, 0, 0, 0] } }),
    )
    .await;
    counts_arrive(
        &app,
        &admin,
        &format!("{range}&funnel=refundable"),
        &json!({}),
    )
    .await;
    // The cohort is the day the conversation began: none the day before.
    let yesterday = (chrono::Utc::now() - chrono::Days::new(1))
        .format("%Y-%m-%d")
        .to_string();
    counts_arrive(
        &app,
        &admin,
        &format!("from={yesterday}&to={yesterday}"),
        &json!({}),
    )
    .await;

    // The CSV: a line per flow version and step.
    let response = get_with_cookie(
        &app,
        &format!("/api/admin/flows/dropoff?{range}&campaign=c1&format=csv"),
        &admin,
    )
    .await;
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .is_ok_and(|kind| kind.starts_with("text/csv")),
        "{:?}",
        response.headers()
    );
    let csv = response.text().await.expect("csv");
    let rows: Vec<Vec<&str>> = csv.lines().map(|line| line.split(',').collect()).collect();
    assert_eq!(
        rows[0],
        [
            "flow",
            "version",
            "step",
            "count",
            "median_ms_to_next",
            "button",
            "automatic"
        ]
    );
    let counted: Vec<String> = rows[1..].iter().map(|row| row[..4].join(",")).collect();
    let expected: Vec<String> = [
        ("2", [1, 1, 1, 1, 1, 1, 1, 1, 0, 0]),
        ("1", [3, 3, 3, 3, 3, 3, 3, 2, 1, 1]),
    ]
    .into_iter()
    .flat_map(|(version, counts)| {
        STEPS
            .iter()
            .zip(counts)
            .map(move |(step, count)| format!("keyword,{version},{step},{count}"))
    })
    .collect();
    assert_eq!(counted, expected, "{csv}");
    let v1_checkout = &rows[18];
    assert_eq!(v1_checkout[2], "checkout");
    assert_eq!(
        (v1_checkout[5], v1_checkout[6]),
        ("1", "1"),
        "button, automatic"
    );
    assert!(
        v1_checkout[4].parse::<u64>().is_ok(),
        "checkout to trial paid: {csv}"
    );
    assert_eq!(
        rows[8][2..7],
        ["checkout", "1", "", "0", "1"],
        "version 2: {csv}"
    );
    assert_eq!(rows[20][2], "month_paid");
    assert_eq!(rows[20][4], "", "month paid is last");
    assert_eq!((rows[1][5], rows[1][6]), ("", ""));

    // Bad filters are said in plain words.
    for (query, code) in [
        ("funnel=help", "invalid_funnel"),
        ("from=2026-11-30&to=2026-11-01", "invalid_range"),
        ("from=30/11/2026", "invalid_range"),
    ] {
        let response =
            get_with_cookie(&app, &format!("/api/admin/flows/dropoff?{query}"), &admin).await;
        assert_eq!(response.status(), 400, "{query}");
        let body: Value = response.json().await.expect("json");
        assert_eq!(body["error"], code, "{body}");
        assert!(
            body["message"].as_str().is_some_and(|m| m.ends_with('.')),
            "{body}"
        );
    }
}
