//! The built-in demo checkout (`payments.provider = "demo"`, the default): a page of our own,
//! `/demo-checkout/{id}`, stands in for the hosted card checkout. It takes an email and a test card
//! number, and its completion goes through exactly the same event handling and fulfilment as
//! Stripe's webhook, so the whole flow can be walked on a machine with no keys.

use chrono::Utc;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;

use super::{
    BillingError, CheckoutRequest, CheckoutStatus, CreatedCheckout, PayingCard, PaymentProvider,
};
use crate::domain::billing::{CompletedCheckout, SubscriptionSnapshot, SubscriptionStatus};
use crate::store::billing::StoredCheckout;
use crate::store::{self, Db};

/// The card that always pays.
pub const TEST_CARD: &str = "4242424242424242";
/// The card that is always declined (Stripe's test number for a generic decline).
pub const DECLINED_CARD: &str = "4000000000000002";

pub struct DemoProvider {
    db: Db,
}

impl DemoProvider {
    pub fn new(db: Db) -> Self {
        Self { db }
    }

    /// The stored subscription, stamped newer than it is even within the same second, so a change
    /// made to it replaces it (the caller records it through the usual event handling).
    async fn newer_snapshot(
        &self,
        subscription_id: &str,
    ) -> Result<SubscriptionSnapshot, BillingError> {
        let mut snapshot = self
            .subscription(subscription_id)
            .await?
            .ok_or_else(|| BillingError::NotFound(subscription_id.to_owned()))?;
        snapshot.event_created = Utc::now().timestamp().max(snapshot.event_created + 1);
        Ok(snapshot)
    }
}

/// A test card's fingerprint: the same number gives the same one, as Stripe's do. The published
/// test card has none: every demo buyer pays with it, and one trial per card would leave the demo
/// with a single trial. Any other number shows the one-trial-per-card rule at work.
pub fn card_fingerprint(raw: &str) -> Option<String> {
    let digits: String = raw.chars().filter(char::is_ascii_digit).collect();
    if digits == TEST_CARD {
        return None;
    }
    let hash = crate::auth::token::hash_secret(&format!("demo-card:{digits}"));
    Some(format!("demo_fp_{}", &hash[..24]))
}

/// A random id with a provider-like prefix (`demo_cs_...`, `demo_cus_...`).
pub fn demo_id(prefix: &str) -> String {
    format!(
        "demo_{prefix}_{}",
        &crate::auth::token::new_secret()[..24].replace(['-', '_'], "x")
    )
}

/// Why a card number is refused, in the words a checkout uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CardError {
    #[error("Please enter a card number.")]
    Missing,
    #[error("Your card number is incomplete.")]
    Incomplete,
    #[error("Your card number is invalid.")]
    Invalid,
    #[error("Your card was declined. Use the test card 4242 4242 4242 4242.")]
    Declined,
}

impl CardError {
    pub fn code(self) -> &'static str {
        match self {
            CardError::Missing => "card_required",
            CardError::Incomplete => "card_incomplete",
            CardError::Invalid => "card_invalid",
            CardError::Declined => "card_declined",
        }
    }
}

/// Checks a test card number: spaces and dashes allowed, 16 digits, a valid Luhn check digit, and
/// not the card that is always declined.
pub fn check_card(raw: &str) -> Result<(), CardError> {
    let digits: String = raw.chars().filter(|c| !matches!(c, ' ' | '-')).collect();
    if digits.is_empty() {
        return Err(CardError::Missing);
    }
    if !digits.chars().all(|c| c.is_ascii_digit()) {
        return Err(CardError::Invalid);
    }
    if digits.len() < 16 {
        return Err(CardError::Incomplete);
    }
    if digits.len() > 16 || !luhn(&digits) {
        return Err(CardError::Invalid);
    }
    if digits == DECLINED_CARD {
        return Err(CardError::Declined);
    }
    Ok(())
}

fn luhn(digits: &str) -> bool {
    let sum: u32 = digits
        .bytes()
        .rev()
        .enumerate()
        .map(|(index, byte)| {
            let digit = u32::from(byte - b'0');
            if index % 2 == 1 {
                let doubled = digit * 2;
                if doubled > 9 { doubled - 9 } else { doubled }
            } else {
                digit
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

impl PaymentProvider for DemoProvider {
    fn name(&self) -> &'static str {
        "demo"
    }

    fn create_checkout<'a>(
        &'a self,
        _request: &'a CheckoutRequest,
    ) -> BoxFuture<'a, Result<CreatedCheckout, BillingError>> {
        async move {
            let id = demo_id("cs");
            Ok(CreatedCheckout {
                url: format!("/demo-checkout/{id}"),
                provider_session_id: id,
            })
        }
        .boxed()
    }

    /// Paid when the demo page's payment was recorded on the checkout.
    fn checkout_status<'a>(
        &'a self,
        provider_session_id: &'a str,
    ) -> BoxFuture<'a, Result<CheckoutStatus, BillingError>> {
        async move {
            let checkout = crate::store::billing::checkout(&self.db, provider_session_id)
                .await?
                .filter(|checkout| checkout.provider == "demo")
                .ok_or_else(|| BillingError::NotFound(provider_session_id.to_owned()))?;
            Ok(match (checkout.completed_at, checkout.email) {
                (Some(completed_at), Some(email)) => CheckoutStatus::Complete(CompletedCheckout {
                    provider_session_id: checkout.provider_session_id,
                    email,
                    customer_id: checkout.customer_id,
                    subscription_id: checkout.subscription_id,
                    payment_intent_id: checkout.payment_intent_id,
                    card_fingerprint: checkout.card_fingerprint,
                    completed_at,
                }),
                _ if checkout.status == "canceled" => CheckoutStatus::Expired,
                _ => CheckoutStatus::Open,
            })
        }
        .boxed()
    }

    fn subscription<'a>(
        &'a self,
        subscription_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<SubscriptionSnapshot>, BillingError>> {
        async move {
            let rows = store::billing::demo_subscription(&self.db, subscription_id).await?;
            Ok(rows.and_then(|row| {
                Some(SubscriptionSnapshot {
                    id: subscription_id.to_owned(),
                    customer_id: row.customer_id,
                    status: SubscriptionStatus::parse(&row.status)?,
                    price_id: row.price_id,
                    current_period_end: row.current_period_end,
                    trial_end: row.trial_end,
                    cancel_at_period_end: row.cancel_at_period_end,
                    event_created: row.event_created,
                })
            }))
        }
        .boxed()
    }

    /// The demo has no hosted portal: the members page manages a demo subscription itself.
    fn portal_url<'a>(
        &'a self,
        _customer_id: &'a str,
        return_url: &'a str,
    ) -> BoxFuture<'a, Result<String, BillingError>> {
        async move { Ok(return_url.to_owned()) }.boxed()
    }

    /// The demo's "provider side" is the stored subscription: the cancellation is a newer
    /// snapshot of it, which the caller records through the usual event handling.
    fn cancel_at_period_end<'a>(
        &'a self,
        subscription_id: &'a str,
    ) -> BoxFuture<'a, Result<SubscriptionSnapshot, BillingError>> {
        async move {
            let mut snapshot = self.newer_snapshot(subscription_id).await?;
            snapshot.cancel_at_period_end = true;
            Ok(snapshot)
        }
        .boxed()
    }

    /// The demo's trial ends now: the stored subscription, active from today for a month.
    fn end_trial<'a>(
        &'a self,
        subscription_id: &'a str,
    ) -> BoxFuture<'a, Result<SubscriptionSnapshot, BillingError>> {
        async move {
            let mut snapshot = self.newer_snapshot(subscription_id).await?;
            let now = Utc::now();
            snapshot.status = SubscriptionStatus::Active;
            snapshot.trial_end = Some(now);
            snapshot.current_period_end = Some(now + chrono::Duration::days(30));
            Ok(snapshot)
        }
        .boxed()
    }

    fn cancel_now<'a>(
        &'a self,
        subscription_id: &'a str,
    ) -> BoxFuture<'a, Result<SubscriptionSnapshot, BillingError>> {
        async move {
            let mut snapshot = self.newer_snapshot(subscription_id).await?;
            snapshot.status = SubscriptionStatus::Canceled;
            snapshot.cancel_at_period_end = false;
            Ok(snapshot)
        }
        .boxed()
    }

    /// The demo payment recorded the card's fingerprint with the checkout; every number but the
    /// published test card has one ([`card_fingerprint`]), so a demo card is never unidentified.
    fn paying_card<'a>(
        &'a self,
        completed: &'a CompletedCheckout,
    ) -> BoxFuture<'a, Result<PayingCard, BillingError>> {
        let card = match &completed.card_fingerprint {
            Some(fingerprint) => PayingCard::Identified(fingerprint.clone()),
            None => PayingCard::PublishedTestCard,
        };
        async move { Ok(card) }.boxed()
    }

    fn refund_fee<'a>(
        &'a self,
        checkout: &'a StoredCheckout,
    ) -> BoxFuture<'a, Result<(), BillingError>> {
        async move {
            if !checkout.refundable_fee || checkout.completed_at.is_none() {
                return Err(BillingError::NothingToRefund(
                    checkout.provider_session_id.clone(),
                ));
            }
            Ok(())
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_card_pays_and_the_decline_card_is_declined() {
        assert_eq!(check_card("4242 4242 4242 4242"), Ok(()));
        assert_eq!(check_card("4242-4242-4242-4242"), Ok(()));
        assert_eq!(check_card("4000 0000 0000 0002"), Err(CardError::Declined));
    }

    #[test]
    fn bad_numbers_get_a_clear_reason() {
        assert_eq!(check_card("  "), Err(CardError::Missing));
        assert_eq!(check_card("4242 4242"), Err(CardError::Incomplete));
        assert_eq!(check_card("4242 4242 4242 4241"), Err(CardError::Invalid));
        assert_eq!(check_card("4242 4242 4242 424x"), Err(CardError::Invalid));
        assert_eq!(check_card("42424242424242424"), Err(CardError::Invalid));
    }

    #[test]
    fn demo_ids_are_unique_and_prefixed() {
        let one = demo_id("cs");
        assert!(one.starts_with("demo_cs_") && one.len() == 32, "{one}");
        assert_ne!(one, demo_id("cs"));
    }
}
