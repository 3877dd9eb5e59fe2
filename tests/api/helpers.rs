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
