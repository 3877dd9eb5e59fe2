//! Group commit for the live conversations' store calls: funnel conversation loads and saves,
//! visits and funnel analytics events.
//!
//! Thousands of live conversations each load once and save a few times a minute. One transaction
//! per call costs SurrealDB a transaction each: it decodes the table's definitions again for every
//! transaction (measured: a quarter of a join's cost went to planning the load), parses and plans
//! the query, and the embedded engine's commit scans the open transactions. So a few batchers take
//! the calls that arrive while they are busy and run them together, in one transaction: the
//! classic group commit of databases. Each caller is answered only when the transaction holding
//! its statement has committed (SurrealKV syncs its log before a commit returns), so an
//! acknowledgement still means "on disk".
//!
//! - A batch that fails fails every caller in it, with the same error, except a batch that lost a
//!   race (a conflict with another transaction, or a unique index that another process filled
//!   first): then each of its statements runs again on its own, so the one in conflict gets its
//!   conflict and the others land.
//! - A conversation update that finds another version than the one it was made from lands
//!   nowhere and answers [`Outcome::Conflict`]; the rest of its batch is unaffected.
//! - A batch that the database does not answer within [`BATCH_LIMIT`] fails all its callers.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use surrealdb::types::SurrealValue;
use tokio::sync::{Mutex, mpsc, oneshot};

use super::Db;

/// Transactions in flight at once. While they commit, the next calls gather for the next one.
const BATCHERS: usize = 4;
/// The most statements one transaction carries.
const MAX_BATCH: usize = 256;
/// The longest a batch may take before its callers are told it failed.
const BATCH_LIMIT: Duration = Duration::from_secs(5);

/// One store call of the live conversations, as a statement of a batch.
#[derive(Debug, Clone)]
pub enum Statement {
    /// A funnel conversation as a whole: created when `previous` is none, otherwise updated only
    /// if it is still at version `previous`.
    Conversation {
        id: String,
        previous: Option<i64>,
        row: Box<super::funnels::ConversationRow>,
    },
    /// A visit: when the visitor was last seen, and the first ad click's attribution.
    Visitor {
        id: String,
        attribution: Option<serde_json::Value>,
    },
    /// An analytics event.
    Analytics(super::analytics::NewAnalyticsEvent),
    /// Reads a visitor's conversation of one funnel.
    LoadConversation { visitor: String, funnel: String },
}

/// What became of one statement of a batch that committed.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Done,
    /// A conversation update found another version: nothing was written.
    Conflict,
    /// What a load found: the conversation's stored fields, if there is one.
    Loaded(Option<surrealdb::types::Value>),
}

/// The variables a statement reads, bound as one object under the statement's own name.
#[derive(Debug, Clone, SurrealValue)]
struct ConversationVars {
    id: String,
    previous: Option<i64>,
    row: super::funnels::ConversationRow,
}

#[derive(Debug, Clone, SurrealValue)]
struct VisitorVars {
    id: String,
    attribution: Option<serde_json::Value>,
}

#[derive(Debug, Clone, SurrealValue)]
struct LoadVars {
    visitor: String,
    funnel: String,
}

impl Statement {
    /// Appends this statement, reading its variables from `$name`.
    fn append(&self, name: &str, sql: &mut String) {
        let statement = match self {
            Statement::Conversation { previous: None, .. } => format!(
                "CREATE type::record('funnel_conversation', ${name}.id) CONTENT ${name}.row \
                 RETURN VALUE record::id(id);"
            ),
            Statement::Conversation { .. } => format!(
                "UPDATE type::record('funnel_conversation', ${name}.id) MERGE ${name}.row \
                 WHERE version = ${name}.previous RETURN VALUE record::id(id);"
            ),
            Statement::Visitor { .. } => format!(
                "UPSERT type::record('visitor', ${name}.id) SET last_seen_at = time::now(), \
                 acquisition = acquisition ?? ${name}.attribution RETURN NONE;"
            ),
            Statement::Analytics(_) => {
                format!("CREATE analytics_event CONTENT ${name} RETURN NONE;")
            }
            Statement::LoadConversation { .. } => format!(
                "SELECT {fields} FROM funnel_conversation WHERE visitor = \
                 type::record('visitor', ${name}.visitor) AND funnel = ${name}.funnel LIMIT 1;",
                fields = super::funnels::READ_FIELDS
            ),
        };
        sql.push_str(&statement);
    }

    fn bind<'a>(
        &self,
        name: String,
        query: surrealdb::method::Query<'a, surrealdb::engine::any::Any>,
    ) -> surrealdb::method::Query<'a, surrealdb::engine::any::Any> {
        match self.clone() {
            Statement::Conversation { id, previous, row } => query.bind((
                name,
                ConversationVars {
                    id,
                    previous,
                    row: *row,
                },
            )),
            Statement::Visitor { id, attribution } => {
                query.bind((name, VisitorVars { id, attribution }))
            }
            Statement::Analytics(event) => query.bind((name, event)),
            Statement::LoadConversation { visitor, funnel } => {
                query.bind((name, LoadVars { visitor, funnel }))
            }
        }
    }

    /// Reads this statement's outcome from its result.
    fn outcome(
        &self,
        response: &mut surrealdb::IndexedResults,
        index: usize,
    ) -> Result<Outcome, surrealdb::Error> {
        match self {
            Statement::Conversation { .. } => {
                let saved: Vec<String> = response.take(index)?;
                Ok(if saved.is_empty() {
                    Outcome::Conflict
                } else {
                    Outcome::Done
                })
            }
            Statement::Visitor { .. } | Statement::Analytics(_) => Ok(Outcome::Done),
            Statement::LoadConversation { .. } => {
                let rows: Vec<surrealdb::types::Value> = response.take(index)?;
                Ok(Outcome::Loaded(rows.into_iter().next()))
            }
        }
    }
}

type Answer = oneshot::Sender<Result<Outcome, surrealdb::Error>>;

struct Job {
    statement: Statement,
    answer: Answer,
}

/// The live conversations' store calls, run in groups: cheap to clone; its tasks end when the
/// last clone goes, once they have run what was queued.
#[derive(Clone)]
pub struct Batcher {
    jobs: mpsc::UnboundedSender<Job>,
    counts: Arc<Counts>,
}

#[derive(Default)]
struct Counts {
    transactions: AtomicU64,
    statements: AtomicU64,
}

impl Batcher {
    /// Starts the batchers' tasks on the current runtime.
    pub fn start(db: Db) -> Self {
        let (jobs, queue) = mpsc::unbounded_channel();
        let queue = Arc::new(Mutex::new(queue));
        let counts = Arc::new(Counts::default());
        for _ in 0..BATCHERS {
            tokio::spawn(batcher(db.clone(), queue.clone(), counts.clone()));
        }
        Self { jobs, counts }
    }

    /// How many batches (transactions) have been committed, and how many statements they held.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.counts.transactions.load(Ordering::Relaxed),
            self.counts.statements.load(Ordering::Relaxed),
        )
    }

    /// Runs `statement` with whatever else is waiting, and answers once it has committed.
    pub async fn submit(&self, statement: Statement) -> Result<Outcome, surrealdb::Error> {
        let (answer, answered) = oneshot::channel();
        self.jobs.send(Job { statement, answer }).map_err(|_| {
            surrealdb::Error::internal("the store's batcher has stopped".to_owned())
        })?;
        answered.await.unwrap_or_else(|_| {
            Err(surrealdb::Error::internal(
                "the store's batcher stopped before answering".to_owned(),
            ))
        })
    }
}

/// Runs one statement in a transaction of its own, at once (the paths that are not hot).
pub async fn run_alone(db: &Db, statement: Statement) -> Result<Outcome, surrealdb::Error> {
    run(db, &[&statement]).await?.remove(0)
}

/// Takes the jobs waiting (at least one, at most [`MAX_BATCH`]) and commits them together.
async fn batcher(db: Db, queue: Arc<Mutex<mpsc::UnboundedReceiver<Job>>>, counts: Arc<Counts>) {
    let mut jobs = Vec::with_capacity(MAX_BATCH);
    loop {
        {
            let mut queue = queue.lock().await;
            if queue.recv_many(&mut jobs, MAX_BATCH).await == 0 {
                return;
            }
        }
        let (statements, answers): (Vec<Statement>, Vec<Answer>) = jobs
            .drain(..)
            .map(|job| (job.statement, job.answer))
            .unzip();
        counts.transactions.fetch_add(1, Ordering::Relaxed);
        counts
            .statements
            .fetch_add(statements.len() as u64, Ordering::Relaxed);
        let outcomes = commit_together(&db, statements).await;
        for (answer, outcome) in answers.into_iter().zip(outcomes) {
            // A caller that stopped waiting (its own time-out) is simply not told.
            let _ = answer.send(outcome);
        }
    }
}

/// What a batcher does with one batch: commits `statements` in one transaction and gives each
/// its outcome, in order. A failed transaction fails every statement with its error, unless it
/// lost a race: then each statement runs again on its own.
pub async fn commit_together(
    db: &Db,
    statements: Vec<Statement>,
) -> Vec<Result<Outcome, surrealdb::Error>> {
    let all: Vec<&Statement> = statements.iter().collect();
    match run(db, &all).await {
        Ok(outcomes) => outcomes,
        Err(error) if statements.len() > 1 && super::billing::is_conflict(&error) => {
            let alone = all.iter().map(|one| run(db, std::slice::from_ref(one)));
            futures_util::future::join_all(alone)
                .await
                .into_iter()
                .map(|outcome| outcome.and_then(|mut one| one.remove(0)))
                .collect()
        }
        Err(error) => statements.iter().map(|_| Err(error.clone())).collect(),
    }
}

/// Runs `statements` in one transaction: each one's outcome, or the error that failed them all.
async fn run(
    db: &Db,
    statements: &[&Statement],
) -> Result<Vec<Result<Outcome, surrealdb::Error>>, surrealdb::Error> {
    let transaction = statements.len() > 1;
    let mut sql = String::with_capacity(64 + 200 * statements.len());
    if transaction {
        sql.push_str("BEGIN TRANSACTION;");
    }
    for (index, statement) in statements.iter().enumerate() {
        statement.append(&format!("s{index}"), &mut sql);
    }
    if transaction {
        sql.push_str("COMMIT TRANSACTION;");
    }
    let mut query = db.query(sql);
    for (index, statement) in statements.iter().enumerate() {
        query = statement.bind(format!("s{index}"), query);
    }
    let mut response = tokio::time::timeout(BATCH_LIMIT, query)
        .await
        .map_err(|_| surrealdb::Error::internal("the database did not answer in time".to_owned()))?
        .and_then(super::check_transaction)?;
    // `BEGIN` is a statement of the response too.
    let first = usize::from(transaction);
    Ok(statements
        .iter()
        .enumerate()
        .map(|(index, statement)| statement.outcome(&mut response, first + index))
        .collect())
}
