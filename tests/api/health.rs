use crate::helpers::spawn_app;

#[tokio::test]
async fn health_answers_ok_when_the_database_serves_queries() {
    let app = spawn_app().await;
    let response = app.get("/health").await;
    assert_eq!(response.status(), 200);
    let body: serde_json::Value = response.json().await.expect("json");
    assert_eq!(body["status"], "ok");
    assert_eq!(body["database"], "ok");
}

#[tokio::test]
async fn liveness_and_readiness_answer_apart() {
    let app = spawn_app().await;
    let live = app.get("/health/live").await;
    assert_eq!(live.status(), 200);
    let body: serde_json::Value = live.json().await.expect("json");
    assert_eq!(body, serde_json::json!({ "status": "ok" }));
    let ready = app.get("/health/ready").await;
    assert_eq!(ready.status(), 200);
    let body: serde_json::Value = ready.json().await.expect("json");
    assert_eq!(body["database"], "ok");
}

#[tokio::test]
async fn without_its_database_the_process_is_live_but_not_ready_and_ready_again_once_it_is_back() {
    let mut database = crate::processes::SurrealServer::start();
    let app = crate::helpers::spawn_app_with(|settings| {
        settings.database.url = database.url.clone();
        settings.database.username = Some(database.username.clone());
        settings.database.password = Some(database.password.clone().into());
    })
    .await;
    assert_eq!(app.get("/health/ready").await.status(), 200);

    database.kill_hard();
    let ready = app.get("/health/ready").await;
    assert_eq!(ready.status(), 503, "not ready without its database");
    let body: serde_json::Value = ready.json().await.expect("json");
    assert_eq!(body["database"], "unavailable");
    assert_eq!(
        app.get("/health").await.status(),
        503,
        "the balancer's check too"
    );
    assert_eq!(
        app.get("/health/live").await.status(),
        200,
        "still live: a restart would not bring the database back"
    );

    database.restart();
    let mut back = false;
    for _ in 0..100 {
        if app.get("/health/ready").await.status() == 200 {
            back = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(back, "ready again once the database answers");
}

#[tokio::test]
async fn every_answer_names_its_request_id() {
    let app = spawn_app().await;
    let mut ids = std::collections::HashSet::new();
    for path in [
        "/health",
        "/api/public-config",
        "/api/no-such-thing",
        "/landing",
    ] {
        let response = app.get(path).await;
        let id = response.headers()["x-request-id"]
            .to_str()
            .expect("ascii")
            .to_owned();
        assert!(id.len() >= 32, "{path}: a uuid, {id}");
        ids.insert(id);
    }
    assert_eq!(ids.len(), 4, "one id per request");
}

#[tokio::test]
async fn metrics_are_prometheus_text_with_requests_latency_and_connections() {
    let app = spawn_app().await;
    app.get("/landing").await;
    app.get("/api/shortcuts").await;
    let response = app.get("/metrics").await;
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .expect("ascii")
            .starts_with("text/plain"),
        "Prometheus text format"
    );
    let text = response.text().await.expect("text");
    assert!(
        text.contains(
            r#"helpnow_http_requests_total{method="GET",route="/api/shortcuts",status="200"} 1"#
        ),
        "{text}"
    );
    assert!(
        text.contains("helpnow_http_request_duration_seconds_bucket"),
        "{text}"
    );
    let open: f64 = text
        .lines()
        .find_map(|line| line.strip_prefix("helpnow_open_connections "))
        .expect("the open-connections gauge is exported")
        .parse()
        .expect("a number");
    assert!(
        open >= 1.0,
        "this very request holds a connection open: {open}"
    );
    assert!(text.contains("\nprocess_resident_memory_bytes "), "{text}");
}

#[tokio::test]
async fn every_answer_carries_the_security_headers() {
    let app = spawn_app().await;
    for path in ["/landing", "/api/public-config", "/health", "/no-such-page"] {
        let response = app.get(path).await;
        let headers = response.headers();
        let csp = headers["content-security-policy"].to_str().expect("ascii");
        assert!(
            csp.contains("default-src 'self'") && csp.contains("frame-ancestors 'none'"),
            "{path}: {csp}"
        );
        assert_eq!(headers["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(headers["x-frame-options"], "DENY", "{path}");
        assert_eq!(
            headers["referrer-policy"], "strict-origin-when-cross-origin",
            "{path}"
        );
        assert!(
            headers.get("strict-transport-security").is_none(),
            "no HSTS on plain http"
        );
    }
}

#[tokio::test]
async fn an_https_public_url_turns_on_hsts() {
    let app = crate::helpers::spawn_app_with(|settings| {
        settings.server.public_url = "https://helpnow.example".parse().expect("url");
    })
    .await;
    let response = app.get("/landing").await;
    assert!(
        response.headers()["strict-transport-security"]
            .to_str()
            .expect("ascii")
            .contains("max-age=")
    );
}
