//! Stripe provider and webhook tests against the local mock.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use helpnow::billing::stripe::{
    StripeProvider, WebhookError, parse_event, sign_payload, verify_signature,
};
use helpnow::billing::{
    BillingError, CheckoutRequest, CheckoutStatus, PayingCard, PaymentProvider,
    UNIDENTIFIED_CARD_NOTICE,
};
use helpnow::domain::billing::{BillingEvent, CheckoutSource, SubscriptionStatus};
use helpnow::store::billing::StoredCheckout;
use serde_json::json;
use stripe_webhook::{EventObject, Webhook};

use crate::stripe_mock::{
    API_VERSION, Completed, FEE_PRICE_ID, MockStripe, PaidWith, RecordedRequest,
    SUBSCRIPTION_PRICE_ID, WEBHOOK_SECRET,
};

const SUCCESS_URL: &str =
    "https://helpnow.test/api/checkout-success?session_id={CHECKOUT_SESSION_ID}&tracking=t-1";
const CANCEL_URL: &str = "https://helpnow.test/?canceled=true";

fn provider(mock: &MockStripe) -> StripeProvider {
    // No app here: `new` itself installs the rustls crypto provider the client needs.
    StripeProvider::new(&mock.settings()).expect("the provider builds")
}

fn checkout_request(
    source: CheckoutSource,
    tracking_id: &str,
    email: Option<&str>,
) -> CheckoutRequest {
    let metadata = BTreeMap::from([
        ("trackingSessionId".to_owned(), tracking_id.to_owned()),
        ("source".to_owned(), source.as_str().to_owned()),
        ("keyword".to_owned(), "printer offline".to_owned()),
    ]);
    CheckoutRequest {
        source,
        refundable_fee: source.charges_refundable_fee(),
        trial: true,
        customer_email: email.map(str::to_owned),
        tracking_id: tracking_id.to_owned(),
        metadata,
        success_url: SUCCESS_URL.to_owned(),
        cancel_url: CANCEL_URL.to_owned(),
    }
}

fn stored_checkout(session_id: &str, refundable_fee: bool) -> StoredCheckout {
    StoredCheckout {
        provider: "stripe".to_owned(),
        provider_session_id: session_id.to_owned(),
        tracking_id: "t-1".to_owned(),
        source: "chat_funnel".to_owned(),
        status: "fulfilled".to_owned(),
        refundable_fee,
        trial_offered: true,
        email: Some("ann@example.com".to_owned()),
        attribution: None,
        success_url: SUCCESS_URL.to_owned(),
        cancel_url: CANCEL_URL.to_owned(),
        user_id: None,
        held_for_id: None,
        customer_id: None,
        subscription_id: None,
        payment_intent_id: None,
        card_fingerprint: None,
        created_at: Utc::now(),
        completed_at: None,
        fulfilled_at: None,
        fee_refunded_at: None,
        created_account: true,
        start_hash: None,
    }
}

fn the_only(requests: Vec<RecordedRequest>) -> RecordedRequest {
    assert_eq!(requests.len(), 1, "{requests:#?}");
    requests.into_iter().next().expect("one request")
}

fn close_to_now(time: DateTime<Utc>) -> bool {
    (Utc::now() - time).num_seconds().abs() <= 5
}

/// A paid checkout of `source`, through the provider and the mock's hosted page.
async fn paid_checkout(
    mock: &MockStripe,
    provider: &StripeProvider,
    source: CheckoutSource,
) -> (String, Completed) {
    let created = provider
        .create_checkout(&checkout_request(source, "t-1", None))
        .await
        .expect("checkout");
    let completed = mock.pay(&created.provider_session_id, "ann@example.com");
    (created.provider_session_id, completed)
}

// --- the provider ---------------------------------------------------------------------------

#[tokio::test]
async fn a_fee_checkout_asks_stripe_for_the_subscription_the_fee_and_the_trial() {
    let mock = MockStripe::start().await;
    let provider = provider(&mock);
    let request = checkout_request(
        CheckoutSource::RefundableFeeFunnel,
        "t-fee",
        Some("ann@example.com"),
    );

    let created = provider.create_checkout(&request).await.expect("checkout");

    let sent = the_only(mock.requests_to("POST", "/v1/checkout/sessions"));
    assert_eq!(sent.param("mode"), Some("subscription"));
    assert_eq!(
        sent.params_starting_with("line_items["),
        vec![
            (
                "line_items[0][price]".to_owned(),
                SUBSCRIPTION_PRICE_ID.to_owned()
            ),
            ("line_items[0][quantity]".to_owned(), "1".to_owned()),
            ("line_items[1][price]".to_owned(), FEE_PRICE_ID.to_owned()),
            ("line_items[1][quantity]".to_owned(), "1".to_owned()),
        ]
    );
    assert_eq!(
        sent.param("subscription_data[trial_period_days]"),
        Some("7")
    );
    for (key, value) in &request.metadata {
        assert_eq!(
            sent.param(&format!("metadata[{key}]")),
            Some(value.as_str())
        );
        assert_eq!(
            sent.param(&format!("subscription_data[metadata][{key}]")),
            Some(value.as_str())
        );
    }
    assert_eq!(sent.param("client_reference_id"), Some("t-fee"));
    assert_eq!(sent.param("customer_email"), Some("ann@example.com"));
    assert_eq!(sent.param("success_url"), Some(SUCCESS_URL));
    assert!(SUCCESS_URL.contains("{CHECKOUT_SESSION_ID}"));
    assert_eq!(sent.param("cancel_url"), Some(CANCEL_URL));
    let key = sent.idempotency_key.as_deref().expect("an idempotency key");
    assert!(key.starts_with("checkout-t-fee-"), "{key}");
    assert_eq!(sent.stripe_version.as_deref(), Some(API_VERSION));
    let bearer = format!("Bearer {}", mock.secret_key());
    assert!(
        mock.requests()
            .iter()
            .all(|request| request.authorization.as_deref() == Some(bearer.as_str()))
    );

    assert!(created.provider_session_id.starts_with("cs_test_"));
    assert_eq!(
        created.url,
        mock.session_object(&created.provider_session_id)["url"]
    );
}

#[tokio::test]
async fn a_plain_signup_checkout_charges_only_the_subscription_and_prefills_no_email() {
    let mock = MockStripe::start().await;
    let provider = provider(&mock);

    provider
        .create_checkout(&checkout_request(
            CheckoutSource::DirectSignup,
            "t-free",
            None,
        ))
        .await
        .expect("checkout");

    let sent = the_only(mock.requests_to("POST", "/v1/checkout/sessions"));
    assert_eq!(
        sent.params_starting_with("line_items["),
        vec![
            (
                "line_items[0][price]".to_owned(),
                SUBSCRIPTION_PRICE_ID.to_owned()
            ),
            ("line_items[0][quantity]".to_owned(), "1".to_owned()),
        ]
    );
    assert_eq!(
        sent.param("subscription_data[trial_period_days]"),
        Some("7")
    );
    assert_eq!(sent.param("customer_email"), None);
}

#[tokio::test]
async fn a_trial_checkout_takes_cards_only_and_says_what_an_unidentified_card_gets() {
    let mock = MockStripe::start().await;
    let provider = provider(&mock);
    let trial = provider
        .create_checkout(&checkout_request(
            CheckoutSource::ChatFunnel,
            "t-card",
            None,
        ))
        .await
        .expect("checkout");
    let sent = the_only(mock.requests_to("POST", "/v1/checkout/sessions"));
    assert_eq!(
        sent.params_starting_with("allowed_payment_method_types"),
        vec![(
            "allowed_payment_method_types[0]".to_owned(),
            "card".to_owned()
        )]
    );
    assert_eq!(
        sent.param("custom_text[submit][message]"),
        Some(UNIDENTIFIED_CARD_NOTICE)
    );
    assert!(UNIDENTIFIED_CARD_NOTICE.contains("cannot be identified gets no free trial"));
    let page = mock.session_object(&trial.provider_session_id);
    assert_eq!(page["payment_method_types"], json!(["card"]));
    assert_eq!(
        page["custom_text"]["submit"]["message"],
        UNIDENTIFIED_CARD_NOTICE
    );

    // A checkout with no trial (the account had its own) has nothing to protect: any method.
    let mut paid_now = checkout_request(CheckoutSource::ChatFunnel, "t-paid-now", None);
    paid_now.trial = false;
    paid_now.refundable_fee = false;
    provider.create_checkout(&paid_now).await.expect("checkout");
    let sent = mock.requests_to("POST", "/v1/checkout/sessions");
    let sent = sent.last().expect("a second checkout");
    assert_eq!(
        sent.params_starting_with("allowed_payment_method_types"),
        vec![]
    );
    assert_eq!(sent.params_starting_with("custom_text"), vec![]);
}

#[tokio::test]
async fn the_paying_card_is_identified_by_its_fingerprint_only() {
    let mock = MockStripe::start().await;
    let provider = provider(&mock);
    for (n, (paid_with, expected)) in [
        (
            PaidWith::Card("fp_ann".to_owned()),
            PayingCard::Identified("fp_ann".to_owned()),
        ),
        (PaidWith::CardWithoutFingerprint, PayingCard::Unidentified),
        (PaidWith::NoPaymentMethod, PayingCard::Unidentified),
    ]
    .into_iter()
    .enumerate()
    {
        let created = provider
            .create_checkout(&checkout_request(
                CheckoutSource::ChatTrialPrompt,
                &format!("t-{n}"),
                None,
            ))
            .await
            .expect("checkout");
        let paid = mock.pay_with(&created.provider_session_id, "ann@example.com", paid_with);
        let CheckoutStatus::Complete(completed) = provider
            .checkout_status(&created.provider_session_id)
            .await
            .expect("status")
        else {
            panic!("a paid checkout is complete");
        };
        assert_eq!(
            provider.paying_card(&completed).await.expect("card"),
            expected,
            "{n}"
        );
        let read = mock.requests_to(
            "GET",
            &format!("/v1/subscriptions/{}", paid.subscription_id),
        );
        assert_eq!(read.len(), 1, "one subscription read");
        assert_eq!(read[0].param("expand[0]"), Some("default_payment_method"));
    }
}

#[tokio::test]
async fn a_repeated_checkout_request_gets_the_same_session_and_a_changed_one_a_new_session() {
    let mock = MockStripe::start().await;
    let provider = provider(&mock);
    let request = checkout_request(CheckoutSource::ChatFunnel, "t-twice", None);

    let first = provider.create_checkout(&request).await.expect("checkout");
    let again = provider.create_checkout(&request).await.expect("checkout");
    assert_eq!(first, again);

    // Same tracking id, another email: Stripe would refuse the old key with other parameters.
    let mut changed = request.clone();
    changed.customer_email = Some("bob@example.com".to_owned());
    let other = provider.create_checkout(&changed).await.expect("checkout");
    assert_ne!(other.provider_session_id, first.provider_session_id);
}

#[tokio::test]
async fn a_checkout_is_open_until_paid_and_then_complete_with_the_facts_fulfilment_needs() {
    let mock = MockStripe::start().await;
    let provider = provider(&mock);
    let created = provider
        .create_checkout(&checkout_request(
            CheckoutSource::ChatTrialPrompt,
            "t-pay",
            None,
        ))
        .await
        .expect("checkout");
    let session_id = created.provider_session_id.as_str();

    assert_eq!(
        provider.checkout_status(session_id).await.expect("status"),
        CheckoutStatus::Open
    );
    let retrieved = &mock.requests_to("GET", &format!("/v1/checkout/sessions/{session_id}"))[0];
    assert_eq!(retrieved.param("expand[0]"), Some("subscription"));
    assert_eq!(retrieved.param("expand[1]"), Some("invoice"));

    let paid = mock.pay(session_id, "ann@example.com");
    let CheckoutStatus::Complete(completed) =
        provider.checkout_status(session_id).await.expect("status")
    else {
        panic!("a paid checkout is complete");
    };
    assert_eq!(completed.provider_session_id, session_id);
    assert_eq!(completed.email, "ann@example.com");
    assert_eq!(
        completed.customer_id.as_deref(),
        Some(paid.customer_id.as_str())
    );
    assert_eq!(
        completed.subscription_id.as_deref(),
        Some(paid.subscription_id.as_str())
    );
    assert!(paid.payment_intent_id.is_some());
    assert_eq!(completed.payment_intent_id, paid.payment_intent_id);
    // The trial runs from the subscription's start, as Stripe's own trial does.
    let start = mock.subscription_object(&paid.subscription_id)["start_date"]
        .as_i64()
        .expect("start_date");
    assert_eq!(completed.completed_at.timestamp(), start);
}

#[tokio::test]
async fn a_free_trial_checkout_is_complete_with_nothing_paid_today() {
    let mock = MockStripe::start().await;
    let provider = provider(&mock);
    let (session_id, paid) = paid_checkout(&mock, &provider, CheckoutSource::DirectSignup).await;
    assert_eq!(paid.payment_intent_id, None);
    assert_eq!(
        mock.session_object(&session_id)["payment_status"],
        "no_payment_required"
    );

    let CheckoutStatus::Complete(completed) =
        provider.checkout_status(&session_id).await.expect("status")
    else {
        panic!("a free trial checkout is complete");
    };
    assert_eq!(completed.payment_intent_id, None);
    assert!(close_to_now(completed.completed_at));
}

#[tokio::test]
async fn an_expired_checkout_is_expired_and_an_unknown_one_not_found() {
    let mock = MockStripe::start().await;
    let provider = provider(&mock);
    let created = provider
        .create_checkout(&checkout_request(
            CheckoutSource::HelpFunnel,
            "t-late",
            None,
        ))
        .await
        .expect("checkout");
    mock.expire(&created.provider_session_id);

    assert_eq!(
        provider
            .checkout_status(&created.provider_session_id)
            .await
            .expect("status"),
        CheckoutStatus::Expired
    );
    assert!(matches!(
        provider.checkout_status("cs_test_nobody").await,
        Err(BillingError::NotFound(id)) if id == "cs_test_nobody"
    ));
}

#[tokio::test]
async fn the_subscription_snapshot_is_stripes_current_state() {
    let mock = MockStripe::start().await;
    let provider = provider(&mock);
    let (_, paid) = paid_checkout(&mock, &provider, CheckoutSource::ChatFunnel).await;

    let snapshot = provider
        .subscription(&paid.subscription_id)
        .await
        .expect("subscription")
        .expect("it exists");
    assert_eq!(snapshot.id, paid.subscription_id);
    assert_eq!(
        snapshot.customer_id.as_deref(),
        Some(paid.customer_id.as_str())
    );
    assert_eq!(snapshot.status, SubscriptionStatus::Trialing);
    assert_eq!(snapshot.price_id.as_deref(), Some(SUBSCRIPTION_PRICE_ID));
    let trial_end = snapshot.trial_end.expect("a trial end");
    assert!(close_to_now(trial_end - Duration::days(7)));
    assert_eq!(snapshot.current_period_end, Some(trial_end));
    assert!(!snapshot.cancel_at_period_end);
    assert!((Utc::now().timestamp() - snapshot.event_created).abs() <= 5);

    mock.set_subscription_status(&paid.subscription_id, "past_due");
    let snapshot = provider
        .subscription(&paid.subscription_id)
        .await
        .expect("subscription")
        .expect("it exists");
    assert_eq!(snapshot.status, SubscriptionStatus::PastDue);

    assert_eq!(
        provider
            .subscription("sub_nobody")
            .await
            .expect("an answer"),
        None
    );
}

#[tokio::test]
async fn the_portal_opens_for_a_known_customer_only() {
    let mock = MockStripe::start().await;
    let provider = provider(&mock);
    let (_, paid) = paid_checkout(&mock, &provider, CheckoutSource::ChatFunnel).await;

    let url = provider
        .portal_url(&paid.customer_id, "https://helpnow.test/")
        .await
        .expect("portal");
    assert!(
        url.starts_with("https://billing.stripe.com/p/session/"),
        "{url}"
    );
    let sent = the_only(mock.requests_to("POST", "/v1/billing_portal/sessions"));
    assert_eq!(sent.param("customer"), Some(paid.customer_id.as_str()));
    assert_eq!(sent.param("return_url"), Some("https://helpnow.test/"));

    assert!(matches!(
        provider
            .portal_url("cus_nobody", "https://helpnow.test/")
            .await,
        Err(BillingError::NotFound(_))
    ));
}

#[tokio::test]
async fn the_fee_refund_pays_back_exactly_the_fee_once() {
    let mock = MockStripe::start().await;
    let provider = provider(&mock);
    let (session_id, paid) =
        paid_checkout(&mock, &provider, CheckoutSource::RefundableFeeFunnel).await;
    let payment_intent = paid.payment_intent_id.expect("the fee was paid");
    let mut checkout = stored_checkout(&session_id, true);
    checkout.payment_intent_id = Some(payment_intent.clone());

    provider.refund_fee(&checkout).await.expect("refund");
    // A second request (a double click) is Stripe's first answer again, not a second refund.
    provider.refund_fee(&checkout).await.expect("refund again");

    let refunds = mock.requests_to("POST", "/v1/refunds");
    assert_eq!(refunds.len(), 2);
    for sent in &refunds {
        assert_eq!(sent.param("amount"), Some("100"));
        assert_eq!(sent.param("payment_intent"), Some(payment_intent.as_str()));
        assert_eq!(sent.param("reason"), Some("requested_by_customer"));
        assert_eq!(
            sent.idempotency_key.as_deref(),
            Some(format!("refund-fee-{session_id}").as_str())
        );
    }
    assert_eq!(mock.refunded(&payment_intent), 100);
}

#[tokio::test]
async fn the_fee_refund_finds_the_first_payment_itself_even_after_a_renewal() {
    let mock = MockStripe::start().await;
    let provider = provider(&mock);
    let (session_id, paid) = paid_checkout(&mock, &provider, CheckoutSource::ChatFunnel).await;
    let (_, renewal_payment) = mock.renew(&paid.subscription_id);
    let mut checkout = stored_checkout(&session_id, true);
    checkout.customer_id = Some(paid.customer_id.clone());
    checkout.subscription_id = Some(paid.subscription_id.clone());

    provider.refund_fee(&checkout).await.expect("refund");

    let fee_payment = paid.payment_intent_id.expect("the fee was paid");
    assert_eq!(mock.refunded(&fee_payment), 100);
    assert_eq!(mock.refunded(&renewal_payment), 0);
}

#[tokio::test]
async fn there_is_nothing_to_refund_when_no_fee_was_charged() {
    let mock = MockStripe::start().await;
    let provider = provider(&mock);
    let (session_id, paid) = paid_checkout(&mock, &provider, CheckoutSource::DirectSignup).await;

    let checkout = stored_checkout(&session_id, false);
    assert!(matches!(
        provider.refund_fee(&checkout).await,
        Err(BillingError::NothingToRefund(_))
    ));
    // Even a record that claims a fee finds no such payment at Stripe.
    let mut claims_a_fee = stored_checkout(&session_id, true);
    claims_a_fee.customer_id = Some(paid.customer_id);
    assert!(matches!(
        provider.refund_fee(&claims_a_fee).await,
        Err(BillingError::NothingToRefund(_))
    ));
    assert!(mock.requests_to("POST", "/v1/refunds").is_empty());
}

#[tokio::test]
async fn a_wrong_secret_key_is_a_provider_error() {
    let mock = MockStripe::start().await;
    let mut settings = mock.settings();
    settings.secret_key = Some("sk_test_wrong".to_owned().into());
    let provider = StripeProvider::new(&settings).expect("the provider builds");

    let error = provider
        .create_checkout(&checkout_request(CheckoutSource::ChatFunnel, "t-key", None))
        .await
        .expect_err("Stripe refuses the key");
    assert!(
        matches!(&error, BillingError::Provider(text) if text.contains("401")),
        "{error}"
    );
}

// --- webhook signatures ---------------------------------------------------------------------

const NOW: i64 = 1_760_000_000;

#[test]
fn any_one_matching_v1_signature_is_enough() {
    let body = br#"{"id":"evt_1","object":"event"}"#;
    let good = sign_payload(body, WEBHOOK_SECRET, NOW);
    let good_v1 = good.split("v1=").nth(1).expect("a v1");
    let wrong_v1 = sign_payload(body, "whsec_old", NOW);
    let wrong_v1 = wrong_v1.split("v1=").nth(1).expect("a v1");
    let header = format!("t={NOW},v1={wrong_v1},v1={good_v1},v0=6ffbb59b2300aae63f27240692");

    assert!(verify_signature(body, &header, WEBHOOK_SECRET, NOW).is_ok());
}

#[tokio::test]
async fn our_signatures_and_async_stripes_agree() {
    let mock = MockStripe::start().await;
    let customer = json!({"id": "cus_1", "object": "customer", "created": NOW, "livemode": false});
    let body = mock.event_at("customer.created", customer, NOW);
    let text = std::str::from_utf8(&body).expect("UTF-8");

    let ours = sign_payload(&body, WEBHOOK_SECRET, NOW);
    let theirs = MockStripe::signed(&body, WEBHOOK_SECRET, NOW);
    assert_eq!(ours, theirs);
    assert!(verify_signature(&body, &theirs, WEBHOOK_SECRET, NOW + 10).is_ok());
    if let Err(error) =
        Webhook::construct_event_with_timestamp(text, &ours, WEBHOOK_SECRET, NOW + 10)
    {
        panic!("async-stripe refuses our signature: {error:?}");
    }
}

#[test]
fn a_forged_tampered_or_stale_delivery_is_refused() {
    let body = br#"{"id":"evt_1","object":"event"}"#;
    let header = MockStripe::signed(body, WEBHOOK_SECRET, NOW);

    assert!(matches!(
        verify_signature(body, &header, "whsec_someone_else", NOW),
        Err(WebhookError::BadSignature)
    ));
    assert!(matches!(
        verify_signature(
            br#"{"id":"evt_2","object":"event"}"#,
            &header,
            WEBHOOK_SECRET,
            NOW
        ),
        Err(WebhookError::BadSignature)
    ));
    assert!(verify_signature(body, &header, WEBHOOK_SECRET, NOW + 300).is_ok());
    assert!(verify_signature(body, &header, WEBHOOK_SECRET, NOW - 300).is_ok());
    assert!(matches!(
        verify_signature(body, &header, WEBHOOK_SECRET, NOW + 301),
        Err(WebhookError::StaleTimestamp { .. })
    ));
    assert!(matches!(
        verify_signature(body, &header, WEBHOOK_SECRET, NOW - 301),
        Err(WebhookError::StaleTimestamp { .. })
    ));
    let only_v0 = header.replace("v1=", "v0=");
    assert!(matches!(
        verify_signature(body, &only_v0, WEBHOOK_SECRET, NOW),
        Err(WebhookError::NoV1Signature)
    ));
    assert!(matches!(
        verify_signature(body, "", WEBHOOK_SECRET, NOW),
        Err(WebhookError::MissingHeader)
    ));
}

// --- webhook events -------------------------------------------------------------------------

/// A mock with one paid fee checkout, for building events from real state.
async fn paid_fee_checkout() -> (MockStripe, String, Completed) {
    let mock = MockStripe::start().await;
    let provider = provider(&mock);
    let (session_id, paid) =
        paid_checkout(&mock, &provider, CheckoutSource::RefundableFeeFunnel).await;
    (mock, session_id, paid)
}

#[tokio::test]
async fn a_paid_checkout_event_is_a_completed_checkout_dated_by_the_event() {
    let (mock, session_id, paid) = paid_fee_checkout().await;
    let payload = mock.event_at(
        "checkout.session.completed",
        mock.session_object(&session_id),
        NOW,
    );

    let parsed = parse_event(&payload).expect("parses");
    assert!(parsed.id.starts_with("evt_"));
    assert_eq!(parsed.event_type, "checkout.session.completed");
    assert_eq!(parsed.created, NOW);
    assert!(!parsed.livemode);
    let Some(BillingEvent::CheckoutCompleted(completed)) = parsed.event else {
        panic!("a completed checkout: {:?}", parsed.event);
    };
    assert_eq!(completed.provider_session_id, session_id);
    assert_eq!(completed.email, "ann@example.com");
    assert_eq!(completed.customer_id, Some(paid.customer_id));
    assert_eq!(completed.subscription_id, Some(paid.subscription_id));
    assert_eq!(completed.completed_at.timestamp(), NOW);
}

#[tokio::test]
async fn a_completed_but_unpaid_checkout_grants_nothing_until_its_money_arrives() {
    let (mock, session_id, _) = paid_fee_checkout().await;
    let mut session = mock.session_object(&session_id);
    session["payment_status"] = json!("unpaid");

    let parsed = parse_event(&mock.event("checkout.session.completed", session)).expect("parses");
    assert_eq!(parsed.event, None);

    let paid_later = mock.event(
        "checkout.session.async_payment_succeeded",
        mock.session_object(&session_id),
    );
    assert!(matches!(
        parse_event(&paid_later).expect("parses").event,
        Some(BillingEvent::CheckoutCompleted(completed)) if completed.provider_session_id == session_id
    ));
}

#[tokio::test]
async fn subscription_events_are_snapshots_dated_by_the_event() {
    let (mock, _, paid) = paid_fee_checkout().await;
    let subscription = mock.subscription_object(&paid.subscription_id);
    let trial_end = subscription["trial_end"].as_i64().expect("trial_end");

    for event_type in [
        "customer.subscription.created",
        "customer.subscription.updated",
    ] {
        let payload = mock.event_at(event_type, subscription.clone(), NOW);
        let Some(BillingEvent::SubscriptionChanged(snapshot)) =
            parse_event(&payload).expect("parses").event
        else {
            panic!("{event_type} is a subscription change");
        };
        assert_eq!(snapshot.id, paid.subscription_id);
        assert_eq!(
            snapshot.customer_id.as_deref(),
            Some(paid.customer_id.as_str())
        );
        assert_eq!(snapshot.status, SubscriptionStatus::Trialing);
        assert_eq!(snapshot.price_id.as_deref(), Some(SUBSCRIPTION_PRICE_ID));
        assert_eq!(
            snapshot.trial_end.map(|end| end.timestamp()),
            Some(trial_end)
        );
        assert_eq!(
            snapshot.current_period_end.map(|end| end.timestamp()),
            Some(trial_end)
        );
        assert_eq!(snapshot.event_created, NOW);
    }

    let payload = mock.subscription_event(
        "customer.subscription.trial_will_end",
        &paid.subscription_id,
    );
    assert!(matches!(
        parse_event(&payload).expect("parses").event,
        Some(BillingEvent::TrialWillEnd(snapshot)) if snapshot.id == paid.subscription_id
    ));
}

#[tokio::test]
async fn a_deleted_subscription_is_canceled() {
    let (mock, _, paid) = paid_fee_checkout().await;
    mock.set_subscription_status(&paid.subscription_id, "canceled");
    let payload = mock.subscription_event("customer.subscription.deleted", &paid.subscription_id);
    assert!(matches!(
        parse_event(&payload).expect("parses").event,
        Some(BillingEvent::SubscriptionChanged(snapshot))
            if snapshot.status == SubscriptionStatus::Canceled
    ));

    // Whatever the object still says.
    let mut subscription = mock.subscription_object(&paid.subscription_id);
    subscription["status"] = json!("active");
    let payload = mock.event("customer.subscription.deleted", subscription);
    assert!(matches!(
        parse_event(&payload).expect("parses").event,
        Some(BillingEvent::SubscriptionChanged(snapshot))
            if snapshot.status == SubscriptionStatus::Canceled
    ));
}

#[tokio::test]
async fn invoice_events_name_their_customer_subscription_and_amount() {
    let (mock, _, paid) = paid_fee_checkout().await;

    let payload = mock.invoice_event("invoice.paid", &paid.invoice_id);
    assert_eq!(
        parse_event(&payload).expect("parses").event,
        Some(BillingEvent::InvoicePaid {
            customer_id: Some(paid.customer_id.clone()),
            subscription_id: Some(paid.subscription_id.clone()),
            amount_paid: 100,
            billing_reason: Some("subscription_create".to_owned()),
        })
    );

    let payload = mock.invoice_event("invoice.payment_failed", &paid.invoice_id);
    assert_eq!(
        parse_event(&payload).expect("parses").event,
        Some(BillingEvent::InvoicePaymentFailed {
            customer_id: Some(paid.customer_id.clone()),
            subscription_id: Some(paid.subscription_id.clone()),
            amount_due: 100,
        })
    );
}

#[tokio::test]
async fn events_rendered_in_older_api_versions_are_read_too() {
    let (mock, _, paid) = paid_fee_checkout().await;

    // Before 2025-03-31 an invoice named its subscription at the top level...
    let mut invoice = mock.invoice_object(&paid.invoice_id);
    let object = invoice.as_object_mut().expect("an object");
    object.remove("parent");
    object.insert("subscription".to_owned(), json!(paid.subscription_id));
    assert!(matches!(
        parse_event(&mock.event("invoice.paid", invoice)).expect("parses").event,
        Some(BillingEvent::InvoicePaid { subscription_id: Some(id), .. }) if id == paid.subscription_id
    ));

    // ...and a subscription carried its period itself.
    let mut subscription = mock.subscription_object(&paid.subscription_id);
    let period_end = subscription["items"]["data"][0]["current_period_end"].clone();
    subscription["items"]["data"][0]
        .as_object_mut()
        .expect("an item")
        .remove("current_period_end");
    subscription["current_period_end"] = period_end.clone();
    let Some(BillingEvent::SubscriptionChanged(snapshot)) =
        parse_event(&mock.event("customer.subscription.updated", subscription))
            .expect("parses")
            .event
    else {
        panic!("a subscription change");
    };
    assert_eq!(
        snapshot.current_period_end.map(|end| end.timestamp()),
        period_end.as_i64()
    );
}

#[tokio::test]
async fn other_event_types_are_acknowledged_and_ignored() {
    let mock = MockStripe::start().await;
    let payload = mock.event_at(
        "customer.created",
        json!({"id": "cus_1", "object": "customer", "created": NOW, "livemode": false}),
        NOW,
    );
    let parsed = parse_event(&payload).expect("parses");
    assert_eq!(parsed.event_type, "customer.created");
    assert_eq!(parsed.created, NOW);
    assert_eq!(parsed.event, None);
}

#[tokio::test]
async fn the_mocks_events_are_what_async_stripe_accepts_from_stripe() {
    let (mock, session_id, paid) = paid_fee_checkout().await;
    let events = [
        mock.session_event(&session_id),
        mock.subscription_event("customer.subscription.created", &paid.subscription_id),
        mock.subscription_event("customer.subscription.updated", &paid.subscription_id),
        mock.subscription_event("customer.subscription.deleted", &paid.subscription_id),
        mock.subscription_event(
            "customer.subscription.trial_will_end",
            &paid.subscription_id,
        ),
        mock.invoice_event("invoice.paid", &paid.invoice_id),
        mock.invoice_event("invoice.payment_failed", &paid.invoice_id),
    ];
    let now = Utc::now().timestamp();
    let secret = mock.webhook_secret();
    for payload in events {
        let text = std::str::from_utf8(&payload).expect("UTF-8");
        let header = MockStripe::signed(&payload, secret, now);
        let event = Webhook::construct_event_with_timestamp(text, &header, secret, now)
            .unwrap_or_else(|error| panic!("async-stripe refuses {text}: {error:?}"));
        assert!(
            !matches!(event.data.object, EventObject::Unknown(_)),
            "{}",
            event.type_.as_str()
        );
        assert!(verify_signature(&payload, &header, secret, now).is_ok());
        assert!(parse_event(&payload).expect("parses").event.is_some());
    }
}
