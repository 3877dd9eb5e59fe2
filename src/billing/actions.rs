//! The money actions the HTTP handlers ask for, each whole here so that a handler only reads the
//! request and writes the answer: the demo checkout's payment and cancel, the success page's
//! one-time sign-in, a member's refund, cancellation and billing portal, and the debug page's
//! simulated webhook. Every payment change goes through `process_event`, like the provider's own
//! events.

use chrono::Utc;
use serde_json::json;

use super::demo::{self, CardError, check_card};
use super::service::{Billing, ConfirmError, EventOutcome, SubscriptionCheck};
use super::{BillingError, CheckoutStatus};
use crate::auth::token;
use crate::domain::Email;
use crate::domain::billing::{
    BillingEvent, CompletedCheckout, SubscriptionSnapshot, SubscriptionStatus, trial_end,
};
use crate::store::billing::{self as billing_store, AccessFacts, DemoPayment, StoredCheckout};

/// Why the demo checkout took no payment.
#[derive(Debug, thiserror::Error)]
pub enum DemoPayError {
    #[error(transparent)]
    Card(#[from] CardError),
    #[error(transparent)]
    Billing(#[from] BillingError),
}

/// Why a fee was not refunded.
#[derive(Debug, thiserror::Error)]
pub enum RefundError {
    #[error("there is no setup fee to refund")]
    NothingToRefund,
    #[error("the setup fee was refunded already")]
    AlreadyRefunded,
    #[error(transparent)]
    Billing(#[from] BillingError),
}

/// Where the success page sends the buyer next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReturnTo {
    /// The buyer is signed in as the account that got the payment: straight to the members page.
    Members,
    /// The account this checkout created has no password yet: account setup.
    Setup,
    /// The account existed before this checkout and this browser is not signed in to it: the
    /// 'Welcome Back!' dialog, to sign in with the password the buyer already has.
    SignIn,
}

impl ReturnTo {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Members => "members",
            Self::Setup => "setup",
            Self::SignIn => "sign-in",
        }
    }
}

/// What the success page learns of a paid checkout.
#[derive(Debug, Clone)]
pub struct CheckoutReturn {
    pub next: ReturnTo,
    pub email: String,
    pub tracking_id: String,
    pub provider_session_id: String,
    /// The account that got the payment, for a browser signed in to it or for the account this
    /// checkout made. `None` for 'Welcome Back!' ([`ReturnTo::SignIn`]): anyone may pay with an
    /// address, so that answer says nothing of the account behind it (a held payment's success
    /// page reads the same whoever owns the address).
    pub account: Option<ReturnedAccount>,
    /// The one-time sign-in token's secret, for this browser's cookie, when one is issued.
    pub sign_in_secret: Option<String>,
}

/// The paid account as the success page shows it.
#[derive(Debug, Clone)]
pub struct ReturnedAccount {
    pub has_password: bool,
    pub trial_active: bool,
    pub trial_end_date: Option<chrono::DateTime<Utc>>,
}

/// A subscription canceled at the end of its period.
#[derive(Debug, Clone)]
pub struct Canceled {
    /// When access ends: the trial's end while trialing, else the period's.
    pub access_until: Option<chrono::DateTime<Utc>>,
}

impl Billing {
    /// A checkout by the provider's id.
    pub async fn checkout(&self, id: &str) -> Result<Option<StoredCheckout>, BillingError> {
        Ok(billing_store::checkout(&self.db, id).await?)
    }

    /// A checkout by our tracking id (the success URL's `session`).
    pub async fn checkout_by_tracking_id(
        &self,
        tracking_id: &str,
    ) -> Result<Option<StoredCheckout>, BillingError> {
        Ok(billing_store::checkout_by_tracking_id(&self.db, tracking_id).await?)
    }

    /// What decides a user's access, as stored.
    pub async fn access_facts(&self, user_id: &str) -> Result<Option<AccessFacts>, BillingError> {
        Ok(billing_store::access_facts(&self.db, user_id).await?)
    }

    /// The demo checkout page's Cancel: an open checkout is marked canceled; a paid one stays paid.
    pub async fn cancel_demo_checkout(
        &self,
        provider_session_id: &str,
    ) -> Result<(), BillingError> {
        Ok(billing_store::cancel_checkout(&self.db, provider_session_id).await?)
    }

    /// The demo's "payment": checks the card, records the payment on the checkout once (a double
    /// click pays once), then hands the provider's events to the same handling as Stripe's
    /// webhook (the subscription created, in its trial when the checkout offered one, then the
    /// checkout completed, whose fulfilment may end a trial that was not due).
    pub async fn pay_demo_checkout(
        &self,
        checkout: &StoredCheckout,
        email: &Email,
        card_number: &str,
    ) -> Result<(), DemoPayError> {
        check_card(card_number)?;
        let paid_at = Utc::now();
        let payment = DemoPayment {
            paid_at,
            email: email.as_str().to_owned(),
            customer_id: demo::demo_id("cus"),
            subscription_id: demo::demo_id("sub"),
            payment_intent_id: checkout.refundable_fee.then(|| demo::demo_id("pi")),
            card_fingerprint: demo::card_fingerprint(card_number),
        };
        let recorded =
            billing_store::record_demo_payment(&self.db, &checkout.provider_session_id, &payment)
                .await
                .map_err(BillingError::from)?;
        if !recorded {
            // Another request paid it a moment ago.
            return Ok(());
        }
        let CheckoutStatus::Complete(completed) = self
            .provider
            .checkout_status(&checkout.provider_session_id)
            .await?
        else {
            return Err(
                BillingError::Provider("a recorded demo payment is not complete".into()).into(),
            );
        };
        let (status, trial_end, period_end) = if checkout.trial_offered {
            let end = trial_end(paid_at);
            (SubscriptionStatus::Trialing, Some(end), end)
        } else {
            (
                SubscriptionStatus::Active,
                None,
                paid_at + chrono::Duration::days(30),
            )
        };
        let events = [
            (
                "customer.subscription.created",
                BillingEvent::SubscriptionChanged(SubscriptionSnapshot {
                    id: payment.subscription_id.clone(),
                    customer_id: Some(payment.customer_id.clone()),
                    status,
                    price_id: Some("demo_price_monthly".to_owned()),
                    current_period_end: Some(period_end),
                    trial_end,
                    cancel_at_period_end: false,
                    event_created: paid_at.timestamp(),
                }),
            ),
            (
                "checkout.session.completed",
                BillingEvent::CheckoutCompleted(completed),
            ),
        ];
        for (event_type, event) in events {
            let event_id = demo::demo_id("evt");
            let payload = json!({
                "id": event_id,
                "type": event_type,
                "checkout": checkout.provider_session_id,
                "customer": payment.customer_id,
                "subscription": payment.subscription_id,
            });
            self.process_event("demo", &event_id, event_type, payload, Some(event))
                .await?;
        }
        Ok(())
    }

    /// The success page: the checkout the provider's session id names (or, without one, the
    /// tracking id), confirmed with the provider and fulfilled if the webhook has not been yet,
    /// and this browser's one-time sign-in when `started_here` (given the hash the checkout keeps
    /// of its starting browser's secret, it says whether this browser's start cookie holds that
    /// secret), and where the buyer goes next, `viewer` being the signed-in user's id. A tracking
    /// id that is not this checkout's is an unknown checkout (the confirmation's own errors:
    /// unknown, not paid, or the store's or provider's failure).
    pub async fn checkout_return(
        &self,
        provider_session_id: Option<String>,
        tracking: Option<&str>,
        started_here: impl FnOnce(Option<&str>) -> bool,
        viewer: Option<&str>,
    ) -> Result<CheckoutReturn, ConfirmError> {
        let provider_session_id = match (provider_session_id, tracking) {
            (Some(id), _) => id,
            (None, Some(tracking)) => self
                .checkout_by_tracking_id(tracking)
                .await?
                .map(|checkout| checkout.provider_session_id)
                .ok_or(ConfirmError::Unknown)?,
            (None, None) => return Err(ConfirmError::Unknown),
        };
        let confirmed = self.confirm_checkout(&provider_session_id).await?;
        let facts = self.access_facts(&confirmed.user_id).await?;
        let check = facts.as_ref().map(SubscriptionCheck::from_facts);
        let stored = self
            .checkout(&provider_session_id)
            .await?
            .ok_or(ConfirmError::Unknown)?;
        if tracking.is_some_and(|tracking| tracking != stored.tracking_id) {
            return Err(ConfirmError::Unknown);
        }
        let has_password = facts.as_ref().is_some_and(|f| f.has_password);
        let sign_in_secret = self
            .checkout_sign_in(
                &stored,
                &confirmed.user_id,
                &confirmed.email,
                started_here(stored.start_hash.as_deref()),
                has_password,
            )
            .await?;
        let next = if viewer == Some(confirmed.user_id.as_str()) {
            ReturnTo::Members
        } else if sign_in_secret.is_some() || (stored.created_account && !has_password) {
            ReturnTo::Setup
        } else {
            ReturnTo::SignIn
        };
        let account = (next != ReturnTo::SignIn).then(|| ReturnedAccount {
            has_password,
            trial_active: check.as_ref().is_some_and(|c| c.trial_active),
            trial_end_date: check.and_then(|c| c.trial_end_date),
        });
        Ok(CheckoutReturn {
            next,
            email: confirmed.email,
            tracking_id: confirmed.tracking_id,
            provider_session_id: confirmed.provider_session_id,
            account,
            sign_in_secret,
        })
    }

    /// The success page's one-time sign-in: the browser that started `checkout` gets one sign-in
    /// token for it, within the hour after payment, and only for an account the checkout itself
    /// created that has no password yet, so paying with someone else's address signs nobody into
    /// their account. The token's secret, when one is issued.
    async fn checkout_sign_in(
        &self,
        checkout: &StoredCheckout,
        user_id: &str,
        email: &str,
        started_here: bool,
        has_password: bool,
    ) -> Result<Option<String>, BillingError> {
        let fresh = checkout
            .completed_at
            .is_some_and(|paid| Utc::now() - paid < chrono::Duration::hours(1));
        // Once the address is proved (its owner opened a mailed link), the account is the
        // prover's: the browser that paid gets no way in (docs/operations.md, "Accounts: who
        // holds one"); redeeming refuses a checkout token on a proved account too, so this
        // check and a proof landing at the same moment cannot let one through.
        if !(started_here && fresh && checkout.created_account && !has_password)
            || billing_store::checkout_token_issued(&self.db, &checkout.provider_session_id).await?
            || crate::store::users::email_verified(&self.db, user_id).await?
        {
            return Ok(None);
        }
        let secret = token::new_secret();
        let expires = Utc::now() + chrono::Duration::hours(1);
        billing_store::create_sign_in_token(
            &self.db,
            user_id,
            email,
            &checkout.provider_session_id,
            token::hash_secret(&secret),
            "checkout",
            expires,
        )
        .await?;
        Ok(Some(secret))
    }

    /// Pays back the $1 setup fee of the member's latest checkout, once: the refund is claimed
    /// first (two clicks refund once) and given back if the provider fails.
    pub async fn refund_fee(&self, user_id: &str) -> Result<(), RefundError> {
        let checkout = billing_store::latest_fulfilled_checkout_of(&self.db, user_id)
            .await
            .map_err(BillingError::from)?
            .filter(|checkout| checkout.refundable_fee)
            .ok_or(RefundError::NothingToRefund)?;
        self.refund_checkout_fee(&checkout).await
    }

    /// Refunds a checkout's fee once: the refund is claimed first (two callers refund once) and
    /// given back if the provider fails, so it can be asked again. `AlreadyRefunded` when it was
    /// claimed before, or the provider has it refunded (by us, or by hand in its dashboard).
    pub(super) async fn refund_checkout_fee(
        &self,
        checkout: &StoredCheckout,
    ) -> Result<(), RefundError> {
        if !billing_store::claim_refund(&self.db, &checkout.provider_session_id)
            .await
            .map_err(BillingError::from)?
        {
            return Err(RefundError::AlreadyRefunded);
        }
        let refunded = match self.provider.refund_fee(checkout).await {
            Ok(()) => Ok(()),
            Err(BillingError::NothingToRefund(_)) => Err(RefundError::AlreadyRefunded),
            Err(error) => {
                if let Err(release) =
                    billing_store::release_refund_claim(&self.db, &checkout.provider_session_id)
                        .await
                {
                    tracing::warn!(%release, "a refund claim could not be given back");
                }
                return Err(error.into());
            }
        };
        // Given back (by us now, or by hand before): once, as the claim holds it.
        if let Err(error) =
            crate::store::journeys::record_fee_refund(&self.db, &checkout.provider_session_id).await
        {
            tracing::warn!(%error, "a fee refund could not be counted on the dashboard");
        }
        refunded
    }

    /// Cancels the member's subscription at the end of its period, recorded as a payment event
    /// like any other. `None` when the member has no running subscription.
    pub async fn cancel_subscription(
        &self,
        user_id: &str,
    ) -> Result<Option<Canceled>, BillingError> {
        let Some(subscription_id) = self.running_subscription(user_id).await? else {
            return Ok(None);
        };
        let snapshot = self.provider.cancel_at_period_end(&subscription_id).await?;
        let access_until = snapshot
            .trial_end
            .filter(|_| snapshot.status == SubscriptionStatus::Trialing)
            .or(snapshot.current_period_end);
        let event_id = demo::demo_id("evt_cancel");
        self.process_event(
            self.provider.name(),
            &event_id,
            "customer.subscription.updated",
            json!({ "id": event_id, "subscription": subscription_id, "cancel_at_period_end": true }),
            Some(BillingEvent::SubscriptionChanged(snapshot)),
        )
        .await?;
        self.forget_check(user_id);
        Ok(Some(Canceled { access_until }))
    }

    /// The member's subscription while it still runs: the stored snapshot when there is one;
    /// else the subscription the checkout named, whose events may not have arrived yet.
    async fn running_subscription(&self, user_id: &str) -> Result<Option<String>, BillingError> {
        let Some(facts) = billing_store::access_facts(&self.db, user_id).await? else {
            return Ok(None);
        };
        Ok(match facts.subscription {
            Some(stored) if stored.status().is_some_and(|status| status.grants_access()) => {
                Some(stored.id)
            }
            Some(_) => None,
            None => facts.subscription_id,
        })
    }

    /// Ends the member's subscription at once, before their account is deleted, so nothing more
    /// is charged; recorded as a payment event like any other. Answers whether one was running.
    pub async fn end_subscription_now(&self, user_id: &str) -> Result<bool, BillingError> {
        let Some(subscription_id) = self.running_subscription(user_id).await? else {
            return Ok(false);
        };
        let snapshot = self.provider.cancel_now(&subscription_id).await?;
        self.record_provider_change(&subscription_id, snapshot, "account_deleted")
            .await?;
        self.forget_check(user_id);
        Ok(true)
    }

    /// Where the member manages the subscription (`None`: no payment customer yet).
    pub async fn portal_url(
        &self,
        user_id: &str,
        return_url: &str,
    ) -> Result<Option<String>, BillingError> {
        let facts = billing_store::access_facts(&self.db, user_id).await?;
        let Some(customer) = facts.and_then(|facts| facts.payment_customer_id) else {
            return Ok(None);
        };
        Ok(Some(self.provider.portal_url(&customer, return_url).await?))
    }

    /// The debug page's simulated `checkout.session.completed` for `checkout`, through the same
    /// handling as a real webhook: the event's id and what came of it.
    pub async fn simulate_checkout_completed(
        &self,
        checkout: &StoredCheckout,
        email: &Email,
    ) -> Result<(String, String), BillingError> {
        let event_id = demo::demo_id("evt_sim");
        let completed = CompletedCheckout {
            provider_session_id: checkout.provider_session_id.clone(),
            email: email.as_str().to_owned(),
            customer_id: checkout.customer_id.clone(),
            subscription_id: checkout.subscription_id.clone(),
            payment_intent_id: checkout.payment_intent_id.clone(),
            card_fingerprint: checkout.card_fingerprint.clone(),
            completed_at: checkout.completed_at.unwrap_or_else(Utc::now),
        };
        let outcome = self
            .process_event(
                "simulation",
                &event_id,
                "checkout.session.completed",
                json!({ "id": event_id, "type": "checkout.session.completed", "checkout": checkout.provider_session_id, "email": email.as_str() }),
                Some(BillingEvent::CheckoutCompleted(completed)),
            )
            .await?;
        let outcome = match outcome {
            EventOutcome::Processed(text) => text,
            EventOutcome::Duplicate => "duplicate".to_owned(),
            EventOutcome::Ignored => "ignored".to_owned(),
        };
        Ok((event_id, outcome))
    }
}
