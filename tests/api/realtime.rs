//! The real-time channel as the product serves it: handshakes, the Origin allowlist, the limits
//! from configuration. The protocol itself is checked with the official client (web/conformance).

use reqwest::StatusCode;
use serde_json::Value;

use crate::helpers::{TestApp, Upgrade, spawn_app, spawn_app_with, websocket_upgrade};

const HANDSHAKE: &str = "/socket.io/?EIO=4&transport=polling";

/// Opens a polling session and returns its sid and handshake.
async fn open_session(app: &TestApp) -> (String, Value) {
    let response = app.get(HANDSHAKE).await;
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.text().await.expect("body");
    let open: Value = serde_json::from_str(body.strip_prefix('0').expect("an open packet"))
        .expect("the open packet is JSON");
    (open["sid"].as_str().expect("sid").to_owned(), open)
}

async fn post(app: &TestApp, sid: &str, body: &str) -> reqwest::Response {
    app.client
        .post(app.url(&format!("{HANDSHAKE}&sid={sid}")))
        .body(body.to_owned())
        .send()
        .await
        .expect("POST")
}

async fn poll(app: &TestApp, sid: &str) -> (StatusCode, String) {
    let response = app.get(&format!("{HANDSHAKE}&sid={sid}")).await;
    let status = response.status();
    (status, response.text().await.expect("body"))
}

/// Asks to join `namespace` and checks that the session answers with the refusal.
async fn assert_namespace_refused(app: &TestApp, sid: &str, namespace: &str) {
    let connect = format!("40{namespace},");
    assert_eq!(post(app, sid, &connect).await.status(), StatusCode::OK);
    assert_eq!(
        poll(app, sid).await.1,
        format!(r#"44{namespace},{{"message":"Invalid namespace"}}"#)
    );
}

#[tokio::test]
async fn the_handshake_announces_the_configured_heartbeat_and_limits() {
    let app = spawn_app_with(|settings| {
        settings.realtime.ping_interval_ms = 1234;
        settings.realtime.ping_timeout_ms = 567;
        settings.realtime.max_payload_bytes = 4096;
    })
    .await;
    let (sid, open) = open_session(&app).await;
    assert_eq!(sid.len(), 20);
    assert_eq!(open["upgrades"], serde_json::json!(["websocket"]));
    assert_eq!(open["pingInterval"], 1234);
    assert_eq!(open["pingTimeout"], 567);
    assert_eq!(open["maxPayload"], 4096);
}

#[tokio::test]
async fn bad_requests_get_the_reference_errors() {
    let app = spawn_app().await;
    for (path, code, message) in [
        ("/socket.io/?EIO=4", 0, "Transport unknown"),
        (
            "/socket.io/?EIO=4&transport=carrier-pigeon",
            0,
            "Transport unknown",
        ),
        (
            "/socket.io/?transport=polling",
            5,
            "Unsupported protocol version",
        ),
        (
            "/socket.io/?EIO=3&transport=polling",
            5,
            "Unsupported protocol version",
        ),
        (
            "/socket.io/?EIO=4&transport=polling&sid=nope",
            1,
            "Session ID unknown",
        ),
        ("/socket.io/?EIO=4&transport=websocket", 3, "Bad request"),
    ] {
        let response = app.get(path).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{path}");
        let body: Value = response.json().await.expect("JSON");
        assert_eq!(
            body,
            serde_json::json!({"code": code, "message": message}),
            "{path}"
        );
    }
    let response = app
        .client
        .post(app.url(HANDSHAKE))
        .send()
        .await
        .expect("POST");
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: Value = response.json().await.expect("JSON");
    assert_eq!(body["code"], 2);
}

#[tokio::test]
async fn only_the_public_origin_and_the_allowed_ones_may_connect() {
    let app = spawn_app_with(|settings| {
        settings.server.public_url = "https://helpnow.example".parse().expect("url");
        settings.server.allowed_origins = vec!["http://localhost:5173".into()];
    })
    .await;
    let with_origin = |origin: &'static str| {
        app.client
            .get(app.url(HANDSHAKE))
            .header("origin", origin)
            .send()
    };

    let foreign = with_origin("https://evil.example").await.expect("GET");
    assert_eq!(foreign.status(), StatusCode::FORBIDDEN);
    let body: Value = foreign.json().await.expect("JSON");
    assert_eq!(body, serde_json::json!({"code": 4, "message": "Forbidden"}));

    for origin in ["https://helpnow.example", "http://localhost:5173"] {
        let allowed = with_origin(origin).await.expect("GET");
        assert_eq!(allowed.status(), StatusCode::OK, "{origin}");
        assert_eq!(
            allowed.headers()["access-control-allow-origin"],
            origin,
            "{origin} may read the answer"
        );
    }
    // Clients that are not browsers send no Origin at all.
    assert_eq!(app.get(HANDSHAKE).await.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_public_url_on_port_0_is_the_port_the_server_got() {
    let app = spawn_app_with(|settings| {
        settings.server.public_url = "http://127.0.0.1:0".parse().expect("url");
    })
    .await;
    let with_origin = |origin: String| {
        app.client
            .get(app.url(HANDSHAKE))
            .header("origin", origin)
            .send()
    };
    let own = with_origin(app.address.clone()).await.expect("GET");
    assert_eq!(own.status(), StatusCode::OK, "{}", app.address);
    let port_0 = with_origin("http://127.0.0.1:0".into()).await.expect("GET");
    assert_eq!(port_0.status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn unknown_namespaces_are_refused_and_the_session_goes_on() {
    let app = spawn_app().await;
    let (sid, _) = open_session(&app).await;
    assert_namespace_refused(&app, &sid, "/nowhere").await;
    // The main namespace is the product's keep-alive: any client may hold a connection there.
    assert_eq!(post(&app, &sid, "40").await.status(), StatusCode::OK);
    let (status, joined) = poll(&app, &sid).await;
    assert_eq!(status, StatusCode::OK);
    assert!(joined.starts_with(r#"40{""#), "{joined}");
}

#[tokio::test]
async fn a_body_over_the_payload_limit_is_refused_and_the_session_goes_on() {
    let app = spawn_app_with(|settings| settings.realtime.max_payload_bytes = 1024).await;
    let (sid, _) = open_session(&app).await;
    let response = post(&app, &sid, &"4".repeat(2000)).await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_namespace_refused(&app, &sid, "/nowhere").await;
}

/// Joins `/` (the keep-alive namespace) and sends `events` events there in one POST.
async fn joined_then_events(app: &TestApp, events: usize) -> String {
    let (sid, _) = open_session(app).await;
    assert_eq!(post(app, &sid, "40").await.status(), StatusCode::OK);
    let (_, joined) = poll(app, &sid).await;
    assert!(joined.starts_with(r#"40{""#), "{joined}");
    let burst = vec![r#"42["ping-me"]"#; events].join("\u{1e}");
    assert_eq!(post(app, &sid, &burst).await.status(), StatusCode::OK);
    sid
}

#[tokio::test]
async fn a_client_that_sends_too_fast_is_disconnected() {
    let limited = |settings: &mut helpnow::config::Settings| {
        settings.realtime.messages_per_second = 1;
        settings.realtime.message_burst = 4;
    };
    // Within the burst (the CONNECT, two events and the CONNECT below), the session goes on.
    let app = spawn_app_with(limited).await;
    let sid = joined_then_events(&app, 2).await;
    assert_namespace_refused(&app, &sid, "/nowhere").await;

    // One event more than the burst allows: the next GET gets what was left and the close packet
    // (engine.io's closeTimeout), then the session is gone.
    let app = spawn_app_with(limited).await;
    let sid = joined_then_events(&app, 6).await;
    let (status, last) = poll(&app, &sid).await;
    assert_eq!(status, StatusCode::OK);
    assert!(last.ends_with("\u{1e}1"), "{last}");
    assert_eq!(
        poll(&app, &sid).await.0,
        StatusCode::BAD_REQUEST,
        "the session is gone"
    );
}

#[tokio::test]
async fn an_address_may_open_only_so_many_funnel_conversations_a_minute() {
    let app = spawn_app_with(|settings| settings.realtime.funnel_joins_per_minute = 2).await;
    for n in 0..3 {
        let (sid, _) = open_session(&app).await;
        let connect =
            format!(r#"40/funnel,{{"funnel":"chat","visitorId":"visitor-limit-00000000{n}"}}"#);
        assert_eq!(post(&app, &sid, &connect).await.status(), StatusCode::OK);
        let (_, answer) = poll(&app, &sid).await;
        if n < 2 {
            assert!(answer.starts_with("40/funnel,"), "{answer}");
        } else {
            assert!(answer.starts_with("44/funnel,"), "{answer}");
            assert!(answer.contains("Too many chats"), "{answer}");
        }
    }
}

#[tokio::test]
async fn open_connections_are_counted_in_the_metrics() {
    let app = spawn_app().await;
    open_session(&app).await;
    let metrics = app.get("/metrics").await.text().await.expect("body");
    assert!(
        metrics.contains("helpnow_realtime_connections 1"),
        "{metrics}"
    );
}

#[tokio::test]
async fn past_max_connections_new_ones_are_refused_at_once_and_the_rest_is_served() {
    let app = spawn_app_with(|settings| settings.realtime.max_connections = 2).await;
    let (first, _) = open_session(&app).await;
    let (second, _) = open_session(&app).await;

    let refused = app.get(HANDSHAKE).await;
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        refused
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("5")
    );
    let body: Value = refused.json().await.expect("JSON");
    assert_eq!(body["code"], "at_capacity");
    assert_eq!(
        body["message"],
        "The server is busy. Please try again in a moment."
    );

    // The held connections and the rest of the server go on.
    assert_eq!(app.get("/health").await.status(), StatusCode::OK);
    assert_eq!(post(&app, &second, "40").await.status(), StatusCode::OK);

    // A connection that ends makes room for a new one.
    assert_eq!(post(&app, &first, "1").await.status(), StatusCode::OK);
    let mut reopened = None;
    for _ in 0..50 {
        let response = app.get(HANDSHAKE).await;
        if response.status() == StatusCode::OK {
            reopened = Some(response);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(reopened.is_some(), "a closed connection frees its place");
}

const WEBSOCKET: &str = "/socket.io/?EIO=4&transport=websocket";

/// The refusal a WebSocket upgrade of `path` gets, as (status, JSON body or text).
async fn refused_upgrade(app: &TestApp, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    match websocket_upgrade(&app.address, path, headers).await {
        Upgrade::Refused(status, body) => (status, body),
        Upgrade::Open(_) => panic!("{path} {headers:?} was upgraded"),
    }
}

#[tokio::test]
async fn a_websocket_upgrade_opens_a_connection_that_answers_on_the_socket() {
    let app = spawn_app().await;
    let Upgrade::Open(mut socket) = websocket_upgrade(&app.address, WEBSOCKET, &[]).await else {
        panic!("the upgrade was refused");
    };
    let open = socket.next_text().await;
    let open: Value =
        serde_json::from_str(open.strip_prefix('0').expect("an open packet")).expect("JSON");
    assert_eq!(open["upgrades"], serde_json::json!([]));
    assert!(open["sid"].as_str().is_some_and(|sid| !sid.is_empty()));
    // The namespace join and its answer travel on the same socket.
    socket.send_text("40").await;
    let joined = socket.next_text().await;
    let joined: Value =
        serde_json::from_str(joined.strip_prefix("40").expect("a connect packet")).expect("JSON");
    assert!(joined["sid"].is_string(), "{joined}");
    let metrics = app.get("/metrics").await.text().await.expect("body");
    assert!(
        metrics.contains("helpnow_realtime_connections 1"),
        "{metrics}"
    );
    // A close from the client is answered with a close, then the connection ends.
    futures_util::SinkExt::send(&mut socket.framed, actix_http::ws::Message::Close(None))
        .await
        .expect("close");
    assert!(matches!(
        socket.next_frame().await,
        Some(actix_http::ws::Frame::Close(_))
    ));
    assert!(socket.next_frame().await.is_none(), "the server hangs up");
}

#[tokio::test]
async fn websocket_upgrades_are_refused_with_the_reference_errors() {
    let app = spawn_app_with(|settings| {
        settings.server.public_url = "https://helpnow.example".parse().expect("url");
    })
    .await;
    // As engine.io's abortUpgrade writes them: 400 and the bare message (text/html).
    let error = |_code: u64, message: &str| message.to_owned();
    // The path, the headers besides the handshake, and the status and body expected.
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], u16, String);
    let cases: [Case; 5] = [
        (
            WEBSOCKET,
            &[("origin", "https://evil.example")],
            400,
            error(4, "Forbidden"),
        ),
        (
            "/socket.io/?EIO=3&transport=websocket",
            &[],
            400,
            error(5, "Unsupported protocol version"),
        ),
        (
            "/socket.io/?EIO=4&transport=websocket&sid=nope",
            &[],
            400,
            error(1, "Session ID unknown"),
        ),
        (
            WEBSOCKET,
            &[("sec-websocket-key", "short")],
            400,
            error(3, "Bad request"),
        ),
        ("/api/config", &[], 404, String::new()),
    ];
    for (path, headers, status, body) in cases {
        let (got_status, got_body) = refused_upgrade(&app, path, headers).await;
        assert_eq!((got_status, got_body), (status, body), "{path} {headers:?}");
    }
    // A polling request that asks for a WebSocket: accepted and closed at once, without a status
    // (engine.io's onWebSocket: polling does not take upgraded requests).
    let Upgrade::Open(mut closed) =
        websocket_upgrade(&app.address, "/socket.io/?EIO=4&transport=polling", &[]).await
    else {
        panic!("the reference upgrades it, then closes it");
    };
    assert!(matches!(
        closed.next_frame().await,
        Some(actix_http::ws::Frame::Close(None))
    ));
    // The allowed origin is let in.
    assert!(matches!(
        websocket_upgrade(
            &app.address,
            WEBSOCKET,
            &[("origin", "https://helpnow.example")]
        )
        .await,
        Upgrade::Open(_)
    ));
}

#[tokio::test]
async fn past_max_connections_a_websocket_is_refused_at_once() {
    let app = spawn_app_with(|settings| settings.realtime.max_connections = 1).await;
    let Upgrade::Open(mut held) = websocket_upgrade(&app.address, WEBSOCKET, &[]).await else {
        panic!("the first upgrade was refused");
    };
    held.next_text().await;
    let (status, body) = refused_upgrade(&app, WEBSOCKET, &[]).await;
    assert_eq!(status, 503);
    let body: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(body["code"], "at_capacity");
}

/// The connections the server holds, by its metrics.
pub(crate) async fn open_connections(app: &TestApp) -> u64 {
    let metrics = app.get("/metrics").await.text().await.expect("body");
    metrics
        .lines()
        .find_map(|line| line.strip_prefix("helpnow_realtime_connections "))
        .expect("the connections gauge")
        .parse()
        .expect("a count")
}

/// Whether the server holds no connection any more, or within 10 s.
async fn all_connections_end(app: &TestApp) -> bool {
    for _ in 0..200 {
        if open_connections(app).await == 0 {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test]
async fn one_address_holds_so_many_connections_and_one_that_joins_nothing_gives_its_place_back() {
    let app = spawn_app_with(|settings| {
        settings.realtime.max_connections_per_address = 2;
        settings.realtime.connect_timeout_ms = 500;
    })
    .await;
    let (idle, _) = open_session(&app).await;
    let Upgrade::Open(mut joined) = websocket_upgrade(&app.address, WEBSOCKET, &[]).await else {
        panic!("the upgrade was refused");
    };
    joined.next_text().await;
    joined.send_text("40").await;
    assert!(joined.next_text().await.starts_with("40"), "joined `/`");

    // A third connection from this address is refused, over either transport...
    let refused = app.get(HANDSHAKE).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        refused
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("5")
    );
    assert_eq!(
        refused.json::<Value>().await.expect("JSON"),
        serde_json::json!({
            "code": "too_many_connections",
            "message": "Too many connections from your network. Please close a few tabs and try again.",
        })
    );
    let (status, body) = refused_upgrade(&app, WEBSOCKET, &[]).await;
    assert_eq!(status, 429);
    let body: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(body["code"], "too_many_connections");
    // ...while another client (behind the trusted balancer) is let in.
    let other = app
        .client
        .get(app.url(HANDSHAKE))
        .header("x-forwarded-for", "203.0.113.7")
        .send()
        .await
        .expect("GET");
    assert_eq!(other.status(), StatusCode::OK);

    // The polling session joins no namespace: the connect timeout closes it, which frees its
    // place; the WebSocket that joined `/` keeps its own.
    let mut reopened = false;
    for _ in 0..100 {
        if app.get(HANDSHAKE).await.status() == StatusCode::OK {
            reopened = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(reopened, "a place was given back");
    assert_eq!(
        poll(&app, &idle).await.1,
        "6\u{1e}1",
        "closed by the server"
    );
}

#[tokio::test]
async fn a_long_polling_client_that_does_not_come_for_what_it_is_sent_is_dropped() {
    let app = spawn_app_with(|settings| {
        settings.realtime.messages_per_second = 0;
        settings.realtime.max_buffered_bytes = 4096;
    })
    .await;
    let (sid, _) = open_session(&app).await;
    assert_eq!(post(&app, &sid, "40").await.status(), StatusCode::OK);
    assert!(poll(&app, &sid).await.1.starts_with(r#"40{""#));
    let asking = |events: usize| {
        (0..events)
            .map(|id| format!(r#"42{id}["ping-me"]"#))
            .collect::<Vec<_>>()
            .join("\u{1e}")
    };

    // Answers the client comes for within the bound reach it.
    assert_eq!(post(&app, &sid, &asking(50)).await.status(), StatusCode::OK);
    let mut answered = 0;
    while answered < 50 {
        let (status, answers) = poll(&app, &sid).await;
        assert_eq!(status, StatusCode::OK);
        answered += answers
            .split('\u{1e}')
            .filter(|p| p.starts_with("43"))
            .count();
    }

    // A thousand answers (10 kB) that the client does not come for: it is dropped, and its
    // session with them.
    assert_eq!(
        post(&app, &sid, &asking(1000)).await.status(),
        StatusCode::OK
    );
    assert!(all_connections_end(&app).await, "the client was dropped");
    let (status, body) = poll(&app, &sid).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        serde_json::from_str::<Value>(&body).expect("JSON")["code"],
        1
    );
}

/// A WebSocket whose client reads nothing: the receive buffer is made small before connecting,
/// so what the server sends piles up on the server's side.
async fn websocket_that_reads_nothing(app: &TestApp) -> tokio::net::TcpStream {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let host = app.address.trim_start_matches("http://");
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(4096).expect("receive buffer");
    let mut stream = socket
        .connect(host.parse().expect("address"))
        .await
        .expect("connect");
    let request = format!(
        "GET {WEBSOCKET} HTTP/1.1\r\nHost: {host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        head.push(stream.read_u8().await.expect("the answer's head"));
    }
    assert!(head.starts_with(b"HTTP/1.1 101"), "upgraded");
    stream
}

#[tokio::test]
async fn a_websocket_client_that_reads_nothing_is_dropped_once_too_much_waits_for_it() {
    use tokio::io::AsyncWriteExt;
    let app = spawn_app_with(|settings| {
        settings.realtime.messages_per_second = 0;
        settings.realtime.max_buffered_bytes = 64 * 1024;
    })
    .await;
    let mut stream = websocket_that_reads_nothing(&app).await;
    // Each unknown namespace is refused with its name repeated: about 300 bytes back for each
    // CONNECT, written by the server while the client reads none of them.
    let mut batch = bytes::BytesMut::new();
    let mut codec = actix_http::ws::Codec::new().client_mode();
    let connect = format!("40/{},", "x".repeat(250));
    for _ in 0..1000 {
        actix_codec::Encoder::encode(
            &mut codec,
            actix_http::ws::Message::Text(connect.clone().into()),
            &mut batch,
        )
        .expect("a frame");
    }
    let mut dropped = false;
    // At most 60 MB of refusals, far more than the sockets' buffers and the bound together.
    for _ in 0..200 {
        if stream.write_all(&batch).await.is_err() || open_connections(&app).await == 0 {
            dropped = true;
            break;
        }
    }
    assert!(
        dropped || all_connections_end(&app).await,
        "the client was dropped"
    );
}
