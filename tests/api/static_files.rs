//! How the built web app's files travel: the build's precompressed copies (Brotli, gzip) for the
//! browsers that accept them, a year's caching for content-hashed assets, each route's page file;
//! the JSON API compressed per request; the real-time paths never.

use std::path::Path;

use reqwest::StatusCode;
use reqwest::header::{
    ACCEPT_ENCODING, CACHE_CONTROL, CONTENT_ENCODING, ETAG, IF_NONE_MATCH, RANGE, VARY,
};

use crate::helpers::{
    INDEX_MARKER, TestApp, Upgrade, spawn_app, spawn_app_with, websocket_upgrade,
};

const SCRIPT: &str = "/assets/page-9f8e7d.js";
const SCRIPT_TEXT: &str = "console.log('the script itself')";
// Stand-ins: the server sends the copies as they are, whatever they hold.
const SCRIPT_BR: &[u8] = b"brotli bytes";
const SCRIPT_GZ: &[u8] = b"gzip bytes";

/// A build with a script and its two copies, index.html with a Brotli copy, and the landing
/// route's page file.
fn write_build(dir: &Path) {
    let write = |path: &str, contents: &[u8]| {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        std::fs::write(path, contents).expect("write");
    };
    write(
        "index.html",
        format!("<!doctype html><html><body>{INDEX_MARKER}<div id=\"root\"></div></body></html>")
            .as_bytes(),
    );
    write("index.html.br", b"compressed index");
    write(&SCRIPT[1..], SCRIPT_TEXT.as_bytes());
    write(&format!("{}.br", &SCRIPT[1..]), SCRIPT_BR);
    write(&format!("{}.gz", &SCRIPT[1..]), SCRIPT_GZ);
    write("assets/plain-1a2b.css", b"body{}");
    write(
        "pages/landing.html",
        format!("<!doctype html>{INDEX_MARKER}<link rel=\"modulepreload\" href=\"/assets/LandingPage-1.js\">").as_bytes(),
    );
}

async fn spawn_with_build() -> (TestApp, tempfile::TempDir) {
    let build = tempfile::tempdir().expect("temp dir");
    write_build(build.path());
    let dir = build.path().to_path_buf();
    let app = spawn_app_with(move |settings| settings.server.static_dir = dir).await;
    (app, build)
}

/// Sends `Accept-Encoding` as given (or none) and reads the answer as it came: no decoding.
async fn get_encoded(app: &TestApp, path: &str, accept: Option<&str>) -> reqwest::Response {
    let mut request = raw_client().get(app.url(path));
    if let Some(accept) = accept {
        request = request.header(ACCEPT_ENCODING, accept);
    }
    request.send().await.expect("request reaches the server")
}

/// A client that leaves compressed bodies as they are (the tests' build of reqwest may decode
/// gzip by itself).
fn raw_client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_gzip()
        .no_brotli()
        .no_deflate()
        .no_zstd()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("http client")
}

fn header(response: &reqwest::Response, name: reqwest::header::HeaderName) -> Option<&str> {
    response
        .headers()
        .get(name)
        .map(|value| value.to_str().expect("ascii"))
}

#[tokio::test]
async fn an_asset_comes_as_the_copy_the_browser_accepts_and_is_cached_for_a_year() {
    let (app, _build) = spawn_with_build().await;
    for (accept, encoding, body) in [
        (Some("gzip, deflate, br, zstd"), Some("br"), SCRIPT_BR),
        (Some("br"), Some("br"), SCRIPT_BR),
        (Some("gzip"), Some("gzip"), SCRIPT_GZ),
        (Some("br;q=0, gzip"), Some("gzip"), SCRIPT_GZ),
        (Some("*"), Some("br"), SCRIPT_BR),
        (Some("identity"), None, SCRIPT_TEXT.as_bytes()),
        (Some("zstd"), None, SCRIPT_TEXT.as_bytes()),
        (None, None, SCRIPT_TEXT.as_bytes()),
    ] {
        let response = get_encoded(&app, SCRIPT, accept).await;
        assert_eq!(response.status(), StatusCode::OK, "{accept:?}");
        assert_eq!(header(&response, CONTENT_ENCODING), encoding, "{accept:?}");
        assert_eq!(
            header(&response, VARY),
            Some("Accept-Encoding"),
            "{accept:?}"
        );
        assert_eq!(
            header(&response, CACHE_CONTROL),
            Some("public, max-age=31536000, immutable"),
            "{accept:?}"
        );
        assert!(
            header(&response, reqwest::header::CONTENT_TYPE)
                .is_some_and(|value| value.starts_with("text/javascript")),
            "{accept:?}: the copy keeps the script's type"
        );
        assert_eq!(
            &response.bytes().await.expect("body")[..],
            body,
            "{accept:?}"
        );
    }
}

#[tokio::test]
async fn each_copy_has_its_own_etag_and_revalidates() {
    let (app, _build) = spawn_with_build().await;
    let brotli = get_encoded(&app, SCRIPT, Some("br")).await;
    let plain = get_encoded(&app, SCRIPT, None).await;
    let brotli_tag = header(&brotli, ETAG).expect("etag").to_owned();
    assert_ne!(Some(brotli_tag.as_str()), header(&plain, ETAG));

    let again = raw_client()
        .get(app.url(SCRIPT))
        .header(ACCEPT_ENCODING, "br")
        .header(IF_NONE_MATCH, &brotli_tag)
        .send()
        .await
        .expect("request");
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
}

#[tokio::test]
async fn a_range_request_gets_the_file_itself() {
    let (app, _build) = spawn_with_build().await;
    let response = raw_client()
        .get(app.url(SCRIPT))
        .header(ACCEPT_ENCODING, "br")
        .header(RANGE, "bytes=0-6")
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::PARTIAL_CONTENT);
    assert_ne!(header(&response, CONTENT_ENCODING), Some("br"));
    assert_eq!(response.text().await.expect("body"), &SCRIPT_TEXT[..7]);
}

#[tokio::test]
async fn a_file_without_copies_comes_as_it_is() {
    let (app, _build) = spawn_with_build().await;
    let response = get_encoded(&app, "/assets/plain-1a2b.css", Some("gzip, br")).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header(&response, CONTENT_ENCODING), None);
    assert_eq!(response.text().await.expect("body"), "body{}");
}

#[tokio::test]
async fn a_route_gets_its_page_file_or_index_html_uncached_and_compressed_when_accepted() {
    let (app, _build) = spawn_with_build().await;

    let landing = get_encoded(&app, "/landing?keyword=email", Some("gzip, br")).await;
    assert_eq!(landing.status(), StatusCode::OK);
    assert_eq!(header(&landing, CACHE_CONTROL), Some("no-cache"));
    assert_eq!(header(&landing, CONTENT_ENCODING), None);
    assert!(
        landing
            .text()
            .await
            .expect("body")
            .contains("/assets/LandingPage-1.js"),
        "the landing route's page file"
    );

    let login = get_encoded(&app, "/login", Some("gzip, br")).await;
    assert_eq!(header(&login, CACHE_CONTROL), Some("no-cache"));
    assert_eq!(header(&login, CONTENT_ENCODING), Some("br"));
    assert_eq!(header(&login, VARY), Some("Accept-Encoding"));
    assert!(
        header(&login, reqwest::header::SET_COOKIE).is_some(),
        "the visitor cookie"
    );
    assert_eq!(login.text().await.expect("body"), "compressed index");

    let plain = get_encoded(&app, "/login", None).await;
    assert!(plain.text().await.expect("body").contains(INDEX_MARKER));
}

#[tokio::test]
async fn json_answers_are_compressed_when_accepted() {
    let app = spawn_app().await;
    let gzip = get_encoded(&app, "/api/public-config", Some("gzip")).await;
    assert_eq!(gzip.status(), StatusCode::OK);
    assert_eq!(header(&gzip, CONTENT_ENCODING), Some("gzip"));
    let body = gzip.bytes().await.expect("body");
    assert_eq!(&body[..2], &[0x1f, 0x8b], "a gzip stream");

    let plain = get_encoded(&app, "/api/public-config", None).await;
    assert_eq!(header(&plain, CONTENT_ENCODING), None);
    let config: serde_json::Value = plain.json().await.expect("JSON");
    assert!(config["productName"].is_string());
}

#[tokio::test]
async fn the_real_time_paths_are_never_compressed() {
    let app = spawn_app().await;
    let handshake = get_encoded(
        &app,
        "/socket.io/?EIO=4&transport=polling",
        Some("gzip, br"),
    )
    .await;
    assert_eq!(handshake.status(), StatusCode::OK);
    assert_eq!(header(&handshake, CONTENT_ENCODING), None);
    assert!(
        handshake.text().await.expect("body").starts_with("0{"),
        "an open packet"
    );

    let upgrade = websocket_upgrade(
        &app.address,
        "/socket.io/?EIO=4&transport=websocket",
        &[("accept-encoding", "gzip, deflate, br")],
    )
    .await;
    let Upgrade::Open(mut socket) = upgrade else {
        panic!("the WebSocket upgrade was refused");
    };
    assert!(socket.next_text().await.starts_with("0{"), "an open packet");
}
