//! `helpnow backup FILE` and `helpnow restore FILE` (docs/operations.md, "Backup and restore").
//!
//! A backup is SurrealDB's export of the database: SurrealQL text that defines the tables, fields,
//! indexes and events and inserts every record, read in one read transaction, so it is the
//! store as it was at one moment while the product keeps writing. In front of it goes one line
//! of our own, a SurrealQL comment that `restore` reads back: HelpNow's version, the schema's last
//! migration, when it was taken, and from which kind of store. The export starts with
//! `OPTION IMPORT`, so a restore runs no events and recomputes no field values: the records come
//! back as they were.
//!
//! Where it runs: on the embedded SurrealKV store a running server holds the store's lock, so
//! the command asks the server through its control socket (src/startup/control.rs) and the
//! server writes the file; with no server, the command opens the store itself. A SurrealDB server
//! is reached over HTTP (`ws://` becomes `http://`): the SDK's WebSocket engine has no export.

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::io::AsyncWriteExt;

use super::{Db, MIGRATIONS, MigrationError, StoreError};
use crate::config::DatabaseSettings;

/// What starts a backup's first line.
const HEADER_PREFIX: &str = "-- helpnow-backup ";

/// The first line of a backup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// The HelpNow that took it.
    pub version: String,
    /// The last migration applied to the store it was taken from.
    pub migration: String,
    /// When it was taken (RFC 3339, UTC): it holds every write committed before.
    pub taken_at: String,
    /// `surrealkv`, `surrealdb-server` or `mem`.
    pub store: String,
}

impl Header {
    fn line(&self) -> String {
        // serde_json writes no line breaks: the header stays one comment line.
        format!(
            "{HEADER_PREFIX}{}\n",
            serde_json::to_string(self).unwrap_or_default()
        )
    }
}

/// A backup that was written.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Written {
    pub file: PathBuf,
    pub header: Header,
    pub bytes: u64,
    pub seconds: f64,
}

impl std::fmt::Display for Written {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "backed up to {} ({} bytes in {:.1} s): the store as it was at {}, schema at migration {}",
            self.file.display(),
            self.bytes,
            self.seconds,
            self.header.taken_at,
            self.header.migration
        )
    }
}

/// A restore that was done.
#[derive(Debug, Clone)]
pub struct Restored {
    pub header: Header,
    pub tables: usize,
    pub records: u64,
    /// This binary's migrations applied after the import (the backup's schema was older).
    pub migrated: Vec<&'static str>,
    pub seconds: f64,
}

impl std::fmt::Display for Restored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "restored {} records in {} tables in {:.1} s from a backup taken at {} by HelpNow {} \
             (schema at migration {}); ",
            self.records,
            self.tables,
            self.seconds,
            self.header.taken_at,
            self.header.version,
            self.header.migration
        )?;
        if self.migrated.is_empty() {
            write!(f, "no newer migration to apply")
        } else {
            write!(f, "then migrated forward: {}", self.migrated.join(", "))
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error(
        "a mem:// store lives only in the memory of the process that serves it: it cannot be \
         backed up or restored from outside. Use surrealkv:// or a SurrealDB server (ws://)"
    )]
    Memory,
    #[error(
        "database.url {0} is not one HelpNow backs up: use surrealkv://FOLDER or ws://HOST:PORT"
    )]
    UnknownStore(String),
    #[error("there is no store at {0}: check database.url (APP__DATABASE__URL)")]
    NoStore(String),
    #[error(
        "the store at {folder} is in use by another process and no HelpNow server answered on \
         {socket}: stop that process, or run the command where HelpNow runs"
    )]
    StoreInUse { folder: String, socket: String },
    #[error("{0} already exists: choose another file name, or move the old backup away first")]
    Exists(String),
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error("the store has no migration applied: it holds no HelpNow data to back up")]
    NotMigrated,
    #[error("the export failed: {0}")]
    Export(surrealdb::Error),
    #[error("cannot open the store: {0}")]
    Open(Box<StoreError>),
    #[error("the database failed: {0}")]
    Database(#[from] surrealdb::Error),
    #[error("the HelpNow server on {socket} answered: {message}")]
    Server { socket: String, message: String },
    #[error("cannot talk to the HelpNow server on {socket}: {source}")]
    Socket {
        socket: String,
        source: std::io::Error,
    },
}

impl From<StoreError> for BackupError {
    fn from(error: StoreError) -> Self {
        Self::Open(Box::new(error))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "{0} is not a HelpNow backup: its first line is not the header `helpnow backup` writes"
    )]
    NotABackup(String),
    #[error(
        "the backup was made by a newer HelpNow ({version}, schema at migration {migration}), and \
         this one knows migrations up to {known}: restore it with HelpNow {version} or newer"
    )]
    Newer {
        version: String,
        migration: String,
        known: String,
    },
    #[error(
        "the target store is not empty (it has {tables} tables, among them {example}): a restore \
         goes onto an empty store only. Point database.url at a new folder or an empty database \
         and run the restore again"
    )]
    NotEmpty { tables: usize, example: String },
    #[error(
        "HelpNow is serving from this store ({0} answered): stop HelpNow first, then restore onto \
         an empty store"
    )]
    Serving(String),
    #[error(
        "the import failed and the target store holds part of the backup: empty it (remove the \
         folder, or the database) before you restore again. The database said: {0}"
    )]
    Import(surrealdb::Error),
    #[error(
        "the backup was imported, but migrating it forward failed: {0}. The store holds the \
         backup at its older schema; remove it before you restore again"
    )]
    Migrate(Box<MigrationError>),
    #[error(transparent)]
    Backup(#[from] BackupError),
    #[error("the database failed: {0}")]
    Database(#[from] surrealdb::Error),
}

/// Where `database.url` points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Store {
    /// The embedded SurrealKV engine on this folder.
    SurrealKv {
        folder: PathBuf,
    },
    /// A SurrealDB server, reached over HTTP at `http_url` for the export and the import.
    Server {
        http_url: String,
    },
    Memory,
}

impl Store {
    pub fn of(url: &str) -> Result<Self, BackupError> {
        if let Some(rest) = url.strip_prefix("surrealkv://") {
            let folder = rest.split('?').next().unwrap_or(rest);
            return Ok(Self::SurrealKv {
                folder: PathBuf::from(folder),
            });
        }
        for (remote, http) in [("ws://", "http://"), ("wss://", "https://")] {
            if let Some(rest) = url.strip_prefix(remote) {
                return Ok(Self::Server {
                    http_url: format!("{http}{rest}"),
                });
            }
        }
        if url.starts_with("mem://") || url.starts_with("memory") {
            return Err(BackupError::Memory);
        }
        Err(BackupError::UnknownStore(url.to_owned()))
    }

    /// The name a backup's header gives it.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::SurrealKv { .. } => "surrealkv",
            Self::Server { .. } => "surrealdb-server",
            Self::Memory => "mem",
        }
    }

    /// The control socket of a server on this store, where there is one
    /// (src/startup/control.rs).
    pub fn control_socket(&self) -> Option<PathBuf> {
        match self {
            Self::SurrealKv { folder } => Some(crate::startup::control::socket_path(folder)),
            _ => None,
        }
    }
}

/// The store `settings` names, opened for a backup or a restore, without migrating: a SurrealDB
/// server over HTTP, the embedded store in this process (its lock held by a server is reported
/// as [`BackupError::StoreInUse`]).
async fn open(
    settings: &DatabaseSettings,
    store: &Store,
    must_exist: bool,
) -> Result<Db, BackupError> {
    let mut settings = settings.clone();
    match store {
        Store::Memory => return Err(BackupError::Memory),
        Store::Server { http_url } => settings.url = http_url.clone(),
        Store::SurrealKv { folder } => {
            if must_exist && !folder.exists() {
                return Err(BackupError::NoStore(folder.display().to_string()));
            }
        }
    }
    match super::open(&settings).await {
        Ok(db) => Ok(db),
        Err(StoreError::Database(error)) if error.to_string().contains("already locked") => {
            let Store::SurrealKv { folder } = store else {
                return Err(StoreError::Database(error).into());
            };
            Err(BackupError::StoreInUse {
                folder: folder.display().to_string(),
                socket: crate::startup::control::socket_path(folder)
                    .display()
                    .to_string(),
            })
        }
        Err(error) => Err(error.into()),
    }
}

/// `helpnow backup FILE`: through the running server's control socket where one answers, or
/// from the store directly.
pub async fn backup_command(
    settings: &DatabaseSettings,
    file: &Path,
) -> Result<Written, BackupError> {
    let store = Store::of(&settings.url)?;
    let file = std::path::absolute(file).map_err(|source| BackupError::Write {
        path: file.display().to_string(),
        source,
    })?;
    refuse_existing(&file)?;
    if let Some(socket) = store.control_socket()
        && let Some(written) = crate::startup::control::request_backup(&socket, &file).await?
    {
        return Ok(written);
    }
    let db = open(settings, &store, true).await?;
    backup(&db, store.kind(), &file).await
}

/// `helpnow restore FILE` onto the (empty) store `settings` names, then migrating forward.
pub async fn restore_command(
    settings: &DatabaseSettings,
    file: &Path,
) -> Result<Restored, RestoreError> {
    let store = Store::of(&settings.url)?;
    // Read before anything is opened or created: a file that is no backup changes nothing.
    let header = read_header(file)?;
    check_known(&header)?;
    if let Some(socket) = store.control_socket()
        && crate::startup::control::answers(&socket).await
    {
        return Err(RestoreError::Serving(socket.display().to_string()));
    }
    let db = open(settings, &store, false)
        .await
        .map_err(|error| match error {
            BackupError::StoreInUse { socket, .. } => RestoreError::Serving(socket),
            other => other.into(),
        })?;
    restore(&db, file).await
}

/// The last migration applied to the store (names sort in the order they apply).
pub async fn last_migration(db: &Db) -> Result<Option<String>, surrealdb::Error> {
    let names: Vec<String> = db
        .query("SELECT VALUE name FROM migration ORDER BY name DESC LIMIT 1")
        .await?
        .take(0)?;
    Ok(names.into_iter().next())
}

fn refuse_existing(file: &Path) -> Result<(), BackupError> {
    if file.exists() {
        return Err(BackupError::Exists(file.display().to_string()));
    }
    Ok(())
}

/// `file` with `.partial` after its name: where a backup is written until it is whole.
pub fn partial_path(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".partial");
    PathBuf::from(name)
}

/// Writes a backup of `db` to `file` (which must not exist): to `FILE.partial` first, mode 0600
/// (it holds password hashes and sessions), synced, then renamed, so `FILE` is whole or absent.
pub async fn backup(db: &Db, store: &str, file: &Path) -> Result<Written, BackupError> {
    let started = Instant::now();
    refuse_existing(file)?;
    let migration = last_migration(db).await?.ok_or(BackupError::NotMigrated)?;
    let header = Header {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        migration,
        taken_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        store: store.to_owned(),
    };
    let partial = partial_path(file);
    let written = write_partial(db, &header, &partial).await;
    let bytes = match written {
        Ok(bytes) => bytes,
        Err(error) => {
            let _ = std::fs::remove_file(&partial);
            return Err(error);
        }
    };
    let write_error = |source| BackupError::Write {
        path: file.display().to_string(),
        source,
    };
    // A backup that appeared meanwhile (another command) is not replaced.
    if file.exists() {
        let _ = std::fs::remove_file(&partial);
        return Err(BackupError::Exists(file.display().to_string()));
    }
    std::fs::rename(&partial, file).map_err(write_error)?;
    if let Some(folder) = file.parent() {
        // The rename itself survives a crash once the folder is synced.
        std::fs::File::open(folder)
            .and_then(|folder| folder.sync_all())
            .map_err(write_error)?;
    }
    Ok(Written {
        file: file.to_owned(),
        header,
        bytes,
        seconds: started.elapsed().as_secs_f64(),
    })
}

async fn write_partial(db: &Db, header: &Header, partial: &Path) -> Result<u64, BackupError> {
    let write_error = |source| BackupError::Write {
        path: partial.display().to_string(),
        source,
    };
    let mut options = tokio::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    options.mode(0o600);
    let file = options.open(partial).await.map_err(write_error)?;
    // A partial file left by a crash had its own mode; this one is 0600 whatever it was.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .await
            .map_err(write_error)?;
    }
    let mut out = tokio::io::BufWriter::new(file);
    let line = header.line();
    out.write_all(line.as_bytes()).await.map_err(write_error)?;
    let mut bytes = line.len() as u64;
    let mut export = db.export(()).await.map_err(BackupError::Export)?;
    while let Some(chunk) = export.next().await {
        let chunk = chunk.map_err(BackupError::Export)?;
        out.write_all(&chunk).await.map_err(write_error)?;
        bytes += chunk.len() as u64;
    }
    out.flush().await.map_err(write_error)?;
    out.into_inner().sync_all().await.map_err(write_error)?;
    Ok(bytes)
}

/// The names of the backups the schedule writes: they sort in the order they were taken.
const SCHEDULED_PREFIX: &str = "helpnow-backup-";
const SCHEDULED_SUFFIX: &str = ".surql";

/// Takes a backup of `db` into `folder` every `every` (the first one `every` after the start),
/// and keeps the newest `keep` of them (at least one). A backup that fails is logged and tried
/// again at the next turn. Ends when aborted (the application's workers, at a stop).
pub fn spawn_schedule(
    db: Db,
    store: &'static str,
    folder: PathBuf,
    every: Duration,
    keep: usize,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let every = every.max(Duration::from_secs(1));
        let mut turns = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        turns.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            turns.tick().await;
            match scheduled_backup(&db, store, &folder, keep.max(1)).await {
                Ok(written) => tracing::info!(
                    file = %written.file.display(),
                    bytes = written.bytes,
                    seconds = written.seconds,
                    "scheduled backup written"
                ),
                Err(error) => tracing::warn!(
                    folder = %folder.display(),
                    %error,
                    "a scheduled backup failed; the next turn tries again"
                ),
            }
        }
    })
}

async fn scheduled_backup(
    db: &Db,
    store: &str,
    folder: &Path,
    keep: usize,
) -> Result<Written, BackupError> {
    let write_error = |source| BackupError::Write {
        path: folder.display().to_string(),
        source,
    };
    std::fs::create_dir_all(folder).map_err(write_error)?;
    let name = format!(
        "{SCHEDULED_PREFIX}{}{SCHEDULED_SUFFIX}",
        chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ")
    );
    let written = backup(db, store, &folder.join(name)).await?;
    let mut taken: Vec<PathBuf> = std::fs::read_dir(folder)
        .map_err(write_error)?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| {
                    name.starts_with(SCHEDULED_PREFIX) && name.ends_with(SCHEDULED_SUFFIX)
                })
        })
        .collect();
    taken.sort();
    let surplus = taken.len().saturating_sub(keep);
    for old in &taken[..surplus] {
        if let Err(error) = std::fs::remove_file(old) {
            tracing::warn!(file = %old.display(), %error, "an old backup could not be removed");
        }
    }
    Ok(written)
}

/// Reads a backup's first line.
pub fn read_header(file: &Path) -> Result<Header, RestoreError> {
    let read_error = |source| RestoreError::Read {
        path: file.display().to_string(),
        source,
    };
    let opened = std::fs::File::open(file).map_err(read_error)?;
    let mut line = String::new();
    // The header is short; a first line of megabytes is no header.
    std::io::BufReader::new(opened)
        .take(64 * 1024)
        .read_line(&mut line)
        .map_err(read_error)?;
    line.strip_prefix(HEADER_PREFIX)
        .and_then(|json| serde_json::from_str::<Header>(json.trim_end()).ok())
        .ok_or_else(|| RestoreError::NotABackup(file.display().to_string()))
}

/// Refuses a backup whose schema is newer than this binary's.
fn check_known(header: &Header) -> Result<(), RestoreError> {
    if MIGRATIONS.iter().any(|m| m.name == header.migration) {
        return Ok(());
    }
    Err(RestoreError::Newer {
        version: header.version.clone(),
        migration: header.migration.clone(),
        known: MIGRATIONS
            .last()
            .map(|m| m.name)
            .unwrap_or("none")
            .to_owned(),
    })
}

/// The names of the tables the database defines.
pub async fn tables(db: &Db) -> Result<Vec<String>, surrealdb::Error> {
    let mut info = db.query("INFO FOR DB").await?;
    let tables: Option<serde_json::Value> = info.take((0, "tables"))?;
    let mut names: Vec<String> = tables
        .and_then(|tables| tables.as_object().map(|t| t.keys().cloned().collect()))
        .unwrap_or_default();
    names.sort();
    Ok(names)
}

/// How many records `table` holds.
pub async fn count(db: &Db, table: &str) -> Result<u64, surrealdb::Error> {
    let counted: Option<u64> = db
        .query("RETURN count(SELECT VALUE id FROM type::table($table))")
        .bind(("table", table.to_owned()))
        .await?
        .take(0)?;
    Ok(counted.unwrap_or(0))
}

/// Restores the backup in `file` onto `db`, which must define no table at all (a store a
/// HelpNow server started on already has the schema, and the backup brings its own), then
/// applies this binary's newer migrations.
pub async fn restore(db: &Db, file: &Path) -> Result<Restored, RestoreError> {
    let started = Instant::now();
    let header = read_header(file)?;
    check_known(&header)?;
    let existing = tables(db).await?;
    if let Some(example) = existing.first() {
        return Err(RestoreError::NotEmpty {
            tables: existing.len(),
            example: example.clone(),
        });
    }
    db.import(file).await.map_err(RestoreError::Import)?;
    let migrated = super::migrate(db)
        .await
        .map_err(|error| RestoreError::Migrate(Box::new(error)))?;
    let names = tables(db).await?;
    let mut records = 0;
    for table in &names {
        records += count(db, table).await?;
    }
    Ok(Restored {
        header,
        tables: names.len(),
        records,
        migrated,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// How long the command waits for the server's answer through the control socket.
pub const SERVER_BACKUP_TIMEOUT: Duration = Duration::from_secs(3600);
