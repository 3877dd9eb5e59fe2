//! The real binary on an on-disk SurrealKV store: what the API acknowledged survives `kill -9`,
//! a restart re-applies no migration, and SIGTERM stops the server cleanly.

use std::time::Duration;

use serde_json::json;

use crate::helpers::{Upgrade, test_settings, websocket_upgrade};
use crate::processes::{start, start_with};

#[tokio::test]
async fn acknowledged_records_survive_kill_9_and_a_restart() {
    let folder = tempfile::tempdir().expect("temp dir");
    let database_url = format!("surrealkv://{}/store", folder.path().display());
    let client = reqwest::Client::new();

    let server = start(&database_url);
    assert!(server.migrations_applied > 0, "a new store is migrated");
    let mut acknowledged = 0;
    for n in 0..20 {
        let response = client
            .post(format!("{}/api/events", server.address))
            .json(&json!({"name": "page_view", "properties": {"n": n}}))
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status(), 201);
        acknowledged += 1;
    }
    server.kill_hard();

    let server = start(&database_url);
    let health = client
        .get(format!("{}/health", server.address))
        .send()
        .await
        .expect("health");
    assert_eq!(health.status(), 200, "the store opens again after kill -9");
    assert_eq!(
        server.migrations_applied, 0,
        "a restart applies no migration twice"
    );
    let (exit, shutdown_log) = server.terminate();
    assert!(exit.success(), "SIGTERM stops the server cleanly: {exit:?}");
    assert!(
        shutdown_log
            .iter()
            .any(|entry| entry["message"] == "HelpNow stopped"),
        "{shutdown_log:?}"
    );
    let errors: Vec<_> = shutdown_log
        .iter()
        .filter(|entry| entry["level"] == "ERROR")
        .collect();
    assert!(
        errors.is_empty(),
        "a graceful stop logs no errors: {errors:?}"
    );

    let mut settings = test_settings().database;
    settings.url = database_url;
    let db = helpnow::store::connect(&settings)
        .await
        .expect("the store opens in this process");
    let stored = helpnow::store::analytics::count_named(&db, "page_view")
        .await
        .expect("count");
    assert_eq!(stored, acknowledged, "every acknowledged event is on disk");
}

#[tokio::test]
async fn sigterm_closes_real_time_connections_instead_of_waiting_for_them() {
    // Pings far apart: only the shutdown itself can end the waiting GET below.
    let server = start_with("mem://", &[("APP__REALTIME__PING_INTERVAL_MS", "600000")]);
    let client = reqwest::Client::new();
    let handshake = format!("{}/socket.io/?EIO=4&transport=polling", server.address);
    let open = client.get(&handshake).send().await.expect("handshake");
    let open = open.text().await.expect("open packet");
    let open: serde_json::Value = serde_json::from_str(&open[1..]).expect("JSON");
    let poll_url = format!("{handshake}&sid={}", open["sid"].as_str().expect("sid"));
    let waiting = tokio::spawn(async move {
        let response = client.get(poll_url).send().await.expect("poll");
        response.text().await.expect("body")
    });
    tokio::time::sleep(Duration::from_millis(300)).await;

    let (exit, shutdown_log) = tokio::task::spawn_blocking(move || server.terminate())
        .await
        .expect("terminate");
    assert!(exit.success(), "{exit:?}");
    assert_eq!(
        waiting.await.expect("poll task"),
        "1",
        "the waiting client is told the connection closed"
    );
    assert!(
        shutdown_log.iter().any(|entry| entry["message"]
            == "stopping: conversations handed over; closing real-time connections"
            && entry["connections"] == 1),
        "{shutdown_log:?}"
    );
}

/// WebSockets are no longer the HTTP server's once upgraded (src/realtime/upgrade.rs): a stop
/// still closes each with a close frame and waits for it to go out before the workers stop.
#[tokio::test]
async fn sigterm_closes_websockets_with_a_close_frame() {
    let server = start_with("mem://", &[("APP__REALTIME__PING_INTERVAL_MS", "600000")]);
    let Upgrade::Open(mut socket) = websocket_upgrade(
        &server.address,
        "/socket.io/?EIO=4&transport=websocket",
        &[],
    )
    .await
    else {
        panic!("the upgrade was refused");
    };
    assert!(socket.next_text().await.starts_with('0'), "the open packet");
    socket.send_text("40").await;
    assert!(socket.next_text().await.starts_with("40"), "joined");

    let (exit, shutdown_log) = tokio::task::spawn_blocking(move || server.terminate())
        .await
        .expect("terminate");
    assert!(exit.success(), "{exit:?}");
    let mut frames = Vec::new();
    while let Some(frame) = socket.next_frame().await {
        frames.push(frame);
    }
    assert!(
        matches!(frames.last(), Some(actix_http::ws::Frame::Close(_))),
        "the last frame is a close: {frames:?}"
    );
    assert!(
        shutdown_log.iter().any(|entry| entry["message"]
            == "stopping: conversations handed over; closing real-time connections"
            && entry["connections"] == 1),
        "{shutdown_log:?}"
    );
}

/// Funnel messages are written in groups (src/store/batch.rs): each visitor is told "stored" only
/// once the group holding its message has committed, so `kill -9` right after the last
/// acknowledgement (replies still being typed, later writes still in flight) loses none of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_funnel_messages_survive_kill_9_while_written_in_groups() {
    use helpnow::loadtest::client::{Client, Target, ack_of, event_of};

    let folder = tempfile::tempdir().expect("temp dir");
    let database_url = format!("surrealkv://{}/store", folder.path().display());
    let server = start(&database_url);
    let url = url::Url::parse(&server.address).expect("address");
    let target = Target {
        address: format!(
            "{}:{}",
            url.host_str().expect("host"),
            url.port().expect("port")
        )
        .parse()
        .expect("a socket address"),
        host: format!(
            "{}:{}",
            url.host_str().expect("host"),
            url.port().expect("port")
        ),
    };
    let visitors = 120;
    let clients = (0..visitors).map(|n| {
        let target = target.clone();
        async move {
            let visitor = format!("durable-visitor-{n:08}");
            let auth = serde_json::json!({ "funnel": "chat", "visitorId": visitor });
            let local = std::net::IpAddr::from([127, 0, 0, 1]);
            let patience = Duration::from_secs(30);
            let mut client = Client::connect(&target, local, "/funnel", &auth, None, patience)
                .await
                .expect("joins");
            loop {
                let packet = client.next_packet().await.expect("a packet");
                if event_of(&packet).is_some_and(|(name, _)| name == "conversation") {
                    break;
                }
            }
            let text = format!("my printer {n} will not print");
            let id = client
                .emit_with_ack("send", serde_json::json!({ "text": text }))
                .await
                .expect("sent");
            loop {
                let packet = client.next_packet().await.expect("a packet");
                if let Some(ack) = ack_of(&packet, id) {
                    assert_eq!(ack["ok"], true, "{ack}");
                    return (visitor, text, client);
                }
            }
        }
    });
    let acknowledged = futures_util::future::join_all(clients).await;
    server.kill_hard();

    let mut settings = test_settings().database;
    settings.url = database_url;
    let db = helpnow::store::connect(&settings)
        .await
        .expect("the store opens in this process");
    for (visitor, text, _client) in &acknowledged {
        let key = helpnow_actors::funnel::ConversationKey {
            visitor_id: visitor.clone(),
            funnel: helpnow_actors::rules::FunnelKind::Chat,
        };
        let stored = helpnow::store::funnels::load_conversation(&db, &key)
            .await
            .expect("loads")
            .expect("the conversation is on disk");
        assert!(
            stored.messages.iter().any(|m| &m.text == text),
            "the acknowledged message of {visitor} is on disk"
        );
    }
}
