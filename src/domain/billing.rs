//! The money path's vocabulary, free of any provider: where a checkout comes from, what it
//! charges, the payment events that matter to access, and the access rule itself.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

/// The trial every checkout starts.
pub const TRIAL_DAYS: i64 = 7;
/// The monthly price after the trial, in cents (USD).
pub const MONTHLY_PRICE_CENTS: i64 = 2000;
/// The refundable fee the funnels and the trial prompt charge today, in cents.
pub const REFUNDABLE_FEE_CENTS: i64 = 100;

/// Where a checkout was started (the spec's `source` of `POST /api/create-checkout.js`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckoutSource {
    HelpFunnel,
    ChatFunnel,
    RefundableFeeFunnel,
    ChatTrialPrompt,
    DirectSignup,
}

impl CheckoutSource {
    pub const ALL: [CheckoutSource; 5] = [
        CheckoutSource::HelpFunnel,
        CheckoutSource::ChatFunnel,
        CheckoutSource::RefundableFeeFunnel,
        CheckoutSource::ChatTrialPrompt,
        CheckoutSource::DirectSignup,
    ];

    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|source| source.as_str() == value)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            CheckoutSource::HelpFunnel => "help_funnel",
            CheckoutSource::ChatFunnel => "chat_funnel",
            CheckoutSource::RefundableFeeFunnel => "refundable_fee_funnel",
            CheckoutSource::ChatTrialPrompt => "chat_trial_prompt",
            CheckoutSource::DirectSignup => "direct_signup",
        }
    }

    /// Whether today's $1 is charged: the funnels and the trial prompt ('Start Your 7-Day Trial
    /// for $1') charge it; a plain sign-up starts the free trial the landing page promises.
    /// The server decides this from the source, never from the request's price fields.
    pub fn charges_refundable_fee(self) -> bool {
        !matches!(self, CheckoutSource::DirectSignup)
    }

    pub fn is_funnel(self) -> bool {
        matches!(
            self,
            CheckoutSource::HelpFunnel
                | CheckoutSource::ChatFunnel
                | CheckoutSource::RefundableFeeFunnel
        )
    }
}

/// Where a visitor came from, as the checkout carries it into the account.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attribution {
    pub source: Option<String>,
    pub campaignid: Option<String>,
    pub keyword: Option<String>,
    pub headline: Option<String>,
    pub utm_source: Option<String>,
    pub utm_medium: Option<String>,
    pub utm_campaign: Option<String>,
    pub gclid: Option<String>,
}

impl Attribution {
    /// Whether it names any campaign at all (a visitor who came straight in has none).
    pub fn has_campaign(&self) -> bool {
        [
            &self.campaignid,
            &self.keyword,
            &self.utm_source,
            &self.utm_medium,
            &self.utm_campaign,
            &self.gclid,
        ]
        .iter()
        .any(|value| value.as_deref().is_some_and(|v| !v.trim().is_empty()))
    }
}

/// A provider's subscription status (Stripe's names; the demo provider uses the same).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubscriptionStatus {
    Incomplete,
    IncompleteExpired,
    Trialing,
    Active,
    PastDue,
    Canceled,
    Unpaid,
    Paused,
}

impl SubscriptionStatus {
    pub fn parse(value: &str) -> Option<Self> {
        serde_json::from_value(serde_json::Value::String(value.to_owned())).ok()
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SubscriptionStatus::Incomplete => "incomplete",
            SubscriptionStatus::IncompleteExpired => "incomplete_expired",
            SubscriptionStatus::Trialing => "trialing",
            SubscriptionStatus::Active => "active",
            SubscriptionStatus::PastDue => "past_due",
            SubscriptionStatus::Canceled => "canceled",
            SubscriptionStatus::Unpaid => "unpaid",
            SubscriptionStatus::Paused => "paused",
        }
    }

    /// The spec: a subscription is active when its status is 'active' or 'trialing'.
    pub fn grants_access(self) -> bool {
        matches!(
            self,
            SubscriptionStatus::Active | SubscriptionStatus::Trialing
        )
    }

    /// Statuses no later event can undo (a canceled Stripe subscription is never reactivated).
    pub fn is_final(self) -> bool {
        matches!(
            self,
            SubscriptionStatus::Canceled | SubscriptionStatus::IncompleteExpired
        )
    }
}

/// A subscription as one payment event describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionSnapshot {
    pub id: String,
    pub customer_id: Option<String>,
    pub status: SubscriptionStatus,
    pub price_id: Option<String>,
    pub current_period_end: Option<DateTime<Utc>>,
    pub trial_end: Option<DateTime<Utc>>,
    pub cancel_at_period_end: bool,
    /// When the event that carried this snapshot was created (seconds); newer wins.
    pub event_created: i64,
}

/// A finished checkout, as the provider reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletedCheckout {
    pub provider_session_id: String,
    pub email: String,
    pub customer_id: Option<String>,
    pub subscription_id: Option<String>,
    pub payment_intent_id: Option<String>,
    /// The paying card's fingerprint, when the provider's report carries it (the same card gives
    /// the same fingerprint whatever the email): a card has one trial.
    pub card_fingerprint: Option<String>,
    /// When the checkout was paid; the trial runs 7 days from here, whoever processes it when.
    pub completed_at: DateTime<Utc>,
}

/// The payment events the product acts on, whichever provider sent them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BillingEvent {
    CheckoutCompleted(CompletedCheckout),
    /// customer.subscription.created / updated / deleted.
    SubscriptionChanged(SubscriptionSnapshot),
    /// customer.subscription.trial_will_end: three days before the first charge.
    TrialWillEnd(SubscriptionSnapshot),
    InvoicePaid {
        customer_id: Option<String>,
        subscription_id: Option<String>,
        amount_paid: i64,
        billing_reason: Option<String>,
    },
    InvoicePaymentFailed {
        customer_id: Option<String>,
        subscription_id: Option<String>,
        amount_due: i64,
    },
}

impl BillingEvent {
    pub fn kind(&self) -> &'static str {
        match self {
            BillingEvent::CheckoutCompleted(_) => "checkout.session.completed",
            BillingEvent::SubscriptionChanged(_) => "customer.subscription.updated",
            BillingEvent::TrialWillEnd(_) => "customer.subscription.trial_will_end",
            BillingEvent::InvoicePaid { .. } => "invoice.paid",
            BillingEvent::InvoicePaymentFailed { .. } => "invoice.payment_failed",
        }
    }
}

/// What a person may use, by the spec's rule: an unexpired trial, or a subscription whose
/// status is active or trialing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Access {
    pub trial_active: bool,
    pub subscription_active: bool,
}

impl Access {
    pub fn compute(
        trial_end: Option<DateTime<Utc>>,
        subscription: Option<SubscriptionStatus>,
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            trial_active: trial_end.is_some_and(|end| end > now),
            subscription_active: subscription.is_some_and(SubscriptionStatus::grants_access),
        }
    }

    pub fn has_access(self) -> bool {
        self.trial_active || self.subscription_active
    }
}

/// The end of a trial that starts at `start`.
pub fn trial_end(start: DateTime<Utc>) -> DateTime<Utc> {
    start + Duration::days(TRIAL_DAYS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_round_trip_and_only_a_plain_signup_is_free() {
        for source in CheckoutSource::ALL {
            assert_eq!(CheckoutSource::parse(source.as_str()), Some(source));
        }
        assert_eq!(CheckoutSource::parse("free_money"), None);
        assert!(!CheckoutSource::DirectSignup.charges_refundable_fee());
        assert!(CheckoutSource::RefundableFeeFunnel.charges_refundable_fee());
        assert!(CheckoutSource::ChatTrialPrompt.charges_refundable_fee());
    }

    #[test]
    fn access_is_an_unexpired_trial_or_an_active_or_trialing_subscription() {
        let now = Utc::now();
        let tomorrow = Some(now + Duration::days(1));
        let yesterday = Some(now - Duration::days(1));
        assert!(Access::compute(tomorrow, None, now).has_access());
        assert!(!Access::compute(yesterday, None, now).has_access());
        assert!(Access::compute(yesterday, Some(SubscriptionStatus::Active), now).has_access());
        assert!(Access::compute(None, Some(SubscriptionStatus::Trialing), now).has_access());
        for status in [
            SubscriptionStatus::PastDue,
            SubscriptionStatus::Canceled,
            SubscriptionStatus::Unpaid,
            SubscriptionStatus::Incomplete,
        ] {
            assert!(
                !Access::compute(yesterday, Some(status), now).has_access(),
                "{status:?}"
            );
        }
    }

    #[test]
    fn statuses_parse_by_their_wire_names() {
        assert_eq!(
            SubscriptionStatus::parse("past_due"),
            Some(SubscriptionStatus::PastDue)
        );
        assert_eq!(
            SubscriptionStatus::parse("trialing").map(SubscriptionStatus::as_str),
            Some("trialing")
        );
        assert_eq!(SubscriptionStatus::parse("bogus"), None);
    }
}
