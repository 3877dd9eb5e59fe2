//! The `user` table: accounts. Ids leave the store as the record key alone (`user:abc` -> `abc`).

use chrono::{DateTime, Utc};
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

pub async fn set_password(db: &Db, user_id: &str, hash: String) -> Result<(), surrealdb::Error> {
    db.query("UPDATE type::record('user', $id) SET password_hash = $hash")
        .bind(("id", user_id.to_owned()))
        .bind(("hash", hash))
        .await?
        .check()?;
    Ok(())
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

/// The account's owner used a link mailed to its address: the address is theirs.
pub async fn mark_email_verified(db: &Db, user_id: &str) -> Result<(), surrealdb::Error> {
    db.query(
        "UPDATE type::record('user', $user) SET email_verified_at = time::now() \
         WHERE email_verified_at = NONE RETURN NONE",
    )
    .bind(("user", user_id.to_owned()))
    .await?
    .check()?;
    Ok(())
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
