//! The funnels' flows as data (issue 47): the catalog every process holds in memory
//! ([`FlowLibrary`]), the operator's changes to it (drafts, publishing, rollback, routing,
//! previews), each made in the store and then taken by every process; and the drop-off by flow
//! version ([`tally`], [`dropoff`]). docs/operations.md, "Flows".
//!
//! A publish on one process reloads that process's catalog at once and tells the others through
//! the cluster's events (Redis); each process also polls the store's revision every few seconds,
//! so one that missed the event (a Redis blip) catches up on its own.

pub mod dropoff;
pub mod tally;

use std::sync::{Arc, RwLock};
use std::time::Duration;

use chrono::Utc;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use helpnow_actors::rules::experiments::Split;
use helpnow_actors::rules::flows::{
    FieldProblem, FlowCatalog, FlowScript, FlowSource, Routing, valid_flow_name,
};
use helpnow_actors::rules::scripts::FunnelScripts;

use crate::cluster::{Cluster, ClusterEvent};
use crate::store::Db;
use crate::store::flows::{
    self as stored, ChangeKind, CommitError, Draft, FILE_PUBLISHER, Preview, PublishedRouting,
    Record, State, Version, Writes,
};

/// How long a preview of a draft can be tried.
pub const PREVIEW_LIFETIME: Duration = Duration::from_secs(3600);

/// How often each process reads the store's revision of the flows.
pub const POLL_EVERY: Duration = Duration::from_secs(3);

/// The visitor id of a preview's conversations (a real visitor's id never looks like it).
pub fn preview_visitor(preview: &str) -> String {
    format!("preview-{preview}")
}

/// Why a change to the flows was refused.
#[derive(Debug, thiserror::Error)]
pub enum FlowError {
    #[error("the draft has problems")]
    Invalid(Vec<FieldProblem>),
    #[error("the flows changed meanwhile")]
    Moved,
    #[error("there is no draft to publish")]
    NoDraft,
    #[error("there is no such flow")]
    UnknownFlow,
    #[error("there is no such version")]
    UnknownVersion,
    #[error(transparent)]
    Store(#[from] surrealdb::Error),
}

impl From<CommitError> for FlowError {
    fn from(error: CommitError) -> Self {
        match error {
            CommitError::Moved => FlowError::Moved,
            CommitError::Store(error) => FlowError::Store(error),
        }
    }
}

struct Inner {
    db: Db,
    cluster: Cluster,
    /// `config/funnels.toml`'s catalog: what a process starts from, and keeps if the store's
    /// cannot be read.
    file: Arc<FlowCatalog>,
    current: RwLock<Arc<FlowCatalog>>,
    /// One reload at a time.
    reloading: tokio::sync::Mutex<()>,
}

/// The flows this process holds, and the operator's changes to them.
#[derive(Clone)]
pub struct FlowLibrary {
    inner: Arc<Inner>,
}

impl FlowLibrary {
    /// The library of `file`'s flows alone (no store behind it: tools and tests).
    pub fn from_file(db: Db, cluster: Cluster, file: &FunnelScripts) -> Self {
        let file = Arc::new(FlowCatalog::from_scripts(file));
        Self {
            inner: Arc::new(Inner {
                db,
                cluster,
                current: RwLock::new(file.clone()),
                file,
                reloading: tokio::sync::Mutex::new(()),
            }),
        }
    }

    /// Imports the file's flows as version 1 when nothing is published yet (the first start;
    /// another process starting at once may do it first), then loads what is published.
    pub async fn start(
        db: Db,
        cluster: Cluster,
        file: &FunnelScripts,
    ) -> Result<Self, surrealdb::Error> {
        let library = Self::from_file(db, cluster, file);
        library.import_file().await?;
        library.reload().await?;
        Ok(library)
    }

    async fn import_file(&self) -> Result<(), surrealdb::Error> {
        if stored::state(&self.inner.db).await?.is_some() {
            return Ok(());
        }
        let file = &self.inner.file;
        let now = Utc::now();
        let mut state = State {
            routing: file.routing_version,
            revision: 1,
            ..State::default()
        };
        let mut writes = Writes::default();
        for (name, versions) in &file.versions {
            for (version, script) in versions {
                writes.versions.push(Version {
                    name: name.clone(),
                    version: *version,
                    script: script.as_ref().clone(),
                    published_at: now,
                    published_by: FILE_PUBLISHER.to_owned(),
                });
                writes.records.push(Record {
                    at: now,
                    by: FILE_PUBLISHER.to_owned(),
                    kind: ChangeKind::Import,
                    flow: Some(name.clone()),
                    version: *version,
                    from_version: None,
                    changes: script.changes_from(None),
                });
                state.latest.insert(name.clone(), *version);
            }
        }
        state.flows = file.published.clone();
        if let Some(routing) = &file.routing {
            writes.routing = Some(PublishedRouting {
                version: file.routing_version,
                routing: routing.clone(),
                published_at: now,
                published_by: FILE_PUBLISHER.to_owned(),
            });
        }
        match stored::commit(&self.inner.db, None, &state, &writes).await {
            Ok(()) => {
                tracing::info!("the flows of config/funnels.toml are version 1");
                Ok(())
            }
            // Another process starting at the same moment imported them first (the state it
            // found, or a conflict with its commit).
            Err(CommitError::Moved) => Ok(()),
            Err(CommitError::Store(error)) => Err(error),
        }
    }

    /// The catalog in memory.
    pub fn catalog(&self) -> Arc<FlowCatalog> {
        crate::sync::read(&self.inner.current).clone()
    }

    /// Reads what is published from the store and makes it the catalog in memory.
    pub async fn reload(&self) -> Result<(), surrealdb::Error> {
        let _one = self.inner.reloading.lock().await;
        let Some(published) = stored::published(&self.inner.db).await? else {
            return Ok(());
        };
        let mut catalog = FlowCatalog {
            routing: Some(published.routing.routing),
            routing_version: published.routing.version,
            published: published.state.flows,
            revision: published.state.revision,
            ..FlowCatalog::default()
        };
        for version in published.versions {
            catalog.insert(&version.name, version.version, version.script);
        }
        for preview in published.previews {
            catalog
                .previews
                .insert(preview.id, (preview.flow, Arc::new(preview.script)));
        }
        // The running experiments' splits (issue 48): what assignment needs of each.
        catalog.splits = published
            .running_experiments
            .into_iter()
            .filter_map(|doc| match serde_json::from_value::<Split>(doc) {
                Ok(split) => Some(Arc::new(split)),
                Err(error) => {
                    tracing::warn!(%error, "a running experiment could not be read");
                    None
                }
            })
            .collect();
        *crate::sync::write(&self.inner.current) = Arc::new(catalog);
        Ok(())
    }

    /// Polls the store's revision every `every` and reloads when it moved; deletes expired
    /// previews (with their conversations) about once an hour.
    pub fn spawn_watcher(&self, every: Duration) -> tokio::task::JoinHandle<()> {
        let library = self.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let sweep_every = (3600 / every.as_secs().max(1)).max(1);
            let mut tick: u64 = 0;
            loop {
                ticks.tick().await;
                tick += 1;
                match stored::revision(&library.inner.db).await {
                    Ok(Some(revision)) if revision != library.catalog().revision => {
                        if let Err(error) = library.reload().await {
                            tracing::warn!(%error, "the flows could not be reloaded");
                        }
                    }
                    Ok(_) => {}
                    Err(error) => tracing::warn!(%error, "the flows' revision could not be read"),
                }
                if tick.is_multiple_of(sweep_every) {
                    library.sweep_previews().await;
                }
            }
        })
    }

    async fn sweep_previews(&self) {
        let conversations = |preview: &str| {
            [
                helpnow_actors::rules::FunnelKind::Chat,
                helpnow_actors::rules::FunnelKind::Refundable,
            ]
            .into_iter()
            .map(|funnel| {
                helpnow_actors::funnel::ConversationKey {
                    visitor_id: preview_visitor(preview),
                    funnel,
                }
                .conversation_id()
            })
            .collect()
        };
        if let Err(error) = stored::delete_expired_previews(&self.inner.db, conversations).await {
            tracing::warn!(%error, "expired previews could not be deleted");
        }
    }

    /// After a change: this process's catalog at once, the others through the cluster.
    pub(crate) async fn changed(&self) {
        if let Err(error) = self.reload().await {
            tracing::warn!(%error, "the flows could not be reloaded after a change");
        }
        self.inner.cluster.publish(ClusterEvent::FlowsChanged);
    }

    /// What is published, read from the store (not the catalog: an admin sees the latest).
    pub async fn state(&self) -> Result<State, FlowError> {
        Ok(stored::state(&self.inner.db).await?.unwrap_or_default())
    }

    /// The problems of `script` as the draft of `name`: its own, and `{keyword}` where the
    /// routing chooses the flow without a keyword.
    pub fn problems(&self, name: &str, script: &FlowScript) -> Vec<FieldProblem> {
        let mut problems = script.check();
        let catalog = self.catalog();
        if let Some(routing) = &catalog.routing
            && script.uses_keyword()
            && let Some(place) = keywordless_use(routing, name)
        {
            for (field, text) in script.texts() {
                if text.contains("{keyword}") && !problems.iter().any(|p| p.field == field) {
                    problems.push(FieldProblem {
                        field: field.to_owned(),
                        message: format!(
                            "This flow is {place}, chosen for visitors who may have no keyword: it cannot use {{keyword}}."
                        ),
                    });
                }
            }
        }
        problems
    }

    /// Saves a flow's draft (with its problems: a draft may have some).
    pub async fn save_draft(
        &self,
        name: &str,
        script: FlowScript,
        based_on: Option<u32>,
        by: &str,
    ) -> Result<Draft, FlowError> {
        let state = self.state().await?;
        let exists =
            state.latest.contains_key(name) || stored::draft(&self.inner.db, name).await?.is_some();
        if !exists {
            return Err(FlowError::UnknownFlow);
        }
        let draft = Draft {
            name: name.to_owned(),
            script,
            based_on,
            updated_at: Utc::now(),
            updated_by: by.to_owned(),
        };
        stored::save_draft(&self.inner.db, &draft).await?;
        Ok(draft)
    }

    /// Starts a new flow: a draft copied from `copy_from`'s published script.
    pub async fn create(&self, name: &str, copy_from: &str, by: &str) -> Result<Draft, FlowError> {
        let name_problem = |message: &str| {
            FlowError::Invalid(vec![FieldProblem {
                field: "name".to_owned(),
                message: message.to_owned(),
            }])
        };
        if !valid_flow_name(name) {
            return Err(name_problem(
                "A flow's name is lower-case letters, digits and '-', beginning with a letter, at most 40 characters.",
            ));
        }
        let state = self.state().await?;
        if state.latest.contains_key(name) || stored::draft(&self.inner.db, name).await?.is_some() {
            return Err(name_problem("There is already a flow with this name."));
        }
        let source = state
            .flows
            .get(copy_from)
            .copied()
            .ok_or(FlowError::UnknownFlow)?;
        let script = stored::version(&self.inner.db, copy_from, source)
            .await?
            .ok_or(FlowError::UnknownFlow)?
            .script;
        let draft = Draft {
            name: name.to_owned(),
            script,
            based_on: None,
            updated_at: Utc::now(),
            updated_by: by.to_owned(),
        };
        stored::save_draft(&self.inner.db, &draft).await?;
        Ok(draft)
    }

    /// Publishes the draft of `name` as its next version, if the version published now is still
    /// `based_on` (the one the operator saw) and the draft has no problem.
    pub async fn publish(
        &self,
        name: &str,
        based_on: Option<u32>,
        by: &str,
    ) -> Result<u32, FlowError> {
        let draft = stored::draft(&self.inner.db, name)
            .await?
            .ok_or(FlowError::NoDraft)?;
        let Some(state) = stored::state(&self.inner.db).await? else {
            return Err(FlowError::Moved);
        };
        // Someone published meanwhile: that comes first, the draft's problems may be theirs.
        let current = state.flows.get(name).copied();
        if current != based_on {
            return Err(FlowError::Moved);
        }
        let problems = self.problems(name, &draft.script);
        if !problems.is_empty() {
            return Err(FlowError::Invalid(problems));
        }
        let before = match current {
            Some(version) => stored::version(&self.inner.db, name, version)
                .await?
                .map(|stored| stored.script),
            None => None,
        };
        let version = state.latest.get(name).copied().unwrap_or(0) + 1;
        let now = Utc::now();
        let mut next = state.clone();
        next.flows.insert(name.to_owned(), version);
        next.latest.insert(name.to_owned(), version);
        next.revision += 1;
        let writes = Writes {
            records: vec![Record {
                at: now,
                by: by.to_owned(),
                kind: ChangeKind::Publish,
                flow: Some(name.to_owned()),
                version,
                from_version: current,
                changes: draft.script.changes_from(before.as_ref()),
            }],
            versions: vec![Version {
                name: name.to_owned(),
                version,
                script: draft.script,
                published_at: now,
                published_by: by.to_owned(),
            }],
            published_draft: Some(name.to_owned()),
            ..Writes::default()
        };
        stored::commit(&self.inner.db, Some(state.revision), &next, &writes).await?;
        tracing::info!(flow = name, version, by, "a flow was published");
        self.changed().await;
        Ok(version)
    }

    /// Publishes an older version of `name` again.
    pub async fn rollback(&self, name: &str, version: u32, by: &str) -> Result<(), FlowError> {
        let Some(state) = stored::state(&self.inner.db).await? else {
            return Err(FlowError::Moved);
        };
        let current = state
            .flows
            .get(name)
            .copied()
            .ok_or(FlowError::UnknownFlow)?;
        let target = stored::version(&self.inner.db, name, version)
            .await?
            .ok_or(FlowError::UnknownVersion)?;
        let problems = self.problems(name, &target.script);
        if !problems.is_empty() {
            return Err(FlowError::Invalid(problems));
        }
        if current == version {
            return Ok(());
        }
        let before = stored::version(&self.inner.db, name, current)
            .await?
            .map(|stored| stored.script);
        let mut next = state.clone();
        next.flows.insert(name.to_owned(), version);
        next.revision += 1;
        let writes = Writes {
            records: vec![Record {
                at: Utc::now(),
                by: by.to_owned(),
                kind: ChangeKind::Rollback,
                flow: Some(name.to_owned()),
                version,
                from_version: Some(current),
                changes: target.script.changes_from(before.as_ref()),
            }],
            ..Writes::default()
        };
        stored::commit(&self.inner.db, Some(state.revision), &next, &writes).await?;
        tracing::info!(flow = name, version, by, "a flow was rolled back");
        self.changed().await;
        Ok(())
    }

    /// Publishes a routing, if the routing published now is still `based_on`.
    pub async fn publish_routing(
        &self,
        routing: Routing,
        based_on: u32,
        by: &str,
    ) -> Result<u32, FlowError> {
        let catalog = self.catalog();
        let problems = routing.check(|name| catalog.published_script(name));
        if !problems.is_empty() {
            return Err(FlowError::Invalid(problems));
        }
        let Some(state) = stored::state(&self.inner.db).await? else {
            return Err(FlowError::Moved);
        };
        if state.routing != based_on {
            return Err(FlowError::Moved);
        }
        let before = catalog.routing.clone();
        let version = state.routing + 1;
        let now = Utc::now();
        let mut next = state.clone();
        next.routing = version;
        next.revision += 1;
        let writes = Writes {
            routing: Some(PublishedRouting {
                version,
                routing: routing.clone(),
                published_at: now,
                published_by: by.to_owned(),
            }),
            records: vec![Record {
                at: now,
                by: by.to_owned(),
                kind: ChangeKind::Routing,
                flow: None,
                version,
                from_version: Some(state.routing),
                changes: routing_changes(before.as_ref(), &routing),
            }],
            ..Writes::default()
        };
        stored::commit(&self.inner.db, Some(state.revision), &next, &writes).await?;
        tracing::info!(version, by, "a routing was published");
        self.changed().await;
        Ok(version)
    }

    /// Makes a preview of `script` as the draft of `name`, which every process serves for an
    /// hour; answers it.
    pub async fn preview(
        &self,
        name: &str,
        script: FlowScript,
        by: &str,
    ) -> Result<Preview, FlowError> {
        let problems = script.check();
        if !problems.is_empty() {
            return Err(FlowError::Invalid(problems));
        }
        let preview = Preview {
            id: crate::ids::alphanumeric(20),
            flow: name.to_owned(),
            script,
            by: by.to_owned(),
            expires_at: Utc::now()
                + chrono::TimeDelta::from_std(PREVIEW_LIFETIME).unwrap_or_default(),
        };
        // A publish at the same moment moves the revision: try again on the new one.
        for _ in 0..3 {
            let Some(state) = stored::state(&self.inner.db).await? else {
                return Err(FlowError::Moved);
            };
            let mut next = state.clone();
            next.revision += 1;
            let writes = Writes {
                preview: Some(preview.clone()),
                ..Writes::default()
            };
            match stored::commit(&self.inner.db, Some(state.revision), &next, &writes).await {
                Ok(()) => {
                    self.changed().await;
                    return Ok(preview);
                }
                Err(CommitError::Moved) => continue,
                Err(CommitError::Store(error)) => return Err(error.into()),
            }
        }
        Err(FlowError::Moved)
    }

    pub async fn drafts(&self) -> Result<Vec<Draft>, FlowError> {
        Ok(stored::drafts(&self.inner.db).await?)
    }

    pub async fn delete_draft(&self, name: &str) -> Result<bool, FlowError> {
        Ok(stored::delete_draft(&self.inner.db, name).await?)
    }

    pub async fn version(&self, name: &str, version: u32) -> Result<Option<Version>, FlowError> {
        Ok(stored::version(&self.inner.db, name, version).await?)
    }

    pub async fn history(
        &self,
        flow: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Record>, FlowError> {
        Ok(stored::history(&self.inner.db, flow, limit).await?)
    }

    /// Every version of every flow, as published (the page's list).
    pub async fn published(&self) -> Result<Option<stored::Published>, FlowError> {
        Ok(stored::published(&self.inner.db).await?)
    }
}

impl FlowSource for FlowLibrary {
    fn catalog(&self) -> Arc<FlowCatalog> {
        FlowLibrary::catalog(self)
    }

    fn refresh(&self) -> BoxFuture<'static, ()> {
        let library = self.clone();
        async move {
            if let Err(error) = library.reload().await {
                tracing::warn!(%error, "the flows could not be reloaded");
            }
        }
        .boxed()
    }
}

/// Where the routing chooses `name` for visitors who may have no keyword ("the default flow",
/// "campaign 123's flow"), if anywhere.
pub fn keywordless_use(routing: &Routing, name: &str) -> Option<String> {
    if routing.default_flow == name {
        return Some("the default flow".to_owned());
    }
    routing
        .campaigns
        .iter()
        .find(|(_, flow)| flow.as_str() == name)
        .map(|(campaign, _)| format!("campaign {campaign}'s flow"))
}

/// Where the routing uses `name` ("default flow", "keyword flow", "campaign 123", "keyword email").
pub fn routed_by(routing: &Routing, name: &str) -> Vec<String> {
    let mut uses = Vec::new();
    if routing.default_flow == name {
        uses.push("default flow".to_owned());
    }
    if routing.keyword_flow.as_deref() == Some(name) {
        uses.push("keyword flow".to_owned());
    }
    uses.extend(
        routing
            .campaigns
            .iter()
            .filter(|(_, flow)| flow.as_str() == name)
            .map(|(campaign, _)| format!("campaign {campaign}")),
    );
    uses.extend(
        routing
            .keywords
            .iter()
            .filter(|(_, flow)| flow.as_str() == name)
            .map(|(keyword, _)| format!("keyword {keyword}")),
    );
    uses
}

/// What changed between two routings, entry by entry.
fn routing_changes(
    before: Option<&Routing>,
    after: &Routing,
) -> Vec<helpnow_actors::rules::flows::FieldChange> {
    use helpnow_actors::rules::flows::FieldChange;
    let mut changes = Vec::new();
    let mut change = |field: String, old: Option<String>, new: Option<String>| {
        if old != new {
            changes.push(FieldChange {
                field,
                before: old,
                after: new.unwrap_or_default(),
            });
        }
    };
    change(
        "defaultFlow".into(),
        before.map(|r| r.default_flow.clone()),
        Some(after.default_flow.clone()),
    );
    change(
        "keywordFlow".into(),
        before.and_then(|r| r.keyword_flow.clone()),
        after.keyword_flow.clone(),
    );
    let empty = std::collections::BTreeMap::new();
    for (prefix, old, new) in [
        (
            "campaigns",
            before.map_or(&empty, |r| &r.campaigns),
            &after.campaigns,
        ),
        (
            "keywords",
            before.map_or(&empty, |r| &r.keywords),
            &after.keywords,
        ),
    ] {
        let keys: std::collections::BTreeSet<&String> = old.keys().chain(new.keys()).collect();
        for key in keys {
            change(
                format!("{prefix}.{key}"),
                old.get(key).cloned(),
                new.get(key).cloned(),
            );
        }
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file() -> FunnelScripts {
        toml::from_str(include_str!("../../config/funnels.toml")).expect("the file parses")
    }

    /// Processes starting together on a new store (`scripts/cluster` starts three at once): the
    /// file is imported once, and every one of them starts.
    #[tokio::test]
    async fn processes_starting_together_import_the_file_once_and_all_start() {
        let db = crate::store::migrate::migrated_memory_db().await;
        let file = file();
        let starts = (0..4).map(|_| FlowLibrary::start(db.clone(), Cluster::alone(), &file));
        let libraries = futures_util::future::join_all(starts).await;
        for library in &libraries {
            let library = library.as_ref().expect("every process starts");
            assert_eq!(library.catalog().published.len(), 4);
        }
        let records = stored::history(&db, None, 100).await.expect("history");
        assert_eq!(records.len(), 4, "one import record per flow: {records:?}");
    }
}
