//! The `mail_outbox` table: every mail the product sends, stored before any delivery is tried.
//!
//! Besides the fields of the migration, rows carry two schemaless fields: `last_error` (why the last
//! delivery failed) and `claimed_until` (a lease: while it lies in the future one sender owns the row,
//! so the retry worker never sends a mail that `Mailer::send`, or another process, is delivering).
//! A lease that outlives a crashed sender simply expires and the row becomes due again.

use std::time::Duration;

use chrono::{DateTime, Utc};
use surrealdb::types::SurrealValue;

use crate::store::Db;

/// Record ids are handed out as `mail_outbox:<key>`, like other tables' ids.
const TABLE_PREFIX: &str = "mail_outbox:";

/// A mail as stored, read back for the retry worker, the admin pages and tests.
#[derive(Debug, Clone)]
pub struct OutboxEntry {
    /// `mail_outbox:<key>`, as returned by `Mailer::send`.
    pub id: String,
    pub recipient: String,
    pub subject: String,
    pub body: String,
    /// `MailKind::as_str` of the mail when it was stored.
    pub kind: String,
    pub created_at: DateTime<Utc>,
    pub sent_at: Option<DateTime<Utc>>,
    pub attempts: u32,
    pub last_error: Option<String>,
}

#[derive(Debug, SurrealValue)]
struct OutboxRow {
    key: String,
    recipient: String,
    subject: String,
    body: String,
    kind: String,
    created_at: DateTime<Utc>,
    sent_at: Option<DateTime<Utc>>,
    attempts: i64,
    last_error: Option<String>,
}

impl From<OutboxRow> for OutboxEntry {
    fn from(row: OutboxRow) -> Self {
        OutboxEntry {
            id: format!("{TABLE_PREFIX}{}", row.key),
            recipient: row.recipient,
            subject: row.subject,
            body: row.body,
            kind: row.kind,
            created_at: row.created_at,
            sent_at: row.sent_at,
            attempts: u32::try_from(row.attempts).unwrap_or(0),
            last_error: row.last_error,
        }
    }
}

const ENTRY_FIELDS: &str = "record::id(id) AS key, recipient, subject, body, kind, created_at, \
                            sent_at, attempts, last_error";

/// The key part of `mail_outbox:<key>` (a bare key is accepted as well).
pub(crate) fn key_of(id: &str) -> &str {
    id.strip_prefix(TABLE_PREFIX).unwrap_or(id)
}

/// Reads one stored mail by the id `Mailer::send` returned.
pub async fn find(db: &Db, id: &str) -> Result<Option<OutboxEntry>, surrealdb::Error> {
    let mut response = db
        .query(format!(
            "SELECT {ENTRY_FIELDS} FROM type::record('mail_outbox', $key)"
        ))
        .bind(("key", key_of(id).to_owned()))
        .await?
        .check()?;
    let rows: Vec<OutboxRow> = response.take(0)?;
    Ok(rows.into_iter().next().map(OutboxEntry::from))
}

/// What a delivery needs of a row.
#[derive(Debug, Clone)]
pub(crate) struct MailContent {
    pub recipient: String,
    pub subject: String,
    pub body: String,
    pub kind: String,
}

impl OutboxEntry {
    pub(crate) fn into_parts(self) -> (String, MailContent) {
        let content = MailContent {
            recipient: self.recipient,
            subject: self.subject,
            body: self.body,
            kind: self.kind,
        };
        (self.id, content)
    }
}

/// Stores a mail already claimed by its sender for `lease`; returns its id (`mail_outbox:<key>`).
pub(crate) async fn insert_claimed(
    db: &Db,
    mail: &MailContent,
    lease: Duration,
) -> Result<String, surrealdb::Error> {
    let mut response = db
        .query(
            "CREATE mail_outbox SET pending = true, recipient = $recipient, subject = $subject, body = $body, \
             kind = $kind, claimed_until = time::now() + type::duration($lease) \
             RETURN VALUE record::id(id)",
        )
        .bind(("recipient", mail.recipient.clone()))
        .bind(("subject", mail.subject.clone()))
        .bind(("body", mail.body.clone()))
        .bind(("kind", mail.kind.clone()))
        .bind(("lease", seconds(lease)))
        .await?
        .check()?;
    let key: Option<String> = response.take(0)?;
    key.map(|key| format!("{TABLE_PREFIX}{key}"))
        .ok_or_else(|| surrealdb::Error::internal("CREATE returned no id".to_owned()))
}

/// Unsent mail no sender holds and that has attempts left, oldest first.
pub(crate) async fn due(
    db: &Db,
    max_attempts: u32,
    limit: usize,
) -> Result<Vec<OutboxEntry>, surrealdb::Error> {
    let mut response = db
        .query(format!(
            // `pending` is indexed: the pass reads the queue, not every mail ever sent.
            "SELECT {ENTRY_FIELDS} FROM mail_outbox \
             WHERE pending = true AND attempts < $max_attempts \
             AND (claimed_until = NONE OR claimed_until <= time::now()) \
             ORDER BY created_at LIMIT $limit"
        ))
        .bind(("max_attempts", i64::from(max_attempts)))
        .bind(("limit", i64::try_from(limit).unwrap_or(i64::MAX)))
        .await?
        .check()?;
    let rows: Vec<OutboxRow> = response.take(0)?;
    Ok(rows.into_iter().map(OutboxEntry::from).collect())
}

/// Takes the lease on a due row. `false` when another sender got there first or the row was
/// delivered meanwhile: the condition is re-checked inside the update, so only one claim wins.
/// A claim whose commit met another writer's (two passes claiming the row at once, as each
/// fulfilment starts one) wrote nothing and is `false` too: the row is the other's, or due again
/// at the next pass.
pub(crate) async fn claim(
    db: &Db,
    id: &str,
    max_attempts: u32,
    lease: Duration,
) -> Result<bool, surrealdb::Error> {
    let claimed = db
        .query(
            "UPDATE type::record('mail_outbox', $key) \
             SET claimed_until = time::now() + type::duration($lease) \
             WHERE sent_at = NONE AND attempts < $max_attempts \
             AND (claimed_until = NONE OR claimed_until <= time::now()) \
             RETURN VALUE record::id(id)",
        )
        .bind(("key", key_of(id).to_owned()))
        .bind(("lease", seconds(lease)))
        .bind(("max_attempts", i64::from(max_attempts)))
        .await
        .and_then(|response| response.check())
        .and_then(|mut response| response.take::<Vec<String>>(0));
    match claimed {
        Ok(claimed) => Ok(!claimed.is_empty()),
        Err(error) if super::billing::is_conflict(&error) => {
            tracing::debug!(outbox_id = %id, %error, "another pass claimed the mail at once");
            Ok(false)
        }
        Err(error) => Err(error),
    }
}

/// Records a delivery: the row leaves the queue for good. `kept_body`, when given, replaces the
/// stored body (a sent mail is kept without its one-time links' secrets).
pub(crate) async fn mark_sent(
    db: &Db,
    id: &str,
    kept_body: Option<String>,
) -> Result<(), surrealdb::Error> {
    db.query(
        "UPDATE type::record('mail_outbox', $key) \
         SET sent_at = time::now(), pending = false, attempts += 1, last_error = NONE, claimed_until = NONE, \
             body = $kept ?? body",
    )
    .bind(("key", key_of(id).to_owned()))
    .bind(("kept", kept_body))
    .await?
    .check()?;
    Ok(())
}

/// Records a failed attempt and releases the lease, so the next retry pass may take the row;
/// returns the attempts made so far.
pub(crate) async fn mark_failed(db: &Db, id: &str, error: &str) -> Result<u32, surrealdb::Error> {
    let mut response = db
        .query(
            "UPDATE type::record('mail_outbox', $key) \
             SET attempts += 1, last_error = $error, claimed_until = NONE \
             RETURN VALUE attempts",
        )
        .bind(("key", key_of(id).to_owned()))
        .bind(("error", error.to_owned()))
        .await?
        .check()?;
    let attempts: Vec<i64> = response.take(0)?;
    Ok(attempts
        .into_iter()
        .next()
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(0))
}

/// SurrealQL duration text (`type::duration` parses it), in whole seconds.
fn seconds(duration: Duration) -> String {
    format!("{}s", duration.as_secs().max(1))
}
