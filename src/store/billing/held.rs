//! Payments held for an account's owner, and provider trials to end: the two ways a checkout is
//! kept from granting what it should not (issue 18: a trial once per account and card, and a
//! payment with someone else's address changes nothing of their account).

use chrono::{DateTime, Utc};
use surrealdb::types::SurrealValue;

use crate::store::Db;

/// A payment held for an account, as its owner sees it (no text the payer typed).
#[derive(Debug, Clone, SurrealValue)]
pub struct HeldPayment {
    pub tracking_id: String,
    pub provider_session_id: String,
    pub source: String,
    pub refundable_fee: bool,
    pub subscription_id: Option<String>,
    pub completed_at: Option<DateTime<Utc>>,
}

const HELD_FIELDS: &str =
    "tracking_id, provider_session_id, source, refundable_fee, subscription_id, completed_at";

/// The payments held for `user_id`, newest first.
pub async fn held_payments_of(
    db: &Db,
    user_id: &str,
) -> Result<Vec<HeldPayment>, surrealdb::Error> {
    let mut response = db
        .query(format!(
            "SELECT {HELD_FIELDS} FROM checkout_session \
             WHERE held_for = type::record('user', $user) AND status = 'held' \
             ORDER BY completed_at DESC LIMIT 20"
        ))
        .bind(("user", user_id.to_owned()))
        .await?
        .check()?;
    response.take(0)
}

/// Marks a held payment declined, once (by its owner, or when its time ran out): the payment
/// to cancel and refund, or `None` when it is not held (claimed or declined already).
pub async fn decline_held(
    db: &Db,
    user_id: &str,
    tracking_id: &str,
    reason: &str,
) -> Result<Option<HeldPayment>, surrealdb::Error> {
    let mut response = crate::store::retry_on_conflict(|| async {
        db.query(format!(
            "UPDATE checkout_session SET status = 'declined', declined_at = time::now(), \
             declined_because = $reason \
             WHERE held_for = type::record('user', $user) AND tracking_id = $tracking \
             AND status = 'held' RETURN {HELD_FIELDS}"
        ))
        .bind(("user", user_id.to_owned()))
        .bind(("tracking", tracking_id.to_owned()))
        .bind(("reason", reason.to_owned()))
        .await?
        .check()
    })
    .await?;
    let rows: Vec<HeldPayment> = response.take(0)?;
    Ok(rows.into_iter().next())
}

/// A held payment whose owner did not answer in time.
#[derive(Debug, Clone, SurrealValue)]
pub struct ExpiredHold {
    pub owner_id: String,
    pub tracking_id: String,
}

/// Held payments paid before `before` (the oldest first, a batch at a time).
pub async fn holds_paid_before(
    db: &Db,
    before: DateTime<Utc>,
) -> Result<Vec<ExpiredHold>, surrealdb::Error> {
    let mut response = db
        .query(
            "SELECT record::id(held_for) AS owner_id, tracking_id FROM checkout_session \
             WHERE status = 'held' AND completed_at < $before ORDER BY completed_at LIMIT 100",
        )
        .bind(("before", before))
        .await?
        .check()?;
    response.take(0)
}

/// A fulfilled checkout whose provider trial must end now (no trial was due).
#[derive(Debug, Clone, SurrealValue)]
pub struct TrialToEnd {
    pub provider_session_id: String,
    pub subscription_id: String,
    pub user_id: Option<String>,
}

/// The checkouts whose trial is still to be ended at the provider.
pub async fn trials_to_end(db: &Db) -> Result<Vec<TrialToEnd>, surrealdb::Error> {
    let mut response = db
        .query(
            "SELECT provider_session_id, subscription_id, \
             IF user THEN record::id(user) ELSE NONE END AS user_id FROM checkout_session \
             WHERE trial_to_end = true AND trial_ended_at = NONE AND subscription_id != NONE \
             LIMIT 100",
        )
        .await?
        .check()?;
    response.take(0)
}

/// The checkout's provider trial, when it is still to be ended.
pub async fn trial_to_end_of(
    db: &Db,
    provider_session_id: &str,
) -> Result<Option<TrialToEnd>, surrealdb::Error> {
    let mut response = db
        .query(
            "SELECT provider_session_id, subscription_id, \
             IF user THEN record::id(user) ELSE NONE END AS user_id FROM checkout_session \
             WHERE provider_session_id = $id AND trial_to_end = true AND trial_ended_at = NONE \
             AND subscription_id != NONE LIMIT 1",
        )
        .bind(("id", provider_session_id.to_owned()))
        .await?
        .check()?;
    let rows: Vec<TrialToEnd> = response.take(0)?;
    Ok(rows.into_iter().next())
}

/// The checkout's provider trial was ended (its first month charged).
pub async fn mark_trial_ended(db: &Db, provider_session_id: &str) -> Result<(), surrealdb::Error> {
    db.query(
        "UPDATE checkout_session SET trial_ended_at = time::now() \
         WHERE provider_session_id = $id AND trial_ended_at = NONE",
    )
    .bind(("id", provider_session_id.to_owned()))
    .await?
    .check()?;
    Ok(())
}

/// Whether the account has had its trial (a later checkout of it asks for none).
pub async fn had_trial(db: &Db, user_id: &str) -> Result<bool, surrealdb::Error> {
    let mut response = db
        .query("SELECT VALUE trial_used FROM ONLY type::record('user', $user)")
        .bind(("user", user_id.to_owned()))
        .await?
        .check()?;
    let used: Option<bool> = response.take(0)?;
    Ok(used.unwrap_or(false))
}
