//! Payments and access. A `PaymentProvider` (the built-in demo checkout, or Stripe) runs the hosted
//! checkout; everything that grants access happens here, on the server, from verified payment
//! events: fulfilment of a paid checkout, subscription changes, and the access rule.

mod actions;
pub mod demo;
pub mod held;
pub mod service;
pub mod stripe;

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use futures_util::future::BoxFuture;

use crate::domain::billing::{CheckoutSource, CompletedCheckout, SubscriptionSnapshot};
use crate::store::billing::StoredCheckout;
pub use actions::{Canceled, CheckoutReturn, DemoPayError, RefundError, ReturnTo, ReturnedAccount};
pub use service::Billing;

/// How long a held payment waits for its owner (`held`): less than the trial, so the payer's card
/// is never charged the first month for an account that did not take it. Here, not in `held`,
/// because fulfilment (`service`) names it in the mail about a held payment, and `held` builds on
/// `service`.
pub const HOLD_DAYS: i64 = 3;

/// What the provider needs to open a hosted checkout. Prices are the server's: the request only
/// says whether today's refundable fee is charged.
#[derive(Debug, Clone)]
pub struct CheckoutRequest {
    pub source: CheckoutSource,
    pub refundable_fee: bool,
    /// Whether the subscription starts with the 7-day trial (an account that had one pays at once).
    pub trial: bool,
    /// Prefills the checkout's email (a signed-in member's address).
    pub customer_email: Option<String>,
    /// Our id for the checkout (`trackingSessionId`), also Stripe's client_reference_id.
    pub tracking_id: String,
    /// Attribution and the tracking id; copied to the subscription too.
    pub metadata: BTreeMap<String, String>,
    /// Absolute; for Stripe it contains the literal `{CHECKOUT_SESSION_ID}` placeholder.
    pub success_url: String,
    pub cancel_url: String,
}

/// What a trial checkout says before paying (Stripe: beside its pay button; the demo page too):
/// a card that cannot be told apart from one that had its trial gets none.
pub const UNIDENTIFIED_CARD_NOTICE: &str = "The free trial is once per card: a card that cannot \
     be identified gets no free trial, and the first month is charged at once.";

/// The card that paid, as the provider tells cards apart: one trial per card needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayingCard {
    /// The provider's fingerprint: the same card gives the same one, whoever pays.
    Identified(String),
    /// The demo's published test card, which every demo buyer pays with: not counted, or the
    /// demo would have a single trial.
    PublishedTestCard,
    /// Not a card, or a card without a fingerprint (or the provider could not be asked): it may
    /// be one that had its trial, so it gets none.
    Unidentified,
}

impl PayingCard {
    pub fn fingerprint(&self) -> Option<&str> {
        match self {
            Self::Identified(fingerprint) => Some(fingerprint),
            Self::PublishedTestCard | Self::Unidentified => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedCheckout {
    pub provider_session_id: String,
    /// Where the browser goes to pay (absolute, or a path on this server for the demo).
    pub url: String,
}

/// A checkout as the provider sees it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckoutStatus {
    /// Not paid (yet).
    Open,
    /// Paid: the facts fulfilment needs.
    Complete(CompletedCheckout),
    /// Abandoned or canceled.
    Expired,
}

#[derive(Debug, thiserror::Error)]
pub enum BillingError {
    /// The provider refused or could not be reached; the text is for the log.
    #[error("payment provider: {0}")]
    Provider(String),
    #[error("the payment provider does not know {0}")]
    NotFound(String),
    #[error("nothing to refund: {0}")]
    NothingToRefund(String),
    /// Another delivery of the same event is being handled right now.
    #[error("event {0} is being handled by another delivery")]
    EventInFlight(String),
    #[error("database: {0}")]
    Database(#[from] surrealdb::Error),
}

/// A hosted checkout and billing service: the built-in demo, or Stripe.
pub trait PaymentProvider: Send + Sync + 'static {
    /// `demo` or `stripe`, as stored with each checkout.
    fn name(&self) -> &'static str;

    fn create_checkout<'a>(
        &'a self,
        request: &'a CheckoutRequest,
    ) -> BoxFuture<'a, Result<CreatedCheckout, BillingError>>;

    /// Asks the provider (never the browser) whether a checkout was paid.
    fn checkout_status<'a>(
        &'a self,
        provider_session_id: &'a str,
    ) -> BoxFuture<'a, Result<CheckoutStatus, BillingError>>;

    /// The subscription as the provider has it now; `None` when it does not exist.
    fn subscription<'a>(
        &'a self,
        subscription_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<SubscriptionSnapshot>, BillingError>>;

    /// A page where the customer manages (and cancels) the subscription.
    fn portal_url<'a>(
        &'a self,
        customer_id: &'a str,
        return_url: &'a str,
    ) -> BoxFuture<'a, Result<String, BillingError>>;

    /// Cancels a subscription at the end of its period (the trial, or the paid month): the member
    /// keeps what was paid for. Returns the subscription as it is afterwards.
    fn cancel_at_period_end<'a>(
        &'a self,
        subscription_id: &'a str,
    ) -> BoxFuture<'a, Result<SubscriptionSnapshot, BillingError>>;

    /// Ends the subscription's trial now, so its first month is charged at once (a checkout that
    /// was due no trial). Returns the subscription as it is afterwards.
    fn end_trial<'a>(
        &'a self,
        subscription_id: &'a str,
    ) -> BoxFuture<'a, Result<SubscriptionSnapshot, BillingError>>;

    /// Cancels a subscription at once (a held payment its owner declined).
    fn cancel_now<'a>(
        &'a self,
        subscription_id: &'a str,
    ) -> BoxFuture<'a, Result<SubscriptionSnapshot, BillingError>>;

    /// The card that paid a completed checkout, as far as the provider can tell it apart.
    fn paying_card<'a>(
        &'a self,
        completed: &'a CompletedCheckout,
    ) -> BoxFuture<'a, Result<PayingCard, BillingError>>;

    /// Pays back today's refundable fee of a checkout.
    fn refund_fee<'a>(
        &'a self,
        checkout: &'a StoredCheckout,
    ) -> BoxFuture<'a, Result<(), BillingError>>;
}

/// The mail about a payment held for its owner: `(subject, text)`. `until` says how long it
/// waits ("within 3 days" when it is held; the date when the operator sends it again), `link`
/// the one-time sign-in link, `login` the sign-in page.
/// Fulfilment sends it when it holds a payment; the operator's reminder sends it again.
pub fn held_mail(
    product: &str,
    paid_at: DateTime<Utc>,
    until: &str,
    link: &str,
    login: &str,
) -> (String, String) {
    let sign_in = format!(
        "Sign in with this link (it works once, for one hour):\n\n{link}\n\n\
         Later, sign in at {login} with your email and the password you choose.",
    );
    let text = format!(
        "Hello,\n\nSomeone paid for {product} on {} with this email address, without being \
         signed in to your account. Nothing in your account has changed.\n\nIf it was you, \
         open the link below (it signs you in and shows us the address is yours; you may be \
         asked to choose your password again) and choose 'Add it to my account' on your \
         members page. If it was not, choose 'Not me: cancel it' there, or do nothing: unless \
         it is added to your account {until}, it is canceled and refunded.\n\n\
         {sign_in}\n\nThe {product} team\n",
        paid_at.format("%B %-d, %Y"),
    );
    (
        format!("A payment for {product} was made with your email address"),
        text,
    )
}
