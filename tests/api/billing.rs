//! The money path on the demo provider: checkout, payment, fulfilment, account setup, one-time
//! sign-in tokens, and the subscription check.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::auth::{error_of, me, session_cookie, sign_up};
use crate::helpers::{TestApp, cookie_named, get_with_cookie, post_with_cookie, spawn_app};

/// Starts a checkout; the answer also carries, as `startCookie`, the cookie that marks this
/// client as the one that started it.
pub(crate) async fn start_checkout(app: &TestApp, body: Value) -> Value {
    let response = app.post_json("/api/create-checkout.js", &body).await;
    assert_eq!(response.status(), 200);
    let cookie = cookie_named(&response, "helpnow_checkout_start").expect("the start cookie");
    let mut answer: Value = response.json().await.expect("json");
    answer["startCookie"] = Value::String(cookie);
    answer
}

/// Starts a checkout as the member signed in with `session`; the answer also carries the start
/// cookie as `startCookie`.
pub(crate) async fn start_checkout_signed_in(app: &TestApp, session: &str, body: Value) -> Value {
    let response = post_with_cookie(app, "/api/create-checkout.js", session, &body).await;
    assert_eq!(response.status(), 200);
    let cookie = cookie_named(&response, "helpnow_checkout_start").expect("the start cookie");
    let mut answer: Value = response.json().await.expect("json");
    answer["startCookie"] = Value::String(cookie);
    answer
}

pub(crate) async fn pay(app: &TestApp, session_id: &str, email: &str) -> String {
    let response = app
        .post_json(
            &format!("/api/demo-checkout/{session_id}/complete"),
            &json!({"email": email, "cardNumber": "4242 4242 4242 4242"}),
        )
        .await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("json");
    body["redirect"].as_str().expect("a redirect").to_owned()
}

/// A `Billing` on the test app's store with the demo provider, to run its periodic passes.
/// The provider's `invoice.paid` event `event` for `subscription`, `cents` paid in a renewal,
/// handled as the webhook handles it.
pub(crate) async fn invoice_paid(
    app: &TestApp,
    event: &str,
    subscription: Option<String>,
    cents: i64,
) {
    demo_billing(app)
        .process_event(
            "demo",
            event,
            "invoice.paid",
            json!({}),
            Some(helpnow::domain::billing::BillingEvent::InvoicePaid {
                customer_id: None,
                subscription_id: subscription,
                amount_paid: cents,
                billing_reason: Some("subscription_cycle".to_owned()),
            }),
        )
        .await
        .expect("the invoice is handled");
}

pub(crate) fn demo_billing(app: &TestApp) -> helpnow::billing::Billing {
    let settings = crate::helpers::test_settings();
    helpnow::billing::Billing::new(
        app.db.clone(),
        std::sync::Arc::new(helpnow::billing::demo::DemoProvider::new(app.db.clone())),
        helpnow::mail::Mailer::from_settings(&settings.mail, app.db.clone()).expect("mailer"),
        "http://127.0.0.1:8080".parse().expect("url"),
        "HelpNow".to_owned(),
    )
}

/// The number a counting query answers (0 for none).
pub(crate) async fn count(app: &TestApp, sql: &str) -> u64 {
    let mut response = app.db.query(sql).await.expect("query");
    let value: Option<u64> = response.take(0).expect("count");
    value.unwrap_or(0)
}

/// A signed-out visitor starts the trial prompt's checkout, pays it with `email` and comes back
/// to the success page: its answer and the checkout cookie.
async fn buy_trial_signed_out(app: &TestApp, email: &str) -> (Value, Option<String>) {
    let started = start_checkout(app, json!({"source": "chat_trial_prompt"})).await;
    let redirect = pay(app, started["sessionId"].as_str().expect("id"), email).await;
    confirm(app, &started, &redirect).await
}

/// The success page's API call for a redirect path, from the client that started the checkout;
/// returns its answer and the checkout cookie.
pub(crate) async fn confirm(
    app: &TestApp,
    started: &Value,
    redirect: &str,
) -> (Value, Option<String>) {
    let query = redirect.split_once('?').map(|(_, q)| q).unwrap_or_default();
    let response = get_with_cookie(
        app,
        &format!("/api/checkout-success?{query}"),
        started["startCookie"].as_str().unwrap_or_default(),
    )
    .await;
    let status = response.status();
    let cookie = cookie_named(&response, "helpnow_checkout");
    let body: Value = response.json().await.expect("json");
    assert_eq!(status, 200, "{body}");
    (body, cookie)
}

#[tokio::test]
async fn a_funnel_visitor_pays_one_dollar_and_sets_up_a_trial_account() {
    let app = spawn_app().await;
    let started = start_checkout(
        &app,
        json!({
            "source": "chat_funnel", "keyword": "outlook email", "campaignid": "12345",
            "headline": "Need Outlook Email Assistance?", "utm_source": "google",
            "priceId": "price_free", "refundableFee": false, "subscriptionPrice": 0,
            "cancelUrl": "https://evil.example/"
        }),
    )
    .await;
    let session_id = started["sessionId"].as_str().expect("sessionId");
    assert!(session_id.starts_with("demo_cs_"), "{started}");
    assert_eq!(started["url"], format!("/demo-checkout/{session_id}"));
    assert!(
        started["trackingSessionId"]
            .as_str()
            .expect("tracking")
            .starts_with("hn_")
    );

    // The page shows what is charged: the server's prices, whatever the request said.
    let page: Value = app
        .get(&format!("/api/demo-checkout/{session_id}"))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(page["todayCents"], 100);
    assert_eq!(page["monthlyCents"], 2000);
    assert_eq!(page["trialDays"], 7);
    assert_eq!(page["status"], "open");
    assert_eq!(
        page["cancelUrl"], "/?canceled=true",
        "a cancel URL never leaves the site"
    );

    let declined = app
        .post_json(
            &format!("/api/demo-checkout/{session_id}/complete"),
            &json!({"email": "ann@example.com", "cardNumber": "4000 0000 0000 0002"}),
        )
        .await;
    let (status, error) = error_of(declined).await;
    assert_eq!(
        (status, error["error"].as_str()),
        (402, Some("card_declined"))
    );

    // Not paid yet: the success page gets no account and no trial.
    let unpaid = app
        .get(&format!("/api/checkout-success?session_id={session_id}"))
        .await;
    assert_eq!(unpaid.status(), 402);
    assert_eq!(
        count(&app, "RETURN count(SELECT VALUE id FROM user)").await,
        0
    );

    let redirect = pay(&app, session_id, "Ann@Example.com").await;
    assert!(
        redirect.starts_with(&format!(
            "/checkout-success?session_id={session_id}&session=hn_"
        )),
        "{redirect}"
    );

    // Another client with the same success URL learns the outcome but gets no sign-in cookie.
    let (_, stranger) = confirm(&app, &json!({}), &redirect).await;
    assert_eq!(stranger, None);
    let (answer, checkout_cookie) = confirm(&app, &started, &redirect).await;
    assert_eq!(answer["next"], "setup");
    assert_eq!(answer["email"], "ann@example.com");
    assert_eq!(answer["hasPassword"], false);
    assert_eq!(answer["trialActive"], true);
    assert_eq!(answer["paymentSessionId"], session_id);
    let checkout_cookie = checkout_cookie.expect("the success page sets the checkout cookie");
    let (_, again) = confirm(&app, &started, &redirect).await;
    assert_eq!(again, None, "one checkout cookie per checkout");

    // The user document carries the trial, the attribution and the history.
    let mut response = app
        .db
        .query("SELECT trial_started, trial_used, checkout_completed, acquisition, trial_attribution, array::len(trial_history) AS trials, payment_session_id FROM user")
        .await
        .expect("query");
    let users: Vec<Value> = response.take(0).expect("users");
    assert_eq!(users.len(), 1);
    let user = &users[0];
    assert_eq!(user["trial_started"], true);
    assert_eq!(user["trials"], 1);
    assert_eq!(user["acquisition"]["keyword"], "outlook email");
    assert_eq!(user["acquisition"]["source"], "google");
    assert_eq!(user["acquisition"]["medium"], "none");
    assert_eq!(user["trial_attribution"]["campaignid"], "12345");
    assert_eq!(user["trial_attribution"]["funnel_type"], "chat_funnel");
    for event in ["begin_checkout", "purchase", "begin_trial"] {
        assert_eq!(
            helpnow::store::analytics::count_named(&app.db, event)
                .await
                .expect("count"),
            1,
            "{event}"
        );
    }
    assert_eq!(
        count(
            &app,
            "RETURN count(SELECT VALUE id FROM mail_outbox WHERE kind = 'welcome')"
        )
        .await,
        1
    );

    let status: Value = get_with_cookie(&app, "/api/account/setup", &checkout_cookie)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(status["email"], "ann@example.com");
    assert_eq!(status["hasPassword"], false);

    let (code, error) = error_of(
        post_with_cookie(
            &app,
            "/api/account/setup",
            &checkout_cookie,
            &json!({"email": "bob@example.com", "password": "secret1"}),
        )
        .await,
    )
    .await;
    assert_eq!(
        (code, error["error"].as_str()),
        (400, Some("email_mismatch"))
    );
    let (_, error) = error_of(
        post_with_cookie(
            &app,
            "/api/account/setup",
            &checkout_cookie,
            &json!({"email": "", "password": "secret1"}),
        )
        .await,
    )
    .await;
    assert_eq!(error["message"], "Email is required");
    let (_, error) = error_of(
        post_with_cookie(
            &app,
            "/api/account/setup",
            &checkout_cookie,
            &json!({"email": "ann@example.com"}),
        )
        .await,
    )
    .await;
    assert_eq!(error["message"], "Password is required");

    let response = post_with_cookie(
        &app,
        "/api/account/setup",
        &checkout_cookie,
        &json!({"email": "ann@example.com", "password": "secret1"}),
    )
    .await;
    assert_eq!(response.status(), 200);
    let (session, _) = session_cookie(&response);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["trialActive"], true);
    let who = me(&app, &session).await;
    assert_eq!(who["user"]["email"], "ann@example.com");
    assert_eq!(
        helpnow::store::analytics::count_named(&app.db, "account_setup")
            .await
            .expect("count"),
        1
    );

    let user_id = who["user"]["id"].as_str().expect("id");
    let check: Value = post_with_cookie(
        &app,
        "/api/check-subscription.js",
        &session,
        &json!({"userId": user_id}),
    )
    .await
    .json()
    .await
    .expect("json");
    assert_eq!(check["trialActive"], true);
    assert_eq!(check["hasActiveSubscription"], true);
    assert_eq!(check["subscription"]["status"], "trialing");
    assert_eq!(check["subscription"]["planId"], "demo_price_monthly");
    assert_eq!(check["subscription"]["cancelAtPeriodEnd"], false);

    // Cancel anytime: access lasts to the end of the trial, and the subscription will not renew.
    let cancel = post_with_cookie(&app, "/api/billing/cancel", &session, &json!({})).await;
    assert_eq!(cancel.status(), 200);
    let who = me(&app, &session).await;
    assert_eq!(who["user"]["access"]["trialActive"], true);
    let mut response = app
        .db
        .query("SELECT VALUE cancel_at_period_end FROM subscription")
        .await
        .expect("query");
    let flags: Vec<bool> = response.take(0).expect("flags");
    assert_eq!(flags, vec![true]);

    // The checkout cookie was single use: from now on setup is a sign-in with the password.
    let again = post_with_cookie(
        &app,
        "/api/account/setup",
        &checkout_cookie,
        &json!({"email": "ann@example.com", "password": "not-it"}),
    )
    .await;
    assert_eq!(again.status(), 401);
    assert_eq!(
        post_with_cookie(&app, "/api/auth/token", &checkout_cookie, &json!({}))
            .await
            .status(),
        401
    );

    // And the password works for a normal sign-in.
    let login = app
        .post_json(
            "/api/auth/login",
            &json!({"email": "ann@example.com", "password": "secret1"}),
        )
        .await;
    assert_eq!(login.status(), 200);
}

#[tokio::test]
async fn an_existing_account_must_give_its_own_password() {
    let app = spawn_app().await;
    sign_up(&app, "ann@example.com", "original1").await;
    let (answer, cookie) = buy_trial_signed_out(&app, "ann@example.com").await;
    assert_eq!(
        answer["next"], "sign-in",
        "a signed-out buyer of an existing account is welcomed back to sign in"
    );
    assert_eq!(answer.get("hasPassword"), None, "{answer}");
    assert_eq!(
        cookie, None,
        "paying with an address signs nobody into its existing account"
    );
    assert_eq!(
        app.post_json("/api/auth/token", &json!({})).await.status(),
        401
    );
    let (status, error) = error_of(
        app.post_json(
            "/api/account/setup",
            &json!({"email": "ann@example.com", "password": "guessing"}),
        )
        .await,
    )
    .await;
    // Without the checkout's cookie, setup is a sign-in, and answers as the sign-in does: the
    // same for a wrong password as for an address without an account.
    assert_eq!(
        (status, error["error"].as_str()),
        (401, Some("invalid_credentials"))
    );
    let (status, stranger) = error_of(
        app.post_json(
            "/api/account/setup",
            &json!({"email": "nobody@example.com", "password": "guessing"}),
        )
        .await,
    )
    .await;
    assert_eq!(
        (status, &stranger),
        (401, &error),
        "nothing tells them apart"
    );
    let ok = app
        .post_json(
            "/api/account/setup",
            &json!({"email": "ann@example.com", "password": "original1"}),
        )
        .await;
    assert_eq!(ok.status(), 200);
    assert_eq!(
        count(&app, "RETURN count(SELECT VALUE id FROM user)").await,
        1,
        "no second account"
    );
}

#[tokio::test]
async fn a_signed_in_member_who_buys_goes_straight_to_the_members_page_with_access() {
    let app = spawn_app().await;
    let session = sign_up(&app, "ann@example.com", "original1").await;
    assert_eq!(
        me(&app, &session).await["user"]["access"]["hasAccess"],
        false
    );
    let started =
        start_checkout_signed_in(&app, &session, json!({"source": "chat_trial_prompt"})).await;
    let start = started["startCookie"]
        .as_str()
        .expect("start cookie")
        .to_owned();
    let id = started["sessionId"].as_str().expect("id");
    let page = checkout_page(&app, id).await;
    assert_eq!(page["email"], "ann@example.com", "the account's address");
    // The checkout page fixes the address; a different one typed anyway changes nothing.
    let redirect = pay(&app, id, "someone.else@example.com").await;
    let query = redirect.split_once('?').map(|(_, q)| q).unwrap_or_default();
    let response = get_with_cookie(
        &app,
        &format!("/api/checkout-success?{query}"),
        &format!("{start}; {session}"),
    )
    .await;
    assert_eq!(response.status(), 200);
    assert_eq!(cookie_named(&response, "helpnow_checkout"), None);
    let answer: Value = response.json().await.expect("json");
    assert_eq!(answer["next"], "members");
    assert_eq!(answer["email"], "ann@example.com");
    let who = me(&app, &session).await;
    assert_eq!(who["user"]["access"]["hasAccess"], true);
    assert_eq!(who["user"]["access"]["trialActive"], true);
    assert_eq!(
        count(&app, "RETURN count(SELECT VALUE id FROM user)").await,
        1,
        "no account for the typed address"
    );
}

#[tokio::test]
async fn success_pages_racing_on_one_paid_checkout_make_one_user_and_one_trial() {
    let app = spawn_app().await;
    let started = start_checkout(&app, json!({"source": "help_funnel"})).await;
    let session_id = started["sessionId"].as_str().expect("id").to_owned();
    // The payment is recorded, but nobody has fulfilled it yet.
    app.db
        .query("UPDATE checkout_session SET completed_at = time::now(), email = 'race@example.com', customer_id = 'demo_cus_race', subscription_id = 'demo_sub_race' WHERE provider_session_id = $id")
        .bind(("id", session_id.clone()))
        .await
        .expect("query");
    let calls = (0..12).map(|_| {
        let url = app.url(&format!("/api/checkout-success?session_id={session_id}"));
        let client = app.client.clone();
        async move {
            client
                .get(url)
                .send()
                .await
                .expect("sent")
                .status()
                .as_u16()
        }
    });
    let statuses = futures_util::future::join_all(calls).await;
    assert!(statuses.iter().all(|status| *status == 200), "{statuses:?}");
    assert_eq!(
        count(&app, "RETURN count(SELECT VALUE id FROM user)").await,
        1
    );
    assert_eq!(
        count(
            &app,
            "RETURN math::sum(SELECT VALUE array::len(trial_history) FROM user)"
        )
        .await,
        1
    );
    assert_eq!(
        count(
            &app,
            "RETURN count(SELECT VALUE id FROM mail_outbox WHERE kind = 'welcome')"
        )
        .await,
        1
    );
    assert_eq!(
        helpnow::store::analytics::count_named(&app.db, "purchase")
            .await
            .expect("count"),
        1
    );
}

/// The one-time token in the newest welcome mail.
async fn welcome_token(app: &TestApp) -> String {
    let mut response = app
        .db
        .query("SELECT VALUE body FROM mail_outbox WHERE kind IN ['welcome', 'payment_held'] ORDER BY created_at DESC LIMIT 1")
        .await
        .expect("query");
    let bodies: Vec<String> = response.take(0).expect("bodies");
    let body = bodies.into_iter().next().expect("a welcome mail");
    crate::helpers::sign_in_token_in(&body)
}

#[tokio::test]
async fn a_sign_in_token_works_once_even_when_redeemed_twenty_times_at_once() {
    let app = spawn_app().await;
    let started = start_checkout(&app, json!({"source": "refundable_fee_funnel"})).await;
    pay(
        &app,
        started["sessionId"].as_str().expect("id"),
        "tok@example.com",
    )
    .await;
    let token = welcome_token(&app).await;

    let calls = (0..20).map(|_| {
        let url = app.url("/api/auth/token");
        let client = app.client.clone();
        let token = token.clone();
        async move {
            client
                .post(url)
                .json(&json!({"token": token}))
                .send()
                .await
                .expect("sent")
                .status()
                .as_u16()
        }
    });
    let statuses = futures_util::future::join_all(calls).await;
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 401).count(),
        19,
        "{statuses:?}"
    );

    let later = app
        .post_json("/api/auth/token", &json!({"token": token}))
        .await;
    assert_eq!(later.status(), 401);
    let forged = app
        .post_json("/api/auth/token", &json!({"token": "x".repeat(43)}))
        .await;
    assert_eq!(forged.status(), 401);
    let (_, error) = error_of(app.post_json("/api/auth/token", &json!({})).await).await;
    assert_eq!(error["error"], "invalid_token");
    // Tokens are stored hashed: the table never holds what the mail holds.
    let mut response = app
        .db
        .query("SELECT VALUE token_hash FROM sign_in_token")
        .await
        .expect("query");
    let hashes: HashSet<String> = response
        .take::<Vec<String>>(0)
        .expect("hashes")
        .into_iter()
        .collect();
    assert!(!hashes.contains(&token));
}

#[tokio::test]
async fn nobody_reads_another_members_subscription() {
    let app = spawn_app().await;
    let ann = sign_up(&app, "ann@example.com", "secret1").await;
    let bob = sign_up(&app, "bob@example.com", "secret1").await;
    let ann_id = me(&app, &ann).await["user"]["id"]
        .as_str()
        .expect("id")
        .to_owned();

    let response = post_with_cookie(
        &app,
        "/api/check-subscription.js",
        &bob,
        &json!({"userId": ann_id}),
    )
    .await;
    assert_eq!(response.status(), 404);
    let anonymous = app
        .post_json("/api/check-subscription.js", &json!({"userId": ann_id}))
        .await;
    assert_eq!(anonymous.status(), 401);
    let (_, error) =
        error_of(post_with_cookie(&app, "/api/check-subscription.js", &ann, &json!({})).await)
            .await;
    assert_eq!(error["message"], "No userId provided");

    let own: Value = post_with_cookie(
        &app,
        "/api/check-subscription.js",
        &ann,
        &json!({"userId": ann_id}),
    )
    .await
    .json()
    .await
    .expect("json");
    assert_eq!(own["hasActiveSubscription"], false);
    assert_eq!(own["trialActive"], false);
    assert_eq!(own["subscription"], Value::Null);
}

#[tokio::test]
async fn no_client_call_starts_a_trial() {
    let app = spawn_app().await;
    let ann = sign_up(&app, "ann@example.com", "secret1").await;
    let ann_id = me(&app, &ann).await["user"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let started = start_checkout(
        &app,
        json!({"source": "chat_trial_prompt", "isTrial": true}),
    )
    .await;
    let session_id = started["sessionId"].as_str().expect("id");

    for path in [
        format!("/api/checkout-success?session_id={session_id}"),
        format!(
            "/api/checkout-success?session={}",
            started["trackingSessionId"].as_str().expect("tracking")
        ),
        "/api/checkout-success?session_id=demo_cs_forged".to_owned(),
    ] {
        let response = get_with_cookie(&app, &path, &ann).await;
        assert!(
            matches!(response.status().as_u16(), 402 | 404),
            "{path}: {}",
            response.status()
        );
    }
    let (_, error) = error_of(app.get("/api/checkout-success").await).await;
    assert_eq!(error["message"], "Missing required session parameters");
    for (path, body) in [
        (
            "/api/account/setup",
            json!({"email": "ann@example.com", "password": "not-her-password"}),
        ),
        ("/api/auth/token", json!({})),
        (
            "/api/webhook-test.js",
            json!({"type": "checkout.session.completed", "sessionId": session_id, "email": "ann@example.com"}),
        ),
    ] {
        let response = post_with_cookie(&app, path, &ann, &body).await;
        assert!(
            response.status().is_client_error(),
            "{path}: {}",
            response.status()
        );
    }
    let check: Value = post_with_cookie(
        &app,
        "/api/check-subscription.js",
        &ann,
        &json!({"userId": ann_id}),
    )
    .await
    .json()
    .await
    .expect("json");
    assert_eq!(check["trialActive"], false);
    assert_eq!(check["hasActiveSubscription"], false);
}

#[tokio::test]
async fn a_member_signed_in_by_the_mail_link_finishes_setup_from_the_banner() {
    let app = spawn_app().await;
    let started = start_checkout(&app, json!({"source": "help_funnel"})).await;
    pay(
        &app,
        started["sessionId"].as_str().expect("id"),
        "link@example.com",
    )
    .await;
    let response = app
        .post_json(
            "/api/auth/token",
            &json!({"token": welcome_token(&app).await}),
        )
        .await;
    assert_eq!(response.status(), 200);
    let (session, _) = session_cookie(&response);

    let who = me(&app, &session).await;
    assert_eq!(who["user"]["hasPassword"], false);
    assert_eq!(who["user"]["access"]["hasAccess"], true);
    assert_eq!(who["user"]["access"]["trialActive"], true);
    assert_eq!(who["user"]["pendingSetup"]["email"], "link@example.com");
    assert_eq!(
        who["user"]["pendingSetup"]["paymentSessionId"],
        started["sessionId"]
    );
    assert_eq!(
        who["user"]["pendingSetup"]["session"],
        started["trackingSessionId"]
    );

    let status: Value = get_with_cookie(&app, "/api/account/setup", &session)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(status["email"], "link@example.com");
    let done = post_with_cookie(
        &app,
        "/api/account/setup",
        &session,
        &json!({"email": "link@example.com", "password": "chosen1"}),
    )
    .await;
    assert_eq!(done.status(), 200);
    // The password the address's prover chose ends every other session, the link's one too:
    // the answer's cookie is the member's now.
    assert_eq!(me(&app, &session).await["user"], Value::Null);
    let (session, _) = session_cookie(&done);
    let who = me(&app, &session).await;
    assert_eq!(who["user"]["hasPassword"], true);
    assert_eq!(who["user"]["pendingSetup"], Value::Null);
    // With a password, the signed-in route into setup is closed.
    let again = get_with_cookie(&app, "/api/account/setup", &session).await;
    assert_eq!(again.status(), 404);
}

/// Signs up an admin and proves the address as an admin must: through a mailed link (a password
/// reset). Until then the address alone gives no admin rights. The signed-in cookie.
pub(crate) async fn verified_admin(app: &TestApp, email: &str) -> String {
    let unverified = sign_up(app, email, "secret1").await;
    assert_eq!(
        get_with_cookie(app, "/api/admin/checkout-debug", &unverified)
            .await
            .status(),
        404,
        "an admin address not yet proved by a mailed link is no admin"
    );
    let response = app
        .post_json("/api/auth/reset", &json!({"email": email}))
        .await;
    assert_eq!(response.status(), 200);
    let token = crate::auth::reset_token_mailed_to(app, email).await;
    let response = app
        .post_json(
            "/api/auth/reset/confirm",
            &json!({"token": token, "password": "secret2-new"}),
        )
        .await;
    assert_eq!(response.status(), 200);
    let response = app
        .post_json(
            "/api/auth/login",
            &json!({"email": email, "password": "secret2-new"}),
        )
        .await;
    assert_eq!(response.status(), 200);
    crate::auth::session_cookie(&response).0
}

#[tokio::test]
async fn the_webhook_simulation_is_for_admins_with_debug_tools_only() {
    let app = crate::helpers::spawn_app_with(|settings| {
        settings.admin.emails = vec!["admin@example.com".to_owned()];
    })
    .await;
    let admin = verified_admin(&app, "admin@example.com").await;
    let member = sign_up(&app, "member@example.com", "secret1").await;
    let started = start_checkout(&app, json!({"source": "chat_funnel"})).await;
    let body = json!({
        "type": "checkout.session.completed",
        "paymentSessionId": started["sessionId"],
        "email": "buyer@example.com",
    });
    for cookie in ["", member.as_str()] {
        let response = post_with_cookie(&app, "/api/webhook-test.js", cookie, &body).await;
        assert_eq!(response.status(), 404);
    }
    assert_eq!(
        count(
            &app,
            "RETURN count(SELECT VALUE id FROM user WHERE email = 'buyer@example.com')"
        )
        .await,
        0
    );

    let response = post_with_cookie(&app, "/api/webhook-test.js", &admin, &body).await;
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().await.expect("json");
    assert!(
        answer["eventId"]
            .as_str()
            .expect("eventId")
            .starts_with("demo_evt_sim_")
    );
    assert_eq!(count(&app, "RETURN count(SELECT VALUE id FROM user WHERE email = 'buyer@example.com' AND trial_started = true)").await, 1);

    let off = crate::helpers::spawn_app_with(|settings| {
        settings.admin.emails = vec!["admin@example.com".to_owned()];
        settings.security.debug_tools = false;
    })
    .await;
    let admin = sign_up(&off, "admin@example.com", "secret1").await;
    let started = start_checkout(&off, json!({"source": "chat_funnel"})).await;
    let response = post_with_cookie(
        &off,
        "/api/webhook-test.js",
        &admin,
        &json!({"type": "checkout.session.completed", "paymentSessionId": started["sessionId"], "email": "x@example.com"}),
    )
    .await;
    assert_eq!(response.status(), 404, "no debug tools in production");
}

#[tokio::test]
async fn a_demo_trial_ending_within_three_days_gets_one_reminder() {
    let app = spawn_app().await;
    let started = start_checkout(&app, json!({"source": "chat_funnel"})).await;
    pay(
        &app,
        started["sessionId"].as_str().expect("id"),
        "remind@example.com",
    )
    .await;
    let billing = demo_billing(&app);
    assert_eq!(
        billing.send_due_trial_reminders().await.expect("pass"),
        0,
        "7 days left: not yet"
    );
    app.db
        .query("UPDATE subscription SET trial_end = time::now() + 2d")
        .await
        .expect("query");
    assert_eq!(billing.send_due_trial_reminders().await.expect("pass"), 1);
    assert_eq!(
        billing.send_due_trial_reminders().await.expect("pass"),
        0,
        "once per trial end"
    );
    let mut response = app
        .db
        .query("SELECT subject, recipient FROM mail_outbox WHERE kind = 'trial_ending'")
        .await
        .expect("query");
    let mails: Vec<Value> = response.take(0).expect("mails");
    assert_eq!(mails.len(), 1);
    assert_eq!(mails[0]["recipient"], "remind@example.com");
    assert!(
        mails[0]["subject"]
            .as_str()
            .expect("subject")
            .starts_with("Your HelpNow trial ends on ")
    );
}

#[tokio::test]
async fn the_checkout_debug_api_serves_admins_only() {
    let app = crate::helpers::spawn_app_with(|settings| {
        settings.admin.emails = vec!["Admin@Example.com".to_owned()];
    })
    .await;
    let admin = verified_admin(&app, "admin@example.com").await;
    let member = sign_up(&app, "member@example.com", "secret1").await;
    for cookie in ["", member.as_str()] {
        assert_eq!(
            get_with_cookie(&app, "/api/admin/checkout-debug", cookie)
                .await
                .status(),
            404
        );
        let response = post_with_cookie(
            &app,
            "/api/admin/checkout-debug/accounts",
            cookie,
            &json!({"email": "new@example.com"}),
        )
        .await;
        assert_eq!(response.status(), 404);
    }

    let started = start_checkout(&app, json!({"source": "help_funnel"})).await;
    pay(
        &app,
        started["sessionId"].as_str().expect("id"),
        "paid@example.com",
    )
    .await;
    let overview: Value = get_with_cookie(&app, "/api/admin/checkout-debug", &admin)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(
        overview["checkouts"][0]["paymentSessionId"],
        started["sessionId"]
    );
    assert_eq!(overview["checkouts"][0]["status"], "complete");
    assert!(
        overview["users"]
            .as_array()
            .expect("users")
            .iter()
            .any(|user| user["email"] == "paid@example.com")
    );
    let events: Vec<&str> = overview["webhookEvents"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|event| event["eventType"].as_str())
        .collect();
    assert!(events.contains(&"checkout.session.completed"), "{events:?}");

    let (status, error) = error_of(
        post_with_cookie(
            &app,
            "/api/admin/checkout-debug/accounts",
            &admin,
            &json!({"email": " "}),
        )
        .await,
    )
    .await;
    assert_eq!(
        (status, error["message"].as_str()),
        (400, Some("Email is required to create an account"))
    );
    let created = post_with_cookie(
        &app,
        "/api/admin/checkout-debug/accounts",
        &admin,
        &json!({"email": "new@example.com"}),
    )
    .await;
    assert_eq!(created.status(), 201);
    let existing: Value = post_with_cookie(
        &app,
        "/api/admin/checkout-debug/accounts",
        &admin,
        &json!({"email": "member@example.com"}),
    )
    .await
    .json()
    .await
    .expect("json");
    assert_eq!(existing["created"], false);
    assert_eq!(
        count(
            &app,
            "RETURN count(SELECT VALUE id FROM mail_outbox WHERE kind = 'password_reset' AND recipient != 'admin@example.com')"
        )
        .await,
        2
    );
}

#[tokio::test]
async fn a_payment_confirmed_between_two_checks_shows_at_once() {
    let app = spawn_app().await;
    let session = sign_up(&app, "ann@example.com", "original1").await;
    let ann_id = me(&app, &session).await["user"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let check = || async {
        let response = post_with_cookie(
            &app,
            "/api/check-subscription.js",
            &session,
            &json!({"userId": ann_id}),
        )
        .await;
        assert_eq!(response.status(), 200);
        response.json::<Value>().await.expect("json")
    };
    assert_eq!(check().await["trialActive"], false);

    // Paid in another tab: the payment event (the demo's stand-in for the webhook) is handled.
    let started =
        start_checkout_signed_in(&app, &session, json!({"source": "chat_trial_prompt"})).await;
    pay(
        &app,
        started["sessionId"].as_str().expect("id"),
        "ann@example.com",
    )
    .await;

    // Within the 15 s in which the provider is not asked again, the stored access still shows.
    let after = check().await;
    assert_eq!(after["trialActive"], true, "{after}");
    assert_eq!(after["hasActiveSubscription"], true, "{after}");
}

#[tokio::test]
async fn the_first_campaign_touch_reaches_the_account_whichever_way_it_buys() {
    let app = spawn_app().await;
    // The visitor first came from an ad (the browser kept it), and later buys from the trial
    // prompt, a page with no campaign of its own.
    let touch = json!({
        "utm_source": "google", "utm_medium": "cpc", "utm_campaign": "spring",
        "keyword": "email help", "campaignid": "777", "gclid": "g-1",
        "first_visit_timestamp": "2026-11-01T10:00:00Z"
    });
    let started = start_checkout(
        &app,
        json!({
            "source": "chat_trial_prompt", "isTrial": true,
            "utm_source": "google", "utm_medium": "cpc", "utm_campaign": "spring",
            "keyword": "email help", "campaignid": "777", "gclid": "g-1",
            "firstTouch": touch
        }),
    )
    .await;
    let redirect = pay(
        &app,
        started["sessionId"].as_str().expect("id"),
        "ann@example.com",
    )
    .await;
    confirm(&app, &started, &redirect).await;

    let mut response = app
        .db
        .query("SELECT acquisition, trial_attribution, is_subscribed FROM user")
        .await
        .expect("query");
    let users: Vec<Value> = response.take(0).expect("users");
    let user = &users[0];
    assert_eq!(user["acquisition"]["source"], "google", "{user}");
    assert_eq!(user["acquisition"]["medium"], "cpc");
    assert_eq!(user["acquisition"]["campaign"], "spring");
    assert_eq!(user["acquisition"]["keyword"], "email help");
    assert_eq!(user["acquisition"]["campaignid"], "777");
    assert_eq!(user["acquisition"]["gclid"], "g-1");
    assert_eq!(user["trial_attribution"]["campaignid"], "777");
    assert_eq!(
        user["trial_attribution"]["funnel_type"],
        "chat_trial_prompt"
    );
    assert_eq!(user["is_subscribed"], true);
    // The subscription began: counted once, not only at its renewals.
    assert_eq!(
        helpnow::store::analytics::count_named(&app.db, "subscription_start")
            .await
            .expect("count"),
        1
    );
}

#[tokio::test]
async fn a_password_reset_ends_the_accounts_other_reset_links_and_mail_sign_in_links() {
    let app = spawn_app().await;
    sign_up(&app, "ann@example.com", "original1").await;
    // A checkout paid with her address mails her a one-time sign-in link.
    buy_trial_signed_out(&app, "ann@example.com").await;
    let mail_link = welcome_token(&app).await;
    // Two reset mails; the newer one is used.
    let reset = || async {
        let response = app
            .post_json("/api/auth/reset", &json!({"email": "ann@example.com"}))
            .await;
        assert_eq!(response.status(), 200);
        crate::auth::reset_token_mailed_to(&app, "ann@example.com").await
    };
    let older = reset().await;
    let newer = reset().await;
    assert_ne!(older, newer);
    let response = app
        .post_json(
            "/api/auth/reset/confirm",
            &json!({"token": newer, "password": "brand-new1"}),
        )
        .await;
    assert_eq!(response.status(), 200);

    let (status, _) = error_of(
        app.post_json(
            "/api/auth/reset/confirm",
            &json!({"token": older, "password": "someone-else1"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 410, "the older reset link is ended");
    assert_eq!(
        app.post_json("/api/auth/token", &json!({"token": mail_link}))
            .await
            .status(),
        401,
        "the mail sign-in link is ended"
    );
}

async fn pay_with_card(app: &TestApp, session_id: &str, email: &str, card: &str) {
    let response = app
        .post_json(
            &format!("/api/demo-checkout/{session_id}/complete"),
            &json!({"email": email, "cardNumber": card}),
        )
        .await;
    assert_eq!(response.status(), 200);
}

/// One row of the store, as JSON.
async fn row(app: &TestApp, sql: &str) -> Value {
    let mut response = app.db.query(sql).await.expect("query");
    let rows: Vec<Value> = response.take(0).expect("rows");
    rows.into_iter().next().unwrap_or(Value::Null)
}

async fn checkout_page(app: &TestApp, id: &str) -> Value {
    app.client
        .get(app.url(&format!("/api/demo-checkout/{id}")))
        .send()
        .await
        .expect("request reaches the server")
        .json()
        .await
        .expect("json")
}

#[tokio::test]
async fn a_member_who_had_the_trial_is_charged_at_once_when_buying_again() {
    let app = spawn_app().await;
    let session = sign_up(&app, "ann@example.com", "original1").await;
    let first =
        start_checkout_signed_in(&app, &session, json!({"source": "chat_trial_prompt"})).await;
    pay(
        &app,
        first["sessionId"].as_str().expect("id"),
        "ann@example.com",
    )
    .await;
    let trial_end = me(&app, &session).await["user"]["access"]["trialEndDate"].clone();
    assert!(trial_end.is_string(), "the first checkout starts the trial");
    assert_eq!(
        post_with_cookie(&app, "/api/billing/cancel", &session, &json!({}))
            .await
            .status(),
        200
    );

    // Canceled, the member checks out again: no second trial, and the page says so.
    let again =
        start_checkout_signed_in(&app, &session, json!({"source": "chat_trial_prompt"})).await;
    let id = again["sessionId"].as_str().expect("id");
    let page = checkout_page(&app, id).await;
    assert_eq!(page["trialDays"], 0, "{page}");
    assert_eq!(page["todayCents"], 2000, "the first month today");
    assert_eq!(page["refundableFee"], false, "no trial, no setup fee");
    pay(&app, id, "ann@example.com").await;

    let who = me(&app, &session).await;
    assert_eq!(who["user"]["access"]["trialEndDate"], trial_end, "{who}");
    let subscription = row(
        &app,
        &format!(
            "SELECT status, trial_end FROM subscription WHERE id = subscription:⟨{}⟩",
            // The new checkout's subscription.
            row(&app, &format!("SELECT VALUE subscription_id FROM checkout_session WHERE provider_session_id = '{id}'")).await.as_str().expect("subscription")
        ),
    )
    .await;
    assert_eq!(
        subscription["status"], "active",
        "charged, not trialing: {subscription}"
    );
    assert_eq!(
        count(
            &app,
            "RETURN count(SELECT VALUE id FROM analytics_event WHERE name = 'begin_trial')"
        )
        .await,
        1,
        "one trial"
    );
}

#[tokio::test]
async fn a_card_that_paid_for_a_trial_gets_no_second_one_under_a_new_address() {
    let app = spawn_app().await;
    let first = start_checkout(&app, json!({"source": "chat_trial_prompt"})).await;
    pay_with_card(
        &app,
        first["sessionId"].as_str().expect("id"),
        "one@example.com",
        "5555 5555 5555 4444",
    )
    .await;
    // The same card, a fresh address: the account is made, the trial is not.
    let second = start_checkout(&app, json!({"source": "chat_trial_prompt"})).await;
    let second_id = second["sessionId"].as_str().expect("id");
    pay_with_card(&app, second_id, "two@example.com", "5555-5555-5555-4444").await;
    // Another card: its own trial.
    let third = start_checkout(&app, json!({"source": "chat_trial_prompt"})).await;
    pay_with_card(
        &app,
        third["sessionId"].as_str().expect("id"),
        "three@example.com",
        "4000 0566 5566 5556",
    )
    .await;
    // The demo's published test card carries no fingerprint: every demo buyer pays with it.
    for email in ["four@example.com", "five@example.com"] {
        let started = start_checkout(&app, json!({"source": "chat_trial_prompt"})).await;
        pay_with_card(
            &app,
            started["sessionId"].as_str().expect("id"),
            email,
            "4242 4242 4242 4242",
        )
        .await;
    }

    let trials: Vec<(String, bool)> = {
        let mut response = app
            .db
            .query("SELECT email, trial_end_date != NONE AS trial FROM user ORDER BY email")
            .await
            .expect("query");
        let rows: Vec<Value> = response.take(0).expect("rows");
        rows.iter()
            .map(|row| {
                (
                    row["email"].as_str().unwrap_or_default().to_owned(),
                    row["trial"] == true,
                )
            })
            .collect()
    };
    assert_eq!(
        trials,
        vec![
            ("five@example.com".to_owned(), true),
            ("four@example.com".to_owned(), true),
            ("one@example.com".to_owned(), true),
            ("three@example.com".to_owned(), true),
            ("two@example.com".to_owned(), false)
        ]
    );
    let checkout = row(
        &app,
        &format!("SELECT trial_granted, trial_ended_at != NONE AS ended, subscription_id FROM checkout_session WHERE provider_session_id = '{second_id}'"),
    )
    .await;
    assert_eq!(checkout["trial_granted"], false, "{checkout}");
    assert_eq!(
        checkout["ended"], true,
        "the provider's trial was ended: the month is charged"
    );
    let status = row(
        &app,
        &format!(
            "SELECT VALUE status FROM subscription WHERE id = subscription:⟨{}⟩",
            checkout["subscription_id"].as_str().expect("subscription")
        ),
    )
    .await;
    assert_eq!(status, "active");
}

/// A victim with a running trial, and a stranger who pays signed out with the victim's address,
/// typing a problem of their own: the stranger's checkout id.
async fn stranger_pays_with_victims_address(app: &TestApp) -> (String, String) {
    let victim = sign_up(app, "victim@example.com", "original1").await;
    let own = start_checkout_signed_in(app, &victim, json!({"source": "chat_trial_prompt"})).await;
    pay(
        app,
        own["sessionId"].as_str().expect("id"),
        "victim@example.com",
    )
    .await;
    let stranger = start_checkout(app, json!({"source": "chat_trial_prompt"})).await;
    let (answer, cookie) = {
        let redirect = pay(
            app,
            stranger["sessionId"].as_str().expect("id"),
            "victim@example.com",
        )
        .await;
        confirm(app, &stranger, &redirect).await
    };
    assert_eq!(answer["next"], "sign-in", "{answer}");
    assert_eq!(cookie, None);
    (
        victim,
        stranger["trackingSessionId"]
            .as_str()
            .expect("tracking id")
            .to_owned(),
    )
}

#[tokio::test]
async fn paying_with_someone_elses_address_changes_nothing_of_their_account() {
    let app = spawn_app().await;
    let before_sql = "SELECT subscription_id, payment_customer_id, payment_session_id, checkout_session_id, trial_end_date FROM user WHERE email = 'victim@example.com'";
    let victim = sign_up(&app, "victim@example.com", "original1").await;
    let own = start_checkout_signed_in(&app, &victim, json!({"source": "chat_trial_prompt"})).await;
    pay(
        &app,
        own["sessionId"].as_str().expect("id"),
        "victim@example.com",
    )
    .await;
    let before = row(&app, before_sql).await;

    let stranger = start_checkout(&app, json!({"source": "chat_trial_prompt"})).await;
    let redirect = pay(
        &app,
        stranger["sessionId"].as_str().expect("id"),
        "victim@example.com",
    )
    .await;
    let (answer, _) = confirm(&app, &stranger, &redirect).await;
    assert_eq!(answer["next"], "sign-in");
    assert_eq!(
        row(&app, before_sql).await,
        before,
        "the victim's account is as it was"
    );
    assert_eq!(
        count(&app, "RETURN count(SELECT VALUE id FROM mail_outbox WHERE kind = 'payment_held' AND recipient = 'victim@example.com')").await,
        1,
        "the owner of the address is told"
    );

    // The victim opens the link in that mail (proving the address: the victim chooses the
    // password anew), sees the payment waiting, and declines it: canceled at once, its fee
    // refunded.
    let victim =
        crate::takeover::prove_by_mailed_link(&app, "victim@example.com", "victims-own1").await;
    let held: Value = get_with_cookie(&app, "/api/billing/held", &victim)
        .await
        .json()
        .await
        .expect("json");
    let id = held["held"][0]["id"]
        .as_str()
        .expect("a held payment")
        .to_owned();
    assert_eq!(
        id,
        stranger["trackingSessionId"].as_str().expect("tracking")
    );
    let declined = post_with_cookie(
        &app,
        &format!("/api/billing/held/{id}/decline"),
        &victim,
        &json!({}),
    )
    .await;
    assert_eq!(declined.status(), 200);
    let checkout = row(
        &app,
        &format!("SELECT status, fee_refunded_at != NONE AS refunded, subscription_id FROM checkout_session WHERE tracking_id = '{id}'"),
    )
    .await;
    assert_eq!(checkout["status"], "declined");
    assert_eq!(checkout["refunded"], true);
    let status = row(
        &app,
        &format!(
            "SELECT VALUE status FROM subscription WHERE id = subscription:⟨{}⟩",
            checkout["subscription_id"].as_str().expect("subscription")
        ),
    )
    .await;
    assert_eq!(status, "canceled");
    assert_eq!(row(&app, before_sql).await, before, "still as it was");
    let again = post_with_cookie(
        &app,
        &format!("/api/billing/held/{id}/claim"),
        &victim,
        &json!({}),
    )
    .await;
    assert_eq!(again.status(), 404, "declined is final");
}

#[tokio::test]
async fn the_owner_adds_a_payment_made_signed_out_to_the_account() {
    let app = spawn_app().await;
    // An account without a trial yet; its owner forgot to sign in and paid from a funnel.
    let owner = sign_up(&app, "owner@example.com", "original1").await;
    let other = sign_up(&app, "other@example.com", "original1").await;
    let started = start_checkout(&app, json!({"source": "chat_trial_prompt"})).await;
    let redirect = pay(
        &app,
        started["sessionId"].as_str().expect("id"),
        "owner@example.com",
    )
    .await;
    confirm(&app, &started, &redirect).await;
    assert_eq!(
        me(&app, &owner).await["user"]["access"]["hasAccess"],
        false,
        "held, not granted"
    );
    let id = started["trackingSessionId"].as_str().expect("tracking");

    let stolen = post_with_cookie(
        &app,
        &format!("/api/billing/held/{id}/claim"),
        &other,
        &json!({}),
    )
    .await;
    assert_eq!(
        stolen.status(),
        404,
        "only the owner of the address claims it"
    );
    let unproved = post_with_cookie(
        &app,
        &format!("/api/billing/held/{id}/claim"),
        &owner,
        &json!({}),
    )
    .await;
    assert_eq!(
        unproved.status(),
        404,
        "only once the address is proved: a sign-up with it is not proof"
    );
    let owner = crate::takeover::prove_by_mailed_link(&app, "owner@example.com", "original1").await;
    let claimed = post_with_cookie(
        &app,
        &format!("/api/billing/held/{id}/claim"),
        &owner,
        &json!({}),
    )
    .await;
    assert_eq!(claimed.status(), 200);
    let access = me(&app, &owner).await["user"]["access"].clone();
    assert_eq!(access["hasAccess"], true, "{access}");
    assert_eq!(access["trialActive"], true, "the account's first trial");
    let twice = post_with_cookie(
        &app,
        &format!("/api/billing/held/{id}/claim"),
        &owner,
        &json!({}),
    )
    .await;
    assert_eq!(twice.status(), 404, "once");
    assert_eq!(
        count(&app, "RETURN count(SELECT VALUE id FROM user)").await,
        2,
        "no account for the payment itself"
    );
}

#[tokio::test]
async fn a_hold_nobody_answers_is_canceled_and_refunded_before_the_trial_would_charge() {
    let app = spawn_app().await;
    let (_victim, id) = stranger_pays_with_victims_address(&app).await;
    let billing = demo_billing(&app);
    billing.run_upkeep().await.expect("pass");
    assert_eq!(
        row(
            &app,
            &format!("SELECT VALUE status FROM checkout_session WHERE tracking_id = '{id}'")
        )
        .await,
        "held",
        "within its days it waits"
    );
    app.db
        .query(format!(
            "UPDATE checkout_session SET completed_at = time::now() - 4d WHERE tracking_id = '{id}'"
        ))
        .await
        .expect("query");
    billing.run_upkeep().await.expect("pass");
    let checkout = row(
        &app,
        &format!("SELECT status, declined_because, fee_refunded_at != NONE AS refunded FROM checkout_session WHERE tracking_id = '{id}'"),
    )
    .await;
    assert_eq!(checkout["status"], "declined", "{checkout}");
    assert_eq!(checkout["declined_because"], "expired");
    assert_eq!(checkout["refunded"], true);
}

/// The keys of a JSON object, sorted.
fn keys_of(answer: &Value) -> Vec<String> {
    let mut keys: Vec<String> = answer
        .as_object()
        .expect("an object")
        .keys()
        .cloned()
        .collect();
    keys.sort();
    keys
}

#[tokio::test]
async fn a_held_payments_success_page_says_nothing_of_the_account_behind_the_address() {
    let app = spawn_app().await;
    // Three accounts as different as they come: a password and a running trial; a password and
    // no trial; no password (made by a checkout) and a running trial.
    let trialing = sign_up(&app, "trialing@example.com", "original1").await;
    let own = start_checkout_signed_in(&app, &trialing, json!({"source": "direct_signup"})).await;
    pay(
        &app,
        own["sessionId"].as_str().expect("id"),
        "trialing@example.com",
    )
    .await;
    sign_up(&app, "no-trial@example.com", "original1").await;
    let (made, _) = buy_trial_signed_out(&app, "no-password@example.com").await;
    assert_eq!(made["next"], "setup");

    // What a payer learns of a brand-new address: the account the checkout made for them.
    let (fresh, _) = buy_trial_signed_out(&app, "fresh@example.com").await;
    assert_eq!(
        keys_of(&fresh),
        [
            "email",
            "hasPassword",
            "next",
            "paymentSessionId",
            "sessionId",
            "trialActive",
            "trialEndDate"
        ]
    );

    // A stranger pays signed out with each address: the same answer every time, beyond 'Welcome
    // Back!' only what the stranger brought (the address typed, the checkout's own ids).
    for email in [
        "trialing@example.com",
        "no-trial@example.com",
        "no-password@example.com",
    ] {
        let started = start_checkout(&app, json!({"source": "chat_trial_prompt"})).await;
        let redirect = pay(&app, started["sessionId"].as_str().expect("id"), email).await;
        let (held, cookie) = confirm(&app, &started, &redirect).await;
        assert_eq!(cookie, None);
        assert_eq!(
            held,
            json!({
                "next": "sign-in",
                "email": email,
                "sessionId": started["trackingSessionId"],
                "paymentSessionId": started["sessionId"],
            }),
            "{email}"
        );
        assert!(
            keys_of(&held)
                .iter()
                .all(|key| keys_of(&fresh).contains(key)),
            "nothing a new address's answer lacks: {held}"
        );
    }
}

#[tokio::test]
async fn strangers_hammering_a_success_url_do_not_lock_its_buyer_out() {
    // Clients told apart as behind the load balancer on loopback (tests/api/limits.rs).
    let app = spawn_app().await;
    let started = start_checkout(&app, json!({"source": "chat_trial_prompt"})).await;
    let redirect = pay(
        &app,
        started["sessionId"].as_str().expect("id"),
        "buyer@example.com",
    )
    .await;
    let (_, query) = redirect.split_once('?').expect("a query");
    let path = format!("/api/checkout-success?{query}");
    let success_from = |address: &'static str, cookie: String| {
        app.client
            .get(app.url(&path))
            .header("x-forwarded-for", address)
            .header("cookie", cookie)
            .send()
    };

    // Someone who saw the success URL hits it past the checkout's limit, without the buyer's
    // start cookie.
    let mut statuses = Vec::new();
    for _ in 0..24 {
        let response = success_from("203.0.113.66", String::new())
            .await
            .expect("sent");
        statuses.push(response.status().as_u16());
    }
    assert!(
        statuses.contains(&429),
        "the stranger is limited: {statuses:?}"
    );

    // The buyer's own success call still gets its answer and its one-time sign-in.
    let started_cookie = started["startCookie"].as_str().expect("cookie").to_owned();
    let response = success_from("198.51.100.7", started_cookie)
        .await
        .expect("sent");
    assert_eq!(response.status(), 200);
    assert!(
        cookie_named(&response, "helpnow_checkout").is_some(),
        "the buyer's browser is signed in to set up the account"
    );
}

#[tokio::test]
async fn a_start_cookie_forged_from_the_success_url_signs_nobody_in() {
    let app = spawn_app().await;
    let started = start_checkout(&app, json!({"source": "chat_trial_prompt"})).await;
    let redirect = pay(
        &app,
        started["sessionId"].as_str().expect("id"),
        "new@example.com",
    )
    .await;
    // Someone who saw the success URL, and so the checkout's ids, calls it first with a start
    // cookie made of them.
    let tracking = started["trackingSessionId"].as_str().expect("tracking");
    let forged = json!({ "startCookie": format!("helpnow_checkout_start={tracking}") });
    let (answer, cookie) = confirm(&app, &forged, &redirect).await;
    assert_eq!(answer["next"], "setup", "{answer}");
    assert_eq!(cookie, None, "no sign-in for a forged start cookie");
    // The buyer's own browser still gets its one-time sign-in.
    let (_, cookie) = confirm(&app, &started, &redirect).await;
    assert!(cookie.is_some(), "the buyer's browser gets its sign-in");
}

#[tokio::test]
async fn each_subscription_check_leaves_the_specs_webhook_debug_row_on_the_debug_page() {
    let app = crate::helpers::spawn_app_with(|settings| {
        settings.admin.emails = vec!["admin@example.com".to_owned()];
    })
    .await;
    let ann = sign_up(&app, "ann@example.com", "secret1").await;
    let started =
        start_checkout_signed_in(&app, &ann, json!({"source": "chat_trial_prompt"})).await;
    pay(
        &app,
        started["sessionId"].as_str().expect("id"),
        "ann@example.com",
    )
    .await;
    let ann_id = me(&app, &ann).await["user"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let response = app
        .client
        .post(app.url("/api/check-subscription.js"))
        .header("cookie", &ann)
        .header("origin", "http://127.0.0.1:8080")
        .header(
            "referer",
            "http://127.0.0.1:8080/?success=true&jwt=a-secret-that-stays-out",
        )
        .header("user-agent", "Mozilla/5.0 (HelpNow test)")
        .json(&json!({"userId": ann_id}))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 200);

    let admin = verified_admin(&app, "admin@example.com").await;
    let overview: Value = get_with_cookie(&app, "/api/admin/checkout-debug", &admin)
        .await
        .json()
        .await
        .expect("json");
    let checks = overview["webhookDebug"].as_array().expect("the trail");
    assert_eq!(checks.len(), 1, "{overview}");
    let check = &checks[0];
    assert_eq!(check["email"], "ann@example.com");
    assert_eq!(check["sessionId"], started["trackingSessionId"]);
    assert_eq!(check["paymentSessionId"], started["sessionId"]);
    assert_eq!(check["origin"], "http://127.0.0.1:8080");
    assert_eq!(
        check["pathname"], "/",
        "the path without its query: {check}"
    );
    assert_eq!(check["userAgent"], "Mozilla/5.0 (HelpNow test)");
    assert!(!overview.to_string().contains("a-secret-that-stays-out"));
}
