use crate::helpers::{INDEX_MARKER, spawn_app};

/// Every route of the spec's route table renders the web app.
const ROUTES: &[&str] = &[
    "/",
    "/landing",
    "/get-help",
    "/funnel",
    "/chat-help",
    "/Chat-Help-2",
    "/email-help",
    "/login",
    "/signup",
    "/members",
    "/account-setup",
    "/checkout-success",
    "/checkout-debug",
    "/?canceled=true",
    "/?success=demo",
    "/landing?keyword=email%20login&campaignid=123",
    "/demo-checkout/cs_demo_123",
];

#[tokio::test]
async fn every_route_of_the_route_table_serves_the_app() {
    let app = spawn_app().await;
    for route in ROUTES {
        let response = app.get(route).await;
        assert_eq!(response.status(), 200, "{route}");
        assert_eq!(response.headers()["cache-control"], "no-cache", "{route}");
        let body = response.text().await.expect("text");
        assert!(
            body.contains(INDEX_MARKER),
            "{route} did not serve index.html"
        );
    }
}

#[tokio::test]
async fn any_other_path_redirects_to_the_members_page() {
    let app = spawn_app().await;
    for path in [
        "/no-such-page",
        "/chat-help-2",
        "/landing/extra",
        "/index.html",
        "/.env",
        "/assets/missing.js",
    ] {
        let response = app.get(path).await;
        assert_eq!(response.status(), 302, "{path}");
        assert_eq!(response.headers()["location"], "/", "{path}");
    }
}

#[tokio::test]
async fn built_assets_are_served_and_cached_by_content_hash() {
    let app = spawn_app().await;
    let response = app.get("/assets/app-1a2b3c.js").await;
    assert_eq!(response.status(), 200);
    let cache = response.headers()["cache-control"]
        .to_str()
        .expect("ascii")
        .to_owned();
    assert!(
        cache.contains("immutable") && cache.contains("max-age=31536000"),
        "{cache}"
    );
    assert_eq!(response.text().await.expect("text"), "console.log('app')");

    let icon = app.get("/icons/gmail.svg").await;
    assert_eq!(icon.status(), 200);
    assert!(
        icon.headers()["content-type"]
            .to_str()
            .expect("ascii")
            .starts_with("image/svg+xml")
    );
}

#[tokio::test]
async fn unknown_api_paths_answer_a_json_404_not_a_redirect() {
    let app = spawn_app().await;
    let response = app.get("/api/no-such-endpoint").await;
    assert_eq!(response.status(), 404);
    let body: serde_json::Value = response.json().await.expect("json");
    assert_eq!(body["error"], "not_found");
    assert_eq!(body["message"], "Not found");
}

#[tokio::test]
async fn without_a_built_app_the_routes_say_how_to_build_it() {
    let app = crate::helpers::spawn_app_with(|settings| {
        settings.server.static_dir = "/nonexistent-web-dist".into();
    })
    .await;
    let response = app.get("/landing").await;
    assert_eq!(response.status(), 503);
    assert!(response.text().await.expect("text").contains("not built"));
}

#[tokio::test]
async fn head_requests_answer_like_get() {
    let app = spawn_app().await;
    for path in ["/", "/landing", "/health", "/assets/app-1a2b3c.js"] {
        let response = app.client.head(app.url(path)).send().await.expect("sent");
        assert_eq!(response.status(), 200, "HEAD {path}");
    }
    let response = app
        .client
        .head(app.url("/no-such-page"))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 302);
}

/// Every `Set-Cookie` of a response.
fn set_cookies(response: &reqwest::Response) -> Vec<String> {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn over_https_every_cookie_is_host_only_and_a_bare_name_is_not_read() {
    let app = crate::helpers::spawn_app_with(|settings| {
        settings.server.public_url = "https://helpnow.example".parse().expect("url");
    })
    .await;
    let page = app.get("/").await;
    let visitor = set_cookies(&page);
    assert!(
        visitor
            .iter()
            .any(|cookie| cookie.starts_with("__Host-vid=")
                && cookie.contains("Secure")
                && cookie.contains("Path=/")
                && !cookie.contains("Domain")),
        "{visitor:?}"
    );

    let signup = app
        .post_json(
            "/api/auth/signup",
            &serde_json::json!({"email": "ann@example.com", "password": "secret1"}),
        )
        .await;
    assert_eq!(signup.status(), 201);
    let cookies = set_cookies(&signup);
    let session = cookies
        .iter()
        .find(|cookie| cookie.starts_with("__Host-helpnow_session="))
        .unwrap_or_else(|| panic!("a __Host- session cookie: {cookies:?}"));
    assert!(
        session.contains("Secure") && session.contains("Path=/"),
        "{session}"
    );
    let pair = session.split(';').next().expect("name=value");
    let me = |cookie: String| {
        let app = &app;
        async move {
            let answer: serde_json::Value = app
                .client
                .get(app.url("/api/auth/me"))
                .header("cookie", cookie)
                .send()
                .await
                .expect("request reaches the server")
                .json()
                .await
                .expect("json");
            answer["user"]["email"].clone()
        }
    };
    assert_eq!(me(pair.to_owned()).await, "ann@example.com");
    // The same secret under the bare name, as a cookie planted from a sibling subdomain or a
    // plain-http response would be: not read.
    let bare = pair.trim_start_matches("__Host-").to_owned();
    assert_eq!(me(bare).await, serde_json::Value::Null);

    let checkout = app
        .post_json(
            "/api/create-checkout.js",
            &serde_json::json!({"source": "chat_trial_prompt"}),
        )
        .await;
    let started = set_cookies(&checkout);
    assert!(
        started.iter().any(
            |cookie| cookie.starts_with("__Host-helpnow_checkout_start=")
                && cookie.contains("Secure")
                && cookie.contains("Path=/")
        ),
        "{started:?}"
    );
}
