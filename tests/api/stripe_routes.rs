//! The money path on Stripe (against the local mock): the webhook's signature check, events
//! delivered twice, failing or unreadable, the webhook racing the success page, lost webhooks
//! healed by the subscription check, and the trial-ending reminder.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::auth::{error_of, me, session_cookie, sign_up};
use crate::helpers::{TestApp, cookie_named, get_with_cookie, post_with_cookie, spawn_app_with};
use crate::mail::{ParsedMail, SmtpServer};
use crate::stripe_mock::{MockStripe, PaidWith, WEBHOOK_SECRET};

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

/// Delivers `payload` signed as Stripe signs it now; the answer's status.
async fn deliver_signed(app: &TestApp, payload: &[u8]) -> u16 {
    let signature = MockStripe::signed(payload, WEBHOOK_SECRET, now());
    deliver(app, payload, &signature).await.status().as_u16()
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

/// Payment events stored, whatever came of them.
async fn stored_events(app: &TestApp) -> u64 {
    let mut response = app
        .db
        .query("RETURN count(SELECT VALUE id FROM webhook_event)")
        .await
        .expect("query");
    response.take::<Option<u64>>(0).expect("count").unwrap_or(0)
}

async fn purchases(app: &TestApp) -> u64 {
    helpnow::store::analytics::count_named(&app.db, "purchase")
        .await
        .expect("count")
}

/// Whether the account of `email` has access now, by the server's own rule, from the store.
async fn has_access(app: &TestApp, email: &str) -> bool {
    let mut response = app
        .db
        .query("SELECT VALUE record::id(id) FROM user WHERE email = $email")
        .bind(("email", email.to_owned()))
        .await
        .expect("query");
    let ids: Vec<String> = response.take(0).expect("ids");
    let id = ids.first().expect("an account");
    let facts = helpnow::store::billing::access_facts(&app.db, id)
        .await
        .expect("facts")
        .expect("an account");
    helpnow::billing::service::SubscriptionCheck::from_facts(&facts).has_access()
}

fn event_id_of(payload: &[u8]) -> String {
    let event: Value = serde_json::from_slice(payload).expect("json");
    event["id"].as_str().expect("an event id").to_owned()
}

/// From now until [`accept_writes`], the database refuses the writes to `table` that `when` (a
/// SurrealQL condition on `$event`, `$before` and `$after`) picks, as a failing database would:
/// the statement, and the transaction it is part of, fail.
async fn refuse_writes(app: &TestApp, table: &str, when: &str) {
    app.db
        .query(format!(
            "DEFINE EVENT refuse_writes ON TABLE {table} WHEN {when} \
             THEN {{ THROW 'the database refused the write' }}"
        ))
        .await
        .expect("query")
        .check()
        .expect("the event is defined");
}

async fn accept_writes(app: &TestApp, table: &str) {
    app.db
        .query(format!("REMOVE EVENT refuse_writes ON TABLE {table}"))
        .await
        .expect("query")
        .check()
        .expect("the event is removed");
}

/// Ends the lease a failed delivery left on an event, as its 2 minutes running out would (the
/// lease is not a setting, and a test does not wait that long).
async fn let_lease_run_out(app: &TestApp, event_id: &str) {
    app.db
        .query("UPDATE webhook_event SET claimed_until = time::now() - 1s WHERE event_id = $id")
        .bind(("id", event_id.to_owned()))
        .await
        .expect("query")
        .check()
        .expect("the lease is moved");
}

/// The subscription a paid checkout made on the mock.
fn subscription_of(mock: &MockStripe, session_id: &str) -> String {
    mock.session_object(session_id)["subscription"]
        .as_str()
        .expect("a paid checkout's subscription")
        .to_owned()
}

/// Signs up `email` and starts a checkout as that member: `(session cookie, user id, checkout id)`.
async fn member_checkout(app: &TestApp, email: &str) -> (String, String, String) {
    let session = sign_up(app, email, "secret1").await;
    let user_id = me(app, &session).await["user"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let response = post_with_cookie(
        app,
        "/api/create-checkout.js",
        &session,
        &json!({"source": "chat_trial_prompt"}),
    )
    .await;
    assert_eq!(response.status(), 200);
    let started: Value = response.json().await.expect("json");
    let checkout = started["sessionId"].as_str().expect("id").to_owned();
    (session, user_id, checkout)
}

async fn check_subscription(app: &TestApp, session: &str, user_id: &str) -> Value {
    let response = post_with_cookie(
        app,
        "/api/check-subscription.js",
        session,
        &json!({ "userId": user_id }),
    )
    .await;
    assert_eq!(response.status(), 200);
    response.json().await.expect("json")
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
    assert_eq!(stored_events(&app).await, 0, "not even stored");

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

#[tokio::test]
async fn a_failed_event_answers_500_keeps_its_lease_and_is_handled_once_when_it_comes_again() {
    let mock = MockStripe::start().await;
    let app = stripe_app(&mock).await;
    let (session_id, _) = paid_checkout(&app, &mock, "ann@example.com").await;
    let payload = mock.session_event(&session_id);
    let event_id = event_id_of(&payload);
    let signed = || MockStripe::signed(&payload, WEBHOOK_SECRET, now());

    // The database fails as the checkout is fulfilled: the fulfilment is undone whole, and Stripe
    // is told to deliver the event again.
    refuse_writes(
        &app,
        "checkout_session",
        "$event = 'UPDATE' AND $after.fulfilled_at != NONE",
    )
    .await;
    let (status, error) = error_of(deliver(&app, &payload, &signed()).await).await;
    assert_eq!((status, error["error"].as_str()), (500, Some("internal")));
    accept_writes(&app, "checkout_session").await;
    assert_eq!(users(&app).await, 0);
    assert_eq!(purchases(&app).await, 0);

    // Delivered again while the failed delivery's lease lasts: not handled, Stripe tries later.
    let (status, error) = error_of(deliver(&app, &payload, &signed()).await).await;
    assert_eq!(
        (status, error["error"].as_str()),
        (409, Some("event_in_flight"))
    );
    assert_eq!(users(&app).await, 0);

    // Once the lease has run out, the next delivery handles it.
    let_lease_run_out(&app, &event_id).await;
    let response = deliver(&app, &payload, &signed()).await;
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().await.expect("json");
    assert_eq!(answer["duplicate"], false);
    assert_eq!(users(&app).await, 1);
    assert_eq!(purchases(&app).await, 1);
    assert!(has_access(&app, "ann@example.com").await);

    // And from then on it is a repeat.
    let answer: Value = deliver(&app, &payload, &signed())
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(answer["duplicate"], true);
    assert_eq!(users(&app).await, 1);
    assert_eq!(purchases(&app).await, 1, "processed once");
}

#[tokio::test]
async fn a_signed_event_that_cannot_be_read_answers_400_and_changes_nothing() {
    let mock = MockStripe::start().await;
    let app = stripe_app(&mock).await;
    let (session_id, _) = paid_checkout(&app, &mock, "ann@example.com").await;
    let payload = mock.session_event(&session_id);
    let event: Value = serde_json::from_slice(&payload).expect("json");

    // The paid checkout's own event (its id too) without the buyer's address, and without its
    // object; the same cut short; a subscription in a status no release knows.
    let mut no_email = event.clone();
    no_email["data"]["object"]["customer_details"] = Value::Null;
    no_email["data"]["object"]["customer_email"] = Value::Null;
    let mut no_object = event.clone();
    no_object["data"] = json!({});
    let mut unknown_status: Value = serde_json::from_slice(&mock.subscription_event(
        "customer.subscription.updated",
        &subscription_of(&mock, &session_id),
    ))
    .expect("json");
    unknown_status["data"]["object"]["status"] = json!("hibernating");
    let bodies = [
        serde_json::to_vec(&no_email).expect("json"),
        serde_json::to_vec(&no_object).expect("json"),
        payload[..payload.len() / 2].to_vec(),
        serde_json::to_vec(&unknown_status).expect("json"),
    ];
    for body in &bodies {
        let signature = MockStripe::signed(body, WEBHOOK_SECRET, now());
        let (status, error) = error_of(deliver(&app, body, &signature).await).await;
        assert_eq!(
            (status, error["error"].as_str()),
            (400, Some("invalid_event")),
            "{}",
            String::from_utf8_lossy(body)
        );
    }
    assert_eq!(users(&app).await, 0);
    assert_eq!(stored_events(&app).await, 0, "not even stored");

    // The readable event, under the same id, is then handled in full.
    let signature = MockStripe::signed(&payload, WEBHOOK_SECRET, now());
    let answer: Value = deliver(&app, &payload, &signature)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(answer["duplicate"], false, "{answer}");
    assert_eq!(users(&app).await, 1);
    assert!(has_access(&app, "ann@example.com").await);
}

#[tokio::test]
async fn a_checkout_started_by_another_system_is_acknowledged_and_ignored() {
    let mock = MockStripe::start().await;
    let app = stripe_app(&mock).await;
    // Another system on the same Stripe account sells something of its own.
    let elsewhere = mock.open_checkout_elsewhere();
    mock.pay(&elsewhere, "bob@example.com");
    let payload = mock.session_event(&elsewhere);

    for duplicate in [false, true] {
        let signature = MockStripe::signed(&payload, WEBHOOK_SECRET, now());
        let response = deliver(&app, &payload, &signature).await;
        assert_eq!(
            response.status(),
            200,
            "acknowledged, so Stripe stops trying"
        );
        let answer: Value = response.json().await.expect("json");
        assert_eq!(answer["duplicate"], duplicate, "{answer}");
    }
    assert_eq!(users(&app).await, 0, "nothing granted");
    assert_eq!(purchases(&app).await, 0);
}

#[tokio::test]
async fn a_checkout_whose_webhook_was_lost_is_fulfilled_when_the_member_checks() {
    let mock = MockStripe::start().await;
    let app = stripe_app(&mock).await;
    let (session, user_id, checkout) = member_checkout(&app, "ann@example.com").await;
    // Ann pays, closes Stripe's page before it sends her back, and the webhook never arrives.
    let paid = mock.pay(&checkout, "ann@example.com");
    assert_eq!(
        me(&app, &session).await["user"]["access"]["hasAccess"],
        false
    );

    // The members page checks her subscription: the server asks Stripe, which says paid.
    let check = check_subscription(&app, &session, &user_id).await;
    assert_eq!(check["trialActive"], true, "{check}");
    assert_eq!(check["hasActiveSubscription"], true, "{check}");
    assert_eq!(check["subscription"]["id"], paid.subscription_id.as_str());
    assert_eq!(check["subscription"]["status"], "trialing");
    assert_eq!(
        me(&app, &session).await["user"]["access"]["hasAccess"],
        true
    );
    assert_eq!(purchases(&app).await, 1);

    // The webhook arriving after all changes nothing more.
    assert_eq!(
        deliver_signed(&app, &mock.session_event(&checkout)).await,
        200
    );
    assert_eq!(users(&app).await, 1);
    assert_eq!(purchases(&app).await, 1);
}

#[tokio::test]
async fn a_cancellation_whose_webhook_was_lost_ends_access_at_the_next_check() {
    let mock = MockStripe::start().await;
    let app = stripe_app(&mock).await;
    let (session, user_id, checkout) = member_checkout(&app, "ann@example.com").await;
    let paid = mock.pay(&checkout, "ann@example.com");
    let subscription = paid.subscription_id.as_str();
    assert_eq!(
        deliver_signed(&app, &mock.session_event(&checkout)).await,
        200
    );
    // The subscription's events are dated a little before now, as events are by the time they
    // arrive (a snapshot replaces the stored one only when its event is newer).
    let created = mock.event_at(
        "customer.subscription.created",
        mock.subscription_object(subscription),
        now() - 20,
    );
    assert_eq!(deliver_signed(&app, &created).await, 200);
    // The trial ends and the first month is paid: access is the subscription's now.
    mock.renew(subscription);
    let renewed = mock.event_at(
        "customer.subscription.updated",
        mock.subscription_object(subscription),
        now() - 10,
    );
    assert_eq!(deliver_signed(&app, &renewed).await, 200);
    app.db
        .query("UPDATE user SET trial_end_date = time::now() - 1h WHERE email = 'ann@example.com'")
        .await
        .expect("query")
        .check()
        .expect("the trial is over");
    let access = &me(&app, &session).await["user"]["access"];
    assert_eq!(
        (&access["hasAccess"], &access["trialActive"]),
        (&json!(true), &json!(false))
    );

    // Ann's card is declined for good and Stripe cancels; that webhook is lost.
    mock.set_subscription_status(subscription, "canceled");
    let check = check_subscription(&app, &session, &user_id).await;
    assert_eq!(check["subscription"]["status"], "canceled", "{check}");
    assert_eq!(check["hasActiveSubscription"], false);
    assert_eq!(
        me(&app, &session).await["user"]["access"]["hasAccess"],
        false
    );
}

/// The subscription's trial end as the trial-ending mail words it.
fn trial_end_date(mock: &MockStripe, subscription: &str) -> String {
    let end = mock.subscription_object(subscription)["trial_end"]
        .as_i64()
        .expect("a trial end");
    DateTime::<Utc>::from_timestamp(end, 0)
        .expect("a time")
        .format("%B %-d, %Y")
        .to_string()
}

/// Trial-ending mails queued (sent or not).
async fn trial_reminders(app: &TestApp) -> u64 {
    let mut response = app
        .db
        .query("RETURN count(SELECT VALUE id FROM mail_outbox WHERE kind = 'trial_ending')")
        .await
        .expect("query");
    response.take::<Option<u64>>(0).expect("count").unwrap_or(0)
}

/// Waits until the SMTP server has `count` mails (delivery of a queued mail runs on its own).
async fn wait_for_mails(smtp: &SmtpServer, count: usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while smtp.received().len() < count {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{count} mails reach the SMTP server"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_stripe_trial_about_to_end_gets_one_reminder_mail() {
    let smtp = SmtpServer::start();
    let mock = MockStripe::start().await;
    let stripe = mock.settings();
    let smtp_url = smtp.url();
    let app = spawn_app_with(move |settings| {
        settings.payments.provider = helpnow::config::PaymentProviderKind::Stripe;
        settings.stripe = stripe;
        settings.mail.provider = helpnow::config::MailProviderKind::Smtp;
        settings.mail.smtp_url = Some(smtp_url.into());
    })
    .await;
    let (session_id, _) = paid_checkout(&app, &mock, "ann@example.com").await;
    let subscription = subscription_of(&mock, &session_id);
    assert_eq!(
        deliver_signed(&app, &mock.session_event(&session_id)).await,
        200
    );
    wait_for_mails(&smtp, 1).await;

    // Stripe's notice three days before the trial ends.
    let reminder = mock.subscription_event("customer.subscription.trial_will_end", &subscription);
    assert_eq!(deliver_signed(&app, &reminder).await, 200);
    wait_for_mails(&smtp, 2).await;
    let mails = smtp.received();
    assert_eq!(mails[1].envelope_to, vec!["ann@example.com".to_owned()]);
    let mail = ParsedMail::parse(&mails[1].data);
    assert_eq!(
        mail.header("Subject"),
        Some(format!(
            "Your HelpNow trial ends on {}",
            trial_end_date(&mock, &subscription)
        ))
    );
    let text = mail.text();
    assert!(text.contains("continues at $20/month"), "{text}");
    assert!(
        text.contains("/login and choose Manage subscription"),
        "{text}"
    );

    // The event again, and another notice for the same trial end: no second reminder.
    assert_eq!(deliver_signed(&app, &reminder).await, 200);
    let again = mock.subscription_event("customer.subscription.trial_will_end", &subscription);
    assert_eq!(deliver_signed(&app, &again).await, 200);
    assert_eq!(trial_reminders(&app).await, 1, "one reminder per trial end");
    assert_eq!(smtp.received().len(), 2);
}

#[tokio::test]
async fn a_reminder_that_could_not_be_queued_is_sent_when_its_event_comes_again() {
    let mock = MockStripe::start().await;
    let app = stripe_app(&mock).await;
    let (session_id, _) = paid_checkout(&app, &mock, "ann@example.com").await;
    assert_eq!(
        deliver_signed(&app, &mock.session_event(&session_id)).await,
        200
    );
    let reminder = mock.subscription_event(
        "customer.subscription.trial_will_end",
        &subscription_of(&mock, &session_id),
    );

    // The database fails as the reminder is queued.
    refuse_writes(
        &app,
        "mail_outbox",
        "$event = 'CREATE' AND $after.kind = 'trial_ending'",
    )
    .await;
    assert_eq!(deliver_signed(&app, &reminder).await, 500);
    accept_writes(&app, "mail_outbox").await;
    assert_eq!(trial_reminders(&app).await, 0);

    let_lease_run_out(&app, &event_id_of(&reminder)).await;
    assert_eq!(deliver_signed(&app, &reminder).await, 200);
    assert_eq!(trial_reminders(&app).await, 1, "the reminder is not lost");
}

#[tokio::test]
async fn on_stripe_a_card_gets_one_trial_and_a_member_who_had_one_is_charged_at_once() {
    let mock = MockStripe::start().await;
    let app = stripe_app(&mock).await;
    // Two signed-out buyers, two addresses, one card: the second trial is ended at Stripe.
    let mut subscriptions = Vec::new();
    for email in ["one@example.com", "two@example.com"] {
        let response = app
            .post_json(
                "/api/create-checkout.js",
                &json!({"source": "chat_trial_prompt"}),
            )
            .await;
        assert_eq!(response.status(), 200);
        let started: Value = response.json().await.expect("json");
        let id = started["sessionId"].as_str().expect("id").to_owned();
        mock.pay_with_card(&id, email, "fp_the_same_card");
        assert_eq!(deliver_signed(&app, &mock.session_event(&id)).await, 200);
        subscriptions.push(subscription_of(&mock, &id));
    }
    let ended = |subscription: &str| {
        mock.requests_to("POST", &format!("/v1/subscriptions/{subscription}"))
            .iter()
            .filter(|request| request.param("trial_end") == Some("now"))
            .count()
    };
    assert_eq!(ended(&subscriptions[0]), 0, "the card's first trial stands");
    assert_eq!(
        ended(&subscriptions[1]),
        1,
        "the second is ended: the month is charged"
    );
    assert!(
        has_access(&app, "two@example.com").await,
        "a paying subscriber"
    );

    // A signed-in member who had the trial: no trial and no fee asked of Stripe.
    let (session, _, first) = member_checkout(&app, "ann@example.com").await;
    mock.pay(&first, "ann@example.com");
    assert_eq!(deliver_signed(&app, &mock.session_event(&first)).await, 200);
    let again = post_with_cookie(
        &app,
        "/api/create-checkout.js",
        &session,
        &json!({"source": "chat_trial_prompt"}),
    )
    .await;
    assert_eq!(again.status(), 200);
    let created = mock.requests_to("POST", "/v1/checkout/sessions");
    let last = created.last().expect("a checkout");
    assert_eq!(last.param("subscription_data[trial_period_days]"), None);
    assert_eq!(
        last.params_starting_with("line_items[").len(),
        created[0].params_starting_with("line_items[").len() - 2,
        "the subscription alone, without the fee: {last:?}"
    );
}

#[tokio::test]
async fn on_stripe_a_card_that_cannot_be_identified_gets_no_trial_and_is_charged_at_once() {
    let mock = MockStripe::start().await;
    let app = stripe_app(&mock).await;
    // A card Stripe gives no fingerprint, confirmed by the webhook; a subscription with no
    // payment method at all, confirmed by the success page.
    for (n, paid_with) in [PaidWith::CardWithoutFingerprint, PaidWith::NoPaymentMethod]
        .into_iter()
        .enumerate()
    {
        let email = format!("unknown-card-{n}@example.com");
        let response = app
            .post_json(
                "/api/create-checkout.js",
                &json!({"source": "chat_trial_prompt"}),
            )
            .await;
        assert_eq!(response.status(), 200);
        let start_cookie = cookie_named(&response, "helpnow_checkout_start").expect("cookie");
        let started: Value = response.json().await.expect("json");
        let id = started["sessionId"].as_str().expect("id").to_owned();
        let created = mock.requests_to("POST", "/v1/checkout/sessions");
        let created = created.last().expect("the checkout");
        assert_eq!(
            created.param("allowed_payment_method_types[0]"),
            Some("card")
        );
        assert_eq!(
            created.param("custom_text[submit][message]"),
            Some(helpnow::billing::UNIDENTIFIED_CARD_NOTICE)
        );

        mock.pay_with(&id, &email, paid_with);
        if n == 0 {
            assert_eq!(deliver_signed(&app, &mock.session_event(&id)).await, 200);
        } else {
            let answer: Value = get_with_cookie(
                &app,
                &format!("/api/checkout-success?session_id={id}"),
                &start_cookie,
            )
            .await
            .json()
            .await
            .expect("json");
            assert_eq!(answer["next"], "setup", "{answer}");
            assert_eq!(answer["trialActive"], false, "{answer}");
            assert_eq!(answer["trialEndDate"], Value::Null, "{answer}");
        }

        let subscription = subscription_of(&mock, &id);
        let ended = mock
            .requests_to("POST", &format!("/v1/subscriptions/{subscription}"))
            .iter()
            .filter(|request| request.param("trial_end") == Some("now"))
            .count();
        assert_eq!(
            ended, 1,
            "{email}: Stripe's trial is ended, the month charged"
        );
        let mut response = app
            .db
            .query(
                "SELECT trial_end_date, (SELECT VALUE trial_to_end FROM checkout_session \
                 WHERE provider_session_id = $id)[0] AS trial_to_end FROM user WHERE email = $email",
            )
            .bind(("id", id.clone()))
            .bind(("email", email.clone()))
            .await
            .expect("query");
        let rows: Vec<Value> = response.take(0).expect("rows");
        assert_eq!(rows[0]["trial_end_date"], Value::Null, "{email}: no trial");
        assert_eq!(rows[0]["trial_to_end"], true, "{email}");
        assert!(
            has_access(&app, &email).await,
            "{email}: a paying subscriber"
        );
    }
}
