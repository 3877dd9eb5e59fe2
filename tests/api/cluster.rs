//! Several `helpnow` processes on one SurrealDB server (`helpnow-surreal`, started here on its
//! own SurrealKV files), behind Debian's HAProxy with `config/haproxy.cfg`: what one process
//! stored, another carries on; a conversation whose process died (`kill -9`) goes on on another
//! with its reply and its timer; a long-polling session keeps to its process through the balancer,
//! and a dead process is taken out of it.

use std::time::{Duration, Instant};

use helpnow::loadtest::client::{Client, Target, ack_of, event_of};
use serde_json::{Value, json};

use crate::processes::{Balancer, Server, SurrealServer, start_with};

/// A helpnow process on `surreal`, as a deployment of several runs it (behind the balancer, whose
/// X-Forwarded-For it trusts).
fn start_on(surreal: &SurrealServer) -> Server {
    let mut settings = surreal.settings();
    settings.push(("APP__SERVER__TRUST_FORWARDED_FOR", "true".into()));
    let settings: Vec<(&str, &str)> = settings
        .iter()
        .map(|(name, value)| (*name, value.as_str()))
        .collect();
    start_with(&surreal.url, &settings)
}

fn target_of(server: &Server) -> Target {
    target_at(&server.address)
}

fn target_at(address: &str) -> Target {
    let url = url::Url::parse(address).expect("address");
    let host = format!(
        "{}:{}",
        url.host_str().expect("host"),
        url.port().expect("port")
    );
    Target {
        address: host.parse().expect("a socket address"),
        host,
    }
}

/// A visitor's funnel connection to `server`, and the `conversation` event it was given.
async fn join_funnel(server: &Server, visitor: &str) -> (Client, Value) {
    join_funnel_at(&target_of(server), visitor).await
}

async fn join_funnel_at(target: &Target, visitor: &str) -> (Client, Value) {
    let auth = json!({ "funnel": "chat", "visitorId": visitor });
    let local = std::net::IpAddr::from([127, 0, 0, 1]);
    let mut client = Client::connect(
        target,
        local,
        "/funnel",
        &auth,
        None,
        Duration::from_secs(30),
    )
    .await
    .expect("the visitor joins");
    let conversation = next_event(&mut client, "conversation").await;
    (client, conversation)
}

/// The data of the next `name` event (others are skipped), at most 30 s away.
async fn next_event(client: &mut Client, name: &str) -> Value {
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let packet = client.next_packet().await.expect("a packet");
            if let Some((event, data)) = event_of(&packet)
                && event == name
            {
                return data.clone();
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {name} event within 30 s"))
}

/// Sends `text` and waits for the acknowledgement that it is stored.
async fn send(client: &mut Client, text: &str) {
    let id = client
        .emit_with_ack("send", json!({ "text": text }))
        .await
        .expect("sent");
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let packet = client.next_packet().await.expect("a packet");
            if let Some(ack) = ack_of(&packet, id) {
                assert_eq!(ack["ok"], true, "{ack}");
                return;
            }
        }
    })
    .await
    .expect("acknowledged within 30 s");
}

fn texts(conversation: &Value) -> Vec<(String, String)> {
    conversation["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|message| {
            (
                message["role"].as_str().expect("role").to_owned(),
                message["text"].as_str().expect("text").to_owned(),
            )
        })
        .collect()
}

/// A visitor's process dies twice: once with a reply owed (the next process writes it), once
/// with the auto-checkout armed (the next process opens the checkout at the stored deadline,
/// once). Every acknowledged message is in the conversation the next process shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_funnel_conversation_goes_on_on_another_process_after_kill_9() {
    let surreal = SurrealServer::start();
    let first = start_on(&surreal);
    assert!(first.migrations_applied > 0, "the shared store is migrated");
    let (second, third) = (start_on(&surreal), start_on(&surreal));
    assert_eq!(
        (second.migrations_applied, third.migrations_applied),
        (0, 0),
        "the other processes find the store migrated"
    );
    let visitor = "cluster-visitor-00000001";

    // On the first process: a message and its reply, then a second message, acknowledged, whose
    // reply is still being typed when the process dies.
    let (mut client, conversation) = join_funnel(&first, visitor).await;
    assert_eq!(texts(&conversation).len(), 1, "the greeting");
    send(&mut client, "my printer will not print").await;
    let reply = next_event(&mut client, "message").await;
    assert_eq!(reply["role"], "assistant");
    send(&mut client, "I restarted it and it still does not print").await;
    first.kill_hard();

    // On the second: the whole conversation, then the reply it owed.
    let (mut client, conversation) = join_funnel(&second, visitor).await;
    let seen = texts(&conversation);
    let visitor_texts: Vec<&str> = seen
        .iter()
        .filter(|(role, _)| role == "user")
        .map(|(_, text)| text.as_str())
        .collect();
    assert_eq!(
        visitor_texts,
        [
            "my printer will not print",
            "I restarted it and it still does not print"
        ],
        "{conversation}"
    );
    assert_eq!(
        seen.len(),
        4,
        "greeting, message, reply, message: {conversation}"
    );
    assert_eq!(
        seen[2].1,
        reply["text"].as_str().expect("text"),
        "the first process's reply"
    );
    let owed = next_event(&mut client, "message").await;
    assert_eq!(owed["role"], "assistant", "{owed}");
    send(
        &mut client,
        "I tried restarting the printer and the computer",
    )
    .await;
    let last = next_event(&mut client, "message").await;
    assert_eq!(last["isFinal"], true, "the last step: {last}");
    let final_at = Instant::now();

    // The final message armed the auto-checkout (15 s after it); the second process dies long
    // before that, and the visitor comes back on the third 8 s after the final message.
    second.kill_hard();
    tokio::time::sleep(Duration::from_secs(8).saturating_sub(final_at.elapsed())).await;
    let (mut client, conversation) = join_funnel(&third, visitor).await;
    assert_eq!(texts(&conversation).len(), 7, "{conversation}");
    let checkout = next_event(&mut client, "checkout").await;
    assert!(
        checkout["url"].as_str().is_some_and(|url| !url.is_empty()),
        "{checkout}"
    );
    let waited = final_at.elapsed();
    assert!(
        waited >= Duration::from_millis(13_500) && waited <= Duration::from_secs(20),
        "the checkout came at its stored deadline (15 s after the final message), not 15 s \
         after the reconnect: {waited:?} after the final message"
    );
    // Once: no second checkout follows.
    let again = tokio::time::timeout(Duration::from_secs(3), async {
        loop {
            let packet = client.next_packet().await.expect("a packet");
            if event_of(&packet).is_some_and(|(event, _)| event == "checkout") {
                return;
            }
        }
    })
    .await;
    assert!(again.is_err(), "the checkout opened once");
}

const HANDSHAKE: &str = "/socket.io/?EIO=4&transport=polling";

/// A client that stays on long-polling (one that cannot upgrade) keeps to the process that opened
/// its session, by the balancer's cookie; without the cookie the balancer spreads its requests
/// over the processes and the other one does not know the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_polling_session_keeps_to_its_process_through_the_balancer() {
    let surreal = SurrealServer::start();
    let (first, second) = (start_on(&surreal), start_on(&surreal));
    let balancer = Balancer::start(&[&first, &second]);
    let http = reqwest::Client::new();
    let url = |query: &str| format!("{}{HANDSHAKE}{query}", balancer.address);

    let open = http.get(url("")).send().await.expect("handshake");
    assert_eq!(open.status(), 200);
    let cookie = crate::helpers::cookie_named(&open, "helpnow_server")
        .expect("the balancer names the process in a cookie");
    let body = open.text().await.expect("body");
    let open: Value =
        serde_json::from_str(body.strip_prefix('0').expect("an open packet")).expect("JSON");
    let sid = open["sid"].as_str().expect("sid");
    let session = url(&format!("&sid={sid}"));

    // With the cookie: every request reaches the session's process.
    for _ in 0..6 {
        let posted = http
            .post(&session)
            .header("cookie", &cookie)
            .body("40/nope,")
            .send()
            .await
            .expect("POST");
        assert_eq!(posted.status(), 200, "{:?}", posted.text().await);
    }
    let polled = http
        .get(&session)
        .header("cookie", &cookie)
        .send()
        .await
        .expect("poll");
    assert_eq!(polled.status(), 200);
    assert!(
        polled.text().await.expect("body").starts_with("44/nope,"),
        "the session's own process answered"
    );

    // Without it: round robin, and the other process has never heard of the session.
    let mut unknown = 0;
    for _ in 0..6 {
        let posted = http
            .post(&session)
            .body("40/nope,")
            .send()
            .await
            .expect("POST");
        if posted.status() == 400 {
            assert!(
                posted
                    .text()
                    .await
                    .expect("body")
                    .contains("Session ID unknown"),
                "the reference error"
            );
            unknown += 1;
        }
    }
    assert!(
        (1..6).contains(&unknown),
        "requests without the cookie were spread over both processes ({unknown} of 6 unknown)"
    );
}

/// Visitors join over WebSockets through the balancer; when a process dies (`kill -9`), the
/// balancer takes it out, every new visitor is served, and the visitors who were on it come back
/// to their whole conversations.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websockets_go_through_the_balancer_and_a_dead_process_is_taken_out() {
    let surreal = SurrealServer::start();
    let (first, second) = (start_on(&surreal), start_on(&surreal));
    let balancer = Balancer::start(&[&first, &second]);
    let target = target_at(&balancer.address);

    let mut visitors = Vec::new();
    for n in 0..4 {
        let visitor = format!("balanced-visitor-{n:07}");
        let (mut client, _) = join_funnel_at(&target, &visitor).await;
        send(&mut client, &format!("my tablet {n} has no sound")).await;
        visitors.push((visitor, client));
    }
    first.kill_hard();

    for n in 0..6 {
        let (_client, conversation) =
            join_funnel_at(&target, &format!("later-visitor-{n:08}")).await;
        assert_eq!(
            texts(&conversation).len(),
            1,
            "a new conversation: {conversation}"
        );
    }
    for (n, (visitor, client)) in visitors.into_iter().enumerate() {
        drop(client);
        let (_client, conversation) = join_funnel_at(&target, &visitor).await;
        assert!(
            texts(&conversation).iter().any(
                |(role, text)| role == "user" && *text == format!("my tablet {n} has no sound")
            ),
            "{conversation}"
        );
    }
    drop(second);
}

/// The SurrealDB server dies (`kill -9`) under a process: its health answers 503 (so a balancer
/// takes it out), and once the server is back on the same files the process reconnects by itself,
/// answers 200, and every message it acknowledged before is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_messages_survive_the_database_server_s_kill_9() {
    let mut surreal = SurrealServer::start();
    let server = start_on(&surreal);
    let visitor = "db-restart-visitor-00001";
    let (mut client, _) = join_funnel(&server, visitor).await;
    let sent = [
        "my laptop is slow",
        "it is five years old",
        "I have not tried anything",
    ];
    for text in sent {
        send(&mut client, text).await;
        next_event(&mut client, "message").await;
    }
    drop(client);
    surreal.kill_hard();

    let health = format!("{}/health", server.address);
    let status = |health: String| async move {
        tokio::task::spawn_blocking(move || crate::processes::status_of_get(&health).ok())
            .await
            .expect("status")
    };
    assert_eq!(
        status(health.clone()).await,
        Some(503),
        "the database is gone"
    );
    let surreal = tokio::task::spawn_blocking(move || {
        surreal.restart();
        surreal
    })
    .await
    .expect("restarted");
    let deadline = Instant::now() + Duration::from_secs(30);
    while status(health.clone()).await != Some(200) {
        assert!(Instant::now() < deadline, "healthy again within 30 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (_client, conversation) = join_funnel(&server, visitor).await;
    let stored: Vec<String> = texts(&conversation)
        .into_iter()
        .filter(|(role, _)| role == "user")
        .map(|(_, text)| text)
        .collect();
    assert_eq!(stored, sent, "{conversation}");
    assert_eq!(
        texts(&conversation).len(),
        7,
        "and the replies: {conversation}"
    );
    drop(surreal);
}
