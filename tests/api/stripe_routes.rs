//! The money path on Stripe (against the local mock): the webhook's signature check, events
//! delivered twice, and the webhook racing the success page.

use serde_json::{Value, json};

use crate::auth::{error_of, me, session_cookie, sign_up};
use crate::helpers::{TestApp, cookie_named, get_with_cookie, post_with_cookie, spawn_app_with};
use crate::stripe_mock::{MockStripe, WEBHOOK_SECRET};

async fn stripe_app(mock: &MockStripe) -> TestApp {
    let stripe = mock.settings();
    spawn_app_with(move |settings| {
        settings.payments.provider = helpnow::config::PaymentProviderKind::Stripe;
        settings.stripe = stripe;
    })
    .await
}

async fn deliver(app: &TestApp, payload: &[u8], signature: &str) -> reqwest::Response {
    app.client
        .post(app.url("/api/webhooks/stripe"))
        .header("stripe-signature", signature)
        .header("content-type", "application/json")
        .body(payload.to_vec())
        .send()
        .await
        .expect("request reaches the server")
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

async fn users(app: &TestApp) -> u64 {
    let mut response = app
        .db
        .query("RETURN count(SELECT VALUE id FROM user WHERE trial_started = true)")
        .await
        .expect("query");
    response.take::<Option<u64>>(0).expect("count").unwrap_or(0)
}

async fn paid_checkout(app: &TestApp, mock: &MockStripe, email: &str) -> (String, Value) {
    let response = app
        .post_json(
            "/api/create-checkout.js",
            &json!({"source": "refundable_fee_funnel", "keyword": "gmail"}),
        )
        .await;
    assert_eq!(response.status(), 200);
    let start_cookie = cookie_named(&response, "helpnow_checkout_start").expect("start cookie");
    let mut started: Value = response.json().await.expect("json");
    started["startCookie"] = Value::String(start_cookie);
    let session_id = started["sessionId"].as_str().expect("id").to_owned();
    assert!(
        started["url"].as_str().expect("url").starts_with("http"),
        "{started}"
    );
    mock.pay(&session_id, email);
    (session_id, started)
}

#[tokio::test]
async fn a_webhook_with_a_bad_or_stale_signature_changes_nothing() {
    let mock = MockStripe::start().await;
    let app = stripe_app(&mock).await;
    let (session_id, _) = paid_checkout(&app, &mock, "ann@example.com").await;
    let payload = mock.session_event(&session_id);

    for signature in [
        String::new(),
        MockStripe::signed(&payload, "whsec_someone_else", now()),
        MockStripe::signed(&payload, WEBHOOK_SECRET, now() - 310),
        MockStripe::signed(&payload, WEBHOOK_SECRET, now() + 310),
        MockStripe::signed(b"{\"tampered\":true}", WEBHOOK_SECRET, now()),
    ] {
        let (status, error) = error_of(deliver(&app, &payload, &signature).await).await;
        assert_eq!(
            (status, error["error"].as_str()),
            (400, Some("invalid_signature")),
            "{signature}"
        );
    }
    assert_eq!(users(&app).await, 0);
    let mut response = app
        .db
        .query("RETURN count(SELECT VALUE id FROM webhook_event)")
        .await
        .expect("query");
    assert_eq!(
        response.take::<Option<u64>>(0).expect("count"),
        Some(0),
        "not even stored"
    );

    // Several v1 signatures, one of them right: accepted, and a second delivery is a no-op.
    let good = MockStripe::signed(&payload, WEBHOOK_SECRET, now());
    let t = good.split(',').next().expect("t=");
    let right = good
        .split(',')
        .find(|part| part.starts_with("v1="))
        .expect("v1");
    let header = format!("{t},v1={},{right}", "0".repeat(64));
    assert_eq!(deliver(&app, &payload, &header).await.status(), 200);
    assert_eq!(deliver(&app, &payload, &header).await.status(), 200);
    assert_eq!(users(&app).await, 1);
    assert_eq!(
        helpnow::store::analytics::count_named(&app.db, "purchase")
            .await
            .expect("count"),
        1,
        "a repeated event is processed once"
    );
}

#[tokio::test]
async fn the_webhook_and_the_success_page_racing_make_one_user() {
    let mock = MockStripe::start().await;
    let app = stripe_app(&mock).await;
    for round in 0..5 {
        let email = format!("race{round}@example.com");
        let (session_id, started) = paid_checkout(&app, &mock, &email).await;
        let payload = mock.session_event(&session_id);
        let signature = MockStripe::signed(&payload, WEBHOOK_SECRET, now());
        let webhook = deliver(&app, &payload, &signature);
        let success_path = format!(
            "/api/checkout-success?session_id={session_id}&session={}",
            started["trackingSessionId"].as_str().expect("tracking")
        );
        let again_path = format!("/api/checkout-success?session_id={session_id}");
        let success = app.get(&success_path);
        let success_again = app.get(&again_path);
        let (webhook, success, again) = tokio::join!(webhook, success, success_again);
        assert_eq!(webhook.status(), 200);
        assert_eq!(success.status(), 200);
        assert_eq!(again.status(), 200);
        let mut response = app
            .db
            .query("SELECT VALUE array::len(trial_history) FROM user WHERE email = $email")
            .bind(("email", email.clone()))
            .await
            .expect("query");
        let histories: Vec<u64> = response.take(0).expect("histories");
        assert_eq!(histories, vec![1], "round {round}: one user, one trial");
    }
}

#[tokio::test]
async fn a_stripe_customer_sets_up_the_account_manages_billing_and_gets_the_fee_back() {
    let mock = MockStripe::start().await;
    let app = stripe_app(&mock).await;
    let (session_id, started) = paid_checkout(&app, &mock, "ann@example.com").await;
    let created = mock.requests_to("POST", "/v1/checkout/sessions");
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].param("mode"), Some("subscription"));
    assert_eq!(
        created[0].param("subscription_data[trial_period_days]"),
        Some("7")
    );
    assert_eq!(created[0].param("metadata[keyword]"), Some("gmail"));
    assert!(
        created[0]
            .param("success_url")
            .expect("success_url")
            .ends_with(&format!(
                "/checkout-success?session_id={{CHECKOUT_SESSION_ID}}&session={}",
                started["trackingSessionId"].as_str().expect("t")
            ))
    );

    let response = get_with_cookie(
        &app,
        &format!("/api/checkout-success?session_id={session_id}"),
        started["startCookie"].as_str().expect("cookie"),
    )
    .await;
    assert_eq!(response.status(), 200);
    let checkout_cookie = cookie_named(&response, "helpnow_checkout").expect("checkout cookie");
    let setup = post_with_cookie(
        &app,
        "/api/account/setup",
        &checkout_cookie,
        &json!({"email": "ann@example.com", "password": "secret1"}),
    )
    .await;
    assert_eq!(setup.status(), 200);
    let (session, _) = session_cookie(&setup);
    let who = me(&app, &session).await;
    assert_eq!(who["user"]["access"]["trialActive"], true);

    let portal: Value = post_with_cookie(&app, "/api/billing/portal", &session, &json!({}))
        .await
        .json()
        .await
        .expect("json");
    assert!(
        portal["url"].as_str().expect("url").starts_with("http"),
        "{portal}"
    );

    let cancel = post_with_cookie(&app, "/api/billing/cancel", &session, &json!({})).await;
    assert_eq!(cancel.status(), 200);
    let cancels: Vec<_> = mock
        .requests()
        .into_iter()
        .filter(|request| {
            request.method == "POST" && request.path.starts_with("/v1/subscriptions/")
        })
        .collect();
    assert_eq!(cancels.len(), 1);
    assert_eq!(cancels[0].param("cancel_at_period_end"), Some("true"));
    let who = me(&app, &session).await;
    assert_eq!(
        who["user"]["access"]["trialActive"], true,
        "access lasts to the period's end"
    );

    let refund = |cookie: String| {
        let client = app.client.clone();
        let url = app.url("/api/billing/refund-fee");
        async move {
            client
                .post(url)
                .header("cookie", cookie)
                .json(&json!({}))
                .send()
                .await
                .expect("sent")
        }
    };
    assert_eq!(refund(session.clone()).await.status(), 200);
    assert_eq!(refund(session.clone()).await.status(), 409, "refunded once");
    assert_eq!(mock.requests_to("POST", "/v1/refunds").len(), 1);
    assert_eq!(
        mock.requests_to("POST", "/v1/refunds")[0].param("amount"),
        Some("100")
    );

    // A member with no checkout has nothing to refund or manage.
    let bob = sign_up(&app, "bob@example.com", "secret1").await;
    let (status, _) = error_of(refund(bob).await).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn the_demo_checkout_does_not_exist_on_stripe() {
    let mock = MockStripe::start().await;
    let app = stripe_app(&mock).await;
    let (session_id, _) = paid_checkout(&app, &mock, "ann@example.com").await;
    let response = app
        .post_json(
            &format!("/api/demo-checkout/{session_id}/complete"),
            &json!({"email": "x@example.com", "cardNumber": "4242424242424242"}),
        )
        .await;
    assert_eq!(response.status(), 404);
}

#[tokio::test]
async fn the_success_page_of_an_unpaid_checkout_asks_stripe_once_a_while_and_is_throttled() {
    let mock = MockStripe::start().await;
    let app = stripe_app(&mock).await;
    let response = app
        .post_json(
            "/api/create-checkout.js",
            &json!({"source": "chat_trial_prompt"}),
        )
        .await;
    let started: Value = response.json().await.expect("json");
    let session_id = started["sessionId"].as_str().expect("id").to_owned();
    let path = format!("/api/checkout-success?session_id={session_id}");
    for _ in 0..3 {
        let (status, error) = error_of(app.get(&path).await).await;
        assert_eq!((status, error["error"].as_str()), (402, Some("not_paid")));
    }
    assert_eq!(
        mock.requests_to("GET", &format!("/v1/checkout/sessions/{session_id}"))
            .len(),
        1,
        "the unpaid answer is kept a few seconds instead of asking Stripe each time"
    );

    // One checkout may not be hammered: past the burst, 429 at once.
    let mut statuses = Vec::new();
    for _ in 0..20 {
        statuses.push(app.get(&path).await.status().as_u16());
    }
    assert!(statuses.contains(&429), "{statuses:?}");
    assert!(
        mock.requests_to("GET", &format!("/v1/checkout/sessions/{session_id}"))
            .len()
            <= 2
    );
}
