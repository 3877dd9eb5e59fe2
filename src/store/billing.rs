//! Checkouts, subscriptions and one-time sign-in tokens.
//!
//! Fulfilment is one transaction: a checkout is marked fulfilled together with everything it grants
//! (the account, the trial, the attribution, the sign-in token, the welcome mail and the analytics
//! events), so it happens whole, once, whichever caller (webhook or success page) comes first.

use chrono::{DateTime, Utc};
use surrealdb::types::SurrealValue;

use super::Db;
use crate::domain::billing::{SubscriptionSnapshot, SubscriptionStatus};

/// Whether an error is a lost optimistic-concurrency race, worth retrying.
pub(crate) fn is_conflict(error: &surrealdb::Error) -> bool {
    let text = error.to_string().to_lowercase();
    text.contains("conflict") || text.contains("retry") || super::users::is_unique_violation(error)
}

/// A checkout as created, before the provider has said anything about it.
#[derive(Debug, Clone, SurrealValue)]
pub struct NewCheckout {
    pub provider: String,
    pub provider_session_id: String,
    pub tracking_id: String,
    pub source: String,
    pub refundable_fee: bool,
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
    pub email: Option<String>,
    pub attribution: Option<serde_json::Value>,
    pub success_url: String,
    pub cancel_url: String,
    pub user_id: Option<String>,
    pub customer_id: Option<String>,
    pub subscription_id: Option<String>,
    pub payment_intent_id: Option<String>,
    pub created_at: DateTime<Utc>,
    pub completed_at: Option<DateTime<Utc>>,
    pub fulfilled_at: Option<DateTime<Utc>>,
    pub fee_refunded_at: Option<DateTime<Utc>>,
    /// Whether fulfilling this checkout created the account.
    pub created_account: bool,
}

const CHECKOUT_FIELDS: &str = "provider, provider_session_id, tracking_id, source, status, refundable_fee, \
     email, attribution, success_url, cancel_url, \
     IF user THEN record::id(user) ELSE NONE END AS user_id, customer_id, subscription_id, \
     payment_intent_id, created_at, completed_at, fulfilled_at, fee_refunded_at, \
     created_account ?? false AS created_account";

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

/// Everything fulfilment writes, prepared by the caller (texts, the token's hash).
#[derive(Debug, Clone)]
pub struct Fulfilment {
    pub provider_session_id: String,
    pub email: String,
    pub customer_id: Option<String>,
    pub subscription_id: Option<String>,
    pub payment_intent_id: Option<String>,
    pub completed_at: DateTime<Utc>,
    pub trial_end: DateTime<Utc>,
    /// The hash of the sign-in link's token in the welcome mail.
    pub mail_token_hash: String,
    pub token_expires_at: DateTime<Utc>,
    pub welcome_subject: String,
    pub welcome_text: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FulfilOutcome {
    /// This call fulfilled the checkout.
    Fulfilled { user_id: String, email: String },
    /// It was fulfilled before (by the webhook or the success page).
    AlreadyFulfilled { user_id: String, email: String },
}

#[derive(Debug, thiserror::Error)]
pub enum FulfilError {
    #[error("no checkout {0} was started here")]
    UnknownCheckout(String),
    #[error(transparent)]
    Database(#[from] surrealdb::Error),
}

const FULFIL: &str = r"
BEGIN TRANSACTION;
LET $cs = (SELECT * FROM checkout_session WHERE provider_session_id = $f.provider_session_id LIMIT 1)[0];
IF $cs = NONE { THROW 'unknown_checkout'; };
IF $cs.fulfilled_at != NONE { THROW 'already_fulfilled'; };
LET $found = (SELECT VALUE id FROM user WHERE email = $f.email LIMIT 1)[0];
LET $uid = IF $found != NONE { $found } ELSE { (CREATE user CONTENT { email: $f.email } RETURN VALUE id)[0] };
LET $att = $cs.attribution ?? {};
LET $history = {
    startDate: $f.completed_at, endDate: $f.trial_end, status: 'active',
    paymentSessionId: $f.provider_session_id, attribution: $att
};

-- One trial per account: a later checkout of the same account starts no second one.
LET $first_trial = !((SELECT VALUE trial_used FROM ONLY $uid) ?? false);
UPDATE $uid SET
    trial_started = true,
    trial_used = true,
    trial_start_date = IF $first_trial { $f.completed_at } ELSE { trial_start_date },
    trial_end_date = IF $first_trial { $f.trial_end } ELSE { trial_end_date },
    checkout_session_id = $cs.tracking_id,
    checkout_completed = true,
    checkout_completed_at = $f.completed_at,
    payment_session_id = $f.provider_session_id,
    payment_customer_id = $f.customer_id ?? payment_customer_id,
    subscription_id = $f.subscription_id ?? subscription_id,
    acquisition = acquisition ?? {
        utm_source: $att.utm_source, utm_medium: $att.utm_medium, utm_campaign: $att.utm_campaign,
        keyword: $att.keyword, campaignid: $att.campaignid, gclid: $att.gclid,
        signup_date: $f.completed_at,
        source: $att.utm_source ?? 'direct', medium: $att.utm_medium ?? 'none', campaign: $att.utm_campaign ?? 'none'
    },
    trial_attribution = {
        campaignid: $att.campaignid, keyword: $att.keyword,
        utm_source: $att.utm_source, utm_medium: $att.utm_medium, utm_campaign: $att.utm_campaign,
        funnel_type: $cs.source, funnel_timestamp: $cs.created_at, paymentSessionId: $f.provider_session_id
    },
    trial_history = IF $first_trial { array::append(trial_history ?? [], $history) } ELSE { trial_history },
    funnel = $cs.funnel_record ?? funnel;
UPDATE $cs.id SET
    status = 'complete', email = $f.email, user = $uid, created_account = ($found = NONE),
    customer_id = $f.customer_id, subscription_id = $f.subscription_id,
    payment_intent_id = $f.payment_intent_id,
    completed_at = $f.completed_at, fulfilled_at = time::now();
IF $cs.visitor != NONE { UPDATE $cs.visitor SET user = $uid; };
IF $cs.funnel_conversation != NONE { UPDATE $cs.funnel_conversation SET user = $uid; };
CREATE sign_in_token CONTENT {
    token_hash: $f.mail_token_hash, user: $uid, email: $f.email, purpose: 'mail',
    checkout_session_id: $f.provider_session_id, expires_at: $f.token_expires_at
};
CREATE mail_outbox CONTENT { recipient: $f.email, subject: $f.welcome_subject, body: $f.welcome_text, kind: 'welcome', pending: true };
CREATE analytics_event CONTENT { name: 'purchase', user: $uid, properties: {
    source: $cs.source, value: IF $cs.refundable_fee { 1 } ELSE { 0 }, currency: 'USD', paymentSessionId: $f.provider_session_id } };
IF $first_trial {
    CREATE analytics_event CONTENT { name: 'begin_trial', user: $uid, properties: { source: $cs.source, trial: '7_day' } };
};
COMMIT TRANSACTION;
";

#[derive(Debug, Clone, SurrealValue)]
struct FulfilParams {
    provider_session_id: String,
    email: String,
    customer_id: Option<String>,
    subscription_id: Option<String>,
    payment_intent_id: Option<String>,
    completed_at: DateTime<Utc>,
    trial_end: DateTime<Utc>,
    mail_token_hash: String,
    token_expires_at: DateTime<Utc>,
    welcome_subject: String,
    welcome_text: String,
}

#[derive(Debug, Clone, SurrealValue)]
struct FulfilledBy {
    user_id: Option<String>,
    email: Option<String>,
}

/// Fulfils a paid checkout once; later and concurrent calls get `AlreadyFulfilled`.
pub async fn fulfil(db: &Db, fulfilment: Fulfilment) -> Result<FulfilOutcome, FulfilError> {
    let params = FulfilParams {
        provider_session_id: fulfilment.provider_session_id.clone(),
        email: fulfilment.email,
        customer_id: fulfilment.customer_id,
        subscription_id: fulfilment.subscription_id,
        payment_intent_id: fulfilment.payment_intent_id,
        completed_at: fulfilment.completed_at,
        trial_end: fulfilment.trial_end,
        mail_token_hash: fulfilment.mail_token_hash,
        token_expires_at: fulfilment.token_expires_at,
        welcome_subject: fulfilment.welcome_subject,
        welcome_text: fulfilment.welcome_text,
    };
    let id = fulfilment.provider_session_id;
    let result = super::retry_on_conflict(|| async {
        db.query(FULFIL)
            .bind(("f", params.clone()))
            .await
            .and_then(super::check_transaction)
    })
    .await;
    match result {
        Ok(_) => {
            let by = fulfilled_by(db, &id).await?;
            Ok(FulfilOutcome::Fulfilled {
                user_id: by.user_id.unwrap_or_default(),
                email: by.email.unwrap_or_default(),
            })
        }
        Err(error) if error.to_string().contains("unknown_checkout") => {
            Err(FulfilError::UnknownCheckout(id))
        }
        Err(error) if error.to_string().contains("already_fulfilled") => {
            let by = fulfilled_by(db, &id).await?;
            Ok(FulfilOutcome::AlreadyFulfilled {
                user_id: by.user_id.unwrap_or_default(),
                email: by.email.unwrap_or_default(),
            })
        }
        Err(error) => Err(error.into()),
    }
}

async fn fulfilled_by(db: &Db, provider_session_id: &str) -> Result<FulfilledBy, surrealdb::Error> {
    let mut response = db
        .query(
            "SELECT IF user THEN record::id(user) ELSE NONE END AS user_id, email \
             FROM checkout_session WHERE provider_session_id = $id LIMIT 1",
        )
        .bind(("id", provider_session_id.to_owned()))
        .await?
        .check()?;
    let rows: Vec<FulfilledBy> = response.take(0)?;
    Ok(rows.into_iter().next().unwrap_or(FulfilledBy {
        user_id: None,
        email: None,
    }))
}

#[derive(Debug, Clone, SurrealValue)]
struct SnapshotParams {
    id: String,
    provider: String,
    customer_id: Option<String>,
    status: String,
    price_id: Option<String>,
    current_period_end: Option<DateTime<Utc>>,
    trial_end: Option<DateTime<Utc>>,
    cancel_at_period_end: bool,
    event_created: i64,
}

/// Stores a subscription snapshot unless a newer one is stored or the stored one is final.
/// Returns whether it was stored.
pub async fn record_subscription(
    db: &Db,
    provider: &str,
    snapshot: &SubscriptionSnapshot,
) -> Result<bool, surrealdb::Error> {
    let params = SnapshotParams {
        id: snapshot.id.clone(),
        provider: provider.to_owned(),
        customer_id: snapshot.customer_id.clone(),
        status: snapshot.status.as_str().to_owned(),
        price_id: snapshot.price_id.clone(),
        current_period_end: snapshot.current_period_end,
        trial_end: snapshot.trial_end,
        cancel_at_period_end: snapshot.cancel_at_period_end,
        event_created: snapshot.event_created,
    };
    let final_statuses: Vec<&str> = [
        SubscriptionStatus::Canceled,
        SubscriptionStatus::IncompleteExpired,
    ]
    .iter()
    .map(|status| status.as_str())
    .collect();
    super::retry_on_conflict(|| async {
        db.query(
            "BEGIN TRANSACTION;
                 LET $rid = type::record('subscription', $s.id);
                 LET $old = (SELECT * FROM ONLY $rid);
                 LET $newer = $old = NONE OR (
                     $old.status NOT IN $final AND (
                         $s.event_created > $old.event_created
                         OR ($s.event_created = $old.event_created AND $s.status IN $final)
                     )
                 );
                 IF $newer {
                     UPSERT $rid CONTENT {
                         provider: $s.provider, customer_id: $s.customer_id, status: $s.status,
                         price_id: $s.price_id, current_period_end: $s.current_period_end,
                         trial_end: $s.trial_end, cancel_at_period_end: $s.cancel_at_period_end,
                         event_created: $s.event_created, updated_at: time::now(),
                         trial_reminder_sent_for: $old.trial_reminder_sent_for
                     };
                 };
                 COMMIT TRANSACTION;",
        )
        .bind(("s", params.clone()))
        .bind(("final", final_statuses.clone()))
        .await
        .and_then(super::check_transaction)
    })
    .await?;
    // Whether this snapshot is the stored one now (the script's own answer is not reliably
    // reachable among a transaction's statement results).
    let mut response = db
        .query("SELECT VALUE status = $status AND event_created = $created FROM ONLY type::record('subscription', $id)")
        .bind(("status", params.status.clone()))
        .bind(("created", params.event_created))
        .bind(("id", params.id.clone()))
        .await?
        .check()?;
    let stored: Option<bool> = response.take(0)?;
    Ok(stored.unwrap_or(false))
}

/// A stored subscription, as the access check and the API see it.
#[derive(Debug, Clone, SurrealValue)]
pub struct StoredSubscription {
    pub id: String,
    pub customer_id: Option<String>,
    pub status: String,
    pub price_id: Option<String>,
    pub current_period_end: Option<DateTime<Utc>>,
    pub trial_end: Option<DateTime<Utc>>,
    pub cancel_at_period_end: bool,
}

impl StoredSubscription {
    pub fn status(&self) -> Option<SubscriptionStatus> {
        SubscriptionStatus::parse(&self.status)
    }
}

/// What decides a user's access: the trial dates and the subscription, wherever it is recorded.
#[derive(Debug, Clone, SurrealValue)]
pub struct AccessFacts {
    pub email: String,
    pub trial_started: bool,
    pub trial_start_date: Option<DateTime<Utc>>,
    pub trial_end_date: Option<DateTime<Utc>>,
    pub payment_customer_id: Option<String>,
    pub payment_session_id: Option<String>,
    /// The subscription the account's checkout named (it may have no stored snapshot yet).
    pub subscription_id: Option<String>,
    pub has_password: bool,
    pub subscription: Option<StoredSubscription>,
}

/// The access facts of the user `$s.user` (an object `{ user }` bound as `$s`), or `NONE`: one
/// block whose value is the answer, without `RETURN`, so a batch can carry it too
/// (`store::batch`). The subscription is the one the checkout named, or else the newest one of
/// the user's payment customer (an event may name only the customer).
pub(crate) const ACCESS_FACTS: &str = "{
    LET $s_u = type::record('user', $s.user).*;
    IF $s_u {
        LET $s_by_id = IF $s_u.subscription_id {
            type::record('subscription', $s_u.subscription_id).*
        } ELSE { NONE };
        LET $s_sub = IF $s_by_id { $s_by_id } ELSE IF $s_u.payment_customer_id {
            (SELECT * FROM subscription WHERE customer_id = $s_u.payment_customer_id
             ORDER BY event_created DESC LIMIT 1)[0]
        } ELSE { NONE };
        {
            email: $s_u.email,
            trial_started: $s_u.trial_started ?? false,
            trial_start_date: $s_u.trial_start_date,
            trial_end_date: $s_u.trial_end_date,
            payment_customer_id: $s_u.payment_customer_id,
            payment_session_id: $s_u.payment_session_id,
            subscription_id: $s_u.subscription_id,
            has_password: $s_u.password_hash != NONE,
            subscription: IF $s_sub { {
                id: record::id($s_sub.id), customer_id: $s_sub.customer_id, status: $s_sub.status,
                price_id: $s_sub.price_id, current_period_end: $s_sub.current_period_end,
                trial_end: $s_sub.trial_end, cancel_at_period_end: $s_sub.cancel_at_period_end ?? false
            } } ELSE { NONE }
        }
    } ELSE { NONE }
};";

/// The variables of [`ACCESS_FACTS`].
#[derive(Debug, Clone, SurrealValue)]
pub(crate) struct AccessVars {
    pub user: String,
}

/// The access facts of a user ([`ACCESS_FACTS`]), read in a query of its own.
pub async fn access_facts(db: &Db, user_id: &str) -> Result<Option<AccessFacts>, surrealdb::Error> {
    let mut response = db
        .query(ACCESS_FACTS)
        .bind((
            "s",
            AccessVars {
                user: user_id.to_owned(),
            },
        ))
        .await?
        .check()?;
    response.take(0)
}

/// Issues a one-time sign-in token (the caller keeps the secret; the store only its hash).
pub async fn create_sign_in_token(
    db: &Db,
    user_id: &str,
    email: &str,
    provider_session_id: &str,
    token_hash: String,
    purpose: &str,
    expires_at: DateTime<Utc>,
) -> Result<(), surrealdb::Error> {
    db.query(
        "CREATE sign_in_token CONTENT { token_hash: $hash, user: type::record('user', $user), email: $email, \
         purpose: $purpose, checkout_session_id: $checkout, expires_at: $expires }",
    )
    .bind(("hash", token_hash))
    .bind(("user", user_id.to_owned()))
    .bind(("email", email.to_owned()))
    .bind(("purpose", purpose.to_owned()))
    .bind(("checkout", provider_session_id.to_owned()))
    .bind(("expires", expires_at))
    .await?
    .check()?;
    Ok(())
}

/// Whether the success page already handed out this checkout's browser token.
pub async fn checkout_token_issued(
    db: &Db,
    provider_session_id: &str,
) -> Result<bool, surrealdb::Error> {
    let mut response = db
        .query(
            "RETURN count(SELECT VALUE id FROM sign_in_token \
             WHERE checkout_session_id = $id AND purpose = 'checkout') > 0",
        )
        .bind(("id", provider_session_id.to_owned()))
        .await?
        .check()?;
    let issued: Option<bool> = response.take(0)?;
    Ok(issued.unwrap_or(true))
}

/// The owner of a sign-in token that is unused and unexpired.
#[derive(Debug, Clone, SurrealValue)]
pub struct TokenOwner {
    pub user_id: String,
    pub email: String,
    pub checkout_session_id: Option<String>,
}

/// Whether a token is still good, without spending it (account setup reads it first).
pub async fn peek_sign_in_token(
    db: &Db,
    token_hash: &str,
) -> Result<Option<TokenOwner>, surrealdb::Error> {
    let mut response = db
        .query(
            "SELECT record::id(user) AS user_id, email, checkout_session_id FROM sign_in_token \
             WHERE token_hash = $hash AND used = false AND expires_at > time::now() LIMIT 1",
        )
        .bind(("hash", token_hash.to_owned()))
        .await?
        .check()?;
    let rows: Vec<TokenOwner> = response.take(0)?;
    Ok(rows.into_iter().next())
}

/// Spends a token: exactly one of any number of concurrent calls gets its owner.
pub async fn redeem_sign_in_token(
    db: &Db,
    token_hash: &str,
) -> Result<Option<TokenOwner>, surrealdb::Error> {
    super::retry_on_conflict(|| async {
        let mut response = db
            .query(
                "UPDATE (SELECT VALUE id FROM sign_in_token WHERE token_hash = $hash) \
                 SET used = true, used_at = time::now() \
                 WHERE used = false AND expires_at > time::now() \
                 RETURN record::id(user) AS user_id, email, checkout_session_id",
            )
            .bind(("hash", token_hash.to_owned()))
            .await?
            .check()?;
        let rows: Vec<TokenOwner> = response.take(0)?;
        Ok(rows.into_iter().next())
    })
    .await
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

/// Finds the checkout of a one-time link and marks the link used.
pub async fn claim_handoff(
    db: &Db,
    handoff_hash: &str,
) -> Result<Option<HandedOffCheckout>, surrealdb::Error> {
    let mut response = super::retry_on_conflict(|| async {
        db.query(
            // The ids come from the indexed lookup, so the update touches one row.
            "LET $claimed = (UPDATE (SELECT VALUE id FROM checkout_session WHERE handoff_hash = $hash) \
               SET handoff_used = true WHERE handoff_used != true RETURN VALUE id); \
             SELECT tracking_id, url, created_at, array::len($claimed) > 0 AS first_use \
               FROM checkout_session WHERE handoff_hash = $hash LIMIT 1;",
        )
        .bind(("hash", handoff_hash.to_owned()))
        .await?
        .check()
    })
    .await?;
    let rows: Vec<HandedOffCheckout> = response.take(1)?;
    Ok(rows.into_iter().next())
}
