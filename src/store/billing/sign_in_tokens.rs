//! The `sign_in_token` table: one-time sign-in tokens (the store keeps their hashes only).

use chrono::{DateTime, Utc};
use surrealdb::types::SurrealValue;

use crate::store::Db;

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
    /// Sent by mail (not the success page's cookie): its use proves the address.
    pub mailed: bool,
}

/// Whether a token is still good, without spending it (account setup reads it first).
pub async fn peek_sign_in_token(
    db: &Db,
    token_hash: &str,
) -> Result<Option<TokenOwner>, surrealdb::Error> {
    let mut response = db
        .query(
            "SELECT record::id(user) AS user_id, email, checkout_session_id, \
             purpose = 'mail' AS mailed FROM sign_in_token \
             WHERE token_hash = $hash AND used = false AND expires_at > time::now() LIMIT 1",
        )
        .bind(("hash", token_hash.to_owned()))
        .await?
        .check()?;
    let rows: Vec<TokenOwner> = response.take(0)?;
    Ok(rows.into_iter().next())
}

/// Spends a token: exactly one of any number of concurrent calls gets its owner. A mailed link
/// (purpose `mail`) proves the address: the account's email is marked verified.
pub async fn redeem_sign_in_token(
    db: &Db,
    token_hash: &str,
) -> Result<Option<TokenOwner>, surrealdb::Error> {
    let owner = crate::store::retry_on_conflict(|| async {
        let mut response = db
            .query(
                "UPDATE (SELECT VALUE id FROM sign_in_token WHERE token_hash = $hash) \
                 SET used = true, used_at = time::now() \
                 WHERE used = false AND expires_at > time::now() \
                 RETURN record::id(user) AS user_id, email, checkout_session_id, \
                 purpose = 'mail' AS mailed",
            )
            .bind(("hash", token_hash.to_owned()))
            .await?
            .check()?;
        let rows: Vec<TokenOwner> = response.take(0)?;
        Ok(rows.into_iter().next())
    })
    .await?;
    if let Some(owner) = owner.as_ref().filter(|owner| owner.mailed) {
        crate::store::users::mark_email_verified(db, &owner.user_id).await?;
    }
    Ok(owner)
}
