//! The `session` table: signed-in browsers. The cookie holds a random secret; the row its hash.

use std::time::Duration;

use surrealdb::types::SurrealValue;

use super::Db;

/// Who a live session belongs to.
#[derive(Debug, Clone, SurrealValue)]
pub struct SessionUser {
    pub user_id: String,
    pub email: String,
}

pub async fn create(
    db: &Db,
    user_id: &str,
    token_hash: String,
    lifetime: Duration,
) -> Result<(), surrealdb::Error> {
    db.query(
        "CREATE session CONTENT { user: type::record('user', $user), token_hash: $hash, \
         expires_at: time::now() + type::duration($lifetime) }",
    )
    .bind(("user", user_id.to_owned()))
    .bind(("hash", token_hash))
    .bind(("lifetime", format!("{}s", lifetime.as_secs())))
    .await?
    .check()?;
    Ok(())
}

/// The user of an unexpired session, if the hash names one.
pub async fn find_user(db: &Db, token_hash: &str) -> Result<Option<SessionUser>, surrealdb::Error> {
    let mut response = db
        .query(
            "SELECT record::id(user) AS user_id, user.email AS email FROM session \
             WHERE token_hash = $hash AND expires_at > time::now() LIMIT 1",
        )
        .bind(("hash", token_hash.to_owned()))
        .await?
        .check()?;
    let rows: Vec<SessionUser> = response.take(0)?;
    Ok(rows.into_iter().next())
}

pub async fn delete(db: &Db, token_hash: &str) -> Result<(), surrealdb::Error> {
    // By the ids an indexed lookup finds: `DELETE table WHERE` would read the whole table.
    db.query("DELETE (SELECT VALUE id FROM session WHERE token_hash = $hash)")
        .bind(("hash", token_hash.to_owned()))
        .await?
        .check()?;
    Ok(())
}

/// Signs a user out everywhere (after a password reset).
pub async fn delete_all_of(db: &Db, user_id: &str) -> Result<(), surrealdb::Error> {
    db.query("DELETE (SELECT VALUE id FROM session WHERE user = type::record('user', $user))")
        .bind(("user", user_id.to_owned()))
        .await?
        .check()?;
    Ok(())
}
