//! The `session` table: signed-in browsers. The cookie holds a random secret; the row its hash.

use std::time::Duration;

use surrealdb::types::SurrealValue;

use super::Db;

/// Who a live session belongs to, and what its holder has proved of the account's address.
#[derive(Debug, Clone, SurrealValue)]
pub struct SessionUser {
    pub user_id: String,
    pub email: String,
    /// The session began with the proof that took the account over: it may only choose a new
    /// password (or sign out) until it has.
    pub password_pending: bool,
    /// The session began with a mailed link or a reset link.
    pub by_proof: bool,
    /// The account's address was proved by a mailed link.
    pub email_verified: bool,
    pub has_password: bool,
    /// The current password was chosen by someone who had proved the address.
    pub password_proved: bool,
}

impl SessionUser {
    /// Whether this session's holder has proved the account's address: the address is proved,
    /// and the session either holds a password its prover chose, or (an account without a
    /// password) began with the proof. Held payments wait for this.
    pub fn holds_proved_address(&self) -> bool {
        self.email_verified
            && !self.password_pending
            && if self.has_password {
                self.password_proved
            } else {
                self.by_proof
            }
    }

    /// Admin rights (with `admin.emails`): an address proved by whoever holds the account's
    /// current password.
    pub fn proved_with_password(&self) -> bool {
        self.email_verified && !self.password_pending && self.has_password && self.password_proved
    }
}

/// How a session began.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionStart {
    /// With a mailed link or a reset link.
    pub by_proof: bool,
    /// With the proof that took the account over, from an account that had a password.
    pub password_pending: bool,
}

pub async fn create(
    db: &Db,
    user_id: &str,
    token_hash: String,
    lifetime: Duration,
    start: SessionStart,
) -> Result<(), surrealdb::Error> {
    db.query(
        "CREATE session CONTENT { user: type::record('user', $user), token_hash: $hash, \
         expires_at: time::now() + type::duration($lifetime), proved: $proved, \
         password_pending: $pending }",
    )
    .bind(("user", user_id.to_owned()))
    .bind(("hash", token_hash))
    .bind(("lifetime", format!("{}s", lifetime.as_secs())))
    .bind(("proved", start.by_proof))
    .bind(("pending", start.password_pending))
    .await?
    .check()?;
    Ok(())
}

/// Creates a session only while the account's password is still `password_hash` (the one just
/// checked): a sign-in whose hash was checked before a proof of the address took the password
/// away gets no session. `false` when it changed.
pub async fn create_if_password_is(
    db: &Db,
    user_id: &str,
    token_hash: String,
    lifetime: Duration,
    start: SessionStart,
    password_hash: &str,
) -> Result<bool, surrealdb::Error> {
    const CREATE: &str = "
        BEGIN TRANSACTION;
        LET $u = type::record('user', $user);
        -- A write to the account, not a read: a proof or a reset changing the password at the
        -- same moment then conflicts with this transaction (one of them retries), which a read
        -- would not under snapshot isolation.
        LET $same = array::len(UPDATE $u SET last_sign_in_at = time::now()
            WHERE password_hash = $password RETURN VALUE id) > 0;
        IF $same {
            CREATE session CONTENT { user: $u, token_hash: $hash,
                expires_at: time::now() + type::duration($lifetime), proved: $proved,
                password_pending: $pending } RETURN NONE;
        };
        COMMIT TRANSACTION;
        $same;";
    let mut response = super::retry_on_conflict(|| async {
        db.query(CREATE)
            .bind(("user", user_id.to_owned()))
            .bind(("hash", token_hash.clone()))
            .bind(("lifetime", format!("{}s", lifetime.as_secs())))
            .bind(("proved", start.by_proof))
            .bind(("pending", start.password_pending))
            .bind(("password", password_hash.to_owned()))
            .await
            .and_then(super::check_transaction)
    })
    .await?;
    let last = response.num_statements() - 1;
    let same: Option<bool> = response.take(last)?;
    Ok(same.unwrap_or(false))
}

/// The user of an unexpired session, if the hash names one.
pub async fn find_user(db: &Db, token_hash: &str) -> Result<Option<SessionUser>, surrealdb::Error> {
    let mut response = db
        .query(
            "SELECT record::id(user) AS user_id, account.email AS email, \
             password_pending ?? false AS password_pending, proved ?? false AS by_proof, \
             account.verified AS email_verified, account.has_password AS has_password, \
             account.password_proved AS password_proved \
             FROM (SELECT user, password_pending, proved, (SELECT email, \
                 email_verified_at != NONE AS verified, password_hash != NONE AS has_password, \
                 password_proved ?? false AS password_proved FROM ONLY $parent.user) AS account \
               FROM session WHERE token_hash = $hash AND expires_at > time::now() LIMIT 1) \
             WHERE account != NONE",
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

/// Which of `hashes` name no session any more (it was signed out, ended by a reset or a proof
/// of the address, or its account erased: each deletes the row). One read through the token's
/// unique index. An expired session's row is still there: it ends a socket only at its next
/// handshake, as it always did.
pub async fn ended_among(db: &Db, hashes: &[String]) -> Result<Vec<String>, surrealdb::Error> {
    let mut response = db
        .query("SELECT VALUE token_hash FROM session WHERE token_hash IN $hashes")
        .bind(("hashes", hashes.to_vec()))
        .await?
        .check()?;
    let open: Vec<String> = response.take(0)?;
    let open: std::collections::HashSet<String> = open.into_iter().collect();
    Ok(hashes
        .iter()
        .filter(|hash| !open.contains(*hash))
        .cloned()
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Email;
    use crate::store::{migrate::migrated_memory_db, users};

    #[tokio::test]
    async fn a_sign_in_gets_its_session_only_while_the_password_it_checked_is_the_accounts() {
        let db = migrated_memory_db().await;
        let email = Email::parse("ann@example.com").expect("email");
        let user = users::create(&db, &email, Some("first-hash".to_owned()))
            .await
            .expect("account");
        let day = Duration::from_secs(86_400);
        let start = SessionStart::default();
        assert!(
            create_if_password_is(&db, &user, "one".to_owned(), day, start, "first-hash")
                .await
                .expect("created")
        );
        // The password changed while the sign-in's hash ran (a proof took it away, say).
        db.query("UPDATE user SET password_hash = 'second-hash'")
            .await
            .expect("set");
        assert!(
            !create_if_password_is(&db, &user, "two".to_owned(), day, start, "first-hash")
                .await
                .expect("answered")
        );
        assert!(find_user(&db, "two").await.expect("read").is_none());
        // A first password is set only while there is none.
        assert!(
            !users::set_first_password(&db, &user, "third-hash".to_owned(), false)
                .await
                .expect("answered")
        );
    }

    #[tokio::test]
    async fn once_the_address_is_proved_only_its_prover_sets_the_first_password() {
        let db = migrated_memory_db().await;
        let email = Email::parse("ann@example.com").expect("email");
        let user = users::create(&db, &email, None).await.expect("account");
        // A setup by someone who has not proved the address, landing after the proof.
        db.query("UPDATE user SET email_verified_at = time::now()")
            .await
            .expect("proved");
        assert!(
            !users::set_first_password(&db, &user, "strangers".to_owned(), false)
                .await
                .expect("answered")
        );
        assert!(
            users::set_first_password(&db, &user, "provers".to_owned(), true)
                .await
                .expect("answered")
        );
    }

    #[tokio::test]
    async fn the_sessions_ended_are_told_apart_from_the_open_ones() {
        let db = migrated_memory_db().await;
        let email = Email::parse("ann@example.com").expect("email");
        let user = users::create(&db, &email, None).await.expect("account");
        let day = Duration::from_secs(86_400);
        for hash in ["one", "two", "three"] {
            create(&db, &user, hash.to_owned(), day, SessionStart::default())
                .await
                .expect("a session");
        }
        delete(&db, "two").await.expect("signed out");
        let asked = ["one", "two", "three", "never"].map(str::to_owned);
        assert_eq!(
            ended_among(&db, &asked).await.expect("read"),
            ["two", "never"]
        );
        delete_all_of(&db, &user).await.expect("reset");
        assert_eq!(ended_among(&db, &asked).await.expect("read").len(), 4);
        assert!(ended_among(&db, &[]).await.expect("read").is_empty());
    }
}
