//! `spawn_app()`: the real server on port 0 with a fresh in-memory SurrealDB and a small stand-in
//! for the built web app (the browser journeys use the real build).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use helpnow::config::{AppEnv, LogSettings, Settings};
use helpnow::startup::Application;
use helpnow::store::Db;

pub const INDEX_MARKER: &str = "<!-- helpnow test index -->";

static TRACING: LazyLock<()> = LazyLock::new(|| {
    // TEST_LOG=1 shows the server's logs while debugging a test.
    if std::env::var("TEST_LOG").is_ok() {
        helpnow::telemetry::init(&LogSettings {
            format: helpnow::config::LogFormat::Pretty,
            filter: "debug".to_owned(),
        });
    }
});

pub struct TestApp {
    pub address: String,
    pub client: reqwest::Client,
    pub db: Db,
    _static_dir: tempfile::TempDir,
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.address)
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client
            .get(self.url(path))
            .send()
            .await
            .expect("request reaches the server")
    }

    pub async fn post_json(&self, path: &str, body: &serde_json::Value) -> reqwest::Response {
        self.client
            .post(self.url(path))
            .json(body)
            .send()
            .await
            .expect("request reaches the server")
    }
}

/// A cookie's `name=value` from a response, if it sets one.
pub fn cookie_named(response: &reqwest::Response, name: &str) -> Option<String> {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .find(|value| value.starts_with(&format!("{name}=")))
        .map(|value| value.split(';').next().unwrap_or_default().to_owned())
}

pub async fn get_with_cookie(app: &TestApp, path: &str, cookie: &str) -> reqwest::Response {
    app.client
        .get(app.url(path))
        .header("cookie", cookie)
        .send()
        .await
        .expect("request reaches the server")
}

pub async fn post_with_cookie(
    app: &TestApp,
    path: &str,
    cookie: &str,
    body: &serde_json::Value,
) -> reqwest::Response {
    app.client
        .post(app.url(path))
        .header("cookie", cookie)
        .json(body)
        .send()
        .await
        .expect("request reaches the server")
}

pub fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

pub fn test_settings() -> Settings {
    Settings::load_from(&project_root().join("config"), AppEnv::Test, HashMap::new())
        .expect("test settings load")
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

pub async fn spawn_app_with(adjust: impl FnOnce(&mut Settings)) -> TestApp {
    LazyLock::force(&TRACING);
    let static_dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        static_dir.path().join("index.html"),
        format!("<!doctype html><html><body>{INDEX_MARKER}<div id=\"root\"></div></body></html>"),
    )
    .expect("write index.html");
    std::fs::create_dir_all(static_dir.path().join("assets")).expect("assets dir");
    std::fs::write(
        static_dir.path().join("assets/app-1a2b3c.js"),
        "console.log('app')",
    )
    .expect("write asset");
    std::fs::create_dir_all(static_dir.path().join("icons")).expect("icons dir");
    std::fs::write(
        static_dir.path().join("icons/gmail.svg"),
        "<svg xmlns=\"http://www.w3.org/2000/svg\"/>",
    )
    .expect("write icon");

    let mut settings = test_settings();
    settings.server.port = 0;
    settings.database.url = "mem://".to_owned();
    settings.server.static_dir = static_dir.path().to_path_buf();
    adjust(&mut settings);

    let application = Application::build(settings)
        .await
        .expect("the application starts");
    let address = format!("http://127.0.0.1:{}", application.port());
    let db = application.db();
    tokio::spawn(application.run_until_stopped());

    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("http client");
    TestApp {
        address,
        client,
        db,
        _static_dir: static_dir,
    }
}

/// A WebSocket opened by hand, to see exactly what the server answers and sends.
pub struct RawWebSocket {
    pub framed: actix_codec::Framed<tokio::net::TcpStream, actix_http::ws::Codec>,
}

/// What a WebSocket upgrade request got: the socket, or the status and body that refused it.
pub enum Upgrade {
    Open(RawWebSocket),
    Refused(u16, String),
}

/// Sends a WebSocket upgrade for `path` to `address` ("http://host:port") with `headers` besides
/// the handshake's own.
pub async fn websocket_upgrade(address: &str, path: &str, headers: &[(&str, &str)]) -> Upgrade {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let host = address.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(host).await.expect("connect");
    let mut request = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\n"
    );
    if !headers.iter().any(|(name, _)| *name == "sec-websocket-key") {
        request.push_str("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n");
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.expect("write");
    // The head, a byte at a time, so nothing of the first frame is read with it.
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let byte = tokio::time::timeout(std::time::Duration::from_secs(10), stream.read_u8())
            .await
            .expect("an answer within 10 s")
            .expect("the answer's head");
        head.push(byte);
    }
    let head = String::from_utf8(head).expect("UTF-8 head");
    let status: u16 = head[9..12].parse().expect("status");
    if status == 101 {
        let codec = actix_http::ws::Codec::new().client_mode();
        return Upgrade::Open(RawWebSocket {
            framed: actix_codec::Framed::new(stream, codec),
        });
    }
    let mut body = Vec::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        stream.read_to_end(&mut body),
    )
    .await
    .expect("the refusal ends the connection")
    .expect("body");
    Upgrade::Refused(status, String::from_utf8(body).expect("UTF-8 body"))
}

impl RawWebSocket {
    /// The next frame, within 10 s; `None` once the connection ended.
    pub async fn next_frame(&mut self) -> Option<actix_http::ws::Frame> {
        use futures_util::StreamExt;
        tokio::time::timeout(std::time::Duration::from_secs(10), self.framed.next())
            .await
            .expect("a frame within 10 s")
            .map(|frame| frame.expect("a valid frame"))
    }

    /// The next text frame's text.
    pub async fn next_text(&mut self) -> String {
        match self.next_frame().await {
            Some(actix_http::ws::Frame::Text(bytes)) => {
                String::from_utf8(bytes.to_vec()).expect("UTF-8")
            }
            other => panic!("expected a text frame, got {other:?}"),
        }
    }

    pub async fn send_text(&mut self, text: &str) {
        use futures_util::SinkExt;
        self.framed
            .send(actix_http::ws::Message::Text(text.to_owned().into()))
            .await
            .expect("send");
    }
}

/// Serves `handler` for every request on a free local port, with `state` as its app data: a
/// local mock of an outside service in its wire format. Answers the port and the server's handle.
pub fn serve_mock<S, F, Args>(
    state: std::sync::Arc<S>,
    handler: F,
) -> (u16, actix_web::dev::ServerHandle)
where
    S: Send + Sync + 'static,
    F: actix_web::Handler<Args> + Send,
    Args: actix_web::FromRequest + 'static,
    F::Output: actix_web::Responder + 'static,
{
    use actix_web::{App, HttpServer, web};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = listener.local_addr().expect("local address").port();
    let data = web::Data::from(state);
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .default_service(web::to(handler.clone()))
    })
    .workers(1)
    .disable_signals()
    .shutdown_timeout(0)
    .listen(listener)
    .expect("the mock listens")
    .run();
    let handle = server.handle();
    tokio::spawn(server);
    (port, handle)
}

/// What `read` answers once it has stopped changing: the same for ten reads 50 ms apart, within
/// 10 s. What the server records behind a request lands a little later, and a count that is
/// compared as soon as it first matches would let a second count that lands later pass.
pub async fn settled<T, F, Fut>(mut read: F) -> T
where
    T: PartialEq + Clone,
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let mut last = read().await;
    let mut unchanged = 0;
    for _ in 0..200 {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let now = read().await;
        if now == last {
            unchanged += 1;
            if unchanged == 10 {
                break;
            }
        } else {
            unchanged = 0;
            last = now;
        }
    }
    last
}

/// The one-time sign-in token of the link (`/?success=true&jwt=...`) in a mail's body.
pub fn sign_in_token_in(body: &str) -> String {
    let start = body.find("jwt=").expect("a sign-in link") + "jwt=".len();
    body[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect()
}
