//! Payments held for an account's owner, and trials that were not due (issue 18).
//!
//! A checkout paid while signed out with the address of an existing account changes nothing of
//! that account: fulfilment holds it (`FulfilOutcome::Held`) and mails the address. Signed in, the
//! owner adds it to the account (what fulfilment would have granted, then) or declines it (the
//! subscription is canceled at once and the setup fee refunded). A hold nobody answers within
//! [`HOLD_DAYS`] is declined by the upkeep pass, before the provider's trial would charge the
//! payer's card.
//!
//! A trial is granted once per account and once per card. A checkout that asked the provider for
//! a trial that was not due (a signed-out payment by someone who had one, a card that paid for one)
//! gets its provider trial ended at once, so the first month is charged now. Ending it, and
//! recording that change as a payment event, is `service`'s (fulfilment does it); this file builds
//! on `service` and never the other way round, and its upkeep pass retries the ends that failed.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::service::{Billing, SIGN_IN_TOKEN_LIFETIME};
use super::{BillingError, HOLD_DAYS, RefundError};
use crate::auth::token;
use crate::mail::Mailer;
use crate::store::Db;
use crate::store::billing::{self as billing_store, ClaimError, HeldPayment, HeldReminder};

/// Why a held payment was not claimed or declined.
#[derive(Debug, thiserror::Error)]
pub enum HeldError {
    /// Not held for this account (claimed or declined already, or someone else's).
    #[error("no such payment is waiting for this account")]
    NotHeld,
    #[error(transparent)]
    Billing(#[from] BillingError),
}

/// A held payment's answer when it cannot be settled: 404 `not_held` (claimed, declined, or not
/// this account's), to the member's routes and the operator's alike.
impl From<HeldError> for crate::error::ApiError {
    fn from(error: HeldError) -> Self {
        match error {
            HeldError::NotHeld => crate::error::ApiError::new(
                actix_web::http::StatusCode::NOT_FOUND,
                "not_held",
                "This payment is no longer waiting: it was added or canceled already.",
            ),
            HeldError::Billing(error) => {
                crate::error::ApiError::internal("cannot settle a held payment", error)
            }
        }
    }
}

/// A payment waiting for its owner, as the members page shows it.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HeldView {
    pub id: String,
    pub paid_at: Option<DateTime<Utc>>,
    pub setup_fee: bool,
    pub expires_at: Option<DateTime<Utc>>,
}

/// A payment waiting for its owner, as the operator's list shows it (`GET /api/admin/held`).
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerHeldView {
    pub id: String,
    /// The owner's address (the account the payment waits for).
    pub email: String,
    pub paid_at: Option<DateTime<Utc>>,
    /// When the upkeep pass declines it, unless its owner answers first.
    pub expires_at: Option<DateTime<Utc>>,
    pub setup_fee: bool,
}

/// When a payment made at `paid` stops waiting for its owner.
fn hold_expiry(paid: Option<DateTime<Utc>>) -> Option<DateTime<Utc>> {
    paid.map(|paid| paid + chrono::Duration::days(HOLD_DAYS))
}

/// Mails the owner of the held payment `tracking_id` again about it (the operator's reminder):
/// fulfilment's mail, with a fresh one-time sign-in link (the first one may be spent or past
/// its hour) and the day the payment stops waiting. `public_url` and `product` are the server's
/// (`server.public_url`, `product.name`). `NotHeld` when it is not waiting (any more).
pub async fn remind_held(
    db: &Db,
    mailer: &Mailer,
    public_url: &url::Url,
    product: &str,
    tracking_id: &str,
) -> Result<(), HeldError> {
    let payment = billing_store::held_payment(db, tracking_id)
        .await
        .map_err(BillingError::from)?
        .ok_or(HeldError::NotHeld)?;
    let secret = token::new_secret();
    let base = public_url.as_str().trim_end_matches('/');
    let email: String =
        url::form_urlencoded::byte_serialize(payment.owner_email.as_bytes()).collect();
    let link = format!("{base}/?success=true&jwt={secret}&email={email}");
    let paid_at = payment.completed_at.unwrap_or_else(Utc::now);
    let until = hold_expiry(Some(paid_at))
        .map(|expiry| format!("by {}", expiry.format("%B %-d, %Y at %H:%M UTC")))
        .unwrap_or_default();
    let (subject, body) =
        super::held_mail(product, paid_at, &until, &link, &format!("{base}/login"));
    let queued = billing_store::queue_held_reminder(
        db,
        HeldReminder {
            tracking_id: payment.tracking_id,
            owner_id: payment.owner_id,
            recipient: payment.owner_email,
            subject,
            body,
            token_hash: token::hash_secret(&secret),
            token_expires_at: Utc::now()
                + chrono::Duration::from_std(SIGN_IN_TOKEN_LIFETIME)
                    .unwrap_or(chrono::Duration::hours(1)),
        },
    )
    .await
    .map_err(BillingError::from)?;
    if !queued {
        return Err(HeldError::NotHeld);
    }
    // Queued with its link in one transaction; delivered now rather than at the retry worker's
    // next pass.
    let mailer = mailer.clone();
    tokio::spawn(async move {
        if let Err(error) = mailer.retry_unsent().await {
            tracing::warn!(%error, "cannot deliver queued mail");
        }
    });
    Ok(())
}

impl Billing {
    /// Every payment held for its owner, the first to expire first (the operator's list).
    pub async fn held_payments_for_owners(&self) -> Result<Vec<OwnerHeldView>, BillingError> {
        let held = billing_store::held_payments_for_owners(&self.db).await?;
        Ok(held
            .into_iter()
            .map(|payment| OwnerHeldView {
                id: payment.tracking_id,
                email: payment.owner_email,
                paid_at: payment.completed_at,
                expires_at: hold_expiry(payment.completed_at),
                setup_fee: payment.refundable_fee,
            })
            .collect())
    }

    /// The operator declines the held payment `tracking_id` for its owner, as the owner's
    /// decline does: its subscription is canceled at once and its setup fee refunded.
    pub async fn decline_held_for_owner(&self, tracking_id: &str) -> Result<(), HeldError> {
        let payment = billing_store::held_payment(&self.db, tracking_id)
            .await
            .map_err(BillingError::from)?
            .ok_or(HeldError::NotHeld)?;
        self.decline_held(&payment.owner_id, tracking_id, "declined by the operator")
            .await
    }

    /// The payments held for the member.
    pub async fn held_payments(&self, user_id: &str) -> Result<Vec<HeldView>, BillingError> {
        let held = billing_store::held_payments_of(&self.db, user_id).await?;
        Ok(held
            .into_iter()
            .map(|payment| HeldView {
                id: payment.tracking_id,
                paid_at: payment.completed_at,
                setup_fee: payment.refundable_fee,
                expires_at: hold_expiry(payment.completed_at),
            })
            .collect())
    }

    /// The owner adds a held payment to the account: the subscription, and the trial when the
    /// account and the card have not had one (else the trial ends now and the month is charged).
    pub async fn claim_held(&self, user_id: &str, tracking_id: &str) -> Result<(), HeldError> {
        let payment = billing_store::held_payments_of(&self.db, user_id)
            .await
            .map_err(BillingError::from)?
            .into_iter()
            .find(|payment| payment.tracking_id == tracking_id)
            .ok_or(HeldError::NotHeld)?;
        match billing_store::claim_held(&self.db, user_id, tracking_id).await {
            Ok(()) => {}
            Err(ClaimError::NotHeld(_)) => return Err(HeldError::NotHeld),
            Err(ClaimError::Database(error)) => return Err(BillingError::from(error).into()),
        }
        self.end_trial_if_due(&payment.provider_session_id).await;
        self.forget_check(user_id);
        Ok(())
    }

    /// The owner (or the expiry of the hold) declines a held payment: its subscription is
    /// canceled at once and its setup fee refunded to the payer.
    pub async fn decline_held(
        &self,
        user_id: &str,
        tracking_id: &str,
        reason: &str,
    ) -> Result<(), HeldError> {
        let payment = billing_store::decline_held(&self.db, user_id, tracking_id, reason)
            .await
            .map_err(BillingError::from)?
            .ok_or(HeldError::NotHeld)?;
        self.undo_payment(&payment).await?;
        Ok(())
    }

    /// Cancels a declined payment's subscription now and refunds its fee.
    async fn undo_payment(&self, payment: &HeldPayment) -> Result<(), BillingError> {
        if let Some(subscription_id) = &payment.subscription_id {
            let snapshot = self.provider.cancel_now(subscription_id).await?;
            self.record_provider_change(subscription_id, snapshot, "declined")
                .await?;
        }
        if !payment.refundable_fee {
            return Ok(());
        }
        let Some(checkout) = self.checkout(&payment.provider_session_id).await? else {
            return Ok(());
        };
        match self.refund_checkout_fee(&checkout).await {
            Ok(()) | Err(RefundError::AlreadyRefunded | RefundError::NothingToRefund) => Ok(()),
            Err(RefundError::Billing(error)) => Err(error),
        }
    }

    /// One pass of upkeep: trial reminders (demo), trials that were not due ended (retries), and
    /// holds nobody answered declined. Returns how many things it did.
    pub async fn run_upkeep(&self) -> Result<usize, BillingError> {
        let mut done = self.send_due_trial_reminders().await?;
        for due in billing_store::trials_to_end(&self.db).await? {
            match self.end_trial(&due).await {
                Ok(()) => done += 1,
                Err(error) => {
                    tracing::warn!(%error, checkout = due.provider_session_id, "cannot end a trial")
                }
            }
        }
        let before = Utc::now() - chrono::Duration::days(HOLD_DAYS);
        for hold in billing_store::holds_paid_before(&self.db, before).await? {
            match self
                .decline_held(&hold.owner_id, &hold.tracking_id, "expired")
                .await
            {
                Ok(()) => done += 1,
                Err(error) => {
                    tracing::warn!(%error, checkout = hold.tracking_id, "cannot decline an expired hold")
                }
            }
        }
        // The spec's webhook_debug trail is kept 30 days.
        done += billing_store::forget_old_checks(&self.db).await? as usize;
        // The dashboard's 'still subscribed after 30 days', decided for the journeys now due.
        loop {
            let decided = crate::store::journeys::decide_retention(&self.db).await?;
            done += decided as usize;
            if decided < crate::store::journeys::RETENTION_BATCH {
                break;
            }
        }
        Ok(done)
    }

    /// Runs `run_upkeep` every `every`.
    pub fn spawn_upkeep(self: &Arc<Self>, every: Duration) -> tokio::task::JoinHandle<()> {
        let billing = Arc::clone(self);
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                if let Err(error) = billing.run_upkeep().await {
                    tracing::warn!(%error, "billing upkeep pass failed");
                }
            }
        })
    }
}
