//! The analytics events sent on to an external service (issue 19, `dashboard::forward`): a
//! local PostHog in its real wire format (`POST /batch/` with the project's API key) takes the
//! events the server stored, after refusing the first attempt.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{HttpResponse, web};
use serde_json::{Value, json};

use crate::helpers::{post_with_cookie, spawn_app_with};

const KEY: &str = "phc_mock_project_key_0123456789";

/// What the mock received: each request's path and body.
#[derive(Default)]
struct Received {
    requests: Vec<(String, Value)>,
}

async fn capture(
    request: actix_web::HttpRequest,
    body: web::Json<Value>,
    received: web::Data<Mutex<Received>>,
) -> HttpResponse {
    let mut received = received.lock().unwrap_or_else(|e| e.into_inner());
    received
        .requests
        .push((request.path().to_owned(), body.into_inner()));
    let body = &received
        .requests
        .last()
        .map(|r| r.1.clone())
        .unwrap_or_default();
    if body["api_key"] != KEY {
        return HttpResponse::Unauthorized().json(json!({
            "type": "authentication_error", "code": "invalid_api_key",
            "detail": "Project API key invalid. You can find your project API key in PostHog project settings."
        }));
    }
    // PostHog is down for the first batch: the server must send it again.
    if received.requests.len() == 1 {
        return HttpResponse::ServiceUnavailable().finish();
    }
    HttpResponse::Ok().json(json!({ "status": "Ok" }))
}

#[tokio::test]
async fn stored_events_reach_posthog_once_it_takes_them_and_never_the_browser() {
    let received = Arc::new(Mutex::new(Received::default()));
    let (port, handle) = crate::helpers::serve_mock(Arc::clone(&received), capture);

    let app = spawn_app_with(|settings| {
        let forward = &mut settings.analytics.forward;
        forward.provider = Some(helpnow::config::ForwardProvider::Posthog);
        forward.url = Some(format!("http://127.0.0.1:{port}"));
        forward.key = Some(KEY.to_owned().into());
        forward.interval_ms = 100;
        forward.settle_ms = 200;
    })
    .await;
    // The cursor starts when forwarding first runs: events after it go.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let response = post_with_cookie(
        &app,
        "/api/events",
        "vid=visitor-forward-000000001",
        &json!({ "name": "chatbot_funnel_view", "path": "/chat-help",
                 "properties": { "campaignid": "c7", "keyword": "printer" } }),
    )
    .await;
    assert_eq!(response.status(), 201);

    let mut batches = Vec::new();
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        batches = received
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .requests
            .clone();
        if batches.len() >= 2 {
            break;
        }
    }
    assert!(
        batches.len() >= 2,
        "a refused batch is sent again: {batches:?}"
    );
    let (path, first) = &batches[0];
    assert_eq!(path, "/batch/");
    let event = first["batch"]
        .as_array()
        .and_then(|batch| batch.iter().find(|e| e["event"] == "chatbot_funnel_view"))
        .cloned()
        .unwrap_or_else(|| panic!("the view in {first}"));
    assert_eq!(event["distinct_id"], "visitor-forward-000000001");
    assert_eq!(event["properties"]["campaignid"], "c7");
    assert_eq!(event["properties"]["path"], "/chat-help");
    assert_eq!(event["uuid"].as_str().map(str::len), Some(36));
    // The same event again, under the same uuid, and then no more.
    assert_eq!(batches[1].1["batch"], first["batch"]);
    tokio::time::sleep(Duration::from_millis(600)).await;
    let all = received
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .requests
        .len();
    assert_eq!(all, 2, "an accepted batch is not sent again");

    // The key stays on the server.
    let config = app
        .get("/api/public-config")
        .await
        .text()
        .await
        .expect("body");
    assert!(!config.contains(KEY));
    handle.stop(false).await;
}
