//! Experiments (issue 48): a funnel's visitors (or some campaigns' or keywords') split between
//! two to four arms, each a published flow version and/or an offer, and the money each arm
//! brings, with the statistics that pick the winner (docs/dashboard.md, "Experiments").
//!
//! An experiment's changes commit with the flows' revision (`store::flows::commit`), so a start,
//! a pause, a stop or a promotion reaches every process as a publish does: this one at once, the
//! others through the cluster's event, and each within 3 s by its poll. Assignment itself is the
//! actors' (`rules::experiments`): a hash, from memory.

pub mod analysis;
pub mod stats;

use std::collections::BTreeSet;
use std::time::Duration;

use chrono::{DateTime, Utc};
use helpnow_actors::rules::FunnelKind;
use helpnow_actors::rules::experiments::{
    ARM_KEYS, Arm, MAX_ARMS, MAX_WEIGHT, MIN_ARMS, Scope, Split, Status,
};
use helpnow_actors::rules::flows::{
    FieldProblem, FlowCatalog, Routing, bounds, valid_campaign, valid_keyword_route,
};
use serde::{Deserialize, Serialize};

use crate::flows::FlowLibrary;
use crate::store::Db;
use crate::store::experiments as stored;
use crate::store::flows::{
    self as flow_store, ChangeKind, CommitError, ExperimentWrite, PublishedRouting, Record, Writes,
};

pub use analysis::Analysis;

/// What an experiment aims at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// The share of exposed visitors who paid for a trial (a paid checkout fulfilled).
    TrialPaid,
    /// Net cents per exposed visitor: fees and subscription payments less fees given back, as
    /// the dashboard counts them.
    Revenue,
}

/// The primary goal: the metric, counted within `days` of each visitor's exposure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Goal {
    pub metric: Metric,
    pub days: u32,
}

/// The limits an arm must keep, whatever its goal does (fractions; none: no limit).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Guardrails {
    /// Fees given back over fees taken.
    #[serde(default)]
    pub max_refund_rate: Option<f64>,
    /// Chat visitors who left before their second message, over the arm's chat visitors.
    #[serde(default)]
    pub max_early_leave_rate: Option<f64>,
}

/// What the operator writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Definition {
    pub name: String,
    pub scope: Scope,
    pub arms: Vec<Arm>,
    pub goal: Goal,
    #[serde(default)]
    pub guardrails: Guardrails,
    pub rule: stats::Rule,
    /// Publish the winner by itself once the rule picks one (and no guardrail is breached).
    #[serde(default)]
    pub auto_promote: bool,
}

/// An experiment as stored: its definition, status and dates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Experiment {
    pub id: String,
    #[serde(flatten)]
    pub definition: Definition,
    pub status: Status,
    pub created_at: DateTime<Utc>,
    pub created_by: String,
    pub started_at: Option<DateTime<Utc>>,
    pub ended_at: Option<DateTime<Utc>>,
    /// The arm promoted, if any.
    pub winner: Option<String>,
    pub promoted_at: Option<DateTime<Utc>>,
    pub promoted_by: Option<String>,
}

impl Experiment {
    /// What assignment needs of it.
    pub fn split(&self) -> Split {
        Split {
            id: self.id.clone(),
            scope: self.definition.scope.clone(),
            arms: self.definition.arms.clone(),
        }
    }

    fn write(&self) -> ExperimentWrite {
        ExperimentWrite {
            key: self.id.clone(),
            status: self.status.as_str().to_owned(),
            started_at: self.started_at,
            doc: serde_json::to_value(self).unwrap_or_default(),
        }
    }
}

/// What was done to an experiment, for its record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Created,
    Edited,
    Started,
    Paused,
    Resumed,
    Stopped,
    Promoted,
    Archived,
}

/// The record of one change.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct RecordDoc {
    experiment: String,
    at: DateTime<Utc>,
    by: String,
    kind: Change,
    arm: Option<String>,
    note: Option<String>,
}

/// Why an experiment's change was refused.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    #[error("no such experiment")]
    NotFound,
    #[error("the experiment has problems")]
    Invalid(Vec<FieldProblem>),
    /// Only a draft is edited; a change that its status does not allow.
    #[error("{0}")]
    WrongStatus(String),
    /// Another running or paused experiment takes some of the same visitors.
    #[error("{0}")]
    Overlaps(String),
    #[error("the flows or experiments changed meanwhile; try again")]
    Moved,
    #[error(transparent)]
    Store(#[from] surrealdb::Error),
}

impl From<CommitError> for ExperimentError {
    fn from(error: CommitError) -> Self {
        match error {
            CommitError::Moved => ExperimentError::Moved,
            CommitError::Store(error) => ExperimentError::Store(error),
        }
    }
}

/// The bounds of a definition (docs/dashboard.md, "Experiments").
pub mod limits {
    pub const NAME_MAX_CHARS: usize = 80;
    pub const ARM_NAME_MAX_CHARS: usize = 60;
    pub const GOAL_DAYS_MAX: u32 = 90;
    pub const MIN_EXPOSURES_MIN: u64 = 10;
    pub const MIN_DAYS_MAX: u32 = 90;
    pub const CHANCE_MIN: f64 = 0.5;
    pub const CHANCE_MAX: f64 = 0.999;
}

fn problem(field: impl Into<String>, message: impl Into<String>) -> FieldProblem {
    FieldProblem {
        field: field.into(),
        message: message.into(),
    }
}

/// Every problem of a definition against the flows published now, field by field.
pub fn problems(definition: &Definition, catalog: &FlowCatalog) -> Vec<FieldProblem> {
    let mut problems = Vec::new();
    let name = definition.name.trim();
    if name.is_empty() || name.chars().count() > limits::NAME_MAX_CHARS {
        problems.push(problem(
            "name",
            format!(
                "Give the experiment a name of 1 to {} characters.",
                limits::NAME_MAX_CHARS
            ),
        ));
    }
    let scope = &definition.scope;
    for campaign in &scope.campaigns {
        if !valid_campaign(campaign) {
            problems.push(problem(
                "scope.campaigns",
                format!(
                    "\"{campaign}\" is not a campaign id: letters, digits, '-' or '_', at most {} characters.",
                    bounds::CAMPAIGN_MAX_CHARS
                ),
            ));
        }
    }
    for keyword in &scope.keywords {
        if !valid_keyword_route(keyword) {
            problems.push(problem(
                "scope.keywords",
                format!(
                    "\"{keyword}\" is not a keyword: one or more words in lower case, at most {} characters.",
                    bounds::KEYWORD_MAX_CHARS
                ),
            ));
        }
    }
    let arms = &definition.arms;
    if !(MIN_ARMS..=MAX_ARMS).contains(&arms.len()) {
        problems.push(problem(
            "arms",
            format!("An experiment has {MIN_ARMS} to {MAX_ARMS} arms."),
        ));
    }
    for (index, arm) in arms.iter().enumerate() {
        let field = |name: &str| format!("arms.{index}.{name}");
        let arm_name = arm.name.trim();
        if arm_name.is_empty() || arm_name.chars().count() > limits::ARM_NAME_MAX_CHARS {
            problems.push(problem(
                field("name"),
                format!(
                    "Give the arm a name of 1 to {} characters.",
                    limits::ARM_NAME_MAX_CHARS
                ),
            ));
        }
        if !(1..=MAX_WEIGHT).contains(&arm.weight) {
            problems.push(problem(
                field("weight"),
                format!("A weight is a whole number from 1 to {MAX_WEIGHT}."),
            ));
        }
        if let Some(flow) = &arm.flow {
            let script = catalog
                .versions
                .get(&flow.name)
                .and_then(|versions| versions.get(&flow.version));
            match script {
                None => problems.push(problem(
                    field("flow"),
                    format!(
                        "There is no published version {} of the flow \"{}\".",
                        flow.version, flow.name
                    ),
                )),
                Some(script) if script.uses_keyword() && scope.keywords.is_empty() => {
                    problems.push(problem(
                        field("flow"),
                        format!(
                            "The flow \"{}\" v{} uses {{keyword}}, which a visitor of this experiment may not have: scope it by keyword, or choose another version.",
                            flow.name, flow.version
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
        let meets = arm.offer.unwrap_or(scope.funnel);
        if meets != scope.funnel && scope.campaigns.is_empty() {
            problems.push(problem(
                field("offer"),
                "An arm that sends visitors to another funnel needs the experiment scoped to campaign ids: a winning offer is routed by campaign.",
            ));
        }
    }
    if !(1..=limits::GOAL_DAYS_MAX).contains(&definition.goal.days) {
        problems.push(problem(
            "goal.days",
            format!(
                "Count the goal within 1 to {} days of a visitor's first view.",
                limits::GOAL_DAYS_MAX
            ),
        ));
    }
    for (field, rate) in [
        (
            "guardrails.maxRefundRate",
            definition.guardrails.max_refund_rate,
        ),
        (
            "guardrails.maxEarlyLeaveRate",
            definition.guardrails.max_early_leave_rate,
        ),
    ] {
        if rate.is_some_and(|rate| !(rate > 0.0 && rate <= 1.0)) {
            problems.push(problem(field, "A limit is a share from 0.1 % to 100 %."));
        }
    }
    let rule = &definition.rule;
    if rule.min_exposures < limits::MIN_EXPOSURES_MIN {
        problems.push(problem(
            "rule.minExposures",
            format!(
                "Ask for at least {} visitors per arm before a winner is named.",
                limits::MIN_EXPOSURES_MIN
            ),
        ));
    }
    if rule.min_days > limits::MIN_DAYS_MAX {
        problems.push(problem(
            "rule.minDays",
            format!("Ask for at most {} days.", limits::MIN_DAYS_MAX),
        ));
    }
    if !(limits::CHANCE_MIN..=limits::CHANCE_MAX).contains(&rule.chance) {
        problems.push(problem(
            "rule.chance",
            "The chance to beat the control is from 50 % to 99.9 %.",
        ));
    }
    let loss_ok = rule.max_loss > 0.0
        && match definition.goal.metric {
            Metric::TrialPaid => rule.max_loss < 1.0,
            Metric::Revenue => rule.max_loss.is_finite(),
        };
    if !loss_ok {
        problems.push(problem(
            "rule.maxLoss",
            match definition.goal.metric {
                Metric::TrialPaid => "The expected loss is a share above 0 and below 100 %.",
                Metric::Revenue => "The expected loss is an amount per visitor above $0.",
            },
        ));
    }
    problems
}

/// Whether two scopes can take one visitor: they meet the same funnels (their scope's, or an
/// arm's offer) and take some of the same visitors (either takes everyone, or they share a
/// campaign id or a keyword).
fn overlap(a: &Experiment, b: &Experiment) -> bool {
    let funnels = |x: &Experiment| -> BTreeSet<&'static str> {
        std::iter::once(x.definition.scope.funnel)
            .chain(x.definition.arms.iter().filter_map(|arm| arm.offer))
            .map(FunnelKind::as_str)
            .collect()
    };
    if funnels(a).is_disjoint(&funnels(b)) {
        return false;
    }
    let (sa, sb) = (&a.definition.scope, &b.definition.scope);
    let everyone = |s: &Scope| s.campaigns.is_empty() && s.keywords.is_empty();
    everyone(sa)
        || everyone(sb)
        || sa.campaigns.iter().any(|c| sb.campaigns.contains(c))
        || sa.keywords.iter().any(|k| sb.keywords.contains(k))
}

/// The experiments' service: their definitions and changes, their analysis, and the promotion
/// of a winner.
#[derive(Clone)]
pub struct Experiments {
    db: Db,
    flows: FlowLibrary,
}

impl Experiments {
    pub fn new(db: Db, flows: FlowLibrary) -> Self {
        Self { db, flows }
    }

    pub fn flows(&self) -> &FlowLibrary {
        &self.flows
    }

    /// Every experiment, newest first, the archived last.
    pub async fn list(&self) -> Result<Vec<Experiment>, ExperimentError> {
        let mut experiments: Vec<Experiment> = stored::all(&self.db)
            .await?
            .into_iter()
            .filter_map(|doc| serde_json::from_value(doc).ok())
            .collect();
        experiments.sort_by_key(|x| x.status == Status::Archived);
        Ok(experiments)
    }

    pub async fn get(&self, id: &str) -> Result<Experiment, ExperimentError> {
        stored::one(&self.db, id)
            .await?
            .and_then(|doc| serde_json::from_value(doc).ok())
            .ok_or(ExperimentError::NotFound)
    }

    pub async fn history(&self, id: &str) -> Result<Vec<serde_json::Value>, ExperimentError> {
        Ok(stored::history(&self.db, id).await?)
    }

    /// The definition as it is kept: names trimmed, arms keyed by their place.
    fn tidy(mut definition: Definition) -> Definition {
        definition.name = definition.name.trim().to_owned();
        for (arm, key) in definition.arms.iter_mut().zip(ARM_KEYS) {
            key.clone_into(&mut arm.key);
            arm.name = arm.name.trim().to_owned();
        }
        definition.scope.campaigns = definition
            .scope
            .campaigns
            .iter()
            .map(|c| c.trim().to_owned())
            .filter(|c| !c.is_empty())
            .collect();
        definition.scope.keywords = definition
            .scope
            .keywords
            .iter()
            .map(|k| k.trim().to_owned())
            .filter(|k| !k.is_empty())
            .collect();
        definition
    }

    fn check(&self, definition: &Definition) -> Result<(), ExperimentError> {
        let problems = problems(definition, &self.flows.catalog());
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ExperimentError::Invalid(problems))
        }
    }

    /// Writes `experiments` with their record, with the flows' revision (and `writes`, for a
    /// promotion), then has every process reload.
    async fn commit(
        &self,
        experiment: &Experiment,
        change: Change,
        by: &str,
        arm: Option<String>,
        note: Option<String>,
        flow_change: Option<(flow_store::State, Writes)>,
    ) -> Result<(), ExperimentError> {
        let (mut state, mut writes) = match flow_change {
            Some(change) => change,
            None => (
                self.flows.state().await.map_err(flow_error)?,
                Writes::default(),
            ),
        };
        let expected = state.revision;
        state.revision += 1;
        writes.experiments.push(experiment.write());
        writes.experiment_records.push(
            serde_json::to_value(RecordDoc {
                experiment: experiment.id.clone(),
                at: Utc::now(),
                by: by.to_owned(),
                kind: change,
                arm,
                note,
            })
            .unwrap_or_default(),
        );
        flow_store::commit(&self.db, Some(expected), &state, &writes).await?;
        self.flows.changed().await;
        Ok(())
    }

    /// A new experiment, a draft.
    pub async fn create(
        &self,
        definition: Definition,
        by: &str,
    ) -> Result<Experiment, ExperimentError> {
        let definition = Self::tidy(definition);
        self.check(&definition)?;
        let experiment = Experiment {
            id: format!(
                "x{}",
                &crate::auth::token::new_secret()[..10].to_lowercase()
            ),
            definition,
            status: Status::Draft,
            created_at: Utc::now(),
            created_by: by.to_owned(),
            started_at: None,
            ended_at: None,
            winner: None,
            promoted_at: None,
            promoted_by: None,
        };
        self.commit(&experiment, Change::Created, by, None, None, None)
            .await?;
        Ok(experiment)
    }

    /// A draft's new definition.
    pub async fn edit(
        &self,
        id: &str,
        definition: Definition,
        by: &str,
    ) -> Result<Experiment, ExperimentError> {
        let mut experiment = self.get(id).await?;
        if experiment.status != Status::Draft {
            return Err(ExperimentError::WrongStatus(
                "Only a draft can be edited: its visitors' arms would change under them. Copy it into a new experiment instead.".into(),
            ));
        }
        let definition = Self::tidy(definition);
        self.check(&definition)?;
        experiment.definition = definition;
        self.commit(&experiment, Change::Edited, by, None, None, None)
            .await?;
        Ok(experiment)
    }

    /// Starts a draft, or resumes a paused experiment.
    pub async fn start(&self, id: &str, by: &str) -> Result<Experiment, ExperimentError> {
        let mut experiment = self.get(id).await?;
        let change = match experiment.status {
            Status::Draft => Change::Started,
            Status::Paused => Change::Resumed,
            status => {
                return Err(ExperimentError::WrongStatus(format!(
                    "A {} experiment cannot be started.",
                    status.as_str()
                )));
            }
        };
        // Its flow versions may have gone from memory since it was written (never deleted, so
        // only by hand): check again.
        self.check(&experiment.definition)?;
        for other in self.list().await? {
            if other.id != experiment.id
                && matches!(other.status, Status::Running | Status::Paused)
                && overlap(&experiment, &other)
            {
                return Err(ExperimentError::Overlaps(format!(
                    "\"{}\" ({}) takes some of the same visitors. Stop it first, or scope this one to other campaigns or keywords.",
                    other.definition.name,
                    other.status.as_str()
                )));
            }
        }
        experiment.status = Status::Running;
        if experiment.started_at.is_none() {
            experiment.started_at = Some(Utc::now());
        }
        self.commit(&experiment, change, by, None, None, None)
            .await?;
        Ok(experiment)
    }

    pub async fn pause(&self, id: &str, by: &str) -> Result<Experiment, ExperimentError> {
        let mut experiment = self.get(id).await?;
        if experiment.status != Status::Running {
            return Err(ExperimentError::WrongStatus(
                "Only a running experiment can be paused.".into(),
            ));
        }
        experiment.status = Status::Paused;
        self.commit(&experiment, Change::Paused, by, None, None, None)
            .await?;
        Ok(experiment)
    }

    /// Ends an experiment without publishing anything.
    pub async fn stop(&self, id: &str, by: &str) -> Result<Experiment, ExperimentError> {
        let mut experiment = self.get(id).await?;
        if !matches!(experiment.status, Status::Running | Status::Paused) {
            return Err(ExperimentError::WrongStatus(
                "Only a running or paused experiment can be stopped.".into(),
            ));
        }
        experiment.status = Status::Stopped;
        experiment.ended_at = Some(Utc::now());
        self.commit(&experiment, Change::Stopped, by, None, None, None)
            .await?;
        Ok(experiment)
    }

    pub async fn archive(&self, id: &str, by: &str) -> Result<Experiment, ExperimentError> {
        let mut experiment = self.get(id).await?;
        if !matches!(experiment.status, Status::Stopped | Status::Draft) {
            return Err(ExperimentError::WrongStatus(
                "Stop the experiment before you archive it.".into(),
            ));
        }
        experiment.status = Status::Archived;
        self.commit(&experiment, Change::Archived, by, None, None, None)
            .await?;
        Ok(experiment)
    }

    /// Publishes arm `arm_key` as the scope's: its flow version published and routed for the
    /// scope's campaigns and keywords (the default flow when it has neither), its offer routed
    /// for the scope's campaigns; the experiment ends with it as the winner. One transaction
    /// with the flows' revision.
    pub async fn promote(
        &self,
        id: &str,
        arm_key: &str,
        by: &str,
        note: Option<String>,
    ) -> Result<Experiment, ExperimentError> {
        let mut experiment = self.get(id).await?;
        if !matches!(
            experiment.status,
            Status::Running | Status::Paused | Status::Stopped
        ) || experiment.winner.is_some()
        {
            return Err(ExperimentError::WrongStatus(
                "Only a running, paused or stopped experiment without a winner can promote an arm."
                    .into(),
            ));
        }
        let arm = experiment
            .definition
            .arms
            .iter()
            .find(|arm| arm.key == arm_key)
            .cloned()
            .ok_or_else(|| {
                ExperimentError::Invalid(vec![problem("arm", "There is no such arm.")])
            })?;
        let flow_change = self.promotion(&experiment, &arm, by).await?;
        experiment.status = Status::Stopped;
        experiment.winner = Some(arm.key.clone());
        let now = Utc::now();
        experiment.ended_at = experiment.ended_at.or(Some(now));
        experiment.promoted_at = Some(now);
        experiment.promoted_by = Some(by.to_owned());
        self.commit(
            &experiment,
            Change::Promoted,
            by,
            Some(arm.key.clone()),
            note,
            Some(flow_change),
        )
        .await?;
        Ok(experiment)
    }

    /// The flows' new state and writes that make `arm` the scope's.
    async fn promotion(
        &self,
        experiment: &Experiment,
        arm: &Arm,
        by: &str,
    ) -> Result<(flow_store::State, Writes), ExperimentError> {
        let mut state = self.flows.state().await.map_err(flow_error)?;
        let published = self
            .flows
            .published()
            .await
            .map_err(flow_error)?
            .ok_or(ExperimentError::Moved)?;
        let mut routing: Routing = published.routing.routing.clone();
        let scope = &experiment.definition.scope;
        let mut writes = Writes::default();
        let now = Utc::now();
        if let Some(flow) = &arm.flow {
            let before = state.flows.get(&flow.name).copied();
            if before != Some(flow.version) {
                state.flows.insert(flow.name.clone(), flow.version);
                writes.records.push(Record {
                    at: now,
                    by: by.to_owned(),
                    kind: ChangeKind::Rollback,
                    flow: Some(flow.name.clone()),
                    version: flow.version,
                    from_version: before,
                    changes: Vec::new(),
                });
            }
            for campaign in &scope.campaigns {
                routing
                    .campaigns
                    .insert(campaign.clone(), flow.name.clone());
            }
            for keyword in &scope.keywords {
                routing.keywords.insert(keyword.clone(), flow.name.clone());
            }
            if scope.campaigns.is_empty() && scope.keywords.is_empty() {
                routing.default_flow = flow.name.clone();
            }
        }
        let meets = arm.offer.unwrap_or(scope.funnel);
        for campaign in &scope.campaigns {
            if meets == scope.funnel {
                routing.offers.remove(campaign);
            } else {
                routing.offers.insert(campaign.clone(), meets);
            }
        }
        if routing != published.routing.routing {
            let catalog = self.flows.catalog();
            let script = |name: &str| {
                let version = state.flows.get(name)?;
                catalog.versions.get(name)?.get(version).cloned()
            };
            let problems = routing.check(script);
            if !problems.is_empty() {
                return Err(ExperimentError::Invalid(problems));
            }
            state.routing += 1;
            writes.routing = Some(PublishedRouting {
                version: state.routing,
                routing,
                published_at: now,
                published_by: by.to_owned(),
            });
            writes.records.push(Record {
                at: now,
                by: by.to_owned(),
                kind: ChangeKind::Routing,
                flow: None,
                version: state.routing,
                from_version: Some(state.routing - 1),
                changes: Vec::new(),
            });
        }
        Ok((state, writes))
    }

    /// The figures of an experiment, per arm, with the statistics and the rule's decision.
    pub async fn analysis(&self, experiment: &Experiment) -> Result<Analysis, ExperimentError> {
        let (exposures, money) = stored::outcomes(&self.db, &experiment.id).await?;
        Ok(analysis::analyse(
            experiment,
            &exposures,
            &money,
            Utc::now(),
        ))
    }

    /// Promotes the winner of every running experiment whose rule picked one, when the operator
    /// asked for it and no guardrail is breached. Answers the experiments promoted.
    pub async fn promote_decided(&self) -> Result<Vec<String>, ExperimentError> {
        let mut promoted = Vec::new();
        for experiment in self.list().await? {
            if experiment.status != Status::Running || !experiment.definition.auto_promote {
                continue;
            }
            let analysis = self.analysis(&experiment).await?;
            let Some(arm) = analysis.auto_promotable() else {
                continue;
            };
            match self
                .promote(
                    &experiment.id,
                    &arm,
                    AUTO_PROMOTER,
                    Some(analysis.status.clone()),
                )
                .await
            {
                Ok(_) => promoted.push(experiment.id.clone()),
                // Another process promoted it first.
                Err(ExperimentError::Moved | ExperimentError::WrongStatus(_)) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(promoted)
    }

    /// Checks the running experiments' rules every `every` and promotes the winners the
    /// operator asked to have promoted.
    pub fn spawn_decider(&self, every: Duration) -> tokio::task::JoinHandle<()> {
        let experiments = self.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                match experiments.promote_decided().await {
                    Ok(promoted) => {
                        for id in promoted {
                            tracing::info!(experiment = %id, "an experiment's winner was promoted by its rule");
                        }
                    }
                    Err(error) => {
                        tracing::warn!(%error, "the experiments' rules could not be checked");
                    }
                }
            }
        })
    }
}

/// How often each process checks the running experiments' rules (a promotion that two make at
/// once commits once: the other finds the revision moved).
pub const DECIDE_EVERY: Duration = Duration::from_secs(60);

/// Who promotes a winner by the rule.
pub const AUTO_PROMOTER: &str = "the experiment's rule";

fn flow_error(error: crate::flows::FlowError) -> ExperimentError {
    match error {
        crate::flows::FlowError::Store(error) => ExperimentError::Store(error),
        _ => ExperimentError::Moved,
    }
}
