//! The `webhook_debug` table: the spec's trail of subscription checks, for the checkout debug page.

use chrono::{DateTime, Utc};
use surrealdb::types::SurrealValue;

use crate::store::Db;

/// How long a check's row is kept.
pub const WEBHOOK_DEBUG_DAYS: u32 = 30;

/// One subscription check, as the checkout debug page lists it (camelCase in JSON).
#[derive(Debug, Clone, PartialEq, SurrealValue, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DebugCheck {
    pub email: Option<String>,
    pub session_id: Option<String>,
    pub payment_session_id: Option<String>,
    pub checked_at: DateTime<Utc>,
    pub user_agent: Option<String>,
    pub origin: Option<String>,
    pub pathname: Option<String>,
}

/// What a check records besides its time.
#[derive(Debug, Clone, Default)]
pub struct NewDebugCheck {
    pub user_agent: Option<String>,
    pub origin: Option<String>,
    pub pathname: Option<String>,
}

/// Records a member's subscription check, with the member's latest checkout's ids.
pub async fn record_check(
    db: &Db,
    user_id: &str,
    check: NewDebugCheck,
) -> Result<(), surrealdb::Error> {
    db.query(
        "LET $u = type::record('user', $user);
         LET $latest = (SELECT tracking_id, provider_session_id, created_at FROM checkout_session
             WHERE user = $u ORDER BY created_at DESC LIMIT 1)[0];
         CREATE webhook_debug CONTENT { user: $u, session_id: $latest.tracking_id,
             payment_session_id: $latest.provider_session_id, user_agent: $agent,
             origin: $origin, pathname: $path } RETURN NONE;",
    )
    .bind(("user", user_id.to_owned()))
    .bind(("agent", check.user_agent))
    .bind(("origin", check.origin))
    .bind(("path", check.pathname))
    .await?
    .check()?;
    Ok(())
}

/// The newest checks, newest first, at most `limit` (the checkout debug page).
pub async fn recent_checks(db: &Db, limit: usize) -> Result<Vec<DebugCheck>, surrealdb::Error> {
    let mut response = db
        .query(
            "SELECT user.email AS email, session_id, payment_session_id, checked_at, user_agent,
                 origin, pathname
             FROM webhook_debug ORDER BY checked_at DESC LIMIT $limit",
        )
        .bind(("limit", limit))
        .await?
        .check()?;
    response.take(0)
}

/// Deletes the checks older than [`WEBHOOK_DEBUG_DAYS`]: how many.
pub async fn forget_old_checks(db: &Db) -> Result<u64, surrealdb::Error> {
    let mut response = db
        .query(
            "RETURN count(DELETE webhook_debug WHERE checked_at < time::now() - type::duration($age)
                 RETURN BEFORE)",
        )
        .bind(("age", format!("{WEBHOOK_DEBUG_DAYS}d")))
        .await?
        .check()?;
    let deleted: Option<u64> = response.take(0)?;
    Ok(deleted.unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Email;
    use crate::store::{migrate::migrated_memory_db, users};

    #[tokio::test]
    async fn a_check_is_kept_for_thirty_days_with_the_members_latest_checkout() {
        let db = migrated_memory_db().await;
        let email = Email::parse("ann@example.com").expect("email");
        let user = users::create(&db, &email, None).await.expect("account");
        record_check(
            &db,
            &user,
            NewDebugCheck {
                user_agent: Some("Firefox".to_owned()),
                origin: Some("https://help.example".to_owned()),
                pathname: Some("/".to_owned()),
            },
        )
        .await
        .expect("recorded");
        let checks = recent_checks(&db, 10).await.expect("read");
        assert_eq!(checks.len(), 1);
        assert_eq!(checks[0].email.as_deref(), Some("ann@example.com"));
        assert_eq!(checks[0].user_agent.as_deref(), Some("Firefox"));
        assert_eq!(checks[0].session_id, None, "no checkout yet");
        assert_eq!(
            forget_old_checks(&db).await.expect("forget"),
            0,
            "a fresh one stays"
        );
        db.query("UPDATE webhook_debug SET checked_at = time::now() - 31d")
            .await
            .expect("aged");
        assert_eq!(forget_old_checks(&db).await.expect("forget"), 1);
        assert!(recent_checks(&db, 10).await.expect("read").is_empty());
    }
}
