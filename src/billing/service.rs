//! `Billing`: the one place that turns checkouts and payment events into access. Routes call it;
//! it calls the provider and the store.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::json;

use super::demo;
use super::{BillingError, CheckoutRequest, CheckoutStatus, PayingCard, PaymentProvider};
use crate::auth::token;
use crate::domain::analytics::EventName;
use crate::domain::billing::{
    Access, Attribution, BillingEvent, CheckoutSource, CompletedCheckout, SubscriptionSnapshot,
    trial_end,
};
use crate::domain::journey::Step;
use crate::mail::Mailer;
use crate::store::billing::{
    self as billing_store, FulfilOutcome, NewCheckout, StoredSubscription,
};
use crate::store::journeys::JourneyStep;
use crate::store::{self, Db};

const TRIAL_REMINDER_SENT: &str = "trial reminder sent";

/// How long a one-time sign-in token works.
pub const SIGN_IN_TOKEN_LIFETIME: Duration = Duration::from_secs(3600);
/// The spec's subscription check throttle: one fresh answer per user per 15 s.
pub const CHECK_THROTTLE: Duration = Duration::from_secs(15);
/// How long the success page's "not paid" answer for a checkout is given again without asking
/// the provider.
pub const UNPAID_ANSWER_KEPT: Duration = Duration::from_secs(5);

pub struct Billing {
    pub(super) db: Db,
    pub(super) provider: Arc<dyn PaymentProvider>,
    mailer: Mailer,
    public_url: url::Url,
    product_name: String,
    /// When each member's check last asked the provider (the 15 s throttle).
    checks: Mutex<HashMap<String, Instant>>,
    /// Checkouts the provider said are not paid, and when: the success page's answer for a few
    /// seconds, so repeated hits on an unpaid checkout do not each call the provider.
    unpaid: Mutex<HashMap<String, Instant>>,
}

/// A checkout to open, as the route parsed it.
#[derive(Debug, Clone)]
pub struct StartCheckout {
    pub source: CheckoutSource,
    pub attribution: Attribution,
    /// The signed-in member, if any: prefills the email.
    pub user: Option<(String, String)>,
    pub visitor_id: Option<String>,
    /// A path on this site to come back to when the checkout is canceled.
    pub cancel_path: String,
    /// The funnel conversation the checkout comes from, with its record for the account.
    pub funnel: Option<FunnelLink>,
    /// Also make a one-time link that sends a browser to the checkout (for checkouts opened
    /// over the real-time channel, where no cookie can be set).
    pub handoff: bool,
    /// The visitor's first campaign touch, as the browser kept it (the spec's `utm_params`):
    /// the account's `acquisition` when this checkout makes or first pays for one.
    pub first_touch: Option<Attribution>,
    /// The experiment's arm the visitor is in, kept on the checkout (issue 48).
    pub arm: Option<helpnow_actors::rules::experiments::ArmRef>,
}

/// A checkout's funnel: the conversation and the spec's funnel record of it.
#[derive(Debug, Clone)]
pub struct FunnelLink {
    pub conversation_id: String,
    pub record: serde_json::Value,
}

#[derive(Debug, Clone)]
pub struct StartedCheckout {
    pub provider_session_id: String,
    pub tracking_id: String,
    pub url: String,
    /// The one-time link's secret, when asked for (only its hash is stored).
    pub handoff: Option<String>,
}

/// A paid checkout the success page asked about.
#[derive(Debug, Clone)]
pub struct ConfirmedCheckout {
    pub user_id: String,
    pub email: String,
    pub tracking_id: String,
    pub provider_session_id: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfirmError {
    #[error("no such checkout")]
    Unknown,
    #[error("the checkout is not paid")]
    NotPaid,
    #[error(transparent)]
    Billing(#[from] BillingError),
}

/// The spec's subscription check answer.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionCheck {
    pub has_active_subscription: bool,
    pub trial_active: bool,
    pub trial_end_date: Option<DateTime<Utc>>,
    pub subscription: Option<SubscriptionView>,
}

#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionView {
    pub id: String,
    pub status: String,
    pub plan_id: Option<String>,
    pub current_period_end: Option<DateTime<Utc>>,
    pub cancel_at_period_end: bool,
}

impl SubscriptionCheck {
    /// The access rule (DESIGN.md section 6): an active trial or an active subscription.
    pub fn has_access(&self) -> bool {
        Access {
            trial_active: self.trial_active,
            subscription_active: self.has_active_subscription,
        }
        .has_access()
    }

    /// The access rule applied to facts already read (callers that need the facts too read once).
    pub fn from_facts(facts: &billing_store::AccessFacts) -> Self {
        let subscription = facts.subscription.as_ref();
        let access = Access::compute(
            facts.trial_end_date,
            subscription.and_then(StoredSubscription::status),
            Utc::now(),
        );
        Self {
            has_active_subscription: access.subscription_active,
            trial_active: access.trial_active,
            trial_end_date: facts.trial_end_date,
            subscription: subscription.map(|sub| SubscriptionView {
                id: sub.id.clone(),
                status: sub.status.clone(),
                plan_id: sub.price_id.clone(),
                current_period_end: sub.current_period_end,
                cancel_at_period_end: sub.cancel_at_period_end,
            }),
        }
    }
}

/// How a payment event was handled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventOutcome {
    Processed(String),
    /// Seen and processed before: nothing was done again.
    Duplicate,
    /// A type the product does not act on.
    Ignored,
}

impl Billing {
    pub fn new(
        db: Db,
        provider: Arc<dyn PaymentProvider>,
        mailer: Mailer,
        public_url: url::Url,
        product_name: String,
    ) -> Self {
        Self {
            db,
            provider,
            mailer,
            public_url,
            product_name,
            checks: Mutex::new(HashMap::new()),
            unpaid: Mutex::new(HashMap::new()),
        }
    }

    pub fn provider(&self) -> &dyn PaymentProvider {
        self.provider.as_ref()
    }

    fn absolute(&self, path: &str) -> String {
        let base = self.public_url.as_str().trim_end_matches('/');
        format!("{base}{path}")
    }

    /// Opens a hosted checkout and records it; the browser is sent to `url`.
    pub async fn start_checkout(
        &self,
        start: StartCheckout,
    ) -> Result<StartedCheckout, BillingError> {
        let tracking_id = format!("hn_{}", &token::new_secret()[..24]);
        // One trial per account: a member who had one subscribes at once, with no setup fee.
        let trial = match &start.user {
            Some((user_id, _)) => !billing_store::had_trial(&self.db, user_id).await?,
            None => true,
        };
        let refundable_fee = trial && start.source.charges_refundable_fee();
        let attribution = Attribution {
            source: Some(start.source.as_str().to_owned()),
            ..start.attribution
        };
        let mut metadata = BTreeMap::new();
        metadata.insert("tracking_id".to_owned(), tracking_id.clone());
        if let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(&attribution) {
            for (key, value) in fields {
                if let serde_json::Value::String(text) = value {
                    // Stripe's limit for a metadata value.
                    metadata.insert(key, text.chars().take(500).collect());
                }
            }
        }
        if let Some(funnel) = &start.funnel {
            metadata.insert(
                "funnel_conversation_id".to_owned(),
                funnel.conversation_id.clone(),
            );
            if let Some(issue) = funnel.record.get("userIssue").and_then(|v| v.as_str()) {
                metadata.insert("user_issue".to_owned(), issue.chars().take(500).collect());
            }
        }
        let request = CheckoutRequest {
            source: start.source,
            refundable_fee,
            trial,
            customer_email: start.user.as_ref().map(|(_, email)| email.clone()),
            tracking_id: tracking_id.clone(),
            metadata,
            success_url: self.absolute(&format!(
                "/checkout-success?session_id={{CHECKOUT_SESSION_ID}}&session={tracking_id}"
            )),
            cancel_url: self.absolute(&start.cancel_path),
        };
        let created = self.provider.create_checkout(&request).await?;
        let handoff = start.handoff.then(token::new_secret);
        billing_store::create_checkout(
            &self.db,
            NewCheckout {
                provider: self.provider.name().to_owned(),
                provider_session_id: created.provider_session_id.clone(),
                tracking_id: tracking_id.clone(),
                source: start.source.as_str().to_owned(),
                refundable_fee,
                trial_offered: trial,
                email: request.customer_email.clone(),
                attribution: serde_json::to_value(&attribution).unwrap_or_default(),
                success_url: request.success_url.clone(),
                cancel_url: request.cancel_url.clone(),
                url: created.url.clone(),
                funnel_record: start.funnel.as_ref().map(|funnel| funnel.record.clone()),
                handoff_hash: handoff.as_deref().map(token::hash_secret),
                first_touch: start
                    .first_touch
                    .as_ref()
                    .filter(|touch| touch.has_campaign())
                    .and_then(|touch| serde_json::to_value(touch).ok()),
                experiment: start
                    .arm
                    .as_ref()
                    .and_then(|arm| serde_json::to_value(arm).ok()),
            },
            billing_store::CheckoutLinks {
                user_id: start.user.as_ref().map(|(id, _)| id.as_str()),
                visitor_id: start.visitor_id.as_deref(),
                funnel_conversation_id: start
                    .funnel
                    .as_ref()
                    .map(|funnel| funnel.conversation_id.as_str()),
            },
        )
        .await?;
        store::analytics::record_server_event(
            &self.db,
            EventName::BEGIN_CHECKOUT,
            start.user.as_ref().map(|(id, _)| id.as_str()),
            json!({
                "source": start.source.as_str(),
                "value": if refundable_fee { 1 } else { 0 },
                "currency": "USD",
                "trackingSessionId": tracking_id,
            }),
        )
        .await;
        // The dashboard: a checkout of this funnel, under the visitor (fulfilment uses the same
        // key), or under the checkout itself when the browser had no visitor cookie.
        let journey_visitor = start
            .visitor_id
            .clone()
            .unwrap_or_else(|| format!("checkout-{tracking_id}"));
        let touch = start
            .first_touch
            .as_ref()
            .filter(|touch| touch.has_campaign())
            .or(Some(&attribution).filter(|touch| touch.has_campaign()))
            .and_then(|touch| serde_json::to_value(touch).ok());
        store::journeys::record_logged(
            &self.db,
            vec![
                JourneyStep::new(&journey_visitor, start.source, Step::Checkout).attribution(touch),
            ],
        )
        .await;
        Ok(StartedCheckout {
            provider_session_id: created.provider_session_id,
            tracking_id,
            url: created.url,
            handoff,
        })
    }

    /// Handles one payment event once: stored by id first, then applied. A repeat of a processed
    /// event does nothing; a repeat of one whose handling failed half-way is handled again (each
    /// step is idempotent).
    pub async fn process_event(
        &self,
        source: &str,
        event_id: &str,
        event_type: &str,
        payload: serde_json::Value,
        event: Option<BillingEvent>,
    ) -> Result<EventOutcome, BillingError> {
        match billing_store::claim_event(&self.db, source, event_id, event_type, payload).await? {
            billing_store::EventClaim::Claimed => {}
            billing_store::EventClaim::Processed => return Ok(EventOutcome::Duplicate),
            billing_store::EventClaim::InFlight => {
                return Err(BillingError::EventInFlight(event_id.to_owned()));
            }
        }
        let outcome = match event {
            Some(event) => EventOutcome::Processed(self.apply(event_id, event).await?),
            None => EventOutcome::Ignored,
        };
        let label = match &outcome {
            EventOutcome::Processed(text) => text.clone(),
            EventOutcome::Ignored => "ignored".to_owned(),
            EventOutcome::Duplicate => "duplicate".to_owned(),
        };
        billing_store::mark_event_processed(&self.db, event_id, label).await?;
        Ok(outcome)
    }

    async fn apply(&self, event_id: &str, event: BillingEvent) -> Result<String, BillingError> {
        match event {
            BillingEvent::CheckoutCompleted(completed) => match self.fulfil(completed).await {
                Ok(FulfilOutcome::Fulfilled { user_id, .. }) => {
                    Ok(format!("fulfilled for user {user_id}"))
                }
                Ok(FulfilOutcome::AlreadyFulfilled { .. }) => Ok("already fulfilled".to_owned()),
                Ok(FulfilOutcome::Held { owner_id, .. }) => Ok(format!(
                    "held for the owner of the address, user {owner_id}"
                )),
                // Another system on the same Stripe account started it: acknowledged, so Stripe
                // stops delivering it, and nothing is granted.
                Err(BillingError::NotFound(id)) => {
                    Ok(format!("checkout {id} was not started here"))
                }
                Err(error) => Err(error),
            },
            BillingEvent::SubscriptionChanged(snapshot) => {
                let stored =
                    billing_store::record_subscription(&self.db, self.provider.name(), &snapshot)
                        .await?;
                Ok(if stored {
                    format!(
                        "subscription {} is {}",
                        snapshot.id,
                        snapshot.status.as_str()
                    )
                } else {
                    "older than the stored subscription".to_owned()
                })
            }
            BillingEvent::TrialWillEnd(snapshot) => {
                billing_store::record_subscription(&self.db, self.provider.name(), &snapshot)
                    .await?;
                self.remind_trial_ending(&snapshot).await
            }
            BillingEvent::InvoicePaid {
                customer_id,
                subscription_id,
                amount_paid,
                billing_reason,
            } => {
                let user = if amount_paid > 0 {
                    self.user_of(customer_id.as_deref(), subscription_id.as_deref())
                        .await?
                } else {
                    None
                };
                // The dashboard's revenue: every month paid (at the subscription's start, when it
                // has no trial; each cycle; a trial ended early), on the journey that bought it.
                if let Some(user) = &user {
                    store::journeys::record_payment(
                        &self.db,
                        event_id,
                        user,
                        subscription_id.as_deref(),
                        amount_paid,
                        billing_reason.as_deref() == Some("subscription_create"),
                    )
                    .await?;
                }
                // A monthly charge (the first after the trial, then each renewal): a purchase.
                // `subscription_start` is recorded when the subscription begins (fulfilment).
                if billing_reason.as_deref() == Some("subscription_cycle") && amount_paid > 0 {
                    store::analytics::record_server_event(
                        &self.db,
                        EventName::PURCHASE,
                        user.as_deref(),
                        json!({
                            "source": "subscription_cycle",
                            "subscriptionId": subscription_id,
                            "value": amount_paid as f64 / 100.0,
                            "currency": "USD",
                        }),
                    )
                    .await;
                    return Ok("subscription payment".to_owned());
                }
                Ok(format!("invoice paid ({amount_paid} cents)"))
            }
            BillingEvent::InvoicePaymentFailed {
                customer_id,
                amount_due,
                ..
            } => {
                tracing::warn!(customer = ?customer_id, amount_due, "a subscription payment failed");
                Ok("payment failed".to_owned())
            }
        }
    }

    /// The user a customer or subscription belongs to.
    async fn user_of(
        &self,
        customer_id: Option<&str>,
        subscription_id: Option<&str>,
    ) -> Result<Option<String>, BillingError> {
        Ok(store::users::user_of_payment(&self.db, customer_id, subscription_id).await?)
    }

    async fn remind_trial_ending(
        &self,
        snapshot: &SubscriptionSnapshot,
    ) -> Result<String, BillingError> {
        let Some(trial_end) = snapshot.trial_end else {
            return Ok("no trial end".to_owned());
        };
        let Some(user_id) = self
            .user_of(snapshot.customer_id.as_deref(), Some(&snapshot.id))
            .await?
        else {
            return Ok("no account for this subscription yet".to_owned());
        };
        let Some(email) = store::users::email_of(&self.db, &user_id).await? else {
            return Ok("no email".to_owned());
        };
        let product = &self.product_name;
        let date = trial_end.format("%B %-d, %Y");
        let text = format!(
            "Hello,\n\nYour {product} trial ends on {date}. After that your subscription continues at \
             $20/month, and you keep unlimited help from your personal assistant.\n\n\
             Nothing to do if you want to stay. To cancel before you are charged, sign in at {} and \
             choose Manage subscription.\n\nThe {product} team\n",
            self.absolute("/login")
        );
        // The claim for this trial end and the queued mail are one transaction: exactly one event
        // handler sends the reminder, and a failure leaves it to the event's next delivery.
        let queued = billing_store::queue_trial_reminder(
            &self.db,
            &snapshot.id,
            trial_end,
            billing_store::ReminderMail {
                recipient: email,
                subject: format!("Your {product} trial ends on {date}"),
                body: text,
            },
        )
        .await?;
        if !queued {
            return Ok("reminder already sent".to_owned());
        }
        let mailer = self.mailer.clone();
        tokio::spawn(async move {
            if let Err(error) = mailer.retry_unsent().await {
                tracing::warn!(%error, "cannot deliver queued mail");
            }
        });
        Ok(TRIAL_REMINDER_SENT.to_owned())
    }

    /// The demo provider sends no `trial_will_end` events, so for demo subscriptions this pass
    /// plays Stripe's part: every trial ending within 3 days gets its reminder, once. Returns
    /// how many reminders went out.
    pub async fn send_due_trial_reminders(&self) -> Result<usize, BillingError> {
        if self.provider.name() != "demo" {
            return Ok(0);
        }
        let due = billing_store::demo_trials_ending_soon(&self.db).await?;
        let mut sent = 0;
        for id in due {
            if let Some(snapshot) = self.provider.subscription(&id).await?
                && self.remind_trial_ending(&snapshot).await? == TRIAL_REMINDER_SENT
            {
                sent += 1;
            }
        }
        Ok(sent)
    }

    /// Fulfils a paid checkout (idempotent): the account, the 7-day trial (once per account and
    /// card), attribution, a welcome mail with a one-time sign-in link. A checkout paid signed out
    /// with the address of an existing account is held for its owner instead (`Held`).
    pub async fn fulfil(
        &self,
        completed: CompletedCheckout,
    ) -> Result<FulfilOutcome, BillingError> {
        let secret = token::new_secret();
        // The address too: a browser signed in to this account uses the link (it proves the
        // address), one signed in to another does not switch accounts unasked.
        let email: String =
            url::form_urlencoded::byte_serialize(completed.email.as_bytes()).collect();
        let link = self.absolute(&format!("/?success=true&jwt={secret}&email={email}"));
        let product = &self.product_name;
        let trial_end = trial_end(completed.completed_at);
        let sign_in = format!(
            "Sign in with this link (it works once, for one hour):\n\n{link}\n\n\
             Later, sign in at {} with your email and the password you choose.",
            self.absolute("/login"),
        );
        let welcome_text = format!(
            "Welcome to {product}!\n\nYour 7-day trial has started. It runs until {}. After that \
             your subscription is $20/month; cancel anytime. Any setup fee you paid today is \
             refundable at any time.\n\n{sign_in}\n\nThe {product} team\n",
            trial_end.format("%B %-d, %Y"),
        );
        let paid_text = format!(
            "Welcome back to {product}!\n\nYour subscription has started: $20/month, charged from \
             today. The free trial is once per account and per card, and this account or this card \
             has had it (or the card could not be identified). Cancel anytime.\n\n\
             {sign_in}\n\nThe {product} team\n",
        );
        let (held_subject, held_text) = super::held_mail(
            product,
            completed.completed_at,
            &format!("within {} days", super::HOLD_DAYS),
            &link,
            &self.absolute("/login"),
        );
        // No trial without a card told apart from the cards that had one (docs/billing.md, "One
        // trial per account and per card"): an unreadable card is charged as a returning one.
        let card = self
            .provider
            .paying_card(&completed)
            .await
            .unwrap_or_else(|error| {
                tracing::warn!(
                    %error,
                    checkout = completed.provider_session_id,
                    "cannot read the paying card"
                );
                PayingCard::Unidentified
            });
        if card == PayingCard::Unidentified {
            tracing::info!(
                checkout = completed.provider_session_id,
                "the paying card cannot be identified: no trial"
            );
        }
        let expires = Utc::now()
            + chrono::Duration::from_std(SIGN_IN_TOKEN_LIFETIME)
                .unwrap_or(chrono::Duration::hours(1));
        let provider_session_id = completed.provider_session_id.clone();
        let outcome = billing_store::fulfil(
            &self.db,
            billing_store::Fulfilment {
                provider_session_id: completed.provider_session_id,
                email: completed.email.trim().to_lowercase(),
                customer_id: completed.customer_id,
                subscription_id: completed.subscription_id,
                payment_intent_id: completed.payment_intent_id,
                card_fingerprint: card.fingerprint().map(str::to_owned),
                card_unidentified: card == PayingCard::Unidentified,
                completed_at: completed.completed_at,
                trial_end,
                mail_token_hash: token::hash_secret(&secret),
                token_expires_at: expires,
                welcome_subject: format!("Welcome to {product}: your trial has started"),
                welcome_text,
                paid_subject: format!("Welcome back to {product}: your subscription has started"),
                paid_text,
                held_subject,
                held_text,
            },
        )
        .await
        .map_err(|error| match error {
            billing_store::FulfilError::UnknownCheckout(id) => BillingError::NotFound(id),
            billing_store::FulfilError::Database(error) => BillingError::Database(error),
        })?;
        if matches!(outcome, FulfilOutcome::Fulfilled { .. }) {
            self.end_trial_if_due(&provider_session_id).await;
        }
        if !matches!(outcome, FulfilOutcome::AlreadyFulfilled { .. }) {
            // The mail was queued in the same transaction; deliver it now rather than at the
            // retry worker's next pass.
            let mailer = self.mailer.clone();
            tokio::spawn(async move {
                if let Err(error) = mailer.retry_unsent().await {
                    tracing::warn!(%error, "cannot deliver queued mail");
                }
            });
        }
        Ok(outcome)
    }

    /// The success page's question: was this checkout paid? Asks the provider (never the
    /// browser), and fulfils it if the webhook has not yet.
    pub async fn confirm_checkout(
        &self,
        provider_session_id: &str,
    ) -> Result<ConfirmedCheckout, ConfirmError> {
        let stored = billing_store::checkout(&self.db, provider_session_id)
            .await
            .map_err(BillingError::from)?
            .ok_or(ConfirmError::Unknown)?;
        let outcome = if stored.fulfilled_at.is_some() {
            None
        } else {
            if self.unpaid_lately(provider_session_id) {
                return Err(ConfirmError::NotPaid);
            }
            match self.provider.checkout_status(provider_session_id).await? {
                CheckoutStatus::Complete(completed) => Some(self.fulfil(completed).await?),
                CheckoutStatus::Open | CheckoutStatus::Expired => {
                    self.remember_unpaid(provider_session_id);
                    return Err(ConfirmError::NotPaid);
                }
            }
        };
        let (user_id, email) = match outcome {
            Some(FulfilOutcome::Fulfilled { user_id, email })
            | Some(FulfilOutcome::AlreadyFulfilled { user_id, email })
            | Some(FulfilOutcome::Held {
                owner_id: user_id,
                email,
            }) => (user_id, email),
            None => (
                stored.user_id.or(stored.held_for_id).unwrap_or_default(),
                stored.email.unwrap_or_default(),
            ),
        };
        Ok(ConfirmedCheckout {
            user_id,
            email,
            tracking_id: stored.tracking_id,
            provider_session_id: stored.provider_session_id,
        })
    }

    /// A user's access now, from the store.
    pub async fn check(&self, user_id: &str) -> Result<Option<SubscriptionCheck>, BillingError> {
        Ok(billing_store::access_facts(&self.db, user_id)
            .await?
            .map(|facts| SubscriptionCheck::from_facts(&facts)))
    }

    /// The spec's `check-subscription`: the member's access as stored now (so a webhook that
    /// arrived a moment ago shows at once), and at most once per user per 15 s the provider is
    /// asked too: about the member's unfulfilled checkouts and the subscription, so a lost
    /// webhook heals.
    pub async fn throttled_check(
        &self,
        user_id: &str,
    ) -> Result<Option<SubscriptionCheck>, BillingError> {
        if self.asked_provider_lately(user_id) {
            return self.check(user_id).await;
        }
        let result = self.refresh_from_provider(user_id).await;
        if result.is_err() {
            // Failed half-way: the next check may ask again at once.
            self.forget_check(user_id);
        }
        result?;
        self.check(user_id).await
    }

    async fn refresh_from_provider(&self, user_id: &str) -> Result<(), BillingError> {
        // A checkout this member paid whose webhook never came is fulfilled now, asking the
        // provider (never the browser) whether it was paid.
        for checkout in billing_store::unfulfilled_checkouts_of(&self.db, user_id).await? {
            if let Ok(CheckoutStatus::Complete(completed)) = self
                .provider
                .checkout_status(&checkout.provider_session_id)
                .await
            {
                self.fulfil(completed).await?;
            }
        }
        // The stored subscription, else the one the checkout named: when its events were lost
        // too, nothing is stored under it yet.
        if let Some(facts) = billing_store::access_facts(&self.db, user_id).await?
            && let Some(subscription_id) = facts
                .subscription
                .map(|subscription| subscription.id)
                .or(facts.subscription_id)
            && let Ok(Some(mut fresh)) = self.provider.subscription(&subscription_id).await
        {
            fresh.event_created = Utc::now().timestamp();
            billing_store::record_subscription(&self.db, self.provider.name(), &fresh).await?;
        }
        Ok(())
    }

    /// Whether the provider said this checkout was not paid within the last few seconds.
    fn unpaid_lately(&self, provider_session_id: &str) -> bool {
        self.unpaid.lock().is_ok_and(|unpaid| {
            unpaid
                .get(provider_session_id)
                .is_some_and(|at| at.elapsed() < UNPAID_ANSWER_KEPT)
        })
    }

    fn remember_unpaid(&self, provider_session_id: &str) {
        if let Ok(mut unpaid) = self.unpaid.lock() {
            if unpaid.len() > 10_000 {
                unpaid.retain(|_, at| at.elapsed() < UNPAID_ANSWER_KEPT);
            }
            unpaid.insert(provider_session_id.to_owned(), Instant::now());
        }
    }

    /// Whether this member's check asked the provider within the last 15 s; if not, it is marked
    /// as asking now (so concurrent checks ask once).
    fn asked_provider_lately(&self, user_id: &str) -> bool {
        let Ok(mut checks) = self.checks.lock() else {
            return false;
        };
        if checks
            .get(user_id)
            .is_some_and(|at| at.elapsed() < CHECK_THROTTLE)
        {
            return true;
        }
        if checks.len() > 10_000 {
            checks.retain(|_, at| at.elapsed() < CHECK_THROTTLE);
        }
        checks.insert(user_id.to_owned(), Instant::now());
        false
    }

    /// Lets the next check ask the provider at once (after something changed on its side).
    pub fn forget_check(&self, user_id: &str) {
        if let Ok(mut checks) = self.checks.lock() {
            checks.remove(user_id);
        }
    }

    /// Records a change this server made at the provider as the payment event it is, through the
    /// same handling as the provider's own events (a newer snapshot replaces the stored one).
    pub(super) async fn record_provider_change(
        &self,
        subscription_id: &str,
        snapshot: SubscriptionSnapshot,
        why: &str,
    ) -> Result<(), BillingError> {
        let event_id = demo::demo_id(&format!("evt_{why}"));
        // Boxed: fulfilment (itself handling an event) may end a trial, which records an event.
        Box::pin(self.process_event(
            self.provider.name(),
            &event_id,
            "customer.subscription.updated",
            json!({ "id": event_id, "subscription": subscription_id, "reason": why }),
            Some(BillingEvent::SubscriptionChanged(snapshot)),
        ))
        .await?;
        Ok(())
    }

    /// Ends the provider's trial of a checkout that was due none; a failure is logged and left
    /// to the upkeep pass (the member's access already follows the account's own trial dates,
    /// and the provider's `trialing` until then).
    pub(super) async fn end_trial_if_due(&self, provider_session_id: &str) {
        let due = match billing_store::trial_to_end_of(&self.db, provider_session_id).await {
            Ok(Some(due)) => due,
            Ok(None) => return,
            Err(error) => {
                tracing::warn!(%error, provider_session_id, "cannot read a trial to end");
                return;
            }
        };
        if let Err(error) = self.end_trial(&due).await {
            tracing::warn!(%error, provider_session_id, "cannot end a trial that was not due; the upkeep pass retries");
        }
    }

    pub(super) async fn end_trial(
        &self,
        due: &billing_store::TrialToEnd,
    ) -> Result<(), BillingError> {
        let snapshot = self.provider.end_trial(&due.subscription_id).await?;
        self.record_provider_change(&due.subscription_id, snapshot, "trial_ended")
            .await?;
        billing_store::mark_trial_ended(&self.db, &due.provider_session_id).await?;
        if let Some(user_id) = &due.user_id {
            self.forget_check(user_id);
        }
        Ok(())
    }
}
