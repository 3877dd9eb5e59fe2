//! What expires: a reset link and a mailed sign-in link after an hour, a session after 30 days;
//! and a reset link clicked twice at once works once. Time passes by moving a stored record's
//! times back, as if it had been written that long ago.

use serde_json::{Value, json};

use crate::auth::{error_of, me, reset_token_mailed_to, session_cookie, sign_up};
use crate::helpers::{TestApp, get_with_cookie, spawn_app};

const RESET_LINK_INVALID: &str =
    "This password reset link has expired or was already used. Please request a new one.";
const TOKEN_INVALID: &str = "This sign-in link has expired or was already used. Please sign in with your email and password.";

/// Moves the times of every row of `table` back by `by` (a SurrealQL duration such as `59m`).
async fn age(app: &TestApp, table: &str, by: &str) {
    app.db
        .query(format!(
            "UPDATE {table} SET created_at = created_at - type::duration($by), \
             expires_at = expires_at - type::duration($by)"
        ))
        .bind(("by", by.to_owned()))
        .await
        .expect("query")
        .check()
        .expect("aged");
}

/// Seconds from the creation of `table`'s only row to its expiry.
async fn lifetime(app: &TestApp, table: &str) -> i64 {
    let mut response = app
        .db
        .query(format!(
            "SELECT VALUE time::unix(expires_at) - time::unix(created_at) FROM {table}"
        ))
        .await
        .expect("query");
    let lifetimes: Vec<i64> = response.take(0).expect("lifetimes");
    assert_eq!(lifetimes.len(), 1, "{table}: {lifetimes:?}");
    lifetimes[0]
}

#[tokio::test]
async fn a_reset_link_works_for_an_hour_and_not_after() {
    let app = spawn_app().await;
    sign_up(&app, "ann@example.com", "secret1").await;
    let response = app
        .post_json("/api/auth/reset", &json!({"email": "ann@example.com"}))
        .await;
    assert_eq!(response.status(), 200);
    let token = reset_token_mailed_to(&app, "ann@example.com").await;
    assert!((3599..=3601).contains(&lifetime(&app, "password_reset").await));

    age(&app, "password_reset", "59m").await;
    let check = app
        .post_json("/api/auth/reset/check", &json!({"token": token}))
        .await;
    assert_eq!(check.status(), 200, "after 59 minutes the link still works");

    age(&app, "password_reset", "2m").await;
    let (status, error) = error_of(
        app.post_json("/api/auth/reset/check", &json!({"token": token}))
            .await,
    )
    .await;
    assert_eq!(status, 410);
    assert_eq!(error["error"], "reset_link_invalid");
    assert_eq!(error["message"], RESET_LINK_INVALID);
    let (status, error) = error_of(
        app.post_json(
            "/api/auth/reset/confirm",
            &json!({"token": token, "password": "brand-new1"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 410, "after 61 minutes the link is dead");
    assert_eq!(error["message"], RESET_LINK_INVALID);
    let login = app
        .post_json(
            "/api/auth/login",
            &json!({"email": "ann@example.com", "password": "secret1"}),
        )
        .await;
    assert_eq!(login.status(), 200, "the password is unchanged");
}

/// A checkout paid with a new address: its account gets a welcome mail with a one-time sign-in
/// link (`jwt=`); the link's token.
async fn mailed_sign_in_token(app: &TestApp, email: &str) -> String {
    let started: Value = app
        .post_json(
            "/api/create-checkout.js",
            &json!({"source": "refundable_fee_funnel"}),
        )
        .await
        .json()
        .await
        .expect("json");
    let session_id = started["sessionId"].as_str().expect("a checkout");
    let paid = app
        .post_json(
            &format!("/api/demo-checkout/{session_id}/complete"),
            &json!({"email": email, "cardNumber": "4242 4242 4242 4242"}),
        )
        .await;
    assert_eq!(paid.status(), 200);
    let mut response = app
        .db
        .query("SELECT VALUE body FROM mail_outbox WHERE recipient = $to AND kind = 'welcome'")
        .bind(("to", email.to_owned()))
        .await
        .expect("query");
    let bodies: Vec<String> = response.take(0).expect("bodies");
    let body = bodies.into_iter().next().expect("a welcome mail");
    crate::helpers::sign_in_token_in(&body)
}

#[tokio::test]
async fn a_mailed_sign_in_link_works_for_an_hour_and_not_after() {
    let app = spawn_app().await;
    let first = mailed_sign_in_token(&app, "first@example.com").await;
    assert!((3590..=3601).contains(&lifetime(&app, "sign_in_token").await));
    let second = mailed_sign_in_token(&app, "second@example.com").await;

    age(&app, "sign_in_token", "59m").await;
    let response = app
        .post_json("/api/auth/token", &json!({"token": first}))
        .await;
    assert_eq!(response.status(), 200, "after 59 minutes a link works");

    age(&app, "sign_in_token", "2m").await;
    let (status, error) = error_of(
        app.post_json("/api/auth/token", &json!({"token": second}))
            .await,
    )
    .await;
    assert_eq!(status, 401, "after 61 minutes a link is dead");
    assert_eq!(error["error"], "invalid_token");
    assert_eq!(error["message"], TOKEN_INVALID);
}

#[tokio::test]
async fn a_session_lasts_thirty_days() {
    let app = spawn_app().await;
    let response = app
        .post_json(
            "/api/auth/signup",
            &json!({"email": "ann@example.com", "password": "secret1"}),
        )
        .await;
    assert_eq!(response.status(), 201);
    let (cookie, header) = session_cookie(&response);
    assert!(header.contains("Max-Age=2592000"), "{header}");
    assert!((2_591_999..=2_592_001).contains(&lifetime(&app, "session").await));

    age(&app, "session", "29d").await;
    assert_eq!(me(&app, &cookie).await["user"]["email"], "ann@example.com");
    assert_eq!(
        get_with_cookie(&app, "/api/tasks", &cookie).await.status(),
        200
    );

    age(&app, "session", "2d").await;
    assert_eq!(
        me(&app, &cookie).await["user"],
        Value::Null,
        "after 31 days the session is over"
    );
    let (status, error) = error_of(get_with_cookie(&app, "/api/tasks", &cookie).await).await;
    assert_eq!(status, 401);
    assert_eq!(error["error"], "sign_in_required");
}

/// The same reset link sent several times at the same moment, each with its own new password:
/// one request sets its password and signs in, the others are told the link was used.
#[tokio::test]
async fn a_reset_link_clicked_several_times_at_once_works_once() {
    let app = spawn_app().await;
    sign_up(&app, "ann@example.com", "secret1").await;
    let response = app
        .post_json("/api/auth/reset", &json!({"email": "ann@example.com"}))
        .await;
    assert_eq!(response.status(), 200);
    let token = reset_token_mailed_to(&app, "ann@example.com").await;

    let passwords: Vec<String> = (0..6).map(|n| format!("brand-new-{n}")).collect();
    let clicks = passwords.iter().map(|password| {
        let request = app
            .client
            .post(app.url("/api/auth/reset/confirm"))
            .json(&json!({"token": token, "password": password}));
        async move {
            let response = request.send().await.expect("sent");
            let signed_in = response.status() == 200;
            let (status, body) = error_of(response).await;
            (status, body, signed_in)
        }
    });
    let answers = futures_util::future::join_all(clicks).await;
    let winners: Vec<usize> = answers
        .iter()
        .enumerate()
        .filter(|(_, (_, _, signed_in))| *signed_in)
        .map(|(index, _)| index)
        .collect();
    assert_eq!(winners.len(), 1, "{answers:?}");
    for (status, body, signed_in) in &answers {
        if !signed_in {
            assert_eq!(*status, 410, "{body}");
            assert_eq!(body["message"], RESET_LINK_INVALID);
        }
    }

    // Only the one password was stored.
    for (index, password) in passwords.iter().enumerate() {
        let login = app
            .post_json(
                "/api/auth/login",
                &json!({"email": "ann@example.com", "password": password}),
            )
            .await;
        let expected = if index == winners[0] { 200 } else { 401 };
        assert_eq!(login.status(), expected, "password {index}");
    }
}

/// What makes the above hold: spending a link is one conditional write, so of many spends at
/// the same moment (here without the hash that spaces out the HTTP requests) exactly one gets
/// the account.
#[tokio::test]
async fn of_many_spends_of_one_reset_link_at_the_same_moment_one_gets_the_account() {
    let app = spawn_app().await;
    sign_up(&app, "ann@example.com", "secret1").await;
    let response = app
        .post_json("/api/auth/reset", &json!({"email": "ann@example.com"}))
        .await;
    assert_eq!(response.status(), 200);
    let token = reset_token_mailed_to(&app, "ann@example.com").await;
    let hash = helpnow::auth::token::hash_secret(&token);

    let spends = (0..20).map(|n| {
        helpnow::store::password_resets::redeem_with_password(
            &app.db,
            &hash,
            format!("hash-{n}"),
            helpnow::store::password_resets::NewSession {
                token_hash: format!("session-{n}"),
                lifetime: std::time::Duration::from_secs(3600),
            },
        )
    });
    let spent = futures_util::future::join_all(spends).await;
    let owners: Vec<String> = spent
        .into_iter()
        .filter_map(|spend| spend.expect("no database error"))
        .collect();
    assert_eq!(owners.len(), 1, "{owners:?}");
}
