//! The `password_reset` table: one row per reset mail, holding the link's hash. Redeeming is one
//! conditional UPDATE, so a link works once even when it is clicked twice at the same moment.

use std::time::Duration;

use super::Db;

pub async fn create(
    db: &Db,
    user_id: &str,
    token_hash: String,
    lifetime: Duration,
) -> Result<(), surrealdb::Error> {
    db.query(
        "CREATE password_reset CONTENT { user: type::record('user', $user), token_hash: $hash, \
         expires_at: time::now() + type::duration($lifetime) }",
    )
    .bind(("user", user_id.to_owned()))
    .bind(("hash", token_hash))
    .bind(("lifetime", format!("{}s", lifetime.as_secs())))
    .await?
    .check()?;
    Ok(())
}

/// Marks an unused, unexpired reset used and returns its user; `None` for anything else.
/// A used link proves the address: the account's email is marked verified.
pub async fn redeem(db: &Db, token_hash: &str) -> Result<Option<String>, surrealdb::Error> {
    let user = super::retry_on_conflict(|| async {
        let mut response = db
            .query(
                "UPDATE (SELECT VALUE id FROM password_reset WHERE token_hash = $hash) \
                 SET used_at = time::now() WHERE used_at = NONE AND expires_at > time::now() \
                 RETURN VALUE record::id(user)",
            )
            .bind(("hash", token_hash.to_owned()))
            .await?
            .check()?;
        let users: Vec<String> = response.take(0)?;
        Ok(users.into_iter().next())
    })
    .await?;
    if let Some(user_id) = &user {
        // The link came by mail: whoever used it reads the account's mailbox.
        super::users::mark_email_verified(db, user_id).await?;
    }
    Ok(user)
}

/// Ends every other reset link and every unused mail sign-in link of an account (after its
/// password was reset: an older link in a mailbox someone else reads must not work any more).
pub async fn end_other_links(db: &Db, user_id: &str) -> Result<(), surrealdb::Error> {
    super::retry_on_conflict(|| async {
        db.query(
            "UPDATE password_reset SET used_at = time::now() \
               WHERE user = type::record('user', $user) AND used_at = NONE RETURN NONE; \
             UPDATE sign_in_token SET used = true, used_at = time::now() \
               WHERE user = type::record('user', $user) AND used = false RETURN NONE;",
        )
        .bind(("user", user_id.to_owned()))
        .await?
        .check()?;
        Ok(())
    })
    .await
}

/// Whether a reset link can still be used (the page asks before showing the form).
pub async fn is_usable(db: &Db, token_hash: &str) -> Result<bool, surrealdb::Error> {
    let mut response = db
        .query(
            "SELECT VALUE count() FROM password_reset \
             WHERE token_hash = $hash AND used_at = NONE AND expires_at > time::now() GROUP ALL",
        )
        .bind(("hash", token_hash.to_owned()))
        .await?
        .check()?;
    let count: Option<u64> = response.take(0)?;
    Ok(count.unwrap_or(0) > 0)
}
