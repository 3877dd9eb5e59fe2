use serde_json::json;

use crate::helpers::spawn_app;

#[tokio::test]
async fn an_acknowledged_event_is_stored() {
    let app = spawn_app().await;
    let response = app
        .post_json(
            "/api/events",
            &json!({"name": "page_view", "path": "/landing", "properties": {"ref": "ad"}}),
        )
        .await;
    assert_eq!(response.status(), 201);
    let body: serde_json::Value = response.json().await.expect("json");
    assert!(
        body["id"]
            .as_str()
            .expect("an id")
            .starts_with("analytics_event:")
    );
    assert_eq!(
        helpnow::store::analytics::count_named(&app.db, "page_view")
            .await
            .expect("count"),
        1
    );
}

#[tokio::test]
async fn unknown_events_and_bad_bodies_get_clear_errors_and_store_nothing() {
    let app = spawn_app().await;
    let response = app
        .post_json("/api/events", &json!({"name": "hack_the_planet"}))
        .await;
    assert_eq!(response.status(), 400);
    let body: serde_json::Value = response.json().await.expect("json");
    assert_eq!(body["error"], "unknown_event");
    assert_eq!(body["message"], "Unknown analytics event");

    let response = app
        .client
        .post(app.url("/api/events"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 400);
    let body: serde_json::Value = response.json().await.expect("json");
    assert_eq!(body["error"], "invalid_json");

    let big = "x".repeat(5000);
    let response = app
        .post_json(
            "/api/events",
            &json!({"name": "page_view", "properties": {"big": big}}),
        )
        .await;
    assert_eq!(response.status(), 400);
    assert_eq!(
        helpnow::store::analytics::count_named(&app.db, "page_view")
            .await
            .expect("count"),
        0
    );
}

#[tokio::test]
async fn one_address_cannot_flood_the_event_table() {
    let app = spawn_app().await;
    let mut statuses = Vec::new();
    for _ in 0..40 {
        statuses.push(
            app.post_json("/api/events", &json!({"name": "feature_use"}))
                .await
                .status()
                .as_u16(),
        );
    }
    let accepted = statuses.iter().filter(|s| **s == 201).count() as u64;
    assert!(
        statuses.contains(&429),
        "a burst past the quota is refused: {statuses:?}"
    );
    assert_eq!(
        helpnow::store::analytics::count_named(&app.db, "feature_use")
            .await
            .expect("count"),
        accepted,
        "exactly the acknowledged events are stored"
    );
}

#[tokio::test]
async fn events_the_server_records_cannot_come_from_a_browser() {
    let app = spawn_app().await;
    for name in ["purchase", "sign_up", "begin_trial", "subscription_start"] {
        let response = app.post_json("/api/events", &json!({ "name": name })).await;
        assert_eq!(response.status(), 400, "{name}");
        let body: serde_json::Value = response.json().await.expect("json");
        assert_eq!(body["error"], "server_event");
        assert_eq!(body["message"], "This event is recorded by the server.");
        assert_eq!(
            helpnow::store::analytics::count_named(&app.db, name)
                .await
                .expect("count"),
            0
        );
    }
}

#[tokio::test]
async fn a_forged_forwarded_for_header_does_not_escape_the_limit() {
    // A server reached directly: its trusted proxies leave out the test client's loopback.
    let app = crate::helpers::spawn_app_with(|settings| {
        settings.server.trusted_proxies = vec!["192.0.2.1".parse().expect("an address")];
    })
    .await;
    let mut refused = 0;
    for n in 0..40 {
        let response = app
            .client
            .post(app.url("/api/events"))
            .header("x-forwarded-for", format!("198.51.100.{n}"))
            .json(&json!({"name": "page_view"}))
            .send()
            .await
            .expect("sent");
        if response.status() == 429 {
            refused += 1;
        }
    }
    assert!(refused > 0, "without a trusted proxy the header is ignored");
}

#[tokio::test]
async fn a_browser_event_keeps_no_address_and_names_the_signed_in_account() {
    let app = spawn_app().await;
    let session = crate::auth::sign_up(&app, "ann@example.com", "secret1").await;
    let response = crate::helpers::post_with_cookie(
        &app,
        "/api/events",
        &session,
        &json!({
            "name": "feature_use",
            "path": "/",
            "properties": {
                "feature": "shortcuts", "email": "ann@example.com", "keyword": "help ann@example.com",
                "campaignid": "c1", "ref": "ad", "nested": {"a": 1}
            }
        }),
    )
    .await;
    assert_eq!(response.status(), 201);
    let mut stored = app
        .db
        .query("SELECT VALUE { properties: properties, account: <string> user.email } FROM analytics_event WHERE name = 'feature_use'")
        .await
        .expect("query");
    let rows: Vec<serde_json::Value> = stored.take(0).expect("rows");
    assert_eq!(
        rows,
        vec![json!({
            "properties": {"feature": "shortcuts", "campaignid": "c1"},
            "account": "ann@example.com"
        })]
    );
}
