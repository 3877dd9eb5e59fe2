//! The `user` table: accounts. Ids leave the store as the record key alone (`user:abc` -> `abc`).

use chrono::{DateTime, Utc};
use helpnow_actors::rules::FunnelKind;
use surrealdb::types::SurrealValue;

use super::Db;
use crate::domain::Email;

/// What sign-in needs of an account.
#[derive(Debug, Clone, SurrealValue)]
pub struct Credentials {
    pub id: String,
    pub email: String,
    pub password_hash: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum CreateUserError {
    #[error("an account with this email already exists")]
    EmailTaken,
    #[error(transparent)]
    Database(#[from] surrealdb::Error),
}

/// Whether a failed write broke a unique index (two requests racing for one email, say).
pub(crate) fn is_unique_violation(error: &surrealdb::Error) -> bool {
    error.to_string().contains("already contains")
}

/// Creates an account; an email that already has one is `EmailTaken`, also under a race.
pub async fn create(
    db: &Db,
    email: &Email,
    password_hash: Option<String>,
) -> Result<String, CreateUserError> {
    let result = db
        .query("CREATE user CONTENT { email: $email, password_hash: $hash } RETURN VALUE record::id(id)")
        .bind(("email", email.as_str().to_owned()))
        .bind(("hash", password_hash))
        .await
        .and_then(|response| response.check());
    let mut response = match result {
        Ok(response) => response,
        Err(error) if is_unique_violation(&error) => return Err(CreateUserError::EmailTaken),
        Err(error) => return Err(error.into()),
    };
    let id: Option<String> = response.take(0)?;
    id.ok_or_else(|| surrealdb::Error::internal("CREATE returned no id".to_owned()).into())
}

pub async fn credentials_by_email(
    db: &Db,
    email: &Email,
) -> Result<Option<Credentials>, surrealdb::Error> {
    let mut response = db
        .query("SELECT record::id(id) AS id, email, password_hash FROM user WHERE email = $email LIMIT 1")
        .bind(("email", email.as_str().to_owned()))
        .await?
        .check()?;
    let rows: Vec<Credentials> = response.take(0)?;
    Ok(rows.into_iter().next())
}

pub async fn email_of(db: &Db, user_id: &str) -> Result<Option<String>, surrealdb::Error> {
    let mut response = db
        .query("SELECT VALUE email FROM type::record('user', $id)")
        .bind(("id", user_id.to_owned()))
        .await?
        .check()?;
    let emails: Vec<String> = response.take(0)?;
    Ok(emails.into_iter().next())
}

/// Sets the account's first password, only while it has none and, for a setter who has not proved
/// the address (`proved` false), only while nobody has: `false` when another request set one first
/// (two setups at once), or when a proof of the address landed meanwhile (the account is then the
/// prover's to set).
pub async fn set_first_password(
    db: &Db,
    user_id: &str,
    hash: String,
    proved: bool,
) -> Result<bool, surrealdb::Error> {
    let mut response = db
        .query(
            "UPDATE type::record('user', $id) SET password_hash = $hash, password_proved = $proved \
             WHERE password_hash = NONE AND ($proved OR email_verified_at = NONE) \
             RETURN VALUE id",
        )
        .bind(("id", user_id.to_owned()))
        .bind(("hash", hash))
        .bind(("proved", proved))
        .await?
        .check()?;
    let set: Vec<surrealdb::types::RecordId> = response.take(0)?;
    Ok(!set.is_empty())
}

/// The funnel record the account's trial came with (spec section 3), if it came from a funnel.
pub async fn funnel_record(
    db: &Db,
    user_id: &str,
) -> Result<Option<serde_json::Value>, surrealdb::Error> {
    let mut response = db
        .query("SELECT VALUE funnel FROM type::record('user', $id)")
        .bind(("id", user_id.to_owned()))
        .await?
        .check()?;
    let records: Vec<Option<serde_json::Value>> = response.take(0)?;
    Ok(records.into_iter().next().flatten())
}

/// Replaces the user's chosen shortcut names.
pub async fn set_shortcuts(
    db: &Db,
    user_id: &str,
    names: &[String],
) -> Result<(), surrealdb::Error> {
    db.query("UPDATE type::record('user', $id) SET shortcuts = $names")
        .bind(("id", user_id.to_owned()))
        .bind(("names", names.to_vec()))
        .await?
        .check()?;
    Ok(())
}

/// The user's chosen shortcut names.
pub async fn shortcuts(db: &Db, user_id: &str) -> Result<Vec<String>, surrealdb::Error> {
    let mut response = db
        .query("SELECT VALUE shortcuts ?? [] FROM type::record('user', $id)")
        .bind(("id", user_id.to_owned()))
        .await?
        .check()?;
    let found: Vec<Vec<String>> = response.take(0)?;
    Ok(found.into_iter().next().unwrap_or_default())
}

/// The user a payment customer or subscription belongs to.
pub async fn user_of_payment(
    db: &Db,
    customer_id: Option<&str>,
    subscription_id: Option<&str>,
) -> Result<Option<String>, surrealdb::Error> {
    let mut response = db
        // Two lookups rather than one OR: each of them uses its index.
        .query(
            "RETURN (IF $customer { (SELECT VALUE record::id(id) FROM user WHERE payment_customer_id = $customer LIMIT 1)[0] }) \
             ?? (IF $subscription { (SELECT VALUE record::id(id) FROM user WHERE subscription_id = $subscription LIMIT 1)[0] })",
        )
        .bind(("customer", customer_id.map(str::to_owned)))
        .bind(("subscription", subscription_id.map(str::to_owned)))
        .await?
        .check()?;
    response.take(0)
}

/// An account as the checkout debug page lists it (camelCase in JSON).
#[derive(Debug, SurrealValue, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UserSummary {
    pub id: String,
    pub email: String,
    pub created_at: DateTime<Utc>,
    pub has_password: bool,
    pub trial_started: bool,
    pub trial_end_date: Option<DateTime<Utc>>,
    pub checkout_session_id: Option<String>,
    pub payment_session_id: Option<String>,
    pub subscription_id: Option<String>,
}

/// The newest accounts, newest first (the checkout debug page).
pub async fn recent_users(db: &Db, limit: usize) -> Result<Vec<UserSummary>, surrealdb::Error> {
    let mut response = db
        .query(
            "SELECT record::id(id) AS id, email, created_at, password_hash != NONE AS has_password, \
             trial_started, trial_end_date, checkout_session_id, payment_session_id, subscription_id \
             FROM user ORDER BY created_at DESC LIMIT $limit",
        )
        .bind(("limit", limit))
        .await?
        .check()?;
    response.take(0)
}

/// Whether the account's address was proved by a mailed link.
pub async fn email_verified(db: &Db, user_id: &str) -> Result<bool, surrealdb::Error> {
    let mut response = db
        .query("SELECT VALUE email_verified_at != NONE FROM ONLY type::record('user', $user)")
        .bind(("user", user_id.to_owned()))
        .await?
        .check()?;
    let verified: Option<bool> = response.take(0)?;
    Ok(verified.unwrap_or(false))
}

/// What deleting an account took with it (besides the account, its sessions and its links).
#[derive(Debug, Clone, Default, PartialEq, Eq, SurrealValue, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Erased {
    pub chats: u64,
    pub messages: u64,
    pub tasks: u64,
    pub funnel_conversations: u64,
    pub visitors: u64,
    pub events: u64,
}

/// Deletes an account and what it holds, in one transaction: its chats and their messages, its
/// tasks, sessions, sign-in links and password resets, its mails in the outbox, and the visitors
/// it was (found by its journeys, its events and its checkouts) with their funnel conversations,
/// journeys and analytics events. What another account shares with it (a visitor on a shared
/// computer who signed in as someone else) stays. The payment records (checkouts, subscriptions,
/// payment events) stay for the books, and so do the daily roll-ups, which hold no visitor.
/// `None`: no such account.
pub async fn erase(db: &Db, user_id: &str) -> Result<Option<Erased>, surrealdb::Error> {
    const ERASE: &str = "
        BEGIN TRANSACTION;
        LET $u = type::record('user', $id);
        LET $account = (SELECT email, payment_customer_id FROM ONLY $u);
        -- Another account's record (or a visitor who became it) stays.
        LET $ours = |$user: any| $user = NONE OR $user = $u;
        LET $visitors = array::distinct(array::concat(
            -- journey_user:[user, visitor, funnel] (migration 0022).
            (SELECT VALUE record::id(id)[1] FROM journey_user:[$u, NONE]..=[$u, {}]),
            (SELECT VALUE visitor FROM analytics_event WHERE user = $u),
            IF $account.payment_customer_id != NONE {
                (SELECT VALUE record::id(visitor) FROM checkout_session
                    WHERE customer_id = $account.payment_customer_id AND visitor != NONE)
            } ELSE { [] }
        )).filter(|$v| $v != NONE AND $ours((SELECT VALUE user FROM ONLY type::record('visitor', $v))));
        LET $chats = (SELECT VALUE id FROM chat WHERE user = $u);
        LET $messages = array::flatten($chats.map(|$c| (SELECT VALUE id FROM message WHERE chat = $c)));
        LET $tasks = (SELECT VALUE id FROM task WHERE user = $u);
        LET $events = array::union((SELECT VALUE id FROM analytics_event WHERE user = $u),
            -- (Both by the index on (user, visitor), migration 0019.)
            array::flatten($visitors.map(|$v| (SELECT VALUE id FROM analytics_event
                WHERE user = NONE AND visitor = $v))));
        -- A visitor's conversation ids follow from the funnel and the visitor
        -- (ConversationKey::conversation_id; migration 0008).
        LET $conversations = array::flatten($visitors.map(|$v| $funnels.map(|$f|
                string::slice(crypto::sha256(string::concat($f, ':', $v)), 0, 24))))
            .filter(|$c| $ours((SELECT VALUE user FROM ONLY type::record('funnel_conversation', $c)))
                AND record::exists(type::record('funnel_conversation', $c)));
        -- A visitor's journeys by their ids, [visitor, funnel] (migration 0019).
        LET $journeys = array::flatten($visitors.map(|$v| (SELECT *
            FROM journey:[$v, NONE]..=[$v, {}] WHERE user = NONE OR user = $u)));
        FOR $c IN $conversations {
            DELETE funnel_message:[$c, 0]..[$c, 1000000000];
            DELETE type::record('funnel_conversation', $c);
        };
        FOR $j IN $journeys {
            fn::journey_forget($j);
        };
        DELETE $messages;
        DELETE $chats;
        DELETE $tasks;
        DELETE $events;
        DELETE $visitors.map(|$v| type::record('visitor', $v));
        DELETE session WHERE user = $u;
        DELETE sign_in_token WHERE user = $u;
        DELETE password_reset WHERE user = $u;
        IF $account.email != NONE { DELETE mail_outbox WHERE recipient = $account.email; };
        LET $erased = IF $account = NONE { NONE } ELSE {
            { chats: count($chats), messages: count($messages), tasks: count($tasks),
              funnel_conversations: count($conversations), visitors: count($visitors),
              events: count($events) }
        };
        DELETE $u;
        COMMIT TRANSACTION;
        $erased;";
    let mut response = super::retry_on_conflict(|| async {
        db.query(ERASE)
            .bind(("id", user_id.to_owned()))
            .bind((
                "funnels",
                FunnelKind::ALL
                    .map(FunnelKind::as_str)
                    .map(str::to_owned)
                    .to_vec(),
            ))
            .await
            .and_then(super::check_transaction)
    })
    .await?;
    let last = response.num_statements() - 1;
    response.take(last)
}

/// An account as the operator's lookup shows it before deleting it: its id, address, and since
/// when it exists.
#[derive(Debug, Clone, SurrealValue)]
pub struct AccountSince {
    pub id: String,
    pub email: String,
    pub created_at: DateTime<Utc>,
}

/// The account with the address `email` (already normalised, as `Email` is), if any.
pub async fn account_since(db: &Db, email: &str) -> Result<Option<AccountSince>, surrealdb::Error> {
    let mut response = db
        .query(
            "SELECT record::id(id) AS id, email, created_at FROM user WHERE email = $email LIMIT 1",
        )
        .bind(("email", email.to_owned()))
        .await?
        .check()?;
    let rows: Vec<AccountSince> = response.take(0)?;
    Ok(rows.into_iter().next())
}
