//! The funnels' flows as the store keeps them (issue 47, migration 0027): published versions
//! (`flow_version:[name, version]`, never changed), published routings (`flow_routing:[version]`),
//! what is published now (`flow_state:current`), one draft per flow (`flow_draft:[name]`), the
//! record of every change (`flow_publish:[at, id]`) and the previews being tried
//! (`flow_preview:[id]`).
//!
//! Every change of what is published goes through [`commit`]: one transaction that checks the
//! state's `revision` is the one the change was made from, writes the new state with the
//! revision after it, and writes the change's records. Two admins publishing at once: one
//! commits, the other is told the flows moved.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use helpnow_actors::rules::flows::{FieldChange, FlowScript, Routing};
use serde::{Deserialize, Serialize};
use surrealdb::types::SurrealValue;

use super::Db;

/// Who published the file's flows.
pub const FILE_PUBLISHER: &str = "config/funnels.toml";

/// What is published now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct State {
    /// Flow -> its published version.
    pub flows: BTreeMap<String, u32>,
    /// Flow -> its highest version.
    pub latest: BTreeMap<String, u32>,
    /// The routing's published version.
    pub routing: u32,
    /// Bumped by every change (see the module's doc).
    pub revision: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct NameVersion {
    name: String,
    version: u32,
}

fn to_pairs(map: &BTreeMap<String, u32>) -> serde_json::Value {
    serde_json::to_value(
        map.iter()
            .map(|(name, version)| NameVersion {
                name: name.clone(),
                version: *version,
            })
            .collect::<Vec<_>>(),
    )
    .unwrap_or_default()
}

fn from_pairs(value: serde_json::Value) -> BTreeMap<String, u32> {
    serde_json::from_value::<Vec<NameVersion>>(value)
        .unwrap_or_default()
        .into_iter()
        .map(|pair| (pair.name, pair.version))
        .collect()
}

#[derive(Debug, Clone, SurrealValue)]
struct StateRow {
    flows: serde_json::Value,
    latest: serde_json::Value,
    routing: i64,
    revision: i64,
}

impl StateRow {
    fn of(state: &State) -> Self {
        Self {
            flows: to_pairs(&state.flows),
            latest: to_pairs(&state.latest),
            routing: i64::from(state.routing),
            revision: i64::try_from(state.revision).unwrap_or(i64::MAX),
        }
    }

    fn state(self) -> State {
        State {
            flows: from_pairs(self.flows),
            latest: from_pairs(self.latest),
            routing: u32::try_from(self.routing).unwrap_or(0),
            revision: u64::try_from(self.revision).unwrap_or(0),
        }
    }
}

/// A published version of a flow.
#[derive(Debug, Clone, PartialEq)]
pub struct Version {
    pub name: String,
    pub version: u32,
    pub script: FlowScript,
    pub published_at: DateTime<Utc>,
    pub published_by: String,
}

#[derive(Debug, Clone, SurrealValue)]
struct VersionRow {
    name: String,
    version: i64,
    script: serde_json::Value,
    published_at: DateTime<Utc>,
    published_by: String,
}

impl VersionRow {
    fn of(version: &Version) -> Self {
        Self {
            name: version.name.clone(),
            version: i64::from(version.version),
            script: serde_json::to_value(&version.script).unwrap_or_default(),
            published_at: version.published_at,
            published_by: version.published_by.clone(),
        }
    }

    fn version(self) -> Option<Version> {
        Some(Version {
            script: serde_json::from_value(self.script)
                .map_err(|error| {
                    tracing::error!(flow = %self.name, version = self.version, %error, "a stored flow version cannot be read");
                })
                .ok()?,
            name: self.name,
            version: u32::try_from(self.version).ok()?,
            published_at: self.published_at,
            published_by: self.published_by,
        })
    }
}

/// A published routing.
#[derive(Debug, Clone, PartialEq)]
pub struct PublishedRouting {
    pub version: u32,
    pub routing: Routing,
    pub published_at: DateTime<Utc>,
    pub published_by: String,
}

#[derive(Debug, Clone, SurrealValue)]
struct RoutingRow {
    version: i64,
    routing: serde_json::Value,
    published_at: DateTime<Utc>,
    published_by: String,
}

impl RoutingRow {
    fn of(routing: &PublishedRouting) -> Self {
        Self {
            version: i64::from(routing.version),
            routing: serde_json::to_value(&routing.routing).unwrap_or_default(),
            published_at: routing.published_at,
            published_by: routing.published_by.clone(),
        }
    }

    fn routing(self) -> Option<PublishedRouting> {
        Some(PublishedRouting {
            routing: serde_json::from_value(self.routing)
                .map_err(|error| tracing::error!(%error, "a stored routing cannot be read"))
                .ok()?,
            version: u32::try_from(self.version).ok()?,
            published_at: self.published_at,
            published_by: self.published_by,
        })
    }
}

/// A flow's draft.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    pub name: String,
    pub script: FlowScript,
    /// The published version it was started from (none: a new flow).
    pub based_on: Option<u32>,
    pub updated_at: DateTime<Utc>,
    pub updated_by: String,
}

#[derive(Debug, Clone, SurrealValue)]
struct DraftRow {
    name: String,
    script: serde_json::Value,
    based_on: Option<i64>,
    updated_at: DateTime<Utc>,
    updated_by: String,
}

impl DraftRow {
    fn of(draft: &Draft) -> Self {
        Self {
            name: draft.name.clone(),
            script: serde_json::to_value(&draft.script).unwrap_or_default(),
            based_on: draft.based_on.map(i64::from),
            updated_at: draft.updated_at,
            updated_by: draft.updated_by.clone(),
        }
    }

    fn draft(self) -> Option<Draft> {
        Some(Draft {
            script: serde_json::from_value(self.script).ok()?,
            name: self.name,
            based_on: self.based_on.and_then(|v| u32::try_from(v).ok()),
            updated_at: self.updated_at,
            updated_by: self.updated_by,
        })
    }
}

/// What kind of change a [`Record`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// The file's flows, on first start.
    Import,
    Publish,
    Rollback,
    Routing,
}

impl ChangeKind {
    fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Import => "import",
            ChangeKind::Publish => "publish",
            ChangeKind::Rollback => "rollback",
            ChangeKind::Routing => "routing",
        }
    }

    fn parse(value: &str) -> Option<Self> {
        [
            ChangeKind::Import,
            ChangeKind::Publish,
            ChangeKind::Rollback,
            ChangeKind::Routing,
        ]
        .into_iter()
        .find(|kind| kind.as_str() == value)
    }
}

/// The record of one change: who, when, what.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub at: DateTime<Utc>,
    pub by: String,
    pub kind: ChangeKind,
    /// The flow (none for a routing).
    pub flow: Option<String>,
    /// The version published (the routing's, for a routing).
    pub version: u32,
    /// The version published before (none: the first).
    pub from_version: Option<u32>,
    pub changes: Vec<FieldChange>,
}

#[derive(Debug, Clone, SurrealValue)]
struct RecordRow {
    at: DateTime<Utc>,
    by: String,
    kind: String,
    flow: Option<String>,
    version: i64,
    from_version: Option<i64>,
    changes: serde_json::Value,
}

impl RecordRow {
    fn of(record: &Record) -> Self {
        Self {
            at: record.at,
            by: record.by.clone(),
            kind: record.kind.as_str().to_owned(),
            flow: record.flow.clone(),
            version: i64::from(record.version),
            from_version: record.from_version.map(i64::from),
            changes: serde_json::to_value(&record.changes).unwrap_or_default(),
        }
    }

    fn record(self) -> Option<Record> {
        Some(Record {
            at: self.at,
            by: self.by,
            kind: ChangeKind::parse(&self.kind)?,
            flow: self.flow,
            version: u32::try_from(self.version).ok()?,
            from_version: self.from_version.and_then(|v| u32::try_from(v).ok()),
            changes: serde_json::from_value(self.changes).unwrap_or_default(),
        })
    }
}

/// A draft being tried in the preview chat.
#[derive(Debug, Clone, PartialEq)]
pub struct Preview {
    pub id: String,
    pub flow: String,
    pub script: FlowScript,
    pub by: String,
    pub expires_at: DateTime<Utc>,
}

#[derive(Debug, Clone, SurrealValue)]
struct PreviewRow {
    preview: String,
    flow: String,
    script: serde_json::Value,
    by: String,
    expires_at: DateTime<Utc>,
}

impl PreviewRow {
    fn of(preview: &Preview) -> Self {
        Self {
            preview: preview.id.clone(),
            flow: preview.flow.clone(),
            script: serde_json::to_value(&preview.script).unwrap_or_default(),
            by: preview.by.clone(),
            expires_at: preview.expires_at,
        }
    }

    fn preview(self) -> Option<Preview> {
        Some(Preview {
            script: serde_json::from_value(self.script).ok()?,
            id: self.preview,
            flow: self.flow,
            by: self.by,
            expires_at: self.expires_at,
        })
    }
}

/// Everything the processes hold in memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Published {
    pub state: State,
    pub routing: PublishedRouting,
    /// Every version of every flow.
    pub versions: Vec<Version>,
    /// The previews that have not expired.
    pub previews: Vec<Preview>,
    /// The running experiments as stored (`experiment.doc`, issue 48), the earliest started
    /// first.
    pub running_experiments: Vec<serde_json::Value>,
}

/// What is published now, if anything is (the file's flows are imported on first start).
pub async fn state(db: &Db) -> Result<Option<State>, surrealdb::Error> {
    let mut response = db
        .query("SELECT flows, latest, routing, revision FROM flow_state:current")
        .await?
        .check()?;
    let rows: Vec<StateRow> = response.take(0)?;
    Ok(rows.into_iter().next().map(StateRow::state))
}

/// The state's revision alone (the processes poll it).
pub async fn revision(db: &Db) -> Result<Option<u64>, surrealdb::Error> {
    let mut response = db
        .query("SELECT VALUE revision FROM flow_state:current")
        .await?
        .check()?;
    let rows: Vec<i64> = response.take(0)?;
    Ok(rows
        .into_iter()
        .next()
        .map(|revision| u64::try_from(revision).unwrap_or(0)))
}

/// Everything published, and the previews not expired yet, in one read.
pub async fn published(db: &Db) -> Result<Option<Published>, surrealdb::Error> {
    let mut response = db
        .query(
            "SELECT flows, latest, routing, revision FROM flow_state:current;
             LET $routing = (SELECT VALUE routing FROM flow_state:current)[0];
             SELECT version, routing, published_at, published_by FROM flow_routing
                 WHERE $routing != NONE AND id = type::record('flow_routing', [$routing]);
             SELECT name, version, script, published_at, published_by FROM flow_version;
             SELECT preview, flow, script, by, expires_at FROM flow_preview
                 WHERE expires_at > time::now();
             SELECT VALUE doc FROM experiment WHERE status = 'running' ORDER BY started_at;",
        )
        .await?
        .check()?;
    let states: Vec<StateRow> = response.take(0)?;
    let routings: Vec<RoutingRow> = response.take(2)?;
    let versions: Vec<VersionRow> = response.take(3)?;
    let previews: Vec<PreviewRow> = response.take(4)?;
    let running_experiments: Vec<serde_json::Value> = response.take(5)?;
    let (Some(state), Some(routing)) = (
        states.into_iter().next(),
        routings.into_iter().next().and_then(RoutingRow::routing),
    ) else {
        return Ok(None);
    };
    Ok(Some(Published {
        state: state.state(),
        routing,
        versions: versions
            .into_iter()
            .filter_map(VersionRow::version)
            .collect(),
        previews: previews
            .into_iter()
            .filter_map(PreviewRow::preview)
            .collect(),
        running_experiments,
    }))
}

/// A published version of a flow.
pub async fn version(
    db: &Db,
    name: &str,
    version: u32,
) -> Result<Option<Version>, surrealdb::Error> {
    let mut response = db
        .query(
            "SELECT name, version, script, published_at, published_by \
             FROM type::record('flow_version', [$name, $version])",
        )
        .bind(("name", name.to_owned()))
        .bind(("version", i64::from(version)))
        .await?
        .check()?;
    let rows: Vec<VersionRow> = response.take(0)?;
    Ok(rows.into_iter().next().and_then(VersionRow::version))
}

/// Every draft.
pub async fn drafts(db: &Db) -> Result<Vec<Draft>, surrealdb::Error> {
    let mut response = db
        .query("SELECT name, script, based_on, updated_at, updated_by FROM flow_draft")
        .await?
        .check()?;
    let rows: Vec<DraftRow> = response.take(0)?;
    Ok(rows.into_iter().filter_map(DraftRow::draft).collect())
}

/// A flow's draft.
pub async fn draft(db: &Db, name: &str) -> Result<Option<Draft>, surrealdb::Error> {
    let mut response = db
        .query(
            "SELECT name, script, based_on, updated_at, updated_by \
             FROM type::record('flow_draft', [$name])",
        )
        .bind(("name", name.to_owned()))
        .await?
        .check()?;
    let rows: Vec<DraftRow> = response.take(0)?;
    Ok(rows.into_iter().next().and_then(DraftRow::draft))
}

/// Saves a flow's draft over the one it had.
pub async fn save_draft(db: &Db, draft: &Draft) -> Result<(), surrealdb::Error> {
    db.query("UPSERT type::record('flow_draft', [$d.name]) CONTENT $d")
        .bind(("d", DraftRow::of(draft)))
        .await?
        .check()?;
    Ok(())
}

/// Deletes a flow's draft; answers whether it had one.
pub async fn delete_draft(db: &Db, name: &str) -> Result<bool, surrealdb::Error> {
    let mut response = db
        .query("DELETE type::record('flow_draft', [$name]) RETURN BEFORE")
        .bind(("name", name.to_owned()))
        .await?
        .check()?;
    let deleted: Vec<serde_json::Value> = response.take(0)?;
    Ok(!deleted.is_empty())
}

/// The records of the changes, newest first (only `flow`'s and the routing's, with a flow).
pub async fn history(
    db: &Db,
    flow: Option<&str>,
    limit: usize,
) -> Result<Vec<Record>, surrealdb::Error> {
    let mut response = db
        .query(
            "SELECT at, by, kind, flow, version, from_version, changes FROM flow_publish \
             WHERE $flow = NONE OR flow = $flow OR flow = NONE ORDER BY at DESC LIMIT $limit",
        )
        .bind(("flow", flow.map(str::to_owned)))
        .bind(("limit", i64::try_from(limit).unwrap_or(100)))
        .await?
        .check()?;
    let rows: Vec<RecordRow> = response.take(0)?;
    Ok(rows.into_iter().filter_map(RecordRow::record).collect())
}

/// What one change writes besides the new state.
#[derive(Debug, Clone, Default)]
pub struct Writes {
    pub versions: Vec<Version>,
    pub routing: Option<PublishedRouting>,
    pub records: Vec<Record>,
    /// The draft published, deleted with it.
    pub published_draft: Option<String>,
    pub preview: Option<Preview>,
    /// Experiments written whole (issue 48), and the records of their changes.
    pub experiments: Vec<ExperimentWrite>,
    pub experiment_records: Vec<serde_json::Value>,
}

/// An experiment as [`commit`] writes it: its document, and the fields the reads filter and
/// order by.
#[derive(Debug, Clone, SurrealValue)]
pub struct ExperimentWrite {
    /// The experiment's id (its record's key).
    pub key: String,
    pub status: String,
    pub started_at: Option<DateTime<Utc>>,
    pub doc: serde_json::Value,
}

#[derive(Debug, Clone, SurrealValue)]
struct WriteRows {
    versions: Vec<VersionRow>,
    routing: Option<RoutingRow>,
    records: Vec<RecordRow>,
    draft: Option<String>,
    preview: Option<PreviewRow>,
    experiments: Vec<ExperimentWrite>,
    experiment_records: Vec<serde_json::Value>,
}

/// Why a change was not committed.
#[derive(Debug, thiserror::Error)]
pub enum CommitError {
    /// The state is no longer the one the change was made from.
    #[error("the flows changed meanwhile")]
    Moved,
    #[error(transparent)]
    Store(#[from] surrealdb::Error),
}

/// Commits a change made from the state at `expected` (none: nothing published yet, the file's
/// import): `state` (its revision the one after) and `writes`, in one transaction.
pub async fn commit(
    db: &Db,
    expected: Option<u64>,
    state: &State,
    writes: &Writes,
) -> Result<(), CommitError> {
    let rows = WriteRows {
        versions: writes.versions.iter().map(VersionRow::of).collect(),
        routing: writes.routing.as_ref().map(RoutingRow::of),
        records: writes.records.iter().map(RecordRow::of).collect(),
        draft: writes.published_draft.clone(),
        preview: writes.preview.as_ref().map(PreviewRow::of),
        experiments: writes.experiments.clone(),
        experiment_records: writes.experiment_records.clone(),
    };
    let expected = expected.map(|revision| i64::try_from(revision).unwrap_or(i64::MAX));
    let result = db
        .query(
            "BEGIN TRANSACTION;
             LET $now = (SELECT VALUE revision FROM flow_state:current)[0];
             IF $now != $expected { THROW 'flows_moved'; };
             UPSERT flow_state:current CONTENT $state;
             FOR $v IN $w.versions {
                 CREATE type::record('flow_version', [$v.name, $v.version]) CONTENT $v;
             };
             IF $w.routing != NONE {
                 CREATE type::record('flow_routing', [$w.routing.version]) CONTENT $w.routing;
             };
             FOR $r IN $w.records {
                 CREATE type::record('flow_publish', [$r.at, rand::ulid()]) CONTENT $r;
             };
             IF $w.draft != NONE { DELETE type::record('flow_draft', [$w.draft]); };
             IF $w.preview != NONE {
                 CREATE type::record('flow_preview', [$w.preview.preview]) CONTENT $w.preview;
             };
             FOR $x IN $w.experiments {
                 UPSERT type::record('experiment', [$x.key]) CONTENT $x;
             };
             FOR $r IN $w.experiment_records {
                 CREATE type::record('experiment_record', [$r.experiment, $r.at, rand::ulid()]) CONTENT $r;
             };
             COMMIT TRANSACTION;",
        )
        .bind(("expected", expected))
        .bind(("state", StateRow::of(state)))
        .bind(("w", rows))
        .await
        .and_then(|response| response.check());
    match result {
        Ok(_) => Ok(()),
        Err(error)
            if error.to_string().contains("flows_moved") || super::billing::is_conflict(&error) =>
        {
            Err(CommitError::Moved)
        }
        Err(error) => Err(CommitError::Store(error)),
    }
}

/// Deletes the previews that expired, with their conversations (`conversations`: the ids of a
/// preview's conversations, which follow from its id); answers how many went.
pub async fn delete_expired_previews(
    db: &Db,
    conversations: impl Fn(&str) -> Vec<String>,
) -> Result<usize, surrealdb::Error> {
    let mut response = db
        .query("SELECT VALUE preview FROM flow_preview WHERE expires_at <= time::now()")
        .await?
        .check()?;
    let expired: Vec<String> = response.take(0)?;
    for preview in &expired {
        let ids = conversations(preview);
        db.query(
            "BEGIN TRANSACTION;
             FOR $c IN $ids {
                 DELETE funnel_message:[$c, 0]..[$c, 1000000000];
                 DELETE type::record('funnel_conversation', $c);
             };
             DELETE type::record('flow_preview', [$preview]);
             COMMIT TRANSACTION;",
        )
        .bind(("ids", ids))
        .bind(("preview", preview.clone()))
        .await?
        .check()?;
    }
    Ok(expired.len())
}
