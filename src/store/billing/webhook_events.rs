//! The `webhook_event` table: every payment event by its id, leased to the handler that
//! processes it, so each is processed exactly once.

use chrono::{DateTime, Utc};
use surrealdb::types::SurrealValue;

use crate::store::Db;

/// How long a handler owns an event it is processing; a delivery that finds it owned waits.
const EVENT_LEASE_SECS: i64 = 120;

pub enum EventClaim {
    /// This call handles the event.
    Claimed,
    /// It was handled before.
    Processed,
    /// Another delivery is handling it right now.
    InFlight,
}

/// Stores an event by id and leases it to this call. A repeat of a processed event is
/// `Processed`; one whose handler is still within its lease is `InFlight`; one whose handler
/// failed or died half-way is claimed again (each step is idempotent).
pub async fn claim_event(
    db: &Db,
    source: &str,
    event_id: &str,
    event_type: &str,
    payload: serde_json::Value,
) -> Result<EventClaim, surrealdb::Error> {
    let lease = format!("{EVENT_LEASE_SECS}s");
    // A conflict with another writer wrote nothing: tried again. The event already stored (the
    // unique index on its id) is not a conflict to retry but the answer, read below.
    let result = crate::store::retry_while(
        8,
        |error| super::is_conflict(error) && !crate::store::users::is_unique_violation(error),
        || async {
            db.query(
                "CREATE webhook_event CONTENT { event_id: $id, event_type: $type, \
                 payload: $payload, source: $source, \
                 claimed_until: time::now() + type::duration($lease) }",
            )
            .bind(("id", event_id.to_owned()))
            .bind(("type", event_type.to_owned()))
            .bind(("payload", payload.clone()))
            .bind(("source", source.to_owned()))
            .bind(("lease", lease.clone()))
            .await
            .and_then(|response| response.check())
        },
    )
    .await;
    match result {
        Ok(_) => return Ok(EventClaim::Claimed),
        Err(error) if !crate::store::users::is_unique_violation(&error) => return Err(error),
        Err(_) => {}
    }
    // Only the claim is tried again: a conflict means it wrote nothing. (Tried again with the read
    // after it, a claim that committed before the read failed would find itself in flight.)
    let claimed: Vec<String> = crate::store::retry_on_conflict(|| async {
        db.query(
            "UPDATE (SELECT VALUE id FROM webhook_event WHERE event_id = $id) \
             SET claimed_until = time::now() + type::duration($lease) \
             WHERE processed_at = NONE \
             AND (claimed_until = NONE OR claimed_until < time::now()) RETURN VALUE event_id",
        )
        .bind(("id", event_id.to_owned()))
        .bind(("lease", lease.clone()))
        .await
        .and_then(|response| response.check())
        .and_then(|mut response| response.take(0))
    })
    .await?;
    if !claimed.is_empty() {
        return Ok(EventClaim::Claimed);
    }
    let processed: Vec<Option<DateTime<Utc>>> = db
        .query("SELECT VALUE processed_at FROM webhook_event WHERE event_id = $id")
        .bind(("id", event_id.to_owned()))
        .await?
        .check()?
        .take(0)?;
    Ok(if processed.into_iter().next().flatten().is_some() {
        EventClaim::Processed
    } else {
        EventClaim::InFlight
    })
}

/// Marks an event processed with what came of it.
pub async fn mark_event_processed(
    db: &Db,
    event_id: &str,
    outcome: String,
) -> Result<(), surrealdb::Error> {
    crate::store::retry_on_conflict(|| async {
        db
            // The ids come from the indexed lookup, so the update touches one row, not the table.
            .query("UPDATE (SELECT VALUE id FROM webhook_event WHERE event_id = $id) SET processed_at = time::now(), claimed_until = NONE, outcome = $outcome")
            .bind(("id", event_id.to_owned()))
            .bind(("outcome", outcome.clone()))
            .await
            .and_then(|response| response.check())
    })
    .await?;
    Ok(())
}

/// A payment event as the checkout debug page lists it (camelCase in JSON).
#[derive(Debug, SurrealValue, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventSummary {
    pub event_id: String,
    pub event_type: String,
    pub source: String,
    pub received_at: DateTime<Utc>,
    pub processed_at: Option<DateTime<Utc>>,
    pub outcome: Option<String>,
}

/// The last hour's payment events, newest first, at most 100 (the checkout debug page).
pub async fn recent_events(db: &Db) -> Result<Vec<EventSummary>, surrealdb::Error> {
    let mut response = db
        .query(
            "SELECT event_id, event_type, source, received_at, processed_at, outcome FROM webhook_event \
             WHERE received_at > time::now() - 1h ORDER BY received_at DESC LIMIT 100",
        )
        .await?
        .check()?;
    response.take(0)
}
