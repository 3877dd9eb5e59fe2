//! The `password_reset` table: one row per reset mail, holding the link's hash. Redeeming is one
//! transaction around a conditional UPDATE, so a link works once even when it is clicked twice at
//! the same moment.

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

/// A new session made with a reset: the hash of its secret, and how long it lasts.
pub struct NewSession {
    pub token_hash: String,
    pub lifetime: Duration,
}

/// Spends an unused, unexpired reset link and, in the same transaction, sets the account's new
/// password (`password_hash`, chosen by whoever reads the mailbox: the address is proved, and the
/// password is the prover's), ends every other reset link and unused sign-in link of the account
/// and every session of it, and starts `session`. The account's user id; `None` for a link that
/// is not usable. One transaction, so no session of before the reset, nor one made while it runs,
/// is left beside the new password; and of any number of concurrent spends, one gets the account.
pub async fn redeem_with_password(
    db: &Db,
    token_hash: &str,
    password_hash: String,
    session: NewSession,
) -> Result<Option<String>, surrealdb::Error> {
    const REDEEM: &str = "
        BEGIN TRANSACTION;
        LET $reset = (UPDATE (SELECT VALUE id FROM password_reset WHERE token_hash = $hash)
            SET used_at = time::now() WHERE used_at = NONE AND expires_at > time::now()
            RETURN AFTER)[0];
        LET $u = $reset.user;
        IF $reset != NONE {
            UPDATE $u SET password_hash = $password, password_proved = true,
                email_verified_at = email_verified_at ?? time::now() RETURN NONE;
            UPDATE password_reset SET used_at = time::now()
                WHERE user = $u AND used_at = NONE RETURN NONE;
            UPDATE sign_in_token SET used = true, used_at = time::now()
                WHERE user = $u AND used = false RETURN NONE;
            DELETE (SELECT VALUE id FROM session WHERE user = $u);
            CREATE session CONTENT { user: $u, token_hash: $new_session,
                expires_at: time::now() + type::duration($lifetime), proved: true,
                password_pending: false } RETURN NONE;
        };
        COMMIT TRANSACTION;
        IF $reset = NONE { NONE } ELSE { record::id($u) };";
    let mut response = super::retry_on_conflict(|| async {
        db.query(REDEEM)
            .bind(("hash", token_hash.to_owned()))
            .bind(("password", password_hash.clone()))
            .bind(("new_session", session.token_hash.clone()))
            .bind(("lifetime", format!("{}s", session.lifetime.as_secs())))
            .await
            .and_then(super::check_transaction)
    })
    .await?;
    let last = response.num_statements() - 1;
    response.take(last)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Email;
    use crate::store::{migrate::migrated_memory_db, sessions, users};

    #[tokio::test]
    async fn a_reset_sets_the_provers_password_ends_every_session_and_starts_its_own_at_once() {
        let db = migrated_memory_db().await;
        let email = Email::parse("ann@example.com").expect("email");
        let user = users::create(&db, &email, Some("strangers-hash".to_owned()))
            .await
            .expect("account");
        sessions::create(
            &db,
            &user,
            "before".to_owned(),
            Duration::from_secs(3600),
            sessions::SessionStart::default(),
        )
        .await
        .expect("a session");
        create(&db, &user, "link".to_owned(), Duration::from_secs(3600))
            .await
            .expect("a link");
        create(
            &db,
            &user,
            "other-link".to_owned(),
            Duration::from_secs(3600),
        )
        .await
        .expect("another link");
        let new_session = || NewSession {
            token_hash: "after".to_owned(),
            lifetime: Duration::from_secs(3600),
        };
        let owner = redeem_with_password(&db, "link", "provers-hash".to_owned(), new_session())
            .await
            .expect("redeemed");
        assert_eq!(owner.as_deref(), Some(user.as_str()));
        assert!(
            sessions::find_user(&db, "before")
                .await
                .expect("read")
                .is_none()
        );
        let after = sessions::find_user(&db, "after")
            .await
            .expect("read")
            .expect("the reset's session");
        assert!(
            after.proved_with_password(),
            "the prover's password, proved"
        );
        assert!(
            !is_usable(&db, "other-link").await.expect("read"),
            "the other link ended"
        );
        assert_eq!(
            redeem_with_password(&db, "link", "again".to_owned(), new_session())
                .await
                .expect("answered"),
            None,
            "once"
        );
    }
}
