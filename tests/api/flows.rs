//! The funnels' flows as data (issue 47): the file's flows as version 1, drafts checked field by
//! field, publishing (new conversations follow the new version at once; a running one keeps its
//! own), rollback, routing, the record of every change, and previews of a draft in the real
//! funnel actor that count nowhere. Several processes: tests/api/cluster.rs.

use std::time::Duration;

use helpnow::loadtest::client::Client;
use serde_json::{Value, json};

use crate::auth::{error_of, sign_up};
use crate::billing::verified_admin;
use crate::funnel_socket::{self, ack, connect, target_at};
use crate::helpers::{TestApp, get_with_cookie, post_with_cookie, spawn_app_with};

const ADMIN: &str = "ops@example.com";

async fn admin_app() -> (TestApp, String) {
    let app = spawn_app_with(|settings| settings.admin.emails = vec![ADMIN.to_owned()]).await;
    let admin = verified_admin(&app, ADMIN).await;
    (app, admin)
}

async fn get_json(app: &TestApp, path: &str, cookie: &str) -> (u16, Value) {
    error_of(get_with_cookie(app, path, cookie).await).await
}

async fn post_json(app: &TestApp, path: &str, cookie: &str, body: &Value) -> (u16, Value) {
    error_of(post_with_cookie(app, path, cookie, body).await).await
}

async fn put_json(app: &TestApp, path: &str, cookie: &str, body: &Value) -> (u16, Value) {
    let response = app
        .client
        .put(app.url(path))
        .header("cookie", cookie)
        .json(body)
        .send()
        .await
        .expect("request reaches the server");
    error_of(response).await
}

/// The published version of `flow` and its script.
pub(crate) async fn published_script(app: &TestApp, admin: &str, flow: &str) -> (u32, Value) {
    let (status, flows) = get_json(app, "/api/admin/flows", admin).await;
    assert_eq!(status, 200, "{flows}");
    let flow = flows["flows"]
        .as_array()
        .expect("flows")
        .iter()
        .find(|f| f["name"] == flow)
        .unwrap_or_else(|| panic!("no flow {flow} in {flows}"))
        .clone();
    let version = u32::try_from(flow["published"].as_u64().expect("published")).expect("small");
    (version, flow["script"].clone())
}

/// Saves `script` as the draft of `flow` (from its published version) and publishes it.
pub(crate) async fn publish(
    app: &TestApp,
    admin: &str,
    flow: &str,
    script: &Value,
) -> (u16, Value) {
    let (based_on, _) = published_script(app, admin, flow).await;
    let path = format!("/api/admin/flows/{flow}/draft");
    let (status, saved) = put_json(
        app,
        &path,
        admin,
        &json!({ "script": script, "basedOn": based_on }),
    )
    .await;
    assert_eq!(status, 200, "{saved}");
    let path = format!("/api/admin/flows/{flow}/publish");
    post_json(app, &path, admin, &json!({ "basedOn": based_on })).await
}

/// A funnel socket with `auth` (and a cookie), and its first `conversation` event.
async fn join_with(app: &TestApp, auth: Value, cookie: Option<&str>) -> (Client, Value) {
    funnel_socket::join(&target_at(&app.address), &auth, cookie).await
}

/// A visitor id of the right shape (16 characters or more) for a test's short name.
fn vid(visitor: &str) -> String {
    format!("visitor-of-flows-{visitor}")
}

/// A visitor (`vid` of a short name) joins the chat funnel, with the ad's fields in `extra`.
async fn join(app: &TestApp, visitor: &str, extra: Value) -> (Client, Value) {
    let mut auth = json!({ "funnel": "chat", "visitorId": vid(visitor) });
    if let (Some(auth), Some(extra)) = (auth.as_object_mut(), extra.as_object()) {
        auth.extend(extra.clone());
    }
    join_with(app, auth, None).await
}

/// Sends `text` and waits for it to be stored and answered: the reply's text.
async fn exchange(client: &mut Client, text: &str) -> String {
    let reply = funnel_socket::exchange(client, text).await;
    reply["text"].as_str().expect("text").to_owned()
}

fn greeting(conversation: &Value) -> String {
    conversation["messages"][0]["text"]
        .as_str()
        .expect("a greeting")
        .to_owned()
}

async fn stored_version(app: &TestApp, visitor: &str) -> (String, i64) {
    let mut response = app
        .db
        .query(
            "SELECT flow, flow_version FROM funnel_conversation \
             WHERE visitor = type::record('visitor', $v) AND funnel = 'chat'",
        )
        .bind(("v", vid(visitor)))
        .await
        .expect("query");
    let rows: Vec<Value> = response.take(0).expect("rows");
    let row = rows.first().expect("a stored conversation");
    (
        row["flow"].as_str().expect("flow").to_owned(),
        row["flow_version"].as_i64().expect("version"),
    )
}

#[tokio::test]
async fn the_files_flows_are_version_1_and_only_admins_see_them() {
    let (app, admin) = admin_app().await;
    let (status, flows) = get_json(&app, "/api/admin/flows", &admin).await;
    assert_eq!(status, 200, "{flows}");
    let names: Vec<&str> = flows["flows"]
        .as_array()
        .expect("flows")
        .iter()
        .map(|flow| flow["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["computer", "default", "email", "keyword"]);
    for flow in flows["flows"].as_array().expect("flows") {
        assert_eq!(flow["published"], 1, "{flow}");
        assert_eq!(flow["versions"][0]["publishedBy"], "config/funnels.toml");
        assert_eq!(flow["script"]["typingDelayMinMs"], 1500);
        assert_eq!(flow["script"]["autoCheckoutAfterS"], 15);
    }
    assert_eq!(flows["routing"]["defaultFlow"], "default");
    assert_eq!(flows["routing"]["keywordFlow"], "keyword");
    assert_eq!(flows["routing"]["campaigns"]["21453478993"], "email");
    assert_eq!(flows["routing"]["keywords"]["email"], "email");
    assert_eq!(flows["fields"].as_array().map(Vec::len), Some(8));
    assert_eq!(flows["placeholders"][0]["name"], "{assistant}");

    let (_, history) = get_json(&app, "/api/admin/flows/history", &admin).await;
    assert_eq!(history["entries"].as_array().map(Vec::len), Some(4));
    assert!(
        history["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .all(|entry| entry["kind"] == "import" && entry["version"] == 1)
    );

    // Anyone else: as if the page did not exist.
    let member = sign_up(&app, "ann@example.com", "secret1").await;
    for cookie in ["", member.as_str()] {
        for path in ["/api/admin/flows", "/api/admin/flows/history"] {
            assert_eq!(get_with_cookie(&app, path, cookie).await.status(), 404);
        }
        let (status, _) = post_json(
            &app,
            "/api/admin/flows/default/publish",
            cookie,
            &json!({ "basedOn": 1 }),
        )
        .await;
        assert_eq!(status, 404);
    }
}

#[tokio::test]
async fn a_publish_reaches_new_conversations_at_once_while_a_running_one_keeps_its_version() {
    let (app, admin) = admin_app().await;
    let (_, v1) = published_script(&app, &admin, "default").await;
    let (mut running, conversation) = join(&app, "visitor-running", json!({})).await;
    let old_greeting = greeting(&conversation);
    assert!(old_greeting.starts_with("Hi, I'm "), "{old_greeting}");
    // The AI is offline in tests: the scripts answer.
    assert_eq!(
        exchange(&mut running, "my computer is slow").await,
        v1["followUp"]
    );

    let mut v2 = v1.clone();
    v2["greeting"] = json!("Hello, I'm {assistant} at {product}. Tell me what's wrong.");
    v2["troubleshooting"] = json!("Version 2 asks: what have you tried?");
    v2["typingDelayMinMs"] = json!(500);
    v2["typingDelayMaxMs"] = json!(600);
    let (status, published) = publish(&app, &admin, "default", &v2).await;
    assert_eq!(status, 200, "{published}");
    assert_eq!(published, json!({ "version": 2 }));

    // The running conversation keeps version 1, to its end.
    assert_eq!(
        exchange(&mut running, "it takes ages to start").await,
        v1["troubleshooting"]
    );
    assert_eq!(
        stored_version(&app, "visitor-running").await,
        ("default".to_owned(), 1)
    );
    // A new visitor gets version 2 at once, with its own typing delay.
    let (mut fresh, conversation) = join(&app, "visitor-new", json!({})).await;
    assert_eq!(
        greeting(&conversation),
        "Hello, I'm Emma at HelpNow. Tell me what's wrong."
    );
    let started = std::time::Instant::now();
    exchange(&mut fresh, "my wifi drops").await;
    assert!(
        started.elapsed() < Duration::from_millis(1400),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        exchange(&mut fresh, "every few minutes").await,
        "Version 2 asks: what have you tried?"
    );
    assert_eq!(
        stored_version(&app, "visitor-new").await,
        ("default".to_owned(), 2)
    );

    // The record: who, when, what changed.
    let (_, history) = get_json(&app, "/api/admin/flows/history?flow=default", &admin).await;
    let entry = &history["entries"][0];
    assert_eq!(entry["kind"], "publish");
    assert_eq!(entry["by"], ADMIN);
    assert_eq!(entry["flow"], "default");
    assert_eq!(entry["version"], 2);
    assert_eq!(entry["fromVersion"], 1);
    let changed: Vec<&str> = entry["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|change| change["field"].as_str().expect("field"))
        .collect();
    assert_eq!(
        changed,
        [
            "greeting",
            "troubleshooting",
            "typingDelayMinMs",
            "typingDelayMaxMs"
        ]
    );
    assert_eq!(entry["changes"][0]["before"], v1["greeting"]);
    assert_eq!(entry["changes"][2]["before"], "1500");
    assert_eq!(entry["changes"][2]["after"], "500");
    let at: chrono::DateTime<chrono::Utc> =
        entry["at"].as_str().expect("at").parse().expect("a time");
    assert!((chrono::Utc::now() - at).num_seconds() < 30);
    // The draft went with the publish; the versions stay.
    let (_, flows) = get_json(&app, "/api/admin/flows", &admin).await;
    let default = flows["flows"]
        .as_array()
        .expect("flows")
        .iter()
        .find(|f| f["name"] == "default")
        .expect("default")
        .clone();
    assert_eq!(default["draft"], Value::Null);
    assert_eq!(default["published"], 2);
    let (status, old) = get_json(&app, "/api/admin/flows/default/versions/1", &admin).await;
    assert_eq!(status, 200);
    assert_eq!(old["script"], v1);
}

#[tokio::test]
async fn every_problem_of_a_draft_is_named_at_its_field_and_nothing_is_published() {
    let (app, admin) = admin_app().await;
    let (_, v1) = published_script(&app, &admin, "default").await;
    let mut bad = v1.clone();
    bad["greeting"] = json!("   ");
    bad["followUp"] = json!("Hello {name}");
    bad["troubleshooting"] = json!("x".repeat(601));
    bad["finalChat"] = json!("We can help with your {keyword}. Click 'Get started >>'.");
    bad["typingDelayMinMs"] = json!(100);
    bad["typingDelayMaxMs"] = json!(9000);
    bad["autoCheckoutAfterS"] = json!(500);
    let (status, saved) = put_json(
        &app,
        "/api/admin/flows/default/draft",
        &admin,
        &json!({ "script": bad, "basedOn": 1 }),
    )
    .await;
    assert_eq!(status, 200, "saved with its problems: {saved}");
    let fields: Vec<&str> = saved["draft"]["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .map(|problem| problem["field"].as_str().expect("field"))
        .collect();
    assert_eq!(
        fields,
        [
            "greeting",
            "followUp",
            "troubleshooting",
            "typingDelayMinMs",
            "typingDelayMaxMs",
            "autoCheckoutAfterS",
            "finalChat"
        ]
    );
    let (status, refused) = post_json(
        &app,
        "/api/admin/flows/default/publish",
        &admin,
        &json!({ "basedOn": 1 }),
    )
    .await;
    assert_eq!(status, 422, "{refused}");
    assert_eq!(refused["error"], "invalid");
    assert_eq!(refused["problems"], saved["draft"]["problems"]);
    assert_eq!(refused["problems"][0]["message"], "Greeting is empty.");
    assert_eq!(
        refused["problems"][6]["message"],
        "This flow is the default flow, chosen for visitors who may have no keyword: it cannot use {keyword}."
    );
    assert_eq!(
        published_script(&app, &admin, "default").await,
        (1, v1.clone())
    );

    // A draft made from a version no longer published is refused: someone published meanwhile.
    let mut good = v1.clone();
    good["greeting"] = json!("Hi from the second admin.");
    let (status, published) = publish(&app, &admin, "email", &good).await;
    assert_eq!(status, 200, "{published}");
    let (status, moved) = post_json(
        &app,
        "/api/admin/flows/default/publish",
        &admin,
        &json!({ "basedOn": 0 }),
    )
    .await;
    assert_eq!(status, 409, "{moved}");
    assert_eq!(moved["error"], "moved");
    // A malformed body, an unknown flow, a bad new flow's name.
    let (status, unreadable) = put_json(
        &app,
        "/api/admin/flows/default/draft",
        &admin,
        &json!({ "script": { "greeting": "Hi" }, "basedOn": 1 }),
    )
    .await;
    assert_eq!(status, 400, "{unreadable}");
    let (status, _) = put_json(
        &app,
        "/api/admin/flows/nothing/draft",
        &admin,
        &json!({ "script": v1, "basedOn": null }),
    )
    .await;
    assert_eq!(status, 404);
    let (status, refused) = post_json(
        &app,
        "/api/admin/flows",
        &admin,
        &json!({ "name": "Printer Help", "copyFrom": "default" }),
    )
    .await;
    assert_eq!(status, 422, "{refused}");
    assert_eq!(refused["problems"][0]["field"], "name");
    // A routing that names a flow that does not exist, or sends a campaign to a {keyword} flow.
    let (status, refused) = put_json(
        &app,
        "/api/admin/flows/routing",
        &admin,
        &json!({ "basedOn": 1, "routing": {
            "campaigns": { "777": "keyword" },
            "keywords": { "printer": "printers" },
            "keywordFlow": "keyword",
            "defaultFlow": "default",
        }}),
    )
    .await;
    assert_eq!(status, 422, "{refused}");
    let fields: Vec<&str> = refused["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .map(|problem| problem["field"].as_str().expect("field"))
        .collect();
    assert_eq!(fields, ["campaigns.777", "keywords.printer"]);
}

#[tokio::test]
async fn a_new_flow_routed_by_campaign_and_a_rollback_each_reach_new_conversations() {
    let (app, admin) = admin_app().await;
    let (status, created) = post_json(
        &app,
        "/api/admin/flows",
        &admin,
        &json!({ "name": "printers", "copyFrom": "computer" }),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let mut script = created["draft"]["script"].clone();
    script["greeting"] = json!("Printer trouble? I'm {assistant}, and I can help.");
    let (status, saved) = put_json(
        &app,
        "/api/admin/flows/printers/draft",
        &admin,
        &json!({ "script": script, "basedOn": null }),
    )
    .await;
    assert_eq!(status, 200, "{saved}");
    let (status, published) = post_json(
        &app,
        "/api/admin/flows/printers/publish",
        &admin,
        &json!({ "basedOn": null }),
    )
    .await;
    assert_eq!(status, 200, "{published}");
    assert_eq!(published["version"], 1);
    // Not routed yet: a visitor of campaign 777 gets the default flow.
    let (_, conversation) = join(&app, "v-before", json!({ "campaignid": "777" })).await;
    assert!(!greeting(&conversation).starts_with("Printer trouble"));
    let (status, routed) = put_json(
        &app,
        "/api/admin/flows/routing",
        &admin,
        &json!({ "basedOn": 1, "routing": {
            "campaigns": { "21453478993": "email", "21453479112": "computer", " 777 ": "printers" },
            "keywords": { "email": "email", "computer": "computer", "Laser Printer": "printers" },
            "keywordFlow": "keyword",
            "defaultFlow": "default",
        }}),
    )
    .await;
    assert_eq!(status, 200, "{routed}");
    assert_eq!(routed["version"], 2);
    let (_, conversation) = join(&app, "v-campaign", json!({ "campaignid": "777" })).await;
    assert_eq!(
        greeting(&conversation),
        "Printer trouble? I'm Emma, and I can help."
    );
    let (_, conversation) = join(
        &app,
        "v-keyword",
        json!({ "keyword": "HP laser printer offline" }),
    )
    .await;
    assert!(greeting(&conversation).starts_with("Printer trouble"));

    // Rollback: version 1 of the default flow again, after a version 2.
    let (_, v1) = published_script(&app, &admin, "default").await;
    let mut v2 = v1.clone();
    v2["greeting"] = json!("Version 2 says hello.");
    assert_eq!(publish(&app, &admin, "default", &v2).await.0, 200);
    let (_, conversation) = join(&app, "v-2", json!({})).await;
    assert_eq!(greeting(&conversation), "Version 2 says hello.");
    let (status, rolled) = post_json(
        &app,
        "/api/admin/flows/default/rollback",
        &admin,
        &json!({ "version": 1 }),
    )
    .await;
    assert_eq!(status, 200, "{rolled}");
    let (_, conversation) = join(&app, "v-back", json!({})).await;
    let v1_greeting = v1["greeting"].as_str().expect("greeting");
    assert_eq!(
        greeting(&conversation),
        v1_greeting.replace("{assistant}", "Emma")
    );
    assert_eq!(
        stored_version(&app, "v-back").await,
        ("default".to_owned(), 1)
    );
    let (_, history) = get_json(&app, "/api/admin/flows/history", &admin).await;
    let kinds: Vec<(&str, &str)> = history["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .take(4)
        .map(|entry| {
            (
                entry["kind"].as_str().expect("kind"),
                entry["flow"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("rollback", "default"),
            ("publish", "default"),
            ("routing", "-"),
            ("publish", "printers")
        ]
    );
    assert_eq!(history["entries"][0]["version"], 1);
    assert_eq!(history["entries"][0]["fromVersion"], 2);
    let routing_changes: Vec<&str> = history["entries"][2]["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|change| change["field"].as_str().expect("field"))
        .collect();
    assert_eq!(routing_changes, ["campaigns.777", "keywords.laser printer"]);
}

#[tokio::test]
async fn a_preview_runs_the_draft_in_the_real_actor_for_an_admin_and_counts_nowhere() {
    let (app, admin) = admin_app().await;
    let (_, v1) = published_script(&app, &admin, "email").await;
    let mut draft = v1.clone();
    draft["greeting"] = json!("Preview of a draft, {assistant}.");
    draft["followUp"] = json!("The draft's follow-up.");
    draft["typingDelayMinMs"] = json!(500);
    draft["typingDelayMaxMs"] = json!(500);
    let (status, preview) = post_json(
        &app,
        "/api/admin/flows/email/preview",
        &admin,
        &json!({ "script": draft }),
    )
    .await;
    assert_eq!(status, 201, "{preview}");
    let id = preview["previewId"].as_str().expect("an id").to_owned();
    let tables = [
        "analytics_event",
        "journey",
        "analytics_daily",
        "visitor",
        "checkout_session",
    ];
    let mut before = Vec::new();
    for table in tables {
        before.push(count(&app, table).await);
    }

    // The page loads in the frame: the funnel page may be framed by the site, and is no view.
    let page = get_with_cookie(&app, &format!("/chat-help?preview={id}"), &admin).await;
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .expect("ascii")
        .to_owned();
    assert!(csp.contains("frame-ancestors 'self'"), "{csp}");
    assert_eq!(page.headers()["x-frame-options"], "SAMEORIGIN");

    let auth = json!({ "funnel": "chat", "preview": id, "keyword": "outlook email" });
    let (mut client, conversation) = join_with(&app, auth.clone(), Some(&admin)).await;
    assert_eq!(greeting(&conversation), "Preview of a draft, Emma.");
    assert_eq!(
        exchange(&mut client, "my email will not open").await,
        "The draft's follow-up."
    );
    exchange(&mut client, "it says offline").await;
    let last = exchange(&mut client, "I restarted it").await;
    assert_eq!(last, v1["finalChat"]);
    // Its checkout opens none.
    let id = client
        .emit_with_ack("checkout", json!({}))
        .await
        .expect("sent");
    let answer = ack(&mut client, id).await;
    assert_eq!(answer["url"], "/admin/flows");

    // Counted nowhere: no event, no journey, no visitor, no checkout; the published flow is
    // unchanged.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mut after = Vec::new();
    for table in tables {
        after.push(count(&app, table).await);
    }
    assert_eq!(after, before, "{tables:?}");
    // Other pages may not be framed at all.
    let landing = app.get("/landing").await;
    let csp = landing.headers()["content-security-policy"]
        .to_str()
        .expect("ascii");
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert_eq!(landing.headers()["x-frame-options"], "DENY");
    assert_eq!(published_script(&app, &admin, "email").await, (1, v1));
    let (_, real) = join(&app, "a-visitor", json!({ "keyword": "email" })).await;
    assert!(!greeting(&real).starts_with("Preview"));

    // Only for an admin, only for a preview that exists.
    let member = sign_up(&app, "ann@example.com", "secret1").await;
    let target = target_at(&app.address);
    for cookie in [None, Some(member.as_str())] {
        let refused = connect(&target, &auth, cookie).await;
        assert!(
            refused.is_err(),
            "a preview without an admin's session was joined"
        );
    }
    let unknown = json!({ "funnel": "chat", "preview": "nosuchpreview" });
    assert!(connect(&target, &unknown, Some(&admin)).await.is_err());
}

async fn count(app: &TestApp, table: &str) -> i64 {
    let sql = format!("SELECT count() FROM {table} GROUP ALL");
    let mut response = app.db.query(sql).await.expect("query");
    let rows: Vec<Value> = response.take(0).expect("rows");
    rows.first()
        .and_then(|row| row["count"].as_i64())
        .unwrap_or(0)
}
