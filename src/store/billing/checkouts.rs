//! The `checkout_session` table: checkouts as started, paid, canceled and refunded, and their
//! one-time hand-off links.

use chrono::{DateTime, Utc};
use surrealdb::types::SurrealValue;

use crate::store::Db;

/// A checkout as created, before the provider has said anything about it.
#[derive(Debug, Clone, SurrealValue)]
pub struct NewCheckout {
    pub provider: String,
    pub provider_session_id: String,
    pub tracking_id: String,
    pub source: String,
    pub refundable_fee: bool,
    /// Whether the provider was asked for the 7-day trial (not for an account that had one).
    pub trial_offered: bool,
    pub email: Option<String>,
    pub attribution: serde_json::Value,
    pub success_url: String,
    pub cancel_url: String,
    /// The provider's page for the checkout.
    pub url: String,
    /// The spec's funnel record, for a checkout from a funnel.
    pub funnel_record: Option<serde_json::Value>,
    /// The hash of the one-time link's secret (`/api/funnels/checkout/{secret}`).
    pub handoff_hash: Option<String>,
    /// The visitor's first campaign touch, when the browser knew one.
    pub first_touch: Option<serde_json::Value>,
    /// The experiment's arm the checkout was opened in (`{experiment, arm}`, issue 48).
    pub experiment: Option<serde_json::Value>,
}

/// Who and what a checkout belongs to.
#[derive(Debug, Clone, Copy, Default)]
pub struct CheckoutLinks<'a> {
    pub user_id: Option<&'a str>,
    pub visitor_id: Option<&'a str>,
    pub funnel_conversation_id: Option<&'a str>,
}

pub async fn create_checkout(
    db: &Db,
    checkout: NewCheckout,
    links: CheckoutLinks<'_>,
) -> Result<(), surrealdb::Error> {
    db.query(
        "LET $created = (CREATE checkout_session CONTENT $checkout RETURN VALUE id)[0]; \
         UPDATE $created SET \
           user = IF $user THEN type::record('user', $user) ELSE NONE END, \
           visitor = IF $visitor THEN type::record('visitor', $visitor) ELSE NONE END, \
           funnel_conversation = IF $conversation THEN type::record('funnel_conversation', $conversation) ELSE NONE END",
    )
    .bind(("checkout", checkout))
    .bind(("user", links.user_id.map(str::to_owned)))
    .bind(("visitor", links.visitor_id.map(str::to_owned)))
    .bind((
        "conversation",
        links.funnel_conversation_id.map(str::to_owned),
    ))
    .await?
    .check()?;
    Ok(())
}

/// A checkout as stored.
#[derive(Debug, Clone, SurrealValue)]
pub struct StoredCheckout {
    pub provider: String,
    pub provider_session_id: String,
    pub tracking_id: String,
    pub source: String,
    pub status: String,
    pub refundable_fee: bool,
    pub trial_offered: bool,
    pub email: Option<String>,
    pub attribution: Option<serde_json::Value>,
    pub success_url: String,
    pub cancel_url: String,
    pub user_id: Option<String>,
    /// The account a held payment waits for (paid signed out with its address).
    pub held_for_id: Option<String>,
    pub customer_id: Option<String>,
    pub subscription_id: Option<String>,
    pub payment_intent_id: Option<String>,
    pub card_fingerprint: Option<String>,
    pub created_at: DateTime<Utc>,
    pub completed_at: Option<DateTime<Utc>>,
    pub fulfilled_at: Option<DateTime<Utc>>,
    pub fee_refunded_at: Option<DateTime<Utc>>,
    /// Whether fulfilling this checkout created the account.
    pub created_account: bool,
    /// The SHA-256 of the secret in the start cookie of the browser that started the checkout.
    pub start_hash: Option<String>,
}

const CHECKOUT_FIELDS: &str = "provider, provider_session_id, tracking_id, source, status, refundable_fee, \
     trial_offered ?? true AS trial_offered, email, attribution, success_url, cancel_url, \
     IF user THEN record::id(user) ELSE NONE END AS user_id, \
     IF held_for THEN record::id(held_for) ELSE NONE END AS held_for_id, customer_id, subscription_id, \
     payment_intent_id, card_fingerprint, created_at, completed_at, fulfilled_at, fee_refunded_at, \
     created_account ?? false AS created_account, start_hash";

/// Records which browser started the checkout: the hash of the secret its start cookie holds.
/// The first browser to start it keeps it (a second use of a funnel's checkout link changes
/// nothing).
pub async fn mark_started_by(
    db: &Db,
    tracking_id: &str,
    start_hash: String,
) -> Result<(), surrealdb::Error> {
    db.query(
        "UPDATE checkout_session SET start_hash = $hash \
         WHERE tracking_id = $id AND start_hash = NONE RETURN NONE",
    )
    .bind(("id", tracking_id.to_owned()))
    .bind(("hash", start_hash))
    .await?
    .check()?;
    Ok(())
}

pub async fn checkout(
    db: &Db,
    provider_session_id: &str,
) -> Result<Option<StoredCheckout>, surrealdb::Error> {
    let mut response = db
        .query(format!(
            "SELECT {CHECKOUT_FIELDS} FROM checkout_session WHERE provider_session_id = $id LIMIT 1"
        ))
        .bind(("id", provider_session_id.to_owned()))
        .await?
        .check()?;
    let rows: Vec<StoredCheckout> = response.take(0)?;
    Ok(rows.into_iter().next())
}

pub async fn checkout_by_tracking_id(
    db: &Db,
    tracking_id: &str,
) -> Result<Option<StoredCheckout>, surrealdb::Error> {
    let mut response = db
        .query(format!(
            "SELECT {CHECKOUT_FIELDS} FROM checkout_session WHERE tracking_id = $id \
             ORDER BY created_at DESC LIMIT 1"
        ))
        .bind(("id", tracking_id.to_owned()))
        .await?
        .check()?;
    let rows: Vec<StoredCheckout> = response.take(0)?;
    Ok(rows.into_iter().next())
}

/// A user's newest fulfilled checkout.
pub async fn latest_fulfilled_checkout_of(
    db: &Db,
    user_id: &str,
) -> Result<Option<StoredCheckout>, surrealdb::Error> {
    let mut response = db
        .query(format!(
            "SELECT {CHECKOUT_FIELDS} FROM checkout_session \
             WHERE user = type::record('user', $user) AND fulfilled_at != NONE \
             ORDER BY fulfilled_at DESC LIMIT 1"
        ))
        .bind(("user", user_id.to_owned()))
        .await?
        .check()?;
    let rows: Vec<StoredCheckout> = response.take(0)?;
    Ok(rows.into_iter().next())
}

/// A user's checkouts that were started but not fulfilled (a lost webhook may leave one paid).
pub async fn unfulfilled_checkouts_of(
    db: &Db,
    user_id: &str,
) -> Result<Vec<StoredCheckout>, surrealdb::Error> {
    let mut response = db
        .query(format!(
            "SELECT {CHECKOUT_FIELDS} FROM checkout_session \
             WHERE user = type::record('user', $user) AND fulfilled_at = NONE AND status = 'open' \
             AND created_at > time::now() - 1d ORDER BY created_at DESC LIMIT 5"
        ))
        .bind(("user", user_id.to_owned()))
        .await?
        .check()?;
    response.take(0)
}

/// The newest checkouts (the debug page lists them).
pub async fn recent_checkouts(
    db: &Db,
    limit: usize,
) -> Result<Vec<StoredCheckout>, surrealdb::Error> {
    let mut response = db
        .query(format!(
            "SELECT {CHECKOUT_FIELDS} FROM checkout_session ORDER BY created_at DESC LIMIT $limit"
        ))
        .bind(("limit", limit))
        .await?
        .check()?;
    response.take(0)
}

/// Marks an open checkout canceled (the demo page's Cancel); a paid one stays paid.
pub async fn cancel_checkout(db: &Db, provider_session_id: &str) -> Result<(), surrealdb::Error> {
    db.query("UPDATE (SELECT VALUE id FROM checkout_session WHERE provider_session_id = $id) SET status = 'canceled' WHERE status = 'open'")
        .bind(("id", provider_session_id.to_owned()))
        .await?
        .check()?;
    Ok(())
}

/// A checkout reached through its one-time link.
#[derive(Debug, Clone, SurrealValue)]
pub struct HandedOffCheckout {
    pub tracking_id: String,
    pub url: Option<String>,
    pub created_at: DateTime<Utc>,
    /// The first use of the link: only that one marks the browser as the checkout's starter.
    pub first_use: bool,
}

/// Finds the checkout of a one-time link and marks the link used. A demo checkout canceled on its
/// page is open again: the link is followed only to check out again, and Stripe's page too stays
/// open after its Back link (until the session expires).
pub async fn claim_handoff(
    db: &Db,
    handoff_hash: &str,
) -> Result<Option<HandedOffCheckout>, surrealdb::Error> {
    let mut response = crate::store::retry_on_conflict(|| async {
        db.query(
            // The ids come from the indexed lookup, so the update touches one row.
            "LET $claimed = (UPDATE (SELECT VALUE id FROM checkout_session WHERE handoff_hash = $hash) \
               SET handoff_used = true WHERE handoff_used != true RETURN VALUE id); \
             UPDATE (SELECT VALUE id FROM checkout_session WHERE handoff_hash = $hash) \
               SET status = 'open' WHERE status = 'canceled' AND completed_at = NONE RETURN NONE; \
             SELECT tracking_id, url, created_at, array::len($claimed) > 0 AS first_use \
               FROM checkout_session WHERE handoff_hash = $hash LIMIT 1;",
        )
        .bind(("hash", handoff_hash.to_owned()))
        .await?
        .check()
    })
    .await?;
    let rows: Vec<HandedOffCheckout> = response.take(2)?;
    Ok(rows.into_iter().next())
}

/// A demo payment as the demo checkout records it.
#[derive(Debug, Clone)]
pub struct DemoPayment {
    pub paid_at: DateTime<Utc>,
    pub email: String,
    pub customer_id: String,
    pub subscription_id: String,
    /// The fee's payment, when the checkout charges one.
    pub payment_intent_id: Option<String>,
    /// The test card's fingerprint (a hash of its number), as Stripe gives one per card.
    pub card_fingerprint: Option<String>,
}

/// Records a demo payment on an open checkout, once: false when it was paid (or closed) already,
/// so a double click pays once.
pub async fn record_demo_payment(
    db: &Db,
    provider_session_id: &str,
    payment: &DemoPayment,
) -> Result<bool, surrealdb::Error> {
    let updated: Vec<surrealdb::types::RecordId> = crate::store::retry_on_conflict(|| async {
        db.query(
            "UPDATE (SELECT VALUE id FROM checkout_session WHERE provider_session_id = $id) \
             SET completed_at = $paid, email = $email, customer_id = $customer, \
             subscription_id = $subscription, payment_intent_id = $intent, \
             card_fingerprint = $fingerprint \
             WHERE completed_at = NONE AND status = 'open' RETURN VALUE id",
        )
        .bind(("paid", payment.paid_at))
        .bind(("email", payment.email.clone()))
        .bind(("customer", payment.customer_id.clone()))
        .bind(("subscription", payment.subscription_id.clone()))
        .bind(("intent", payment.payment_intent_id.clone()))
        .bind(("fingerprint", payment.card_fingerprint.clone()))
        .bind(("id", provider_session_id.to_owned()))
        .await?
        .check()?
        .take(0)
    })
    .await?;
    Ok(!updated.is_empty())
}

/// Claims a checkout's fee refund before the provider is asked, so two clicks refund once: false
/// when it was claimed (or refunded) already.
pub async fn claim_refund(db: &Db, provider_session_id: &str) -> Result<bool, surrealdb::Error> {
    let claimed: Vec<surrealdb::types::RecordId> = crate::store::retry_on_conflict(|| async {
        db.query(
            "UPDATE (SELECT VALUE id FROM checkout_session WHERE provider_session_id = $id) \
             SET fee_refunded_at = time::now() WHERE fee_refunded_at = NONE RETURN VALUE id",
        )
        .bind(("id", provider_session_id.to_owned()))
        .await?
        .check()?
        .take(0)
    })
    .await?;
    Ok(!claimed.is_empty())
}

/// Gives a refund claim back (the provider failed), so the member can ask again.
pub async fn release_refund_claim(
    db: &Db,
    provider_session_id: &str,
) -> Result<(), surrealdb::Error> {
    db.query("UPDATE checkout_session SET fee_refunded_at = NONE WHERE provider_session_id = $id")
        .bind(("id", provider_session_id.to_owned()))
        .await?
        .check()?;
    Ok(())
}
