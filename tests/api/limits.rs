//! Each per-client limit over HTTP (and over the real-time channel for `/member`): past it, the
//! answer is the documented refusal, and another client is not affected. Clients are told apart
//! as behind the load balancer: the test client is on loopback, among the default
//! `server.trusted_proxies`, so the server reads the address it appends to `X-Forwarded-For`.

use serde_json::{Value, json};

use crate::auth::{error_of, me, post_from, reset_token_mailed_to, sign_up};
use crate::helpers::{TestApp, spawn_app, spawn_app_with};

const TOO_MANY_REQUESTS: &str = "Too many requests. Please try again later.";
const TOO_MANY_ATTEMPTS: &str =
    "Too many failed login attempts. Please try again later or reset your password.";
const TOO_MANY_RESETS: &str =
    "Too many password reset requests. Please wait a few minutes and try again.";

/// A server behind a load balancer on loopback (the default trusted proxies), whose client
/// addresses the tests choose.
async fn behind_a_balancer() -> TestApp {
    spawn_app().await
}

#[tokio::test]
async fn sign_ups_from_one_address_are_limited() {
    let app = behind_a_balancer().await;
    let sign_up_from = |address: &'static str, n: usize| {
        let email = format!("new{n}@example.com");
        let app = &app;
        async move {
            post_from(
                app,
                address,
                "/api/auth/signup",
                &json!({"email": email, "password": "secret1"}),
            )
            .await
        }
    };
    for n in 0..10 {
        assert_eq!(sign_up_from("203.0.113.1", n).await.status(), 201, "{n}");
    }
    let (status, error) = error_of(sign_up_from("203.0.113.1", 10).await).await;
    assert_eq!(status, 429);
    assert_eq!(error["error"], "too_many_requests");
    assert_eq!(error["message"], TOO_MANY_REQUESTS);
    // The refused sign-up made no account: from another address the same email is free.
    assert_eq!(sign_up_from("198.51.100.2", 10).await.status(), 201);
}

#[tokio::test]
async fn checkouts_from_one_address_are_limited() {
    let app = behind_a_balancer().await;
    let checkout = json!({"source": "chat_trial_prompt"});
    for n in 0..20 {
        let response = post_from(&app, "203.0.113.1", "/api/create-checkout.js", &checkout).await;
        assert_eq!(response.status(), 200, "checkout {n}");
    }
    let (status, error) =
        error_of(post_from(&app, "203.0.113.1", "/api/create-checkout.js", &checkout).await).await;
    assert_eq!(status, 429);
    assert_eq!(error["error"], "too_many_requests");
    assert_eq!(error["message"], TOO_MANY_REQUESTS);
    let other = post_from(&app, "198.51.100.2", "/api/create-checkout.js", &checkout).await;
    assert_eq!(other.status(), 200);
}

#[tokio::test]
async fn reset_mails_are_limited_per_address() {
    let app = behind_a_balancer().await;
    // Unknown accounts get the same answer as known ones (no mail), and each asking counts: an
    // address may not probe or spray.
    for n in 0..10 {
        let response = post_from(
            &app,
            "203.0.113.1",
            "/api/auth/reset",
            &json!({"email": format!("nobody{n}@example.com")}),
        )
        .await;
        assert_eq!(response.status(), 200, "request {n}");
    }
    let (status, error) = error_of(
        post_from(
            &app,
            "203.0.113.1",
            "/api/auth/reset",
            &json!({"email": "nobody10@example.com"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 429);
    assert_eq!(error["error"], "too_many_requests");
    assert_eq!(error["message"], TOO_MANY_RESETS);
    let other = post_from(
        &app,
        "198.51.100.2",
        "/api/auth/reset",
        &json!({"email": "nobody10@example.com"}),
    )
    .await;
    assert_eq!(other.status(), 200, "another address is not limited");
}

async fn reset_mails_to(app: &TestApp, recipient: &str) -> u64 {
    let mut response = app
        .db
        .query(
            "RETURN count(SELECT VALUE id FROM mail_outbox \
             WHERE recipient = $to AND kind = 'password_reset')",
        )
        .bind(("to", recipient.to_owned()))
        .await
        .expect("query");
    let count: Option<u64> = response.take(0).expect("count");
    count.unwrap_or(0)
}

/// Reset mails to one account: three asked from one address, ten from all of them; when the
/// account's ceiling refuses, the mails it let through are in the inbox and work.
#[tokio::test]
async fn reset_mails_to_one_account_are_limited_and_the_last_one_still_works() {
    let app = behind_a_balancer().await;
    sign_up(&app, "ann@example.com", "secret1").await;
    let reset_from = |address: String| {
        let app = &app;
        async move {
            post_from(
                app,
                &address,
                "/api/auth/reset",
                &json!({"email": "ann@example.com"}),
            )
            .await
        }
    };
    for _ in 0..3 {
        assert_eq!(reset_from("203.0.113.1".to_owned()).await.status(), 200);
    }
    let (status, error) = error_of(reset_from("203.0.113.1".to_owned()).await).await;
    assert_eq!(status, 429);
    assert_eq!(error["message"], TOO_MANY_RESETS);
    for n in 2..9 {
        let response = reset_from(format!("203.0.113.{n}")).await;
        assert_eq!(response.status(), 200, "from address {n}");
    }
    let (status, error) = error_of(reset_from("198.51.100.7".to_owned()).await).await;
    assert_eq!(status, 429, "the account's ten mails are sent");
    assert_eq!(error["message"], TOO_MANY_RESETS);
    assert_eq!(reset_mails_to(&app, "ann@example.com").await, 10);

    let token = reset_token_mailed_to(&app, "ann@example.com").await;
    let response = post_from(
        &app,
        "198.51.100.7",
        "/api/auth/reset/confirm",
        &json!({"token": token, "password": "brand-new1"}),
    )
    .await;
    assert_eq!(
        response.status(),
        200,
        "the owner resets with a mailed link"
    );
}

#[tokio::test]
async fn the_help_funnel_is_limited_per_address() {
    let app = behind_a_balancer().await;
    let issue = json!({"issue": "My printer stopped printing after an update"});
    for n in 0..5 {
        let response = post_from(&app, "203.0.113.1", "/api/funnels/help", &issue).await;
        assert_eq!(response.status(), 200, "request {n}");
    }
    let (status, error) =
        error_of(post_from(&app, "203.0.113.1", "/api/funnels/help", &issue).await).await;
    assert_eq!(status, 429);
    assert_eq!(error["error"], "rate_limited");
    assert_eq!(error["message"], TOO_MANY_REQUESTS);
    let other = post_from(&app, "198.51.100.2", "/api/funnels/help", &issue).await;
    assert_eq!(other.status(), 200);
}

/// Five help requests (the help funnel's burst) carrying each of `forwarded_for`, then one
/// carrying `then`: its status.
async fn help_requests_then(app: &TestApp, forwarded_for: &[String], then: &str) -> u16 {
    let issue = json!({"issue": "My printer stopped printing after an update"});
    for (n, header) in forwarded_for.iter().enumerate() {
        let response = post_from(app, header, "/api/funnels/help", &issue).await;
        assert_eq!(response.status(), 200, "request {n}");
    }
    post_from(app, then, "/api/funnels/help", &issue)
        .await
        .status()
        .as_u16()
}

#[tokio::test]
async fn from_a_trusted_proxy_the_client_is_the_first_entry_from_the_right_not_a_proxy() {
    // The balancer on loopback, behind a CDN (192.0.2.0/24) that appends to the header too.
    let app = spawn_app_with(|settings| {
        settings.server.trusted_proxies = ["127.0.0.1", "192.0.2.0/24"]
            .iter()
            .map(|network| network.parse().expect("a network"))
            .collect();
    })
    .await;
    // Whatever the client writes on the left, the CDN's entry is skipped and the one it saw taken.
    let forged: Vec<String> = (0..5)
        .map(|n| format!("6.6.6.{n}, 203.0.113.1, 192.0.2.7"))
        .collect();
    assert_eq!(
        help_requests_then(&app, &forged, "6.6.6.9, 203.0.113.1, 192.0.2.8").await,
        429,
        "the same client through the CDN"
    );
    assert_eq!(
        help_requests_then(&app, &[], "203.0.113.2, 192.0.2.7").await,
        200,
        "another client through the CDN"
    );
}

#[tokio::test]
async fn from_a_peer_that_is_not_a_trusted_proxy_the_header_is_ignored() {
    // The test talks to the server from 127.0.0.1, which this list leaves out.
    let app = spawn_app_with(|settings| {
        settings.server.trusted_proxies = vec!["192.0.2.0/24".parse().expect("a network")];
    })
    .await;
    let made_up: Vec<String> = (0..5).map(|n| format!("203.0.113.{n}")).collect();
    assert_eq!(
        help_requests_then(&app, &made_up, "198.51.100.9").await,
        429,
        "limited by its own address, whatever it says it forwards"
    );
}

/// Guessing a password through account setup (an account that has one: setup is then a
/// sign-in) meets the sign-in limits, and the same count as `/api/auth/login`.
#[tokio::test]
async fn guessing_through_account_setup_is_throttled_with_the_sign_in_limits() {
    let app = behind_a_balancer().await;
    sign_up(&app, "ann@example.com", "secret1").await;
    let setup_from = |address: &'static str, password: &'static str| {
        let app = &app;
        async move {
            post_from(
                app,
                address,
                "/api/account/setup",
                &json!({"email": "ann@example.com", "password": password}),
            )
            .await
        }
    };
    for n in 0..9 {
        let (status, error) = error_of(setup_from("203.0.113.1", "guess").await).await;
        assert_eq!(status, 401, "guess {n}");
        assert_eq!(error["error"], "invalid_credentials");
    }
    let login = post_from(
        &app,
        "203.0.113.1",
        "/api/auth/login",
        &json!({"email": "ann@example.com", "password": "guess"}),
    )
    .await;
    assert_eq!(login.status(), 401, "the tenth try, at the sign-in form");
    let (status, error) = error_of(setup_from("203.0.113.1", "secret1").await).await;
    assert_eq!(status, 429);
    assert_eq!(error["error"], "too_many_requests");
    assert_eq!(error["message"], TOO_MANY_ATTEMPTS);
    let login = post_from(
        &app,
        "203.0.113.1",
        "/api/auth/login",
        &json!({"email": "ann@example.com", "password": "secret1"}),
    )
    .await;
    assert_eq!(login.status(), 429, "one count for both ways in");

    let owner = setup_from("198.51.100.7", "secret1").await;
    assert_eq!(owner.status(), 200, "the owner, from another address");
}

/// Opens an Engine.IO session over long-polling as the client at `address` and asks to join
/// `/member` with `cookie`; the namespace's answer packet.
async fn join_member_from(app: &TestApp, address: &str, cookie: &str) -> String {
    const HANDSHAKE: &str = "/socket.io/?EIO=4&transport=polling";
    let body = app
        .client
        .get(app.url(HANDSHAKE))
        .header("x-forwarded-for", address)
        .header("cookie", cookie)
        .send()
        .await
        .expect("handshake")
        .text()
        .await
        .expect("body");
    let open: Value =
        serde_json::from_str(body.strip_prefix('0').expect("an open packet")).expect("json");
    let session = format!("{HANDSHAKE}&sid={}", open["sid"].as_str().expect("sid"));
    let sent = app
        .client
        .post(app.url(&session))
        .header("x-forwarded-for", address)
        .header("cookie", cookie)
        .body("40/member,{}")
        .send()
        .await
        .expect("connect");
    assert_eq!(sent.status(), 200);
    for _ in 0..20 {
        let body = app
            .client
            .get(app.url(&session))
            .header("x-forwarded-for", address)
            .send()
            .await
            .expect("poll")
            .text()
            .await
            .expect("poll body");
        if let Some(answer) = body
            .split('\u{1e}')
            .find(|packet| packet.starts_with("40/member,") || packet.starts_with("44/member,"))
        {
            return answer.to_owned();
        }
    }
    panic!("no answer to the join");
}

#[tokio::test]
async fn member_chat_connections_are_limited_per_address() {
    let app = spawn_app_with(|settings| {
        settings.realtime.member_joins_per_minute = 3;
    })
    .await;
    let cookie = sign_up(&app, "member@example.com", "secret1").await;
    let user_id = me(&app, &cookie).await["user"]["id"]
        .as_str()
        .expect("user id")
        .to_owned();
    app.db
        .query(
            "UPDATE type::record('user', $id) SET trial_started = true, \
             trial_start_date = time::now(), trial_end_date = time::now() + 7d",
        )
        .bind(("id", user_id))
        .await
        .expect("query")
        .check()
        .expect("trial set");

    for n in 0..3 {
        let answer = join_member_from(&app, "203.0.113.1", &cookie).await;
        assert!(answer.starts_with("40/member,"), "join {n}: {answer}");
    }
    let refused = join_member_from(&app, "203.0.113.1", &cookie).await;
    assert!(refused.starts_with("44/member,"), "{refused}");
    let data: Value = serde_json::from_str(&refused["44/member,".len()..]).expect("json");
    assert_eq!(data["data"]["code"], "rate_limited");
    assert_eq!(
        data["message"],
        "Too many connections from your network. Please wait a minute and try again."
    );
    let other = join_member_from(&app, "198.51.100.2", &cookie).await;
    assert!(other.starts_with("40/member,"), "{other}");
}
