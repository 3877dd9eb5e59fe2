//! The `subscription` table: the provider's subscription snapshots, and the access facts of a
//! user that decide access (trial dates and subscription).

use chrono::{DateTime, Utc};
use surrealdb::types::SurrealValue;

use crate::domain::billing::{SubscriptionSnapshot, SubscriptionStatus};
use crate::store::Db;

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
    crate::store::retry_on_conflict(|| async {
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
                     -- The spec isSubscribed, on the account this subscription is (as its
                     -- checkout named it): whether it is running now.
                     UPDATE user SET is_subscribed = $s.status IN ['active', 'trialing']
                         WHERE subscription_id = $s.id;
                 };
                 COMMIT TRANSACTION;",
        )
        .bind(("s", params.clone()))
        .bind(("final", final_statuses.clone()))
        .await
        .and_then(crate::store::check_transaction)
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

/// The trial-ending mail, as [`queue_trial_reminder`] queues it.
#[derive(Debug, Clone, SurrealValue)]
pub struct ReminderMail {
    pub recipient: String,
    pub subject: String,
    pub body: String,
}

/// Claims the trial-ending reminder of subscription `id` for the trial end `end` and queues its
/// mail, in one transaction: true for exactly one caller, and a claim never stands without its
/// mail (a failure undoes both).
pub async fn queue_trial_reminder(
    db: &Db,
    id: &str,
    end: DateTime<Utc>,
    mail: ReminderMail,
) -> Result<bool, surrealdb::Error> {
    let result = crate::store::retry_on_conflict(|| async {
        db.query(
            "BEGIN TRANSACTION;
             LET $claimed = (UPDATE type::record('subscription', $id)
                 SET trial_reminder_sent_for = $end
                 WHERE trial_reminder_sent_for != $end RETURN VALUE id);
             IF array::len($claimed) = 0 { THROW 'reminder_already_sent'; };
             CREATE mail_outbox CONTENT {
                 recipient: $mail.recipient, subject: $mail.subject, body: $mail.body,
                 kind: 'trial_ending', pending: true
             };
             COMMIT TRANSACTION;",
        )
        .bind(("id", id.to_owned()))
        .bind(("end", end))
        .bind(("mail", mail.clone()))
        .await
        .and_then(crate::store::check_transaction)
    })
    .await;
    match result {
        Ok(_) => Ok(true),
        Err(error) if error.to_string().contains("reminder_already_sent") => Ok(false),
        Err(error) => Err(error),
    }
}

/// The demo subscriptions whose trial ends within 3 days and whose reminder is not sent (at most
/// 100 at a time).
pub async fn demo_trials_ending_soon(db: &Db) -> Result<Vec<String>, surrealdb::Error> {
    let mut response = db
        .query(
            "SELECT VALUE record::id(id) FROM subscription WHERE provider = 'demo' \
             AND status = 'trialing' AND trial_end > time::now() AND trial_end < time::now() + 3d \
             AND (trial_reminder_sent_for = NONE OR trial_reminder_sent_for != trial_end) LIMIT 100",
        )
        .await?
        .check()?;
    response.take(0)
}

/// A demo subscription as stored: the demo provider's own record of it.
#[derive(Debug, Clone, SurrealValue)]
pub struct DemoSubscription {
    pub customer_id: Option<String>,
    pub status: String,
    pub price_id: Option<String>,
    pub current_period_end: Option<DateTime<Utc>>,
    pub trial_end: Option<DateTime<Utc>>,
    pub cancel_at_period_end: bool,
    pub event_created: i64,
}

/// The demo subscription `id`, if the demo provider made it.
pub async fn demo_subscription(
    db: &Db,
    id: &str,
) -> Result<Option<DemoSubscription>, surrealdb::Error> {
    let mut response = db
        .query(
            "SELECT customer_id, status, price_id, current_period_end, trial_end, \
             cancel_at_period_end, event_created FROM type::record('subscription', $id) \
             WHERE provider = 'demo'",
        )
        .bind(("id", id.to_owned()))
        .await?
        .check()?;
    let rows: Vec<DemoSubscription> = response.take(0)?;
    Ok(rows.into_iter().next())
}
