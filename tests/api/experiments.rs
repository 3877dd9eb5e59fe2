//! Experiments (issue 48): an experiment split between flow versions and offers, sticky arms
//! from a hash, exposures counted when the arm is shown, the money of each arm from the real
//! money path, the analysis with its sample-ratio check and stopping rule, and promotion by
//! hand and by the rule. Several processes: tests/api/cluster.rs.

use chrono::Utc;
use futures_util::StreamExt;
use helpnow::loadtest::client::Client;
use helpnow_actors::rules::FunnelKind;
use helpnow_actors::rules::experiments::{Arm, ArmFlow, Scope, Split};
use serde_json::{Value, json};

use crate::auth::error_of;
use crate::billing::{invoice_paid, verified_admin};
use crate::flows_dropoff::{pay_checkout, to_the_final_message};
use crate::funnel_socket::{ack, join as join_funnel, target_at};
use crate::helpers::{TestApp, get_with_cookie, post_with_cookie, spawn_app_with};

const ADMIN: &str = "experiments-admin@example.com";

async fn admin_app() -> (TestApp, String) {
    let app = spawn_app_with(|settings| settings.admin.emails = vec![ADMIN.to_owned()]).await;
    let admin = verified_admin(&app, ADMIN).await;
    (app, admin)
}

pub(crate) async fn get_json(app: &TestApp, path: &str, cookie: &str) -> (u16, Value) {
    error_of(get_with_cookie(app, path, cookie).await).await
}

pub(crate) async fn post_json(
    app: &TestApp,
    path: &str,
    cookie: &str,
    body: &Value,
) -> (u16, Value) {
    error_of(post_with_cookie(app, path, cookie, body).await).await
}

/// An experiment on the chat funnel's campaign `campaign`: A the default flow's version 1, B
/// its version 2, even weights, trial paid within 14 days, a rule that needs `min_exposures`.
pub(crate) fn definition(campaign: &str, min_exposures: u64) -> Value {
    json!({
        "name": format!("Greeting test {campaign}"),
        "scope": { "funnel": "chat", "campaigns": [campaign], "keywords": [] },
        "arms": [
            { "key": "a", "name": "Control", "flow": { "name": "default", "version": 1 }, "offer": null, "weight": 50 },
            { "key": "b", "name": "Warmer greeting", "flow": { "name": "default", "version": 2 }, "offer": null, "weight": 50 },
        ],
        "goal": { "metric": "trial_paid", "days": 14 },
        "guardrails": { "maxRefundRate": 0.5, "maxEarlyLeaveRate": null },
        "rule": { "minExposures": min_exposures, "minDays": 0, "chance": 0.95, "maxLoss": 0.002 },
        "autoPromote": false,
    })
}

/// Publishes version 2 of the default flow with `greeting`.
pub(crate) async fn publish_greeting(app: &TestApp, admin: &str, greeting: &str) {
    publish_greeting_at(&app.address, admin, greeting).await;
}

/// [`publish_greeting`] on the server at `address`: version 1's script.
pub(crate) async fn publish_greeting_at(address: &str, admin: &str, greeting: &str) -> Value {
    let http = reqwest::Client::new();
    let flows: Value = http
        .get(format!("{address}/api/admin/flows"))
        .header("cookie", admin)
        .send()
        .await
        .expect("flows")
        .json()
        .await
        .expect("JSON");
    let mut script = flows["flows"]
        .as_array()
        .expect("flows")
        .iter()
        .find(|flow| flow["name"] == "default")
        .expect("the default flow")["script"]
        .clone();
    let version_1 = script.clone();
    script["greeting"] = json!(greeting);
    for (path, body) in [
        (
            "/api/admin/flows/default/draft",
            json!({ "script": script, "basedOn": 1 }),
        ),
        ("/api/admin/flows/default/publish", json!({ "basedOn": 1 })),
    ] {
        let request = if path.ends_with("draft") {
            http.put(format!("{address}{path}"))
        } else {
            http.post(format!("{address}{path}"))
        };
        let response = request
            .header("cookie", admin)
            .json(&body)
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status(), 200, "{path}");
    }
    version_1
}

/// The experiment's split as the server keeps it (to find visitors of each arm).
pub(crate) fn split_of(experiment: &Value) -> Split {
    serde_json::from_value(experiment.clone()).expect("an experiment reads as a split")
}

/// The first visitor id of the form `{prefix}-{n}` that lands in `arm`.
pub(crate) fn visitor_in(split: &Split, arm: &str, prefix: &str) -> String {
    (0..)
        .map(|n| format!("{prefix}-{n:012}"))
        .find(|visitor| split.arm_of(visitor).is_some_and(|a| a.key == arm))
        .expect("a visitor in the arm")
}

async fn join(app: &TestApp, visitor: &str, campaign: Option<&str>) -> (Client, Value) {
    let mut auth = json!({ "funnel": "chat", "visitorId": visitor });
    if let Some(campaign) = campaign {
        auth["campaignid"] = json!(campaign);
    }
    join_funnel(&target_at(&app.address), &auth, None).await
}

/// `POST /api/admin/experiments/{id}/{action}` with `body`.
pub(crate) async fn act(
    app: &TestApp,
    admin: &str,
    id: &str,
    action: &str,
    body: &Value,
) -> (u16, Value) {
    post_json(
        app,
        &format!("/api/admin/experiments/{id}/{action}"),
        admin,
        body,
    )
    .await
}

async fn analysis(app: &TestApp, admin: &str, id: &str) -> Value {
    let (status, body) = get_json(app, &format!("/api/admin/experiments/{id}"), admin).await;
    assert_eq!(status, 200, "{body}");
    body
}

fn arm_figures<'a>(analysis: &'a Value, key: &str) -> &'a Value {
    analysis["analysis"]["arms"]
        .as_array()
        .expect("arms")
        .iter()
        .find(|arm| arm["key"] == key)
        .unwrap_or_else(|| panic!("no arm {key} in {analysis}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_experiment_gives_each_visitor_a_sticky_arm_counts_exposures_and_money_and_promotes() {
    let (app, admin) = admin_app().await;
    assert_eq!(app.get("/api/admin/experiments").await.status(), 404);
    let member = crate::auth::sign_up(&app, "member-experiments@example.com", "secret1").await;
    assert_eq!(
        get_with_cookie(&app, "/api/admin/experiments", &member)
            .await
            .status(),
        404
    );
    publish_greeting(
        &app,
        &admin,
        "Hi, I'm {assistant}. What can I fix for you today?",
    )
    .await;

    // A definition with problems is refused at its fields, and nothing is saved.
    let mut wrong = definition("777", 100);
    wrong["name"] = json!(" ");
    wrong["arms"][1]["flow"]["version"] = json!(9);
    wrong["arms"][0]["weight"] = json!(0);
    wrong["goal"]["days"] = json!(0);
    wrong["rule"]["chance"] = json!(1.5);
    let (status, refused) = post_json(&app, "/api/admin/experiments", &admin, &wrong).await;
    assert_eq!(status, 422, "{refused}");
    let mut fields: Vec<&str> = refused["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .map(|p| p["field"].as_str().expect("a field"))
        .collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        [
            "arms.0.weight",
            "arms.1.flow",
            "goal.days",
            "name",
            "rule.chance"
        ]
    );
    let (_, listed) = get_json(&app, "/api/admin/experiments", &admin).await;
    assert_eq!(listed["experiments"], json!([]));
    let default_versions = listed["flows"]
        .as_array()
        .expect("flows")
        .iter()
        .find(|flow| flow["name"] == "default")
        .expect("the default flow")
        .clone();
    assert_eq!(default_versions["versions"], json!([1, 2]));

    // Created as a draft, then started.
    let (status, experiment) = post_json(
        &app,
        "/api/admin/experiments",
        &admin,
        &definition("777", 100),
    )
    .await;
    assert_eq!(status, 201, "{experiment}");
    assert_eq!(experiment["status"], "draft");
    let id = experiment["id"].as_str().expect("an id").to_owned();
    let (status, started) = act(&app, &admin, &id, "start", &json!({})).await;
    assert_eq!(
        (status, &started["status"]),
        (200, &json!("running")),
        "{started}"
    );
    // A second experiment that takes the same visitors cannot start beside it.
    let (_, other) = post_json(
        &app,
        "/api/admin/experiments",
        &admin,
        &definition("777", 100),
    )
    .await;
    let other = other["id"].as_str().expect("id");
    let (status, overlap) = act(&app, &admin, other, "start", &json!({})).await;
    assert_eq!(
        (status, &overlap["error"]),
        (409, &json!("overlaps")),
        "{overlap}"
    );
    // A running experiment is not edited.
    let response = app
        .client
        .put(app.url(&format!("/api/admin/experiments/{id}")))
        .header("cookie", &admin)
        .json(&definition("777", 200))
        .send()
        .await
        .expect("sent");
    let (status, body) = error_of(response).await;
    assert_eq!(
        (status, &body["error"]),
        (409, &json!("wrong_status")),
        "{body}"
    );

    // Each visitor's arm is the hash's: A meets version 1's greeting, B version 2's, and the
    // conversation says which; a visitor from another campaign is in no experiment.
    let split = split_of(&started);
    let (ann, bob) = (
        visitor_in(&split, "a", "experiment-ann"),
        visitor_in(&split, "b", "experiment-bob"),
    );
    let (_ann_client, ann_view) = join(&app, &ann, Some("777")).await;
    let (mut bob_client, bob_view) = join(&app, &bob, Some("777")).await;
    let (_cy_client, cy_view) = join(&app, "experiment-cy-outside-0001", Some("888")).await;
    assert_eq!(ann_view["experiment"], json!({ "id": id, "arm": "a" }));
    assert_eq!(bob_view["experiment"], json!({ "id": id, "arm": "b" }));
    assert_eq!(cy_view.get("experiment"), None, "{cy_view}");
    assert_eq!(
        bob_view["messages"][0]["text"],
        "Hi, I'm Emma. What can I fix for you today?"
    );
    assert_ne!(
        ann_view["messages"][0]["text"],
        bob_view["messages"][0]["text"]
    );
    // Bob comes back: the same conversation, the same arm, no second exposure.
    let (_again, again) = join(&app, &bob, Some("777")).await;
    assert_eq!(again["experiment"], json!({ "id": id, "arm": "b" }));

    // The page's own view event gets the arm from the server; a page cannot name one.
    for (visitor, campaign) in [(&bob, "777"), (&ann, "888")] {
        let response = post_with_cookie(
            &app,
            "/api/events",
            &format!("vid={visitor}"),
            &json!({
                "name": "chatbot_funnel_view",
                "properties": { "campaignid": campaign, "arm": "a", "experiment": "forged" },
                "path": format!("/chat-help?campaignid={campaign}"),
            }),
        )
        .await;
        assert_eq!(response.status(), 201);
    }
    let mut views = app
        .db
        .query("SELECT VALUE [visitor, properties.experiment, properties.arm] FROM analytics_event WHERE name = 'chatbot_funnel_view' ORDER BY created_at")
        .await
        .expect("query");
    let views: Vec<Value> = views.take(0).expect("views");
    assert_eq!(
        views,
        [json!([bob, id, "b"]), json!([ann, null, null])],
        "the arm where the visitor has one, and nothing a page sent"
    );

    // The journey the view began keeps the arm too.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let mut found = app
            .db
            .query("SELECT VALUE arm FROM type::record('journey', [$v, 'chat_funnel'])")
            .bind(("v", bob.clone()))
            .await
            .expect("query");
        let arms: Vec<Value> = found.take(0).expect("arms");
        if !arms.is_empty() {
            assert_eq!(arms, [json!({ "experiment": id, "arm": "b" })]);
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no journey");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }

    // Two exposures, one per arm; the conversation and its events keep the arm.
    let body = analysis(&app, &admin, &id).await;
    assert_eq!(arm_figures(&body, "a")["exposures"], 1, "{body}");
    assert_eq!(arm_figures(&body, "b")["exposures"], 1, "{body}");
    let mut stored = app
        .db
        .query(
            "SELECT VALUE arm FROM funnel_conversation WHERE visitor = type::record('visitor', $v)",
        )
        .bind(("v", bob.clone()))
        .await
        .expect("query");
    let arms: Vec<Value> = stored.take(0).expect("arms");
    assert_eq!(arms, [json!({ "experiment": id, "arm": "b" })]);

    // Bob pays through the demo checkout: a trial paid and the $1 fee on arm B, and the
    // checkout keeps the arm.
    to_the_final_message(&mut bob_client).await;
    let ack_id = bob_client
        .emit_with_ack("checkout", json!({}))
        .await
        .expect("sent");
    let answer = ack(&mut bob_client, ack_id).await;
    let url = answer["url"].as_str().expect("a checkout url").to_owned();
    pay_checkout(&app, &url, "bob-experiments@example.com").await;
    let mut found = app
        .db
        .query("SELECT VALUE experiment FROM checkout_session WHERE visitor = type::record('visitor', $v)")
        .bind(("v", bob.clone()))
        .await
        .expect("query");
    let kept: Vec<Value> = found.take(0).expect("arm");
    assert_eq!(kept, [json!({ "experiment": id, "arm": "b" })]);
    let mut events = app
        .db
        .query("SELECT VALUE properties.arm FROM analytics_event WHERE name = 'chatbot_final_message' AND properties.experiment = $id")
        .bind(("id", id.clone()))
        .await
        .expect("query");
    let event_arms: Vec<Value> = events.take(0).expect("events");
    assert_eq!(event_arms, [json!("b")]);

    // The fee is given back, then a month is paid: the dashboard's net for arm B.
    let mut found = app
        .db
        .query("SELECT provider_session_id, subscription_id FROM ONLY checkout_session WHERE visitor = type::record('visitor', $v) LIMIT 1")
        .bind(("v", bob.clone()))
        .await
        .expect("query");
    let checkout: Option<Value> = found.take(0).expect("a checkout");
    let checkout = checkout.expect("bob's checkout");
    let subscription = checkout["subscription_id"].as_str().map(str::to_owned);
    helpnow::store::journeys::record_fee_refund(
        &app.db,
        checkout["provider_session_id"].as_str().expect("a session"),
    )
    .await
    .expect("a refund is counted");
    for _ in 0..2 {
        invoice_paid(&app, "evt_experiment_month_1", subscription.clone(), 2000).await;
    }
    let body = analysis(&app, &admin, &id).await;
    let b = arm_figures(&body, "b");
    assert_eq!(
        (&b["conversions"], &b["netCents"], &b["fees"], &b["refunds"]),
        (&json!(1), &json!(2000), &json!(1), &json!(1)),
        "{body}"
    );
    assert_eq!(b["refundRate"], json!(1.0));
    assert_eq!(
        b["guardrailBreaches"],
        json!(["Refund rate 100.0 % is above the limit of 50.0 %."])
    );
    assert_eq!(arm_figures(&body, "a")["conversions"], 0);
    assert_eq!(
        body["analysis"]["decision"]["state"], "collecting",
        "{body}"
    );

    // Paused: a new visitor of the campaign follows the routing's choice, in no arm.
    let (status, _) = act(&app, &admin, &id, "pause", &json!({})).await;
    assert_eq!(status, 200);
    let dee = visitor_in(&split, "a", "experiment-dee");
    let (_dee_client, dee_view) = join(&app, &dee, Some("777")).await;
    assert_eq!(dee_view.get("experiment"), None, "{dee_view}");

    // Promoted by hand: B's version routed for the campaign, the experiment over.
    let (status, promoted) = act(&app, &admin, &id, "promote", &json!({ "arm": "b" })).await;
    assert_eq!(status, 200, "{promoted}");
    assert_eq!(
        (&promoted["status"], &promoted["winner"]),
        (&json!("stopped"), &json!("b"))
    );
    let (_, flows) = get_json(&app, "/api/admin/flows", &admin).await;
    assert_eq!(flows["routing"]["campaigns"]["777"], "default", "{flows}");
    let body = analysis(&app, &admin, &id).await;
    let kinds: Vec<&Value> = body["history"]
        .as_array()
        .expect("history")
        .iter()
        .map(|record| &record["kind"])
        .collect();
    assert_eq!(kinds, ["created", "started", "paused", "promoted"]);
    assert_eq!(body["history"][3]["arm"], "b");
    assert_eq!(
        body["analysis"]["status"],
        format!(
            "Warmer greeting was promoted on {}.",
            Utc::now().format("%Y-%m-%d")
        )
    );
    // Over: archived, and a new visitor is in no arm.
    let (status, archived) = act(&app, &admin, &id, "archive", &json!({})).await;
    assert_eq!((status, &archived["status"]), (200, &json!("archived")));
}

/// Arms that send a campaign's visitors to other funnels: `weights` of the chat funnel (A) and
/// the refundable-fee chat (B).
fn offer_definition(campaign: &str, weights: [u32; 2]) -> Value {
    json!({
        "name": format!("Offer test {campaign}"),
        "scope": { "funnel": "chat", "campaigns": [campaign], "keywords": [] },
        "arms": [
            { "key": "a", "name": "$1 trial chat", "flow": null, "offer": null, "weight": weights[0] },
            { "key": "b", "name": "Refundable fee", "flow": null, "offer": "refundable", "weight": weights[1] },
        ],
        "goal": { "metric": "revenue", "days": 30 },
        "guardrails": { "maxRefundRate": null, "maxEarlyLeaveRate": 0.9 },
        "rule": { "minExposures": 50, "minDays": 0, "chance": 0.95, "maxLoss": 5.0 },
        "autoPromote": false,
    })
}

async fn landing(app: &TestApp, path: &str, visitor: &str) -> Option<String> {
    let response = app
        .client
        .get(app.url(path))
        .header("cookie", format!("vid={visitor}"))
        .send()
        .await
        .expect("the page answers");
    response
        .headers()
        .get("location")
        .map(|location| location.to_str().expect("a location").to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_offer_arm_sends_its_share_of_10000_visitors_to_its_funnel_and_exposure_waits_for_the_chat()
 {
    let (app, admin) = admin_app().await;
    let (status, experiment) = post_json(
        &app,
        "/api/admin/experiments",
        &admin,
        &offer_definition("555", [1, 3]),
    )
    .await;
    assert_eq!(status, 201, "{experiment}");
    let id = experiment["id"].as_str().expect("an id").to_owned();
    let (status, _) = act(&app, &admin, &id, "start", &json!({})).await;
    assert_eq!(status, 200);

    // 10,000 visitors open the ad's page: B's weight (3 of 4) is sent on to /Chat-Help-2 with
    // the ad's address; A's stay. Each asks twice: the same answer.
    let path = "/chat-help?campaignid=555&keyword=printer";
    let answers: Vec<(Option<String>, String)> = futures_util::stream::iter(0..10_000)
        .map(|n| {
            let app = &app;
            async move {
                let visitor = format!("experiment-offer-{n:010}");
                (landing(app, path, &visitor).await, visitor)
            }
        })
        .buffered(16)
        .collect()
        .await;
    let sent: Vec<&(Option<String>, String)> = answers
        .iter()
        .filter(|(location, _)| location.is_some())
        .collect();
    // Binomial(10,000, 3/4): sd 43; within 4.5 sd.
    assert!(
        (7_305..=7_695).contains(&sent.len()),
        "{} of 10,000 were sent to the offer",
        sent.len()
    );
    let split = split_of(&experiment);
    for (location, visitor) in answers.iter().take(500) {
        let expected = split.arm_of(visitor).expect("an arm").key == "b";
        assert_eq!(location.is_some(), expected, "{visitor}");
        assert_eq!(
            &landing(&app, path, visitor).await,
            location,
            "the same again"
        );
    }
    assert_eq!(
        sent[0].0.as_deref(),
        Some("/Chat-Help-2?campaignid=555&keyword=printer")
    );
    // /email-help is the chat funnel about email: the keyword goes along.
    assert_eq!(
        landing(&app, "/email-help?campaignid=555", &sent[0].1)
            .await
            .as_deref(),
        Some("/Chat-Help-2?campaignid=555&keyword=email")
    );
    // Another campaign, or the offer's own page, is not sent anywhere.
    let b = &sent[0].1;
    assert_eq!(landing(&app, "/chat-help?campaignid=556", b).await, None);
    assert_eq!(landing(&app, "/Chat-Help-2?campaignid=555", b).await, None);

    // Being sent is being assigned, not exposed: nothing counts until a chat starts.
    let body = analysis(&app, &admin, &id).await;
    assert_eq!(arm_figures(&body, "b")["exposures"], 0, "{body}");
    // B's visitor chats on the refundable-fee funnel, in arm B; A's on the chat funnel.
    let mut auth = json!({ "funnel": "refundable", "visitorId": b, "campaignid": "555" });
    let (_b_client, b_view) = join_funnel(&target_at(&app.address), &auth, None).await;
    assert_eq!(b_view["experiment"], json!({ "id": id, "arm": "b" }));
    let a = &answers
        .iter()
        .find(|(location, _)| location.is_none())
        .expect("a visitor of A")
        .1;
    auth = json!({ "funnel": "chat", "visitorId": a, "campaignid": "555" });
    let (_a_client, a_view) = join_funnel(&target_at(&app.address), &auth, None).await;
    assert_eq!(a_view["experiment"], json!({ "id": id, "arm": "a" }));
    // B's visitor in the chat funnel (a page they were not sent to) is in no arm there.
    auth = json!({ "funnel": "chat", "visitorId": b, "campaignid": "555" });
    let (_b_chat, b_chat_view) = join_funnel(&target_at(&app.address), &auth, None).await;
    assert_eq!(b_chat_view.get("experiment"), None, "{b_chat_view}");
    let body = analysis(&app, &admin, &id).await;
    assert_eq!(arm_figures(&body, "a")["exposures"], 1, "{body}");
    assert_eq!(arm_figures(&body, "b")["exposures"], 1, "{body}");
    assert_eq!(arm_figures(&body, "b")["chatExposures"], 1, "{body}");
    assert_eq!(arm_figures(&body, "b")["earlyLeaves"], 1, "{body}");

    // Promoting B routes the campaign's visitors to the refundable-fee chat, wherever the ad
    // sends them.
    let (status, promoted) = act(&app, &admin, &id, "promote", &json!({ "arm": "b" })).await;
    assert_eq!(status, 200, "{promoted}");
    let (_, flows) = get_json(&app, "/api/admin/flows", &admin).await;
    assert_eq!(
        flows["routing"]["offers"],
        json!({ "555": "refundable" }),
        "{flows}"
    );
    assert_eq!(
        landing(&app, "/get-help?campaignid=555", a)
            .await
            .as_deref(),
        Some("/Chat-Help-2?campaignid=555")
    );
}

/// `n` exposures of `arm` in experiment `id`, `converted` of them with a trial paid and the fee.
async fn seed(app: &TestApp, id: &str, arm: &str, n: usize, converted: usize) {
    app.db
        .query(
            "FOR $i IN 0..$n {
                 LET $v = 'seeded-' + $arm + '-' + <string> $n + '-' + <string> $i;
                 CREATE type::record('experiment_exposure', [$id, $v]) CONTENT {
                     arm: $arm, funnel: 'chat_funnel', conversation: NONE, at: time::now() };
                 IF $i < $converted {
                     LET $cs = { experiment: { experiment: $id, arm: $arm }, visitor: type::record('visitor', $v) };
                     fn::experiment_money($cs, 'trial_paid', 0, 'cs-' + $v);
                     fn::experiment_money($cs, 'fee', 100, 'cs-' + $v);
                 };
             };",
        )
        .bind(("id", id.to_owned()))
        .bind(("arm", arm.to_owned()))
        .bind(("n", i64::try_from(n).expect("small")))
        .bind(("converted", i64::try_from(converted).expect("small")))
        .await
        .expect("seeded")
        .check()
        .expect("seeded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rule_names_a_winner_the_split_is_checked_and_the_winner_is_promoted_by_the_rule() {
    let (app, admin) = admin_app().await;
    publish_greeting(
        &app,
        &admin,
        "Hello! I'm {assistant}. Tell me what went wrong.",
    )
    .await;
    let mut wanted = definition("999", 1_000);
    wanted["autoPromote"] = json!(true);
    let (_, experiment) = post_json(&app, "/api/admin/experiments", &admin, &wanted).await;
    let id = experiment["id"].as_str().expect("an id").to_owned();
    let (status, _) = act(&app, &admin, &id, "start", &json!({})).await;
    assert_eq!(status, 200);

    // Too few visitors: still collecting.
    seed(&app, &id, "a", 900, 45).await;
    seed(&app, &id, "b", 900, 90).await;
    let body = analysis(&app, &admin, &id).await;
    assert_eq!(
        body["analysis"]["decision"],
        json!({ "state": "collecting", "exposuresNeeded": 100, "daysNeeded": 0 }),
        "{body}"
    );
    assert_eq!(body["analysis"]["promotable"], Value::Null);
    // 1,000 and 1,200 where 1:1 was set: the split is wrong (scipy.stats.chisquare([1000, 1200])
    // p = 2.0079e-05), and B wins (100 of 1,000 against 50 of 1,000) but is not promoted by
    // the rule while the split is in doubt.
    seed(&app, &id, "a", 100, 5).await;
    seed(&app, &id, "b", 300, 30).await;
    let body = analysis(&app, &admin, &id).await;
    let srm = &body["analysis"]["srm"];
    assert_eq!(srm["warning"], true, "{body}");
    assert!(
        (srm["pValue"].as_f64().expect("p") - 2.007_865_612_426_481e-5).abs() < 1e-9,
        "{srm}"
    );
    assert_eq!(
        body["analysis"]["decision"],
        json!({ "state": "winner", "arm": 1 })
    );
    assert_eq!(body["analysis"]["promotable"], "b");
    let b = arm_figures(&body, "b");
    assert_eq!(
        (&b["exposures"], &b["conversions"]),
        (&json!(1_200), &json!(120))
    );
    assert!(
        b["conversion"]["chanceToBeat"].as_f64().expect("chance") > 0.999,
        "{b}"
    );
    assert!(
        body["analysis"]["status"]
            .as_str()
            .expect("status")
            .starts_with("Warmer greeting wins: 100.0 % chance to beat Control"),
        "{body}"
    );
    // The rule's check as each process runs it every minute (`Experiments::spawn_decider`).
    let file: helpnow_actors::rules::scripts::FunnelScripts =
        toml::from_str(include_str!("../../config/funnels.toml")).expect("the file parses");
    let flows = helpnow::flows::FlowLibrary::start(
        app.db.clone(),
        helpnow::cluster::Cluster::alone(),
        &file,
    )
    .await
    .expect("flows");
    let experiments = helpnow::experiments::Experiments::new(app.db.clone(), flows);
    assert_eq!(
        experiments.promote_decided().await.expect("checked"),
        Vec::<String>::new()
    );

    // The split evens out (200 more of A): the rule's winner is promoted by itself.
    app.db
        .query(
            "FOR $i IN 0..200 {
                 CREATE type::record('experiment_exposure', [$id, 'seeded-a2-' + <string> $i]) CONTENT {
                     arm: 'a', funnel: 'chat_funnel', conversation: NONE, at: time::now() };
             };",
        )
        .bind(("id", id.clone()))
        .await
        .expect("seeded")
        .check()
        .expect("seeded");
    assert_eq!(
        experiments.promote_decided().await.expect("checked"),
        std::slice::from_ref(&id)
    );
    let body = analysis(&app, &admin, &id).await;
    assert_eq!(
        (&body["experiment"]["status"], &body["experiment"]["winner"]),
        (&json!("stopped"), &json!("b")),
        "{body}"
    );
    assert_eq!(
        body["experiment"]["promotedBy"],
        helpnow::experiments::AUTO_PROMOTER
    );
    let (_, flows) = get_json(&app, "/api/admin/flows", &admin).await;
    assert_eq!(flows["routing"]["campaigns"]["999"], "default", "{flows}");
    // Done once: a second check promotes nothing.
    assert_eq!(
        experiments.promote_decided().await.expect("checked"),
        Vec::<String>::new()
    );
}

#[test]
fn arms_follow_their_weights_over_10000_ids_and_a_visitor_keeps_theirs() {
    let split = Split {
        id: "x-weights".into(),
        scope: Scope {
            funnel: FunnelKind::Chat,
            campaigns: vec![],
            keywords: vec![],
        },
        arms: [20, 30, 50]
            .into_iter()
            .zip(["a", "b", "c"])
            .map(|(weight, key)| Arm {
                key: key.into(),
                name: key.into(),
                flow: Some(ArmFlow {
                    name: "default".into(),
                    version: 1,
                }),
                offer: None,
                weight,
            })
            .collect(),
    };
    let mut counts = [0u32; 3];
    for n in 0..10_000 {
        let visitor = format!("weights-visitor-{n:08}");
        let arm = split.arm_of(&visitor).expect("an arm");
        counts[["a", "b", "c"]
            .iter()
            .position(|k| *k == arm.key)
            .expect("known")] += 1;
    }
    // Expected 2,000, 3,000, 5,000; 4.5 sd of binomials: 180, 206, 225.
    for (count, (expected, tolerance)) in
        counts
            .iter()
            .zip([(2_000, 180), (3_000, 206), (5_000, 225)])
    {
        assert!(count.abs_diff(expected) <= tolerance, "{counts:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_help_forms_page_is_its_arm_shown_and_its_checkout_keeps_the_arm() {
    let (app, admin) = admin_app().await;
    let mut help = offer_definition("333", [1, 1]);
    help["scope"]["funnel"] = json!("help");
    help["arms"][1]["offer"] = json!("chat");
    let (status, experiment) = post_json(&app, "/api/admin/experiments", &admin, &help).await;
    assert_eq!(status, 201, "{experiment}");
    let id = experiment["id"].as_str().expect("an id").to_owned();
    act(&app, &admin, &id, "start", &json!({})).await;
    let split = split_of(&experiment);
    let (a, b) = (
        visitor_in(&split, "a", "experiment-help-a"),
        visitor_in(&split, "b", "experiment-help-b"),
    );
    // A stays on the form, which is A shown; B is sent to the chat funnel, not yet shown.
    assert_eq!(landing(&app, "/get-help?campaignid=333", &a).await, None);
    assert_eq!(
        landing(&app, "/get-help?campaignid=333", &b)
            .await
            .as_deref(),
        Some("/chat-help?campaignid=333")
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let body = analysis(&app, &admin, &id).await;
        if arm_figures(&body, "a")["exposures"] == 1 {
            assert_eq!(arm_figures(&body, "b")["exposures"], 0, "{body}");
            assert_eq!(arm_figures(&body, "a")["chatExposures"], 0, "{body}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no exposure: {body}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // The form's checkout keeps the arm.
    let response = post_with_cookie(
        &app,
        "/api/create-checkout.js",
        &format!("vid={a}"),
        &json!({ "source": "help_funnel", "campaignid": "333" }),
    )
    .await;
    assert_eq!(response.status(), 200);
    let mut found = app
        .db
        .query("SELECT VALUE experiment FROM checkout_session WHERE visitor = type::record('visitor', $v)")
        .bind(("v", a.clone()))
        .await
        .expect("query");
    let kept: Vec<Value> = found.take(0).expect("arm");
    assert_eq!(kept, [json!({ "experiment": id, "arm": "a" })]);
}
