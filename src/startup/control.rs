//! The control socket of a server on the embedded SurrealKV store: `helpnow backup` cannot open
//! the store while the server holds its lock, so it asks the server, which writes the backup in
//! its own process (src/store/backup.rs).
//!
//! A Unix domain socket beside the store's folder (`data/helpnow` has `data/helpnow.control`),
//! mode 0600: only the server's own user may ask. One request a connection, one line each way:
//! `backup /absolute/path` is answered `ok {the backup as JSON}` or `error <a sentence>`. The file
//! goes at a clean stop; one left by a crash is replaced at the next start (this process holds the
//! store's lock by then, so no other server can be listening on it).

use std::path::{Path, PathBuf};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

use crate::store::Db;
use crate::store::backup::{self, BackupError, Store, Written};

/// The control socket of the store in `folder`.
pub fn socket_path(folder: &Path) -> PathBuf {
    let mut name = folder.as_os_str().to_owned();
    name.push(".control");
    PathBuf::from(name)
}

/// The longest request line read.
const REQUEST_LIMIT: u64 = 8 * 1024;

/// How long a connection may take to send its request.
const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Listens on the control socket of the store `database_url` names, when it is an embedded
/// SurrealKV store. The task ends (and the socket file goes) when it is aborted, as the
/// application's workers are at a stop. A socket that cannot be made is logged and skipped: the
/// server serves, and `helpnow backup` then says it found no server.
pub fn start(database_url: &str, db: Db) -> Option<tokio::task::JoinHandle<()>> {
    let Ok(Store::SurrealKv { folder }) = Store::of(database_url) else {
        return None;
    };
    let path = socket_path(&folder);
    match listen(&path) {
        Ok(listener) => Some(tokio::spawn(serve(listener, Removed(path), db))),
        Err(error) => {
            tracing::warn!(
                socket = %path.display(),
                %error,
                "no control socket: `helpnow backup` cannot reach this server"
            );
            None
        }
    }
}

fn listen(path: &Path) -> std::io::Result<UnixListener> {
    // This process holds the store's lock: a socket file here is a crashed server's.
    remove_if_there(path)?;
    // Made under a name of its own, given its mode, then put in place: never reachable by
    // another user, not even for a moment.
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(format!(".{}", std::process::id()));
    let temporary = PathBuf::from(temporary);
    remove_if_there(&temporary)?;
    let listener = UnixListener::bind(&temporary)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&temporary, std::fs::Permissions::from_mode(0o600))?;
    }
    std::fs::rename(&temporary, path)?;
    Ok(listener)
}

fn remove_if_there(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}

/// Removes the socket file when the listening task ends.
struct Removed(PathBuf);

impl Drop for Removed {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

async fn serve(listener: UnixListener, socket: Removed, db: Db) {
    let _socket = socket;
    // One backup at a time; the connections' tasks end with this one.
    let turn = std::sync::Arc::new(tokio::sync::Mutex::new(()));
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(answer(stream, db.clone(), turn.clone()));
                }
                Err(error) => {
                    tracing::warn!(%error, "the control socket could not accept a connection");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn answer(stream: UnixStream, db: Db, turn: std::sync::Arc<tokio::sync::Mutex<()>>) {
    let (read, mut write) = stream.into_split();
    let mut line = String::new();
    let read = tokio::time::timeout(
        REQUEST_TIMEOUT,
        BufReader::new(read.take(REQUEST_LIMIT)).read_line(&mut line),
    )
    .await;
    if !matches!(read, Ok(Ok(_))) {
        return;
    }
    let request = line.trim_end_matches(['\r', '\n']);
    let reply = match request.strip_prefix("backup ") {
        Some(file) if Path::new(file).is_absolute() => {
            let _turn = turn.lock().await;
            match backup::backup(&db, "surrealkv", Path::new(file)).await {
                Ok(written) => {
                    tracing::info!(
                        file = %written.file.display(),
                        bytes = written.bytes,
                        seconds = written.seconds,
                        "backup written"
                    );
                    format!("ok {}", serde_json::to_string(&written).unwrap_or_default())
                }
                Err(error) => {
                    tracing::warn!(file, %error, "a backup failed");
                    format!("error {error}")
                }
            }
        }
        Some(_) => "error the backup's file must be an absolute path".to_owned(),
        None if request == "ping" => "ok".to_owned(),
        None => format!("error unknown request {request:?}: send `backup /absolute/path`"),
    };
    // The answer is one line.
    let reply = reply.replace(['\r', '\n'], " ");
    let _ = write.write_all(format!("{reply}\n").as_bytes()).await;
}

/// Whether a server answers on `socket` (a file left by a crash refuses the connection).
pub async fn answers(socket: &Path) -> bool {
    UnixStream::connect(socket).await.is_ok()
}

/// Asks the server on `socket` to write a backup to `file` (an absolute path). `None` when no
/// server listens there.
pub async fn request_backup(socket: &Path, file: &Path) -> Result<Option<Written>, BackupError> {
    let socket_error = |source| BackupError::Socket {
        socket: socket.display().to_string(),
        source,
    };
    let stream = match UnixStream::connect(socket).await {
        Ok(stream) => stream,
        Err(error)
            if matches!(
                error.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
            ) =>
        {
            return Ok(None);
        }
        Err(error) => return Err(socket_error(error)),
    };
    let path = file
        .to_str()
        .filter(|path| !path.contains(['\r', '\n']))
        .ok_or_else(|| BackupError::Write {
            path: file.display().to_string(),
            source: std::io::Error::other("a backup's file name must be text on one line"),
        })?;
    let (read, mut write) = stream.into_split();
    write
        .write_all(format!("backup {path}\n").as_bytes())
        .await
        .map_err(socket_error)?;
    let mut line = String::new();
    let read = tokio::time::timeout(
        backup::SERVER_BACKUP_TIMEOUT,
        BufReader::new(read).read_line(&mut line),
    )
    .await
    .map_err(|_| socket_error(std::io::Error::other("no answer within an hour")))?;
    read.map_err(socket_error)?;
    let line = line.trim_end();
    if let Some(json) = line.strip_prefix("ok ") {
        return serde_json::from_str(json)
            .map(Some)
            .map_err(|error| socket_error(std::io::Error::other(error)));
    }
    Err(BackupError::Server {
        socket: socket.display().to_string(),
        message: line
            .strip_prefix("error ")
            .unwrap_or(if line.is_empty() {
                "nothing (did it stop?)"
            } else {
                line
            })
            .to_owned(),
    })
}
