//! Group commit for the real-time paths' writes: funnel conversation saves, visits and funnel
//! analytics events.
//!
//! Thousands of live conversations each save a few times a minute. One transaction per save costs
//! the embedded engine a commit each (its write path scans the open transactions, and SurrealDB
//! parses and plans every query), so a few writers take the writes that arrive while they are busy
//! and commit them together, in one transaction: the classic group commit of databases. Each caller
//! is answered only when the transaction holding its write has committed (SurrealKV syncs its log
//! before a commit returns), so an acknowledgement still means "on disk".
//!
//! - A batch that fails fails every caller in it, with the same error, except a batch that lost a
//!   race (a conflict with another transaction, or a unique index that another process filled
//!   first): then each of its writes runs again on its own, so the one write that conflicts gets
//!   its conflict and the others land.
//! - A conversation update that finds another version than the one it was made from lands
//!   nowhere and answers [`Written::Conflict`]; the rest of its batch is unaffected.
//! - A batch that the database does not answer within [`BATCH_LIMIT`] fails all its callers.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use surrealdb::types::SurrealValue;
use tokio::sync::{Mutex, mpsc, oneshot};

use super::Db;

/// Transactions in flight at once. While they commit, the next writes gather for the next one.
const WRITERS: usize = 4;
/// The most writes one transaction carries.
const MAX_BATCH: usize = 256;
/// The longest a batch may take before its callers are told it failed.
const BATCH_LIMIT: Duration = Duration::from_secs(5);

/// One write of the real-time paths, as a statement of a batch.
#[derive(Debug, Clone)]
pub enum Write {
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
}

/// What became of one write of a batch that committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    Done,
    /// A conversation update found another version: nothing was written.
    Conflict,
}

/// The variables a write's statement reads, bound as one object under the write's own name.
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

impl Write {
    /// Appends this write's statement, reading its variables from `$name`.
    fn statement(&self, name: &str, sql: &mut String) {
        let statement = match self {
            Write::Conversation { previous: None, .. } => format!(
                "CREATE type::record('funnel_conversation', ${name}.id) CONTENT ${name}.row \
                 RETURN VALUE record::id(id);"
            ),
            Write::Conversation { .. } => format!(
                "UPDATE type::record('funnel_conversation', ${name}.id) MERGE ${name}.row \
                 WHERE version = ${name}.previous RETURN VALUE record::id(id);"
            ),
            Write::Visitor { .. } => format!(
                "UPSERT type::record('visitor', ${name}.id) SET last_seen_at = time::now(), \
                 acquisition = acquisition ?? ${name}.attribution RETURN NONE;"
            ),
            Write::Analytics(_) => {
                format!("CREATE analytics_event CONTENT ${name} RETURN NONE;")
            }
        };
        sql.push_str(&statement);
    }

    fn bind<'a>(
        &self,
        name: String,
        query: surrealdb::method::Query<'a, surrealdb::engine::any::Any>,
    ) -> surrealdb::method::Query<'a, surrealdb::engine::any::Any> {
        match self.clone() {
            Write::Conversation { id, previous, row } => query.bind((
                name,
                ConversationVars {
                    id,
                    previous,
                    row: *row,
                },
            )),
            Write::Visitor { id, attribution } => {
                query.bind((name, VisitorVars { id, attribution }))
            }
            Write::Analytics(event) => query.bind((name, event)),
        }
    }

    /// Reads this write's outcome from its statement's result.
    fn outcome(
        &self,
        response: &mut surrealdb::IndexedResults,
        index: usize,
    ) -> Result<Written, surrealdb::Error> {
        match self {
            Write::Conversation { .. } => {
                let saved: Vec<String> = response.take(index)?;
                Ok(if saved.is_empty() {
                    Written::Conflict
                } else {
                    Written::Done
                })
            }
            Write::Visitor { .. } | Write::Analytics(_) => Ok(Written::Done),
        }
    }
}

type Answer = oneshot::Sender<Result<Written, surrealdb::Error>>;

struct Job {
    write: Write,
    answer: Answer,
}

/// The real-time paths' writer: cheap to clone; its writer tasks end when the last clone goes,
/// once they have written what was queued.
#[derive(Clone)]
pub struct WriteBatcher {
    jobs: mpsc::UnboundedSender<Job>,
    counts: Arc<Counts>,
}

#[derive(Default)]
struct Counts {
    transactions: AtomicU64,
    writes: AtomicU64,
}

impl WriteBatcher {
    /// Starts the writer tasks on the current runtime.
    pub fn start(db: Db) -> Self {
        let (jobs, queue) = mpsc::unbounded_channel();
        let queue = Arc::new(Mutex::new(queue));
        let counts = Arc::new(Counts::default());
        for _ in 0..WRITERS {
            tokio::spawn(writer(db.clone(), queue.clone(), counts.clone()));
        }
        Self { jobs, counts }
    }

    /// How many batches (transactions) have been committed, and how many writes they held.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.counts.transactions.load(Ordering::Relaxed),
            self.counts.writes.load(Ordering::Relaxed),
        )
    }

    /// Writes `write` with whatever else is waiting, and answers once it has committed.
    pub async fn write(&self, write: Write) -> Result<Written, surrealdb::Error> {
        let (answer, answered) = oneshot::channel();
        self.jobs
            .send(Job { write, answer })
            .map_err(|_| surrealdb::Error::internal("the store's writer has stopped".to_owned()))?;
        answered.await.unwrap_or_else(|_| {
            Err(surrealdb::Error::internal(
                "the store's writer stopped before answering".to_owned(),
            ))
        })
    }
}

/// Runs one write in a transaction of its own, at once (the paths that are not hot).
pub async fn write_alone(db: &Db, write: Write) -> Result<Written, surrealdb::Error> {
    run(db, &[&write]).await?.remove(0)
}

/// Takes the jobs waiting (at least one, at most [`MAX_BATCH`]) and commits them together.
async fn writer(db: Db, queue: Arc<Mutex<mpsc::UnboundedReceiver<Job>>>, counts: Arc<Counts>) {
    let mut jobs = Vec::with_capacity(MAX_BATCH);
    loop {
        {
            let mut queue = queue.lock().await;
            if queue.recv_many(&mut jobs, MAX_BATCH).await == 0 {
                return;
            }
        }
        let (writes, answers): (Vec<Write>, Vec<Answer>) =
            jobs.drain(..).map(|job| (job.write, job.answer)).unzip();
        counts.transactions.fetch_add(1, Ordering::Relaxed);
        counts
            .writes
            .fetch_add(writes.len() as u64, Ordering::Relaxed);
        let outcomes = commit_together(&db, writes).await;
        for (answer, outcome) in answers.into_iter().zip(outcomes) {
            // A caller that stopped waiting (its own time-out) is simply not told.
            let _ = answer.send(outcome);
        }
    }
}

/// What the writer does with one batch: commits `writes` in one transaction and gives each its
/// outcome, in order. A failed transaction fails every write with its error, unless it lost a
/// race: then each write runs again on its own.
pub async fn commit_together(
    db: &Db,
    writes: Vec<Write>,
) -> Vec<Result<Written, surrealdb::Error>> {
    let all: Vec<&Write> = writes.iter().collect();
    match run(db, &all).await {
        Ok(outcomes) => outcomes,
        Err(error) if writes.len() > 1 && super::billing::is_conflict(&error) => {
            let alone = all.iter().map(|write| run(db, std::slice::from_ref(write)));
            futures_util::future::join_all(alone)
                .await
                .into_iter()
                .map(|outcome| outcome.and_then(|mut one| one.remove(0)))
                .collect()
        }
        Err(error) => writes.iter().map(|_| Err(error.clone())).collect(),
    }
}

/// Runs `writes` in one transaction: each write's outcome, or the error that failed them all.
async fn run(
    db: &Db,
    writes: &[&Write],
) -> Result<Vec<Result<Written, surrealdb::Error>>, surrealdb::Error> {
    let transaction = writes.len() > 1;
    let mut sql = String::with_capacity(64 + 140 * writes.len());
    if transaction {
        sql.push_str("BEGIN TRANSACTION;");
    }
    for (index, write) in writes.iter().enumerate() {
        write.statement(&format!("w{index}"), &mut sql);
    }
    if transaction {
        sql.push_str("COMMIT TRANSACTION;");
    }
    let mut query = db.query(sql);
    for (index, write) in writes.iter().enumerate() {
        query = write.bind(format!("w{index}"), query);
    }
    let mut response = tokio::time::timeout(BATCH_LIMIT, query)
        .await
        .map_err(|_| surrealdb::Error::internal("the database did not answer in time".to_owned()))?
        .and_then(super::check_transaction)?;
    // `BEGIN` is a statement of the response too.
    let first = usize::from(transaction);
    Ok(writes
        .iter()
        .enumerate()
        .map(|(index, write)| write.outcome(&mut response, first + index))
        .collect())
}
