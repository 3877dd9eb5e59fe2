//! Stripe: Checkout Sessions, the billing portal, refunds and signed webhooks (async-stripe 1.0).
//!
//! A checkout is a hosted Checkout Session in subscription mode: the $20/month price with a 7-day
//! trial, plus the $1 refundable fee as a one-time line item, which Stripe puts on the first
//! invoice only, so it is charged at checkout. Nothing here grants access: fulfilment does, from a
//! verified webhook ([`verify_signature`], [`parse_event`]) or from [`StripeProvider`] asking
//! Stripe about a checkout directly.
//!
//! The client speaks to `stripe.api_base` when set (tests point it at a local mock) and needs
//! rustls's process-wide crypto provider installed first (`Application::build` does it).

mod webhook;

pub use webhook::{
    ParsedEvent, SIGNATURE_TOLERANCE_SECS, WebhookError, parse_event, sign_payload,
    verify_signature,
};

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures_util::future::BoxFuture;
use secrecy::ExposeSecret;
use sha2::{Digest, Sha256};
use stripe::{Client, ClientBuilder, IdempotencyKey, RequestStrategy, StripeError, StripeRequest};
use stripe_billing::billing_portal_session::CreateBillingPortalSession;
use stripe_billing::invoice_payment::{ListInvoicePayment, ListInvoicePaymentStatus};
use stripe_billing::subscription::{
    CancelSubscription, RetrieveSubscription, UpdateSubscription, UpdateSubscriptionTrialEnd,
};
use stripe_billing::{Invoice, InvoiceBillingReason, Subscription};
use stripe_checkout::checkout_session::{
    CreateCheckoutSession, CreateCheckoutSessionAllowedPaymentMethodTypes,
    CreateCheckoutSessionCustomText, CreateCheckoutSessionLineItems,
    CreateCheckoutSessionSubscriptionData, CustomTextPositionParam, RetrieveCheckoutSession,
};
use stripe_checkout::{
    CheckoutSession, CheckoutSessionMode, CheckoutSessionPaymentStatus, CheckoutSessionStatus,
};
use stripe_core::charge::ListCharge;
use stripe_core::refund::{CreateRefund, CreateRefundReason};

use super::{
    BillingError, CheckoutRequest, CheckoutStatus, CreatedCheckout, PayingCard, PaymentProvider,
    UNIDENTIFIED_CARD_NOTICE,
};
use crate::config::StripeSettings;
use crate::domain::billing::{
    CompletedCheckout, REFUNDABLE_FEE_CENTS, SubscriptionSnapshot, SubscriptionStatus, TRIAL_DAYS,
};
use crate::store::billing::StoredCheckout;

/// Per attempt. The async client has no timeout of its own, and a checkout redirect that hangs
/// longer than this has lost the visitor anyway.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// Stripe's `subscription_data.trial_period_days` (the constant is small and positive).
const TRIAL_PERIOD_DAYS: u32 = TRIAL_DAYS as u32;

/// Stripe refuses metadata values longer than this, and with them the whole checkout; a long
/// ad headline is cut rather than costing the sale.
const METADATA_VALUE_MAX_CHARS: usize = 500;

/// How many of a customer's newest charges the last-resort fee lookup reads.
const CHARGES_SCANNED: i64 = 10;

/// Stripe as the `PaymentProvider`.
#[derive(Clone)]
pub struct StripeProvider {
    client: Client,
    subscription_price_id: String,
    refundable_fee_price_id: String,
}

impl std::fmt::Debug for StripeProvider {
    // The client holds the secret key; only the prices are worth showing.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StripeProvider")
            .field("subscription_price_id", &self.subscription_price_id)
            .field("refundable_fee_price_id", &self.refundable_fee_price_id)
            .finish_non_exhaustive()
    }
}

impl StripeProvider {
    pub fn new(settings: &StripeSettings) -> Result<Self, BillingError> {
        let secret_key = settings
            .secret_key
            .as_ref()
            .map(|key| key.expose_secret().trim())
            .filter(|key| !key.is_empty())
            .ok_or_else(|| missing_setting("stripe.secret_key"))?;
        let subscription_price_id = required_setting(
            &settings.subscription_price_id,
            "stripe.subscription_price_id",
        )?;
        let refundable_fee_price_id = required_setting(
            &settings.refundable_fee_price_id,
            "stripe.refundable_fee_price_id",
        )?;

        // The client panics when rustls cannot pick a crypto provider, which it cannot in this
        // build (both ring and aws-lc are compiled in). `Application::build` installs ring;
        // doing it here too keeps a provider built elsewhere (a tool, a test) from panicking,
        // and a second install is a no-op.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = ClientBuilder::new(secret_key)
            .timeout(REQUEST_TIMEOUT)
            .app_info("helpnow", Some(env!("CARGO_PKG_VERSION").to_owned()), None);
        if let Some(base) = settings
            .api_base
            .as_deref()
            .map(str::trim)
            .filter(|base| !base.is_empty())
        {
            // The client appends `v1/...` to the base as it is: without the slash,
            // `http://host/prefix` would become `http://host/prefixv1/...`.
            let base = if base.ends_with('/') {
                base.to_owned()
            } else {
                format!("{base}/")
            };
            builder = builder.url(base);
        }
        let client = builder
            .build()
            .map_err(|error| BillingError::Provider(format!("stripe client: {error}")))?;
        Ok(Self {
            client,
            subscription_price_id,
            refundable_fee_price_id,
        })
    }

    async fn create(&self, request: &CheckoutRequest) -> Result<CreatedCheckout, BillingError> {
        let mut line_items = vec![line_item(&self.subscription_price_id)];
        if request.refundable_fee {
            line_items.push(line_item(&self.refundable_fee_price_id));
        }
        let metadata: HashMap<String, String> = request
            .metadata
            .iter()
            .map(|(key, value)| (key.clone(), truncate_chars(value, METADATA_VALUE_MAX_CHARS)))
            .collect();
        let mut subscription_data = CreateCheckoutSessionSubscriptionData::new();
        if request.trial {
            subscription_data.trial_period_days = Some(TRIAL_PERIOD_DAYS);
        }
        // On the subscription too, so later subscription events carry the attribution.
        subscription_data.metadata = Some(metadata.clone());

        let mut session = CreateCheckoutSession::new()
            .mode(CheckoutSessionMode::Subscription)
            .line_items(line_items)
            .subscription_data(subscription_data)
            .metadata(metadata)
            .client_reference_id(request.tracking_id.as_str())
            .success_url(request.success_url.as_str())
            .cancel_url(request.cancel_url.as_str());
        if let Some(email) = request
            .customer_email
            .as_deref()
            .filter(|email| !email.is_empty())
        {
            session = session.customer_email(email);
        }
        if request.trial {
            // One trial per card needs a card's fingerprint: a trial is paid by card only (no
            // Link, no bank debit), and the page says beside its button what a card without one
            // gets. (API 2026-09-30 replaced `payment_method_types` with this filter.)
            let mut custom_text = CreateCheckoutSessionCustomText::new();
            custom_text.submit = Some(CustomTextPositionParam::new(UNIDENTIFIED_CARD_NOTICE));
            session = session
                .allowed_payment_method_types(vec![
                    CreateCheckoutSessionAllowedPaymentMethodTypes::Card,
                ])
                .custom_text(custom_text);
        }

        let created = session
            .customize()
            .request_strategy(RequestStrategy::Idempotent(checkout_idempotency_key(
                request,
            )?))
            .send(&self.client)
            .await
            .map_err(|error| provider_error("create checkout session", &error))?;
        let url = created.url.ok_or_else(|| {
            BillingError::Provider(format!(
                "Stripe returned checkout session {} without a url",
                created.id.as_str()
            ))
        })?;
        Ok(CreatedCheckout {
            provider_session_id: created.id.as_str().to_owned(),
            url,
        })
    }

    async fn status(&self, session_id: &str) -> Result<CheckoutStatus, BillingError> {
        let session = RetrieveCheckoutSession::new(session_id)
            .expand(vec!["subscription".to_owned(), "invoice".to_owned()])
            .send(&self.client)
            .await
            .map_err(|error| not_found_or(&error, session_id, "retrieve checkout session"))?;
        match &session.status {
            Some(CheckoutSessionStatus::Complete) if is_paid(&session.payment_status) => {
                Ok(CheckoutStatus::Complete(self.completed(&session).await?))
            }
            Some(CheckoutSessionStatus::Expired) => Ok(CheckoutStatus::Expired),
            // Complete but unpaid means a delayed payment method is still settling: not paid yet.
            _ => Ok(CheckoutStatus::Open),
        }
    }

    async fn completed(
        &self,
        session: &CheckoutSession,
    ) -> Result<CompletedCheckout, BillingError> {
        let session_id = session.id.as_str();
        let email = session
            .customer_details
            .as_ref()
            .and_then(|details| details.email.clone())
            .or_else(|| session.customer_email.clone())
            .filter(|email| !email.is_empty())
            .ok_or_else(|| {
                BillingError::Provider(format!(
                    "checkout session {session_id} is paid but has no email"
                ))
            })?;
        let subscription = session.subscription.as_ref();
        let invoice = session
            .invoice
            .as_ref()
            .and_then(|invoice| invoice.as_object());

        // The trial runs 7 days from `completed_at`. Stripe counts its own trial from the
        // subscription's start, so that comes first and both trials end together; then the
        // moment the first invoice was paid. The session's `created` is only the last resort:
        // it is when the checkout page was opened, which can be up to a day earlier.
        let completed_at = subscription
            .and_then(|subscription| subscription.as_object())
            .map(|subscription| subscription.start_date)
            .or_else(|| invoice.and_then(|invoice| invoice.status_transitions.paid_at))
            .unwrap_or(session.created);

        let payment_intent_id = match &session.payment_intent {
            Some(payment_intent) => Some(payment_intent.id().as_str().to_owned()),
            None => self.paid_invoice_intent(session_id, invoice).await,
        };

        Ok(CompletedCheckout {
            provider_session_id: session_id.to_owned(),
            email,
            customer_id: session
                .customer
                .as_ref()
                .map(|customer| customer.id().as_str().to_owned()),
            subscription_id: subscription.map(|subscription| subscription.id().as_str().to_owned()),
            payment_intent_id,
            // Fulfilment reads the subscription's card (`card_fingerprint`), as for a webhook.
            card_fingerprint: None,
            completed_at: timestamp(completed_at).ok_or_else(|| {
                BillingError::Provider(format!("checkout session {session_id} has an invalid time"))
            })?,
        })
    }

    /// The payment intent that paid the checkout's first invoice, when it charged anything.
    /// Only a convenience for a later refund, which can find the payment itself: a failed lookup
    /// must not hold up fulfilment.
    async fn paid_invoice_intent(
        &self,
        session_id: &str,
        invoice: Option<&Invoice>,
    ) -> Option<String> {
        let invoice_id = invoice
            .filter(|invoice| invoice.amount_paid > 0)
            .and_then(|invoice| invoice.id.as_ref())?
            .as_str();
        match self.invoice_payment(invoice_id).await {
            Ok(payment) => payment.and_then(FeePayment::into_payment_intent),
            Err(error) => {
                tracing::warn!(%error, session_id, "could not read the checkout's payment");
                None
            }
        }
    }

    async fn fetch_subscription(
        &self,
        subscription_id: &str,
    ) -> Result<Option<SubscriptionSnapshot>, BillingError> {
        match RetrieveSubscription::new(subscription_id)
            .send(&self.client)
            .await
        {
            // A fresh read is as new as anything can be: it is stamped with the time of reading.
            Ok(subscription) => snapshot(&subscription, Utc::now().timestamp()).map(Some),
            Err(error) if is_not_found(&error) => Ok(None),
            Err(error) => Err(provider_error("retrieve subscription", &error)),
        }
    }

    async fn cancel_later(
        &self,
        subscription_id: &str,
    ) -> Result<SubscriptionSnapshot, BillingError> {
        let subscription = UpdateSubscription::new(subscription_id)
            .cancel_at_period_end(true)
            .send(&self.client)
            .await
            .map_err(|error| not_found_or(&error, subscription_id, "cancel subscription"))?;
        snapshot(&subscription, Utc::now().timestamp())
    }

    /// Ends the trial now: Stripe invoices the first month at once (`trial_end=now`).
    async fn end_trial_now(
        &self,
        subscription_id: &str,
    ) -> Result<SubscriptionSnapshot, BillingError> {
        let subscription = UpdateSubscription::new(subscription_id)
            .trial_end(UpdateSubscriptionTrialEnd::Now)
            .send(&self.client)
            .await
            .map_err(|error| not_found_or(&error, subscription_id, "end trial"))?;
        snapshot(&subscription, Utc::now().timestamp())
    }

    async fn cancel_at_once(
        &self,
        subscription_id: &str,
    ) -> Result<SubscriptionSnapshot, BillingError> {
        let subscription = CancelSubscription::new(subscription_id)
            .send(&self.client)
            .await
            .map_err(|error| not_found_or(&error, subscription_id, "cancel subscription now"))?;
        snapshot(&subscription, Utc::now().timestamp())
    }

    /// The card the checkout's subscription charges: its fingerprint, read from the subscription
    /// (one read), unless the checkout carried it.
    async fn checkout_card(
        &self,
        completed: &CompletedCheckout,
    ) -> Result<PayingCard, BillingError> {
        if let Some(fingerprint) = &completed.card_fingerprint {
            return Ok(PayingCard::Identified(fingerprint.clone()));
        }
        let Some(subscription_id) = completed.subscription_id.as_deref() else {
            return Ok(PayingCard::Unidentified);
        };
        let subscription = RetrieveSubscription::new(subscription_id)
            .expand(vec!["default_payment_method".to_owned()])
            .send(&self.client)
            .await
            .map_err(|error| not_found_or(&error, subscription_id, "retrieve subscription card"))?;
        Ok(
            card_fingerprint(&subscription)
                .map_or(PayingCard::Unidentified, PayingCard::Identified),
        )
    }

    async fn portal(&self, customer_id: &str, return_url: &str) -> Result<String, BillingError> {
        let session = CreateBillingPortalSession::new()
            .customer(customer_id)
            .return_url(return_url)
            .send(&self.client)
            .await
            .map_err(|error| not_found_or(&error, customer_id, "create billing portal session"))?;
        Ok(session.url)
    }

    async fn refund(&self, checkout: &StoredCheckout) -> Result<(), BillingError> {
        let session_id = checkout.provider_session_id.as_str();
        if !checkout.refundable_fee {
            return Err(BillingError::NothingToRefund(format!(
                "checkout {session_id} charged no fee"
            )));
        }
        let payment = match &checkout.payment_intent_id {
            Some(payment_intent) => FeePayment::PaymentIntent(payment_intent.clone()),
            None => self.find_fee_payment(checkout).await?.ok_or_else(|| {
                BillingError::NothingToRefund(format!(
                    "no fee payment found for checkout {session_id}"
                ))
            })?,
        };
        let mut refund = CreateRefund::new()
            .amount(REFUNDABLE_FEE_CENTS)
            .reason(CreateRefundReason::RequestedByCustomer);
        refund = match &payment {
            FeePayment::PaymentIntent(id) => refund.payment_intent(id.as_str()),
            FeePayment::Charge(id) => refund.charge(id.as_str()),
        };
        // One refund per checkout, however often it is asked for: a repeat gets Stripe's
        // first answer back instead of a second refund.
        let key = idempotency_key(format!("refund-fee-{session_id}"))?;
        match refund
            .customize()
            .request_strategy(RequestStrategy::Idempotent(key))
            .send(&self.client)
            .await
        {
            Ok(_) => Ok(()),
            Err(error) if error_code(&error) == Some("charge_already_refunded") => {
                Err(BillingError::NothingToRefund(format!(
                    "the fee of checkout {session_id} was already refunded"
                )))
            }
            Err(error) => Err(not_found_or(&error, payment.id(), "refund the fee")),
        }
    }

    /// The payment that paid the checkout's first invoice, for a checkout stored without it.
    async fn find_fee_payment(
        &self,
        checkout: &StoredCheckout,
    ) -> Result<Option<FeePayment>, BillingError> {
        let session = match RetrieveCheckoutSession::new(checkout.provider_session_id.as_str())
            .send(&self.client)
            .await
        {
            Ok(session) => Some(session),
            Err(error) if is_not_found(&error) => None,
            Err(error) => return Err(provider_error("retrieve checkout session", &error)),
        };
        let customer_id = checkout.customer_id.clone().or_else(|| {
            session
                .as_ref()
                .and_then(|session| session.customer.as_ref())
                .map(|customer| customer.id().as_str().to_owned())
        });
        let subscription_id = checkout.subscription_id.clone().or_else(|| {
            session
                .as_ref()
                .and_then(|session| session.subscription.as_ref())
                .map(|subscription| subscription.id().as_str().to_owned())
        });

        // The checkout's own invoice is the one that charged the fee. The subscription's latest
        // invoice is that same invoice only until the first renewal, hence the billing reason.
        let mut invoice_id = session
            .as_ref()
            .and_then(|session| session.invoice.as_ref())
            .and_then(|invoice| invoice.id().as_ref())
            .map(|id| id.as_str().to_owned());
        if invoice_id.is_none()
            && let Some(subscription_id) = &subscription_id
        {
            invoice_id = self.first_invoice_of(subscription_id).await?;
        }
        if let Some(invoice_id) = invoice_id
            && let Some(payment) = self.invoice_payment(&invoice_id).await?
        {
            return Ok(Some(payment));
        }

        // Last resort: the customer's newest unrefunded charge of exactly the fee.
        let Some(customer_id) = customer_id else {
            return Ok(None);
        };
        let charges = ListCharge::new()
            .customer(customer_id)
            .limit(CHARGES_SCANNED)
            .send(&self.client)
            .await
            .map_err(|error| provider_error("list charges", &error))?;
        Ok(charges
            .data
            .iter()
            .find(|charge| {
                charge.paid && charge.amount == REFUNDABLE_FEE_CENTS && charge.amount_refunded == 0
            })
            .map(|charge| match &charge.payment_intent {
                Some(payment_intent) => {
                    FeePayment::PaymentIntent(payment_intent.id().as_str().to_owned())
                }
                None => FeePayment::Charge(charge.id.as_str().to_owned()),
            }))
    }

    /// The subscription's latest invoice while it is still the one that created it.
    async fn first_invoice_of(
        &self,
        subscription_id: &str,
    ) -> Result<Option<String>, BillingError> {
        let subscription = match RetrieveSubscription::new(subscription_id)
            .expand(vec!["latest_invoice".to_owned()])
            .send(&self.client)
            .await
        {
            Ok(subscription) => subscription,
            Err(error) if is_not_found(&error) => return Ok(None),
            Err(error) => return Err(provider_error("retrieve subscription", &error)),
        };
        Ok(subscription
            .latest_invoice
            .as_ref()
            .and_then(|invoice| invoice.as_object())
            .filter(|invoice| {
                invoice.billing_reason == Some(InvoiceBillingReason::SubscriptionCreate)
            })
            .and_then(|invoice| invoice.id.as_ref())
            .map(|id| id.as_str().to_owned()))
    }

    /// The paid payment of an invoice that covered at least the fee. Since API 2025-03-31 an
    /// invoice no longer names its payment intent; its invoice payments do.
    async fn invoice_payment(&self, invoice_id: &str) -> Result<Option<FeePayment>, BillingError> {
        let payments = ListInvoicePayment::new()
            .invoice(invoice_id)
            .status(ListInvoicePaymentStatus::Paid)
            .send(&self.client)
            .await
            .map_err(|error| provider_error("list invoice payments", &error))?;
        Ok(payments
            .data
            .iter()
            .filter(|payment| {
                payment.amount_paid.unwrap_or(payment.amount_requested) >= REFUNDABLE_FEE_CENTS
            })
            .find_map(|payment| {
                let associated = &payment.payment;
                associated
                    .payment_intent
                    .as_ref()
                    .map(|intent| FeePayment::PaymentIntent(intent.id().as_str().to_owned()))
                    .or_else(|| {
                        associated
                            .charge
                            .as_ref()
                            .map(|charge| FeePayment::Charge(charge.id().as_str().to_owned()))
                    })
            }))
    }
}

impl PaymentProvider for StripeProvider {
    fn name(&self) -> &'static str {
        "stripe"
    }

    fn create_checkout<'a>(
        &'a self,
        request: &'a CheckoutRequest,
    ) -> BoxFuture<'a, Result<CreatedCheckout, BillingError>> {
        Box::pin(self.create(request))
    }

    fn checkout_status<'a>(
        &'a self,
        provider_session_id: &'a str,
    ) -> BoxFuture<'a, Result<CheckoutStatus, BillingError>> {
        Box::pin(self.status(provider_session_id))
    }

    fn subscription<'a>(
        &'a self,
        subscription_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<SubscriptionSnapshot>, BillingError>> {
        Box::pin(self.fetch_subscription(subscription_id))
    }

    fn portal_url<'a>(
        &'a self,
        customer_id: &'a str,
        return_url: &'a str,
    ) -> BoxFuture<'a, Result<String, BillingError>> {
        Box::pin(self.portal(customer_id, return_url))
    }

    fn cancel_at_period_end<'a>(
        &'a self,
        subscription_id: &'a str,
    ) -> BoxFuture<'a, Result<SubscriptionSnapshot, BillingError>> {
        Box::pin(self.cancel_later(subscription_id))
    }

    fn end_trial<'a>(
        &'a self,
        subscription_id: &'a str,
    ) -> BoxFuture<'a, Result<SubscriptionSnapshot, BillingError>> {
        Box::pin(self.end_trial_now(subscription_id))
    }

    fn cancel_now<'a>(
        &'a self,
        subscription_id: &'a str,
    ) -> BoxFuture<'a, Result<SubscriptionSnapshot, BillingError>> {
        Box::pin(self.cancel_at_once(subscription_id))
    }

    fn paying_card<'a>(
        &'a self,
        completed: &'a CompletedCheckout,
    ) -> BoxFuture<'a, Result<PayingCard, BillingError>> {
        Box::pin(self.checkout_card(completed))
    }

    fn refund_fee<'a>(
        &'a self,
        checkout: &'a StoredCheckout,
    ) -> BoxFuture<'a, Result<(), BillingError>> {
        Box::pin(self.refund(checkout))
    }
}

/// What a refund is made against: a payment intent, or a bare charge (payments without one).
enum FeePayment {
    PaymentIntent(String),
    Charge(String),
}

impl FeePayment {
    fn id(&self) -> &str {
        match self {
            FeePayment::PaymentIntent(id) | FeePayment::Charge(id) => id,
        }
    }

    fn into_payment_intent(self) -> Option<String> {
        match self {
            FeePayment::PaymentIntent(id) => Some(id),
            FeePayment::Charge(_) => None,
        }
    }
}

/// The fingerprint of the card a subscription charges, when its payment method was expanded and
/// is a card Stripe gives one (not Link, not a bank debit, not a card without a fingerprint).
fn card_fingerprint(subscription: &Subscription) -> Option<String> {
    subscription
        .default_payment_method
        .as_ref()?
        .as_object()?
        .card
        .as_ref()?
        .fingerprint
        .clone()
        .filter(|fingerprint| !fingerprint.is_empty())
}

fn line_item(price_id: &str) -> CreateCheckoutSessionLineItems {
    let mut item = CreateCheckoutSessionLineItems::new();
    item.price = Some(price_id.to_owned());
    item.quantity = Some(1);
    item
}

fn is_paid(payment_status: &CheckoutSessionPaymentStatus) -> bool {
    // A trial without a fee charges nothing today: Stripe reports it as no_payment_required.
    matches!(
        payment_status,
        CheckoutSessionPaymentStatus::Paid | CheckoutSessionPaymentStatus::NoPaymentRequired
    )
}

fn snapshot(
    subscription: &Subscription,
    event_created: i64,
) -> Result<SubscriptionSnapshot, BillingError> {
    let id = subscription.id.as_str();
    let status = SubscriptionStatus::parse(subscription.status.as_str()).ok_or_else(|| {
        BillingError::Provider(format!(
            "subscription {id} has the unknown status {}",
            subscription.status.as_str()
        ))
    })?;
    // Since API 2025-03-31 the billing period is per item; there is one item, the monthly price.
    let item = subscription.items.data.first();
    Ok(SubscriptionSnapshot {
        id: id.to_owned(),
        customer_id: Some(subscription.customer.id().as_str().to_owned()),
        status,
        price_id: item.map(|item| item.price.id.as_str().to_owned()),
        current_period_end: item.and_then(|item| timestamp(item.current_period_end)),
        trial_end: subscription.trial_end.and_then(timestamp),
        cancel_at_period_end: subscription.cancel_at_period_end,
        event_created,
    })
}

/// A repeated request for the same checkout (a double click, a retried call) gets the same
/// session back from Stripe. The key also covers what is charged and where the customer returns,
/// because Stripe refuses a reused key whose parameters differ.
fn checkout_idempotency_key(request: &CheckoutRequest) -> Result<IdempotencyKey, BillingError> {
    let mut fingerprint = Sha256::new();
    for part in [
        request.tracking_id.as_str(),
        if request.refundable_fee {
            "fee"
        } else {
            "no-fee"
        },
        request.customer_email.as_deref().unwrap_or_default(),
        request.success_url.as_str(),
        request.cancel_url.as_str(),
    ] {
        fingerprint.update(part.as_bytes());
        fingerprint.update([0]);
    }
    for (key, value) in &request.metadata {
        fingerprint.update(key.as_bytes());
        fingerprint.update([0]);
        fingerprint.update(value.as_bytes());
        fingerprint.update([0]);
    }
    let digest = fingerprint.finalize();
    let short: String = digest[..8]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    // Keys are at most 255 characters; the fingerprint covers the whole tracking id anyway.
    let tracking: String = request.tracking_id.chars().take(200).collect();
    idempotency_key(format!("checkout-{tracking}-{short}"))
}

fn idempotency_key(key: String) -> Result<IdempotencyKey, BillingError> {
    IdempotencyKey::new(&key)
        .map_err(|error| BillingError::Provider(format!("idempotency key `{key}`: {error}")))
}

fn truncate_chars(text: &str, max_chars: usize) -> String {
    text.chars().take(max_chars).collect()
}

fn timestamp(seconds: i64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(seconds, 0)
}

fn missing_setting(key: &str) -> BillingError {
    BillingError::Provider(format!("{key} is not set"))
}

fn required_setting(value: &Option<String>, key: &str) -> Result<String, BillingError> {
    value
        .as_deref()
        .map(str::trim)
        .filter(|value| !value.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| missing_setting(key))
}

fn is_not_found(error: &StripeError) -> bool {
    match error {
        StripeError::Stripe(api, status) => {
            *status == 404
                || api
                    .code
                    .as_ref()
                    .is_some_and(|code| code.as_str() == "resource_missing")
        }
        _ => false,
    }
}

fn error_code(error: &StripeError) -> Option<&str> {
    match error {
        StripeError::Stripe(api, _) => api.code.as_ref().map(|code| code.as_str()),
        _ => None,
    }
}

/// `NotFound(what)` when Stripe does not know the object, else a provider error.
fn not_found_or(error: &StripeError, what: &str, action: &str) -> BillingError {
    if is_not_found(error) {
        BillingError::NotFound(what.to_owned())
    } else {
        provider_error(action, error)
    }
}

/// One line for the log: the crate's own message pretty-prints the whole error object.
fn provider_error(action: &str, error: &StripeError) -> BillingError {
    let detail = match error {
        StripeError::Stripe(api, status) => format!(
            "Stripe answered {status} {}{}: {}",
            api.type_.as_str(),
            api.code
                .as_ref()
                .map(|code| format!(" ({})", code.as_str()))
                .unwrap_or_default(),
            api.message.as_deref().unwrap_or("no message"),
        ),
        StripeError::Timeout => format!("no answer within {} s", REQUEST_TIMEOUT.as_secs()),
        other => other.to_string(),
    };
    BillingError::Provider(format!("{action}: {detail}"))
}
