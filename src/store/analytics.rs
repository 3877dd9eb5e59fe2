//! The `analytics_event` table: what the product records of visits and actions.

use std::time::Duration;

use surrealdb::types::{Datetime, SurrealValue};

use super::Db;

/// One analytics event as stored.
#[derive(Debug, Clone, SurrealValue)]
pub struct NewAnalyticsEvent {
    pub name: String,
    pub properties: serde_json::Value,
    pub visitor: Option<String>,
    pub path: Option<String>,
    /// The account, once the visitor has one and is signed in.
    pub user: Option<surrealdb::types::RecordId>,
    /// Where the visitor first came from, when the writer knows it already (a funnel
    /// conversation's attribution); otherwise the database fills it in (migration 0015).
    pub first_touch: Option<serde_json::Value>,
}

/// Stores one event and returns its record id (`analytics_event:…`).
pub async fn record(db: &Db, event: NewAnalyticsEvent) -> Result<String, surrealdb::Error> {
    let mut response = super::in_turn_bounded(async {
        db.query("CREATE analytics_event CONTENT $event RETURN VALUE <string> id")
            .bind(("event", event))
            .await?
            .check()
    })
    .await?;
    let id: Option<String> = response.take(0)?;
    id.ok_or_else(|| surrealdb::Error::internal("CREATE returned no id".to_owned()))
}

/// Records an event the server itself saw, for a user. Analytics never fails the action it
/// describes, so a store error is logged and swallowed.
pub async fn record_server_event(
    db: &Db,
    name: crate::domain::analytics::EventName,
    user_id: Option<&str>,
    properties: serde_json::Value,
) {
    let result = db
        .query(
            "CREATE analytics_event CONTENT { name: $name, properties: $properties, \
             user: IF $user THEN type::record('user', $user) ELSE NONE END }",
        )
        .bind(("name", name.as_str()))
        .bind(("properties", properties))
        .bind(("user", user_id.map(str::to_owned)))
        .await
        .and_then(|response| response.check());
    if let Err(error) = result {
        tracing::warn!(%error, event = %name, "cannot record an analytics event");
    }
}

/// How many events of this name are stored (the admin dashboard and the tests read it).
pub async fn count_named(db: &Db, name: &str) -> Result<u64, surrealdb::Error> {
    let mut response = db
        .query("SELECT VALUE count() FROM analytics_event WHERE name = $name GROUP ALL")
        .bind(("name", name.to_owned()))
        .await?
        .check()?;
    let count: Option<u64> = response.take(0)?;
    Ok(count.unwrap_or(0))
}

/// An event as the forwarder sends it on (`dashboard::forward`).
#[derive(Debug, Clone, SurrealValue)]
pub struct ForwardedEvent {
    /// The record's key.
    pub id: String,
    pub name: String,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub visitor: Option<String>,
    /// The account's record key.
    pub user: Option<String>,
    pub path: Option<String>,
    pub properties: Option<serde_json::Value>,
    /// Where the visitor first came from (migration 0015).
    pub first_touch: Option<serde_json::Value>,
}

/// Where forwarding stands: the time of the last event sent, and the ids sent at that time
/// (events can share a time).
#[derive(Debug, Clone, SurrealValue)]
pub struct ForwardCursor {
    pub at: Datetime,
    pub ids_at: Vec<String>,
}

/// Takes or renews the lease on the forwarding cursor (`analytics_forward:cursor`) for `me`;
/// answers the cursor, or none while another process holds it. The first holder starts from now:
/// the events before forwarding was switched on stay home.
pub async fn take_forward_lease(
    db: &Db,
    me: &str,
    lease: Duration,
) -> Result<Option<ForwardCursor>, surrealdb::Error> {
    let mut response = db
        .query(
            "UPSERT analytics_forward:cursor
                 SET at = at ?? time::now(), ids_at = ids_at ?? [], holder = $me,
                     lease_until = time::now() + $lease
                 WHERE holder = NONE OR holder = $me OR lease_until < time::now()
                 RETURN at, ids_at",
        )
        .bind(("me", me.to_owned()))
        .bind(("lease", surrealdb::types::Duration::from(lease)))
        .await?
        .check()?;
    let cursors: Vec<ForwardCursor> = response.take(0)?;
    Ok(cursors.into_iter().next())
}

/// The events after the cursor and at most as late as `until`, oldest first, at most `limit`.
pub async fn events_to_forward(
    db: &Db,
    cursor: &ForwardCursor,
    until: chrono::DateTime<chrono::Utc>,
    limit: usize,
) -> Result<Vec<ForwardedEvent>, surrealdb::Error> {
    let mut response = db
        .query(
            "SELECT record::id(id) AS id, name, created_at, visitor,
                    IF user != NONE { <string> record::id(user) } ELSE { NONE } AS user,
                    path, properties, first_touch
                 FROM analytics_event
                 WHERE created_at >= $at AND created_at <= $until
                 ORDER BY created_at LIMIT $limit",
        )
        .bind(("at", cursor.at))
        .bind(("until", Datetime::from(until)))
        .bind(("limit", (limit + cursor.ids_at.len()) as i64))
        .await?
        .check()?;
    let events: Vec<ForwardedEvent> = response.take(0)?;
    Ok(events
        .into_iter()
        .filter(|event| !cursor.ids_at.contains(&event.id))
        .take(limit)
        .collect())
}

/// Moves the cursor past `sent`, if `me` still holds it.
pub async fn advance_forward(
    db: &Db,
    me: &str,
    cursor: &ForwardCursor,
    sent: &[ForwardedEvent],
) -> Result<(), surrealdb::Error> {
    let Some(last) = sent.last() else {
        return Ok(());
    };
    let last_at = last.created_at;
    let mut ids_at: Vec<String> = sent
        .iter()
        .filter(|event| event.created_at == last_at)
        .map(|event| event.id.clone())
        .collect();
    if chrono::DateTime::<chrono::Utc>::from(cursor.at) == last_at {
        ids_at.extend(cursor.ids_at.iter().cloned());
    }
    db.query(
        "UPDATE analytics_forward:cursor SET at = $at, ids_at = $ids, lease_until = time::now() + 1m
             WHERE holder = $me",
    )
    .bind(("at", Datetime::from(last_at)))
    .bind(("ids", ids_at))
    .bind(("me", me.to_owned()))
    .await?
    .check()?;
    Ok(())
}
