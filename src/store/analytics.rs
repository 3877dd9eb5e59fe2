//! The `analytics_event` table: what the product records of visits and actions.

use surrealdb::types::SurrealValue;

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
