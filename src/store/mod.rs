//! The store: SurrealDB through `engine::any` — `surrealkv://` on disk by default, `mem://` for tests,
//! `ws://` for a SurrealDB server or cluster — with the migrations applied at connect time.
//!
//! Durability: the embedded SurrealKV engine syncs its write-ahead log on every commit (its default
//! `sync=every`, grouped under concurrency), so a write the API acknowledged survives `kill -9`.

pub mod ad_costs;
pub mod analytics;
pub mod backup;
pub mod batch;
pub mod billing;
pub mod chats;
pub mod experiments;
pub mod flow_tally;
pub mod flows;
mod funnel_rows;
pub mod funnels;
pub mod journeys;
pub(crate) mod migrate;
pub mod outbox;
pub mod password_resets;
pub mod rollups;
pub mod sessions;
pub mod tasks;
pub mod users;

use std::path::Path;
use std::sync::LazyLock;

use secrecy::ExposeSecret;
use surrealdb::Surreal;
use surrealdb::engine::any::Any;
use surrealdb::opt::auth::Root;

pub use migrate::{MIGRATIONS, Migration, MigrationError, migrate, migrate_first};

use crate::config::DatabaseSettings;

/// Store calls of the real-time paths (funnel conversations, analytics, visits) in flight at once.
/// The embedded engine's every write scans all open transactions, so thousands of calls at once
/// (a load of 5,000 conversations) cost quadratically more than the same calls taking turns.
const TURNS: usize = 64;

static STORE_TURNS: LazyLock<tokio::sync::Semaphore> =
    LazyLock::new(|| tokio::sync::Semaphore::new(TURNS));

/// Runs `work` when one of the store's turns is free (see [`TURNS`]).
pub async fn in_turn<T>(work: impl std::future::Future<Output = T>) -> T {
    // The semaphore is never closed, so a permit always comes.
    let _turn = STORE_TURNS.acquire().await.ok();
    work.await
}

/// The longest a call may hold its turn (a hung database must not keep every turn).
const TURN_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Like [`in_turn`], for a query that fails once it has run `TURN_LIMIT` holding its turn.
pub async fn in_turn_bounded<T>(
    work: impl std::future::Future<Output = Result<T, surrealdb::Error>>,
) -> Result<T, surrealdb::Error> {
    in_turn(async {
        tokio::time::timeout(TURN_LIMIT, work)
            .await
            .unwrap_or_else(|_| {
                Err(surrealdb::Error::internal(
                    "the database did not answer in time".to_owned(),
                ))
            })
    })
    .await
}

/// The database handle every repository works with; cheap to clone, and every clone shares one
/// session. (SurrealDB 3's own `Surreal::clone` starts a new session, which against a SurrealDB
/// server replays the sign-in, an argon2 hash on the server: 62 % of its CPU when each store batch
/// took a clone; docs/benchmarks.md, "Several processes".)
#[derive(Clone)]
pub struct Db(std::sync::Arc<Surreal<Any>>);

impl Db {
    pub fn new(db: Surreal<Any>) -> Self {
        Self(std::sync::Arc::new(db))
    }
}

impl std::ops::Deref for Db {
    type Target = Surreal<Any>;

    fn deref(&self) -> &Surreal<Any> {
        &self.0
    }
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Db")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create the database folder {path}: {source}")]
    Folder {
        path: String,
        source: std::io::Error,
    },
    #[error("database: {0}")]
    Database(#[from] surrealdb::Error),
    #[error(transparent)]
    Migration(#[from] MigrationError),
}

/// Connects, signs in where a server needs it, selects the namespace and database, and migrates.
pub async fn connect(settings: &DatabaseSettings) -> Result<Db, StoreError> {
    let db = open(settings).await?;
    migrate(&db).await?;
    Ok(db)
}

/// Like [`connect`], without migrating (`helpnow backup` and `restore`, src/store/backup.rs).
pub async fn open(settings: &DatabaseSettings) -> Result<Db, StoreError> {
    if let Some(rest) = settings.url.strip_prefix("surrealkv://") {
        let folder = rest.split('?').next().unwrap_or(rest);
        if let Some(parent) = Path::new(folder)
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
        {
            std::fs::create_dir_all(parent).map_err(|source| StoreError::Folder {
                path: parent.display().to_string(),
                source,
            })?;
        }
    }

    let db = surrealdb::engine::any::connect(settings.url.as_str()).await?;
    if let (Some(username), Some(password)) = (&settings.username, &settings.password) {
        db.signin(Root {
            username: username.clone(),
            password: password.expose_secret().to_owned(),
        })
        .await?;
    }
    // SurrealDB 3 wants the namespace and database defined before they are used.
    db.query(format!(
        "DEFINE NAMESPACE IF NOT EXISTS `{ns}`; USE NS `{ns}`; DEFINE DATABASE IF NOT EXISTS `{db}`;",
        ns = settings.namespace,
        db = settings.database
    ))
    .await?
    .check()?;
    db.use_ns(&settings.namespace)
        .use_db(&settings.database)
        .await?;
    Ok(Db::new(db))
}

/// Like `check()`, but for a `BEGIN ... COMMIT` script: when one statement fails, every other
/// statement reports only "not executed due to a failed transaction", so the error that explains
/// the failure (a THROW, a conflict, a broken unique index) is looked for among all of them.
pub(crate) fn check_transaction(
    mut response: surrealdb::IndexedResults,
) -> Result<surrealdb::IndexedResults, surrealdb::Error> {
    let mut errors: Vec<(usize, surrealdb::Error)> = response.take_errors().into_iter().collect();
    if errors.is_empty() {
        return Ok(response);
    }
    errors.sort_by_key(|(index, _)| *index);
    let decisive = errors
        .iter()
        .position(|(_, error)| !error.to_string().contains("failed transaction"))
        .unwrap_or(0);
    Err(errors.swap_remove(decisive).1)
}

/// Runs a write again when it lost an optimistic-concurrency race (the embedded engines abort
/// one of two transactions that touch the same record). Conditional updates used as claims
/// ("set used where unused") then give the loser an honest "already taken" instead of an error.
pub async fn retry_on_conflict<T, F, Fut>(write: F) -> Result<T, surrealdb::Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, surrealdb::Error>>,
{
    retry_conflicts(8, write).await
}

/// `retry_on_conflict` with a chosen number of attempts, for records many writers touch at once
/// (a member ticking items quickly). The pauses are random, growing to 40 ms, so writers that
/// collided do not collide again in step.
pub async fn retry_conflicts<T, F, Fut>(attempts: u64, write: F) -> Result<T, surrealdb::Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, surrealdb::Error>>,
{
    retry_while(attempts, billing::is_conflict, write).await
}

/// Runs a write again, up to `attempts` times in all, while its error is one `retry` says a
/// fresh attempt can get past, with the pauses of [`retry_conflicts`].
pub async fn retry_while<T, F, Fut>(
    attempts: u64,
    retry: impl Fn(&surrealdb::Error) -> bool,
    mut write: F,
) -> Result<T, surrealdb::Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, surrealdb::Error>>,
{
    use rand::Rng;
    let mut attempt = 0;
    loop {
        attempt += 1;
        match write().await {
            Err(error) if retry(&error) => {
                if attempt >= attempts {
                    // The write's closure names its caller (`...::claim_event::{{closure}}`).
                    // The error's text is left out: a unique index's quotes the value (an
                    // address).
                    tracing::warn!(
                        write = std::any::type_name::<F>(),
                        attempts,
                        unique_index = users::is_unique_violation(&error),
                        "a write still met a conflict at its last attempt"
                    );
                    return Err(error);
                }
                let pause = rand::rng().random_range(1..=(3 * attempt).min(40));
                tokio::time::sleep(std::time::Duration::from_millis(pause)).await;
            }
            other => return other,
        }
    }
}

/// How long `/health` waits for the database before calling it unavailable.
const HEALTH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// Answers whether the database serves queries (for `/health`); a stalled database counts as down.
/// How often [`spawn_watchdog`] asks the database server.
const WATCHDOG_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// For a SurrealDB server (`ws://`, `wss://`): asks it every 2 s and, once it has answered nothing
/// for `limit`, ends the process (exit code 1) for its service manager to start it afresh. The
/// fault run once saw the SDK's client never connect again after its link was cut (every query
/// timed out for minutes while the server answered others); a new process connects at once. A
/// slow answer is an answer: only silence for the whole `limit` counts. `None` for the embedded
/// engines and a `limit` of 0.
pub fn spawn_watchdog(
    db: Db,
    url: &str,
    limit: std::time::Duration,
) -> Option<tokio::task::JoinHandle<()>> {
    let remote = url.starts_with("ws://") || url.starts_with("wss://");
    if !remote || limit.is_zero() {
        return None;
    }
    Some(tokio::spawn(async move {
        let mut answered = tokio::time::Instant::now();
        let mut ticks = tokio::time::interval(WATCHDOG_EVERY);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            if is_healthy(&db).await {
                answered = tokio::time::Instant::now();
            } else if answered.elapsed() >= limit {
                tracing::error!(
                    silent_secs = answered.elapsed().as_secs(),
                    "the database server has answered nothing for too long: exiting, for the service manager to start this process afresh (database.unanswered_exit_secs)"
                );
                std::process::exit(1);
            }
        }
    }))
}

pub async fn is_healthy(db: &Db) -> bool {
    match tokio::time::timeout(HEALTH_TIMEOUT, db.query("RETURN true")).await {
        Ok(Ok(response)) => response.check().is_ok(),
        Ok(Err(_)) | Err(_) => false,
    }
}
