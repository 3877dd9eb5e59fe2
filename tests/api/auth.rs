//! Accounts over HTTP: sign-up, sign-in, sign-out, the throttle, and password reset by mail.

use serde_json::{Value, json};

use crate::helpers::{TestApp, post_with_cookie, spawn_app, spawn_app_with};

/// The session cookie's `name=value` from a response, with its attributes.
pub(crate) fn session_cookie(response: &reqwest::Response) -> (String, String) {
    let header = response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .find(|value| {
            value.starts_with("helpnow_session=") || value.starts_with("__Host-helpnow_session=")
        })
        .expect("a session cookie")
        .to_owned();
    let pair = header.split(';').next().unwrap_or_default().to_owned();
    (pair, header)
}

pub(crate) async fn me(app: &TestApp, cookie: &str) -> Value {
    app.client
        .get(app.url("/api/auth/me"))
        .header("cookie", cookie)
        .send()
        .await
        .expect("request reaches the server")
        .json()
        .await
        .expect("json")
}

pub(crate) async fn error_of(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    (status, response.json().await.expect("json error body"))
}

pub(crate) async fn sign_up(app: &TestApp, email: &str, password: &str) -> String {
    let response = app
        .post_json(
            "/api/auth/signup",
            &json!({"email": email, "password": password}),
        )
        .await;
    assert_eq!(response.status(), 201);
    session_cookie(&response).0
}

#[tokio::test]
async fn a_new_account_is_signed_in_with_a_protected_cookie() {
    let app = spawn_app().await;
    let response = app
        .post_json(
            "/api/auth/signup",
            &json!({"email": "  Ann@Example.com ", "password": "secret1"}),
        )
        .await;
    assert_eq!(response.status(), 201);
    let (cookie, header) = session_cookie(&response);
    assert!(header.contains("HttpOnly"), "{header}");
    assert!(header.contains("SameSite=Lax"), "{header}");
    assert!(header.contains("Path=/"), "{header}");
    assert!(!header.contains("Secure"), "plain http locally: {header}");
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["user"]["email"], "ann@example.com");

    let who = me(&app, &cookie).await;
    assert_eq!(who["user"]["email"], "ann@example.com");
    assert_eq!(who["user"]["id"], body["user"]["id"]);
    assert_eq!(
        me(&app, "helpnow_session=forged").await["user"],
        Value::Null
    );
    assert_eq!(
        helpnow::store::analytics::count_named(&app.db, "sign_up")
            .await
            .expect("count"),
        1
    );
}

#[tokio::test]
async fn the_cookie_is_secure_behind_https() {
    let app = spawn_app_with(|settings| {
        settings.server.public_url = "https://helpnow.example".parse().expect("url");
    })
    .await;
    let response = app
        .post_json(
            "/api/auth/signup",
            &json!({"email": "ann@example.com", "password": "secret1"}),
        )
        .await;
    let (_, header) = session_cookie(&response);
    assert!(header.contains("Secure"), "{header}");
    assert!(header.starts_with("__Host-helpnow_session="), "{header}");
}

#[tokio::test]
async fn sign_up_refuses_bad_input_in_the_specs_words() {
    let app = spawn_app().await;
    sign_up(&app, "ann@example.com", "secret1").await;
    for (body, status, code, message) in [
        (
            json!({"email": "", "password": "secret1"}),
            400,
            "email_required",
            "Please enter your email address",
        ),
        (
            json!({"email": "ann@", "password": "secret1"}),
            400,
            "invalid_email",
            "Please enter a valid email address.",
        ),
        (
            json!({"email": "bob@example.com", "password": "12345"}),
            400,
            "weak_password",
            "Password is too weak. Please use at least 6 characters.",
        ),
        (
            json!({"email": "bob@example.com"}),
            400,
            "password_required",
            "Password is required",
        ),
        (
            json!({"email": "ANN@example.com", "password": "secret2"}),
            409,
            "email_in_use",
            "An account with this email already exists. Please sign in instead.",
        ),
    ] {
        let (got_status, error) = error_of(app.post_json("/api/auth/signup", &body).await).await;
        assert_eq!(
            (
                got_status,
                error["error"].as_str(),
                error["message"].as_str()
            ),
            (status, Some(code), Some(message)),
            "{body}"
        );
    }
}

#[tokio::test]
async fn sign_in_and_out() {
    let app = spawn_app().await;
    sign_up(&app, "ann@example.com", "secret1").await;

    let invalid = "Invalid email or password. If you signed up through our instant checkout, you may need to reset your password.";
    for body in [
        json!({"email": "ann@example.com", "password": "wrong-one"}),
        json!({"email": "nobody@example.com", "password": "secret1"}),
    ] {
        let (status, error) = error_of(app.post_json("/api/auth/login", &body).await).await;
        assert_eq!(status, 401);
        assert_eq!(
            error["message"], invalid,
            "the same answer whether or not the account exists"
        );
    }

    let response = app
        .post_json(
            "/api/auth/login",
            &json!({"email": "Ann@example.com", "password": "secret1"}),
        )
        .await;
    assert_eq!(response.status(), 200);
    let (cookie, _) = session_cookie(&response);
    assert_eq!(me(&app, &cookie).await["user"]["email"], "ann@example.com");
    assert_eq!(
        helpnow::store::analytics::count_named(&app.db, "login")
            .await
            .expect("count"),
        1
    );

    let response = post_with_cookie(&app, "/api/auth/logout", &cookie, &json!({})).await;
    assert_eq!(response.status(), 204);
    let (cleared, header) = session_cookie(&response);
    assert_eq!(cleared, "helpnow_session=");
    assert!(header.contains("Max-Age=0"), "{header}");
    assert_eq!(
        me(&app, &cookie).await["user"],
        Value::Null,
        "the old cookie is dead on the server too"
    );
}

#[tokio::test]
async fn guessing_a_password_is_throttled() {
    let app = spawn_app().await;
    sign_up(&app, "ann@example.com", "secret1").await;
    for _ in 0..10 {
        let response = app
            .post_json(
                "/api/auth/login",
                &json!({"email": "ann@example.com", "password": "guess"}),
            )
            .await;
        assert_eq!(response.status(), 401);
    }
    let (status, error) = error_of(
        app.post_json(
            "/api/auth/login",
            &json!({"email": "ann@example.com", "password": "secret1"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 429);
    assert_eq!(
        error["message"],
        "Too many failed login attempts. Please try again later or reset your password."
    );
}

/// POSTs `body` to `path` as the client at `address` (behind a trusted balancer, the address it
/// appends to `X-Forwarded-For`).
pub(crate) async fn post_from(
    app: &TestApp,
    address: &str,
    path: &str,
    body: &Value,
) -> reqwest::Response {
    app.client
        .post(app.url(path))
        .header("x-forwarded-for", address)
        .json(body)
        .send()
        .await
        .expect("request reaches the server")
}

async fn login_from(app: &TestApp, address: &str, password: &str) -> reqwest::Response {
    post_from(
        app,
        address,
        "/api/auth/login",
        &json!({"email": "ann@example.com", "password": password}),
    )
    .await
}

#[tokio::test]
async fn a_strangers_guesses_do_not_lock_the_owner_out() {
    // The test client on loopback is the balancer: among the default trusted proxies.
    let app = spawn_app().await;
    sign_up(&app, "ann@example.com", "secret1").await;
    for n in 0..10 {
        let response = login_from(&app, "203.0.113.9", "guess").await;
        assert_eq!(response.status(), 401, "guess {n}");
    }
    let (status, error) = error_of(login_from(&app, "203.0.113.9", "secret1").await).await;
    assert_eq!(status, 429, "the stranger's address is locked out");
    assert_eq!(
        error["message"],
        "Too many failed login attempts. Please try again later or reset your password."
    );
    let owner = login_from(&app, "198.51.100.7", "secret1").await;
    assert_eq!(owner.status(), 200, "the owner, from another address");
}

#[tokio::test]
async fn a_strangers_reset_requests_do_not_lock_the_owners_out() {
    // The test client on loopback is the balancer: among the default trusted proxies.
    let app = spawn_app().await;
    sign_up(&app, "ann@example.com", "secret1").await;
    let body = json!({"email": "ann@example.com"});
    let reset_from = |address: &'static str| post_from(&app, address, "/api/auth/reset", &body);
    for _ in 0..3 {
        assert_eq!(reset_from("203.0.113.9").await.status(), 200);
    }
    assert_eq!(reset_from("203.0.113.9").await.status(), 429);
    assert_eq!(
        reset_from("198.51.100.7").await.status(),
        200,
        "the owner, from another address"
    );
}

/// Guesses spread over many addresses meet the account's ceiling (ten addresses' worth); while
/// it is full the owner's sign-in is refused too, and the owner gets in by a mailed reset link.
#[tokio::test]
async fn guesses_from_many_addresses_meet_the_accounts_ceiling_and_the_owner_gets_in_by_mail() {
    // The test client on loopback is the balancer: among the default trusted proxies.
    let app = spawn_app().await;
    sign_up(&app, "ann@example.com", "secret1").await;
    // Guesses too long to be hashed: they count all the same, and the hundred of them are made
    // well within the 6 s in which the ceiling gains one more.
    let guess = "x".repeat(helpnow::domain::password::MAX_BYTES + 1);
    for address in 0..10 {
        for n in 0..10 {
            let response = login_from(&app, &format!("203.0.113.{address}"), &guess).await;
            assert_eq!(response.status(), 401, "address {address}, guess {n}");
        }
    }
    let (status, _) = error_of(login_from(&app, "203.0.113.10", &guess).await).await;
    assert_eq!(status, 429, "an eleventh address meets the ceiling");
    let (status, _) = error_of(login_from(&app, "198.51.100.7", "secret1").await).await;
    assert_eq!(status, 429, "the owner too, while it is full");

    let mailed = post_from(
        &app,
        "198.51.100.7",
        "/api/auth/reset",
        &json!({"email": "ann@example.com"}),
    )
    .await;
    assert_eq!(mailed.status(), 200);
    let token = reset_token_mailed_to(&app, "ann@example.com").await;
    let response = post_from(
        &app,
        "198.51.100.7",
        "/api/auth/reset/confirm",
        &json!({"token": token, "password": "brand-new1"}),
    )
    .await;
    assert_eq!(response.status(), 200);
    let (cookie, _) = session_cookie(&response);
    assert_eq!(me(&app, &cookie).await["user"]["email"], "ann@example.com");
}

/// The reset link of the last mail to `recipient` in the outbox.
pub(crate) async fn reset_token_mailed_to(app: &TestApp, recipient: &str) -> String {
    let mut response = app
        .db
        .query("SELECT VALUE body FROM mail_outbox WHERE recipient = $to AND kind = 'password_reset' ORDER BY created_at DESC LIMIT 1")
        .bind(("to", recipient.to_owned()))
        .await
        .expect("query");
    let bodies: Vec<String> = response.take(0).expect("bodies");
    let body = bodies.into_iter().next().expect("a reset mail");
    let start = body.find("/login?reset=").expect("a reset link") + "/login?reset=".len();
    body[start..]
        .chars()
        .take_while(|c| !c.is_whitespace())
        .collect()
}

#[tokio::test]
async fn a_password_is_reset_through_the_mailed_link_once() {
    let app = spawn_app().await;
    let old_session = sign_up(&app, "ann@example.com", "secret1").await;

    // An address without an account gets the same answer, and no mail: nobody learns from this
    // form which addresses have accounts.
    let (status, answer) = error_of(
        app.post_json("/api/auth/reset", &json!({"email": "nobody@example.com"}))
            .await,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        answer["message"],
        "Password reset email sent! Check your inbox for instructions to reset your password. If you don't see it, check your spam folder."
    );
    let (status, error) = error_of(
        app.post_json("/api/auth/reset", &json!({"email": "nobody"}))
            .await,
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(
        error["message"],
        "Invalid email format. Please enter a valid email address."
    );
    let (_, error) = error_of(app.post_json("/api/auth/reset", &json!({})).await).await;
    assert_eq!(error["message"], "Please enter your email address");

    let response = app
        .post_json("/api/auth/reset", &json!({"email": "ann@example.com"}))
        .await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("json");
    assert_eq!(
        body["message"],
        "Password reset email sent! Check your inbox for instructions to reset your password. If you don't see it, check your spam folder."
    );

    let token = reset_token_mailed_to(&app, "ann@example.com").await;
    let response = app
        .post_json("/api/auth/reset/check", &json!({"token": token}))
        .await;
    assert_eq!(response.status(), 200);

    let (status, error) = error_of(
        app.post_json(
            "/api/auth/reset/confirm",
            &json!({"token": token, "password": "short"}),
        )
        .await,
    )
    .await;
    assert_eq!(
        (status, error["error"].as_str()),
        (400, Some("weak_password"))
    );

    let response = app
        .post_json(
            "/api/auth/reset/confirm",
            &json!({"token": token, "password": "new-secret"}),
        )
        .await;
    assert_eq!(response.status(), 200);
    let (new_session, _) = session_cookie(&response);
    assert_eq!(
        me(&app, &new_session).await["user"]["email"],
        "ann@example.com"
    );
    assert_eq!(
        me(&app, &old_session).await["user"],
        Value::Null,
        "other sessions end"
    );

    let (status, _) = error_of(
        app.post_json(
            "/api/auth/reset/confirm",
            &json!({"token": token, "password": "third-one"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 410, "a link works once");
    let (status, _) = error_of(
        app.post_json("/api/auth/reset/check", &json!({"token": token}))
            .await,
    )
    .await;
    assert_eq!(status, 410);

    let old = app
        .post_json(
            "/api/auth/login",
            &json!({"email": "ann@example.com", "password": "secret1"}),
        )
        .await;
    assert_eq!(old.status(), 401);
    let new = app
        .post_json(
            "/api/auth/login",
            &json!({"email": "ann@example.com", "password": "new-secret"}),
        )
        .await;
    assert_eq!(new.status(), 200);
}

#[tokio::test]
async fn an_account_made_with_an_email_alone_is_signed_in_and_chooses_its_password_by_mail() {
    let app = spawn_app().await;
    let response = app
        .post_json(
            "/api/auth/signup",
            &json!({"email": "ann@example.com", "setPasswordByMail": true}),
        )
        .await;
    assert_eq!(response.status(), 201);
    let (session, _) = session_cookie(&response);
    let who = me(&app, &session).await;
    assert_eq!(who["user"]["email"], "ann@example.com");
    assert_eq!(who["user"]["hasPassword"], false);
    // No password works until one is chosen, an empty one least of all.
    let (status, _) = error_of(
        app.post_json(
            "/api/auth/login",
            &json!({"email": "ann@example.com", "password": ""}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 400);

    let token = reset_token_mailed_to(&app, "ann@example.com").await;
    let response = app
        .post_json(
            "/api/auth/reset/confirm",
            &json!({"token": token, "password": "chosen-secret"}),
        )
        .await;
    assert_eq!(response.status(), 200);
    let login = app
        .post_json(
            "/api/auth/login",
            &json!({"email": "ann@example.com", "password": "chosen-secret"}),
        )
        .await;
    assert_eq!(login.status(), 200);

    // A password is still required when the mail is not asked for.
    let (status, error) = error_of(
        app.post_json("/api/auth/signup", &json!({"email": "bob@example.com"}))
            .await,
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(error["error"], "password_required");
}

#[tokio::test]
async fn made_up_reset_links_cost_no_hash_and_one_address_may_not_spray_them() {
    let app = spawn_app().await;
    let made_up = |n: usize| format!("{n:0>43}");
    for n in 0..10 {
        let (status, error) = error_of(
            app.post_json(
                "/api/auth/reset/confirm",
                &json!({"token": made_up(n), "password": "new-secret"}),
            )
            .await,
        )
        .await;
        assert_eq!(
            (status, error["error"].as_str()),
            (410, Some("reset_link_invalid"))
        );
    }
    let (status, error) = error_of(
        app.post_json(
            "/api/auth/reset/confirm",
            &json!({"token": made_up(10), "password": "new-secret"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 429, "{error}");
    assert_eq!(
        error["message"],
        "Too many password reset attempts. Please wait a minute and try again."
    );
}

#[tokio::test]
async fn another_website_cannot_make_a_signed_in_browser_write() {
    let app = spawn_app().await;
    let session = sign_up(&app, "ann@example.com", "secret1").await;
    let logout = |headers: &'static [(&'static str, &'static str)]| {
        let mut request = app
            .client
            .post(app.url("/api/auth/logout"))
            .header("cookie", session.clone())
            .json(&json!({}));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send()
    };
    for headers in [
        &[("origin", "https://evil.example")][..],
        &[("sec-fetch-site", "cross-site")][..],
        &[
            ("sec-fetch-site", "same-site"),
            ("origin", "http://127.0.0.1:8080"),
        ][..],
        &[("origin", "null")][..],
    ] {
        let (status, error) = error_of(logout(headers).await.expect("sent")).await;
        assert_eq!(
            (status, error["error"].as_str()),
            (403, Some("cross_site")),
            "{headers:?}"
        );
        assert_eq!(
            me(&app, &session).await["user"]["email"],
            "ann@example.com",
            "still signed in after {headers:?}"
        );
    }
    // This site's own pages (the public URL's origin), and reads from anywhere, go on.
    let response = app
        .client
        .get(app.url("/api/auth/me"))
        .header("cookie", session.clone())
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 200);
    let response = logout(&[
        ("sec-fetch-site", "same-origin"),
        ("origin", "http://127.0.0.1:8080"),
    ])
    .await
    .expect("sent");
    assert_eq!(response.status(), 204, "signed out");
}
