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

/// A payment held for an account, as the operator sees it: whose it is (the account's id and
/// address: the one the payment was made with, if the account was deleted since), when it was
/// paid, and whether it carries a setup fee. No text the payer typed.
#[derive(Debug, Clone, SurrealValue)]
pub struct HeldForOwner {
    pub tracking_id: String,
    pub owner_id: String,
    pub owner_email: String,
    pub refundable_fee: bool,
    pub completed_at: Option<DateTime<Utc>>,
}

/// How many held payments the operator's list shows at most. A hold lasts
/// `billing::HOLD_DAYS`, so the list is a few days of payments made with taken addresses.
pub const HELD_LIST_LIMIT: usize = 1000;

const HELD_FOR_OWNER_FIELDS: &str = "tracking_id, record::id(held_for) AS owner_id, \
     held_for.email ?? email AS owner_email, refundable_fee, completed_at";

/// Every payment held for its owner (up to [`HELD_LIST_LIMIT`]), the oldest (the first to
/// expire) first.
pub async fn held_payments_for_owners(db: &Db) -> Result<Vec<HeldForOwner>, surrealdb::Error> {
    let mut response = db
        .query(format!(
            "SELECT {HELD_FOR_OWNER_FIELDS} FROM checkout_session \
             WHERE status = 'held' AND held_for != NONE ORDER BY completed_at LIMIT $limit"
        ))
        .bind(("limit", HELD_LIST_LIMIT))
        .await?
        .check()?;
    response.take(0)
}

/// The payment `tracking_id`, while it is held for its owner.
pub async fn held_payment(
    db: &Db,
    tracking_id: &str,
) -> Result<Option<HeldForOwner>, surrealdb::Error> {
    let mut response = db
        .query(format!(
            "SELECT {HELD_FOR_OWNER_FIELDS} FROM checkout_session \
             WHERE tracking_id = $tracking AND status = 'held' AND held_for != NONE LIMIT 1"
        ))
        .bind(("tracking", tracking_id.to_owned()))
        .await?
        .check()?;
    let rows: Vec<HeldForOwner> = response.take(0)?;
    Ok(rows.into_iter().next())
}

/// The mail about a held payment sent again to its owner, with a fresh one-time sign-in link.
#[derive(Debug, Clone, SurrealValue)]
pub struct HeldReminder {
    pub tracking_id: String,
    /// The owner the reminder was read for: nothing is sent if the payment is held for anyone
    /// else by then.
    pub owner_id: String,
    pub recipient: String,
    pub subject: String,
    pub body: String,
    /// The SHA-256 of the link's secret, and when the link stops working.
    pub token_hash: String,
    pub token_expires_at: DateTime<Utc>,
}

/// Queues the reminder's mail and stores its link's token (for the owner, as fulfilment's mail
/// about the payment does), in one transaction, while the payment is still held for that owner:
/// false when it is not (claimed, declined or expired meanwhile), and then nothing is stored.
pub async fn queue_held_reminder(
    db: &Db,
    reminder: HeldReminder,
) -> Result<bool, surrealdb::Error> {
    let result = crate::store::retry_on_conflict(|| async {
        db.query(
            "BEGIN TRANSACTION;
             LET $cs = (SELECT provider_session_id, held_for FROM checkout_session
                 WHERE tracking_id = $r.tracking_id AND status = 'held'
                 AND held_for = type::record('user', $r.owner_id) LIMIT 1)[0];
             -- An account deleted since: its payment waits for the upkeep's refund, unclaimable.
             IF $cs = NONE OR !record::exists($cs.held_for) { THROW 'not_held'; };
             CREATE sign_in_token CONTENT {
                 token_hash: $r.token_hash, user: $cs.held_for, email: $r.recipient,
                 purpose: 'mail', checkout_session_id: $cs.provider_session_id,
                 expires_at: $r.token_expires_at
             } RETURN NONE;
             CREATE mail_outbox CONTENT {
                 recipient: $r.recipient, subject: $r.subject, body: $r.body,
                 kind: 'payment_held', pending: true
             } RETURN NONE;
             COMMIT TRANSACTION;",
        )
        .bind(("r", reminder.clone()))
        .await
        .and_then(crate::store::check_transaction)
    })
    .await;
    match result {
        Ok(_) => Ok(true),
        Err(error) if error.to_string().contains("not_held") => Ok(false),
        Err(error) => Err(error),
    }
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
