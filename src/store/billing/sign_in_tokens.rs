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

/// Whether the success page's checkout token is still good, without spending it (account setup
/// reads it first). A mailed link is never an account-setup right: it signs in through
/// [`redeem_sign_in_token`].
pub async fn peek_checkout_token(
    db: &Db,
    token_hash: &str,
) -> Result<Option<TokenOwner>, surrealdb::Error> {
    let mut response = db
        .query(
            "SELECT record::id(user) AS user_id, email, checkout_session_id, \
             purpose = 'mail' AS mailed FROM sign_in_token \
             WHERE token_hash = $hash AND purpose = 'checkout' AND used = false \
             AND expires_at > time::now() AND user.email_verified_at = NONE LIMIT 1",
        )
        .bind(("hash", token_hash.to_owned()))
        .await?
        .check()?;
    let rows: Vec<TokenOwner> = response.take(0)?;
    Ok(rows.into_iter().next())
}

/// The account an unused, unexpired sign-in token is for, without spending it.
pub async fn sign_in_token_owner(
    db: &Db,
    token_hash: &str,
) -> Result<Option<String>, surrealdb::Error> {
    let mut response = db
        .query(
            "SELECT VALUE record::id(user) FROM sign_in_token \
             WHERE token_hash = $hash AND used = false AND expires_at > time::now() LIMIT 1",
        )
        .bind(("hash", token_hash.to_owned()))
        .await?
        .check()?;
    let owners: Vec<String> = response.take(0)?;
    Ok(owners.into_iter().next())
}

/// A spent token: its owner, and what spending it did to the account.
#[derive(Debug, Clone, SurrealValue)]
pub struct Redeemed {
    pub user_id: String,
    pub email: String,
    pub checkout_session_id: Option<String>,
    /// Sent by mail (not the success page's cookie): its use proved the address.
    pub mailed: bool,
    /// The proof took the account over: every session of it ended (sign them out on every
    /// process) and its unused checkout links with them.
    pub took_over: bool,
    /// The password set before the proof is gone: the prover chooses a new one before going on.
    pub password_pending: bool,
}

/// Spends a token: exactly one of any number of concurrent calls gets its owner.
///
/// A mailed link (purpose `mail`) proves the address, and proving an address takes the account
/// (Sudhodanan and Paverd, "Pre-hijacked accounts", 2022): when the address is proved for the
/// first time, or the account's password was not chosen by someone who had proved it, every
/// session of the account ends, its unused checkout links are spent, and a password set before
/// the proof is removed, so that whoever signed up with the address first keeps nothing. All of
/// it in one transaction with spending the token, and with `session` (a new session's hash and
/// lifetime) created for the token's owner when given: a proof or a password reset committing at
/// the same moment then ends that session too, or makes this redeem retry; no session made
/// beside the redeem can outlive them.
pub async fn redeem_sign_in_token(
    db: &Db,
    token_hash: &str,
    session: Option<(String, std::time::Duration)>,
) -> Result<Option<Redeemed>, surrealdb::Error> {
    const REDEEM: &str = "
        BEGIN TRANSACTION;
        LET $link = (UPDATE (SELECT VALUE id FROM sign_in_token WHERE token_hash = $hash)
            SET used = true, used_at = time::now()
            WHERE used = false AND expires_at > time::now() RETURN AFTER)[0];
        LET $mailed = $link != NONE AND $link.purpose = 'mail';
        -- A checkout's token sets up an account nobody has proved yet; once the owner proved
        -- the address, it is spent and signs nobody in.
        LET $refused = $link != NONE AND !$mailed
            AND (SELECT VALUE email_verified_at FROM ONLY $link.user) != NONE;
        LET $u = $link.user;
        LET $account = IF $mailed {
            (SELECT email_verified_at, password_hash != NONE AS has_password,
                password_proved ?? false AS password_proved FROM ONLY $u)
        } ELSE { NONE };
        LET $takes = $account != NONE AND ($account.email_verified_at = NONE
            OR ($account.has_password AND !$account.password_proved));
        LET $pending = $takes AND $account.has_password;
        IF $takes {
            DELETE (SELECT VALUE id FROM session WHERE user = $u);
            UPDATE (SELECT VALUE id FROM sign_in_token WHERE user = $u) SET used_at = time::now(),
                used = true WHERE used = false AND purpose = 'checkout' RETURN NONE;
        };
        IF $pending { UPDATE $u SET password_hash = NONE, password_proved = false RETURN NONE; };
        IF $account != NONE AND $account.email_verified_at = NONE {
            UPDATE $u SET email_verified_at = time::now() RETURN NONE;
        };
        IF $link != NONE AND !$refused AND $new_session != NONE {
            CREATE session CONTENT { user: $link.user, token_hash: $new_session,
                expires_at: time::now() + type::duration($lifetime), proved: $mailed,
                password_pending: $pending } RETURN NONE;
        };
        COMMIT TRANSACTION;
        IF $link = NONE OR $refused { NONE } ELSE {
            { user_id: record::id($link.user), email: $link.email,
              checkout_session_id: $link.checkout_session_id, mailed: $mailed,
              took_over: $takes, password_pending: $pending }
        };";
    let mut response = crate::store::retry_on_conflict(|| async {
        db.query(REDEEM)
            .bind(("hash", token_hash.to_owned()))
            .bind((
                "new_session",
                session.as_ref().map(|(hash, _)| hash.clone()),
            ))
            .bind((
                "lifetime",
                format!(
                    "{}s",
                    session
                        .as_ref()
                        .map_or(0, |(_, lifetime)| lifetime.as_secs())
                ),
            ))
            .await
            .and_then(crate::store::check_transaction)
    })
    .await?;
    let last = response.num_statements() - 1;
    response.take(last)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::domain::Email;
    use crate::store::sessions::{self, SessionStart};
    use crate::store::{migrate::migrated_memory_db, users};

    async fn account(db: &Db, email: &str, password: Option<&str>) -> String {
        let email = Email::parse(email).expect("email");
        users::create(db, &email, password.map(str::to_owned))
            .await
            .expect("account")
    }

    async fn token(db: &Db, user: &str, secret: &str, purpose: &str) {
        create_sign_in_token(
            db,
            user,
            "owner@example.com",
            "cs_test",
            secret.to_owned(),
            purpose,
            Utc::now() + chrono::Duration::hours(1),
        )
        .await
        .expect("token");
    }

    async fn session(db: &Db, user: &str, hash: &str) {
        sessions::create(
            db,
            user,
            hash.to_owned(),
            Duration::from_secs(3600),
            SessionStart::default(),
        )
        .await
        .expect("session");
    }

    #[tokio::test]
    async fn a_mailed_link_takes_an_account_whose_password_came_before_the_proof() {
        let db = migrated_memory_db().await;
        let user = account(&db, "owner@example.com", Some("stranger-hash")).await;
        session(&db, &user, "strangers-session").await;
        token(&db, &user, "checkout-link", "checkout").await;
        token(&db, &user, "mailed-link", "mail").await;

        let redeemed = redeem_sign_in_token(&db, "mailed-link", None)
            .await
            .expect("redeem")
            .expect("a usable link");
        assert!(redeemed.mailed && redeemed.took_over && redeemed.password_pending);
        assert!(
            sessions::find_user(&db, "strangers-session")
                .await
                .expect("read")
                .is_none(),
            "the session from before the proof ended"
        );
        let credentials =
            users::credentials_by_email(&db, &Email::parse("owner@example.com").expect("email"))
                .await
                .expect("read")
                .expect("the account");
        assert_eq!(credentials.password_hash, None, "the old password is gone");
        assert!(
            peek_checkout_token(&db, "checkout-link")
                .await
                .expect("read")
                .is_none(),
            "the checkout link is spent"
        );
        assert!(
            redeem_sign_in_token(&db, "mailed-link", None)
                .await
                .expect("redeem")
                .is_none(),
            "once"
        );
    }

    #[tokio::test]
    async fn the_session_a_link_signs_in_is_made_with_the_redeem() {
        let db = migrated_memory_db().await;
        let user = account(&db, "owner@example.com", None).await;
        token(&db, &user, "mailed-link", "mail").await;
        let redeemed = redeem_sign_in_token(
            &db,
            "mailed-link",
            Some(("new-session".to_owned(), Duration::from_secs(3600))),
        )
        .await
        .expect("redeem")
        .expect("a usable link");
        assert!(redeemed.mailed);
        let session = sessions::find_user(&db, "new-session")
            .await
            .expect("read")
            .expect("the session");
        assert!(session.by_proof && session.email_verified && !session.password_pending);
        // A spent link makes none.
        assert!(
            redeem_sign_in_token(
                &db,
                "mailed-link",
                Some(("another".to_owned(), Duration::from_secs(3600)))
            )
            .await
            .expect("redeem")
            .is_none()
        );
        assert!(
            sessions::find_user(&db, "another")
                .await
                .expect("read")
                .is_none()
        );
    }

    #[tokio::test]
    async fn a_checkout_link_proves_nothing_and_takes_nothing() {
        let db = migrated_memory_db().await;
        let user = account(&db, "owner@example.com", None).await;
        session(&db, &user, "first-session").await;
        token(&db, &user, "checkout-link", "checkout").await;
        let redeemed = redeem_sign_in_token(&db, "checkout-link", None)
            .await
            .expect("redeem")
            .expect("a usable link");
        assert!(!redeemed.mailed && !redeemed.took_over && !redeemed.password_pending);
        let still = sessions::find_user(&db, "first-session")
            .await
            .expect("read")
            .expect("the session stays");
        assert!(!still.email_verified);
    }

    #[tokio::test]
    async fn a_second_proof_takes_nothing_once_the_password_is_the_provers() {
        let db = migrated_memory_db().await;
        let user = account(&db, "owner@example.com", None).await;
        token(&db, &user, "first-link", "mail").await;
        let first = redeem_sign_in_token(&db, "first-link", None)
            .await
            .expect("redeem")
            .expect("usable");
        assert!(first.took_over && !first.password_pending);
        assert!(
            users::set_first_password(&db, &user, "owners-hash".to_owned(), true)
                .await
                .expect("password")
        );
        session(&db, &user, "owners-session").await;
        token(&db, &user, "second-link", "mail").await;
        let second = redeem_sign_in_token(&db, "second-link", None)
            .await
            .expect("redeem")
            .expect("usable");
        assert!(!second.took_over && !second.password_pending);
        let owner = sessions::find_user(&db, "owners-session")
            .await
            .expect("read")
            .expect("the owner's session stays");
        assert!(owner.email_verified && owner.has_password && owner.password_proved);
        assert!(owner.proved_with_password());
    }
}
