//! `helpnow backup FILE` and `helpnow restore FILE` (issue 51; docs/operations.md, "Backup and
//! restore"): the restore drill under load on real processes and real SurrealKV folders, a backup
//! of an older schema migrating forward, the refusals, and the round trip through a SurrealDB
//! server and from it onto the embedded store.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use helpnow::config::DatabaseSettings;
use helpnow::loadtest::acks::{self, Ack};
use helpnow::loadtest::ai_mock::MockAiSettings;
use helpnow::loadtest::{self, Options, Scenario};
use helpnow::store::backup::{self, RestoreError};
use helpnow::store::{self, Db, MIGRATIONS};
use serde_json::Value;

use crate::helpers::{project_root, test_settings};
use crate::processes::{SurrealServer, start, start_with};

fn kv_url(folder: &Path, name: &str) -> String {
    format!("surrealkv://{}/{name}", folder.display())
}

fn database(url: &str) -> DatabaseSettings {
    let mut settings = test_settings().database;
    settings.url = url.to_owned();
    settings
}

/// Opens a store in this process, as it is (no migration).
async fn open(url: &str) -> Db {
    store::open(&database(url))
        .await
        .unwrap_or_else(|error| panic!("{url} opens: {error}"))
}

/// Runs the helpnow binary with `args` on the store `database_url` (and `settings`), as an
/// operator would, and waits for it.
fn helpnow(args: &[&str], database_url: &str, settings: &[(&str, String)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_helpnow"))
        .current_dir(project_root())
        .env("APP_ENV", "test")
        .env("APP__DATABASE__URL", database_url)
        .env_remove("RUST_LOG")
        .envs(settings.iter().map(|(key, value)| (*key, value.as_str())))
        .args(args)
        .output()
        .expect("the helpnow binary runs")
}

async fn helpnow_async(args: &[&str], database_url: &str, settings: &[(&str, String)]) -> Output {
    let args: Vec<String> = args.iter().map(|arg| (*arg).to_owned()).collect();
    let database_url = database_url.to_owned();
    let settings: Vec<(String, String)> = settings
        .iter()
        .map(|(key, value)| ((*key).to_owned(), value.clone()))
        .collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let settings: Vec<(&str, String)> = settings
            .iter()
            .map(|(key, value)| (key.as_str(), value.clone()))
            .collect();
        helpnow(&args, &database_url, &settings)
    })
    .await
    .expect("the command's thread")
}

fn text(output: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn succeeded(output: &Output, what: &str) -> String {
    assert!(output.status.success(), "{what}: {}", text(output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[cfg(unix)]
fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// Every record of `table`, by its id.
async fn records(db: &Db, table: &str) -> BTreeMap<String, Value> {
    let rows: Vec<Value> = db
        .query("SELECT * FROM type::table($table)")
        .bind(("table", table.to_owned()))
        .await
        .and_then(|mut response| response.take(0))
        .unwrap_or_else(|error| panic!("{table} reads: {error}"));
    rows.into_iter()
        .map(|row| (row["id"].to_string(), row))
        .collect()
}

async fn read(db: &Db, query: &str) -> Vec<Value> {
    db.query(query)
        .await
        .and_then(|mut response| response.take(0))
        .unwrap_or_else(|error| panic!("{query}: {error}"))
}

/// Every table of `db` with its records.
async fn everything(db: &Db) -> BTreeMap<String, BTreeMap<String, Value>> {
    let mut all = BTreeMap::new();
    for table in backup::tables(db).await.expect("tables") {
        let rows = records(db, &table).await;
        all.insert(table, rows);
    }
    all
}

fn load(address: &str, scenario: Scenario, connections: u64, seconds: f64, acks: &Path) -> Options {
    Options {
        think: Duration::from_millis(150),
        ai: MockAiSettings {
            latency: Duration::from_millis(20),
            tokens_per_second: 200.0,
            reply_tokens: 10,
        },
        // Counted, not fatal: what matters here is what was acknowledged.
        max_error_rate: 1.0,
        record_acks: Some(acks.to_owned()),
        ..crate::loadtest::options(address, scenario, connections, seconds)
    }
}

fn recorded(file: &Path) -> Vec<Ack> {
    acks::read(file).unwrap_or_default()
}

/// The tables whose records never change once written: a restored one equals the live one.
const WRITTEN_ONCE: &[&str] = &["message", "funnel_message", "migration", "webhook_event"];

/// Tables whose records change or go after they are written (a chat's revision, a conversation's
/// stage, a day's counts): a restored one is in the live store.
const KEPT: &[&str] = &[
    "user",
    "chat",
    "funnel_conversation",
    "checkout_session",
    "subscription",
    "analytics_daily",
];

/// The restore drill: a backup taken through the server's control socket while the load
/// generator writes (member chats with sign-ups and demo payments, funnel conversations),
/// restored onto an empty folder, backed up again without a server and restored into a third.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_under_load_restores_whole_and_consistent() {
    let started = Instant::now();
    let folder = tempfile::tempdir().expect("temp dir");
    let live = kv_url(folder.path(), "live");
    let restored = kv_url(folder.path(), "restored");
    let again = kv_url(folder.path(), "again");
    let server = {
        let live = live.clone();
        tokio::task::spawn_blocking(move || start(&live))
            .await
            .expect("started")
    };
    let socket = folder.path().join("live.control");
    // It listens on its control socket a moment after its start-up line.
    for _ in 0..100 {
        if socket.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        socket.exists(),
        "the server listens on {}",
        socket.display()
    );
    #[cfg(unix)]
    assert_eq!(mode_of(&socket), 0o600);

    let funnel_acks = folder.path().join("funnel.jsonl");
    let member_acks = folder.path().join("member.jsonl");
    let funnel = load(&server.address, Scenario::Funnel, 40, 10.0, &funnel_acks);
    let member = load(&server.address, Scenario::Member, 8, 10.0, &member_acks);
    let funnel_run = tokio::spawn(async move { loadtest::run(&funnel).await });
    let member_run = tokio::spawn(async move { loadtest::run(&member).await });
    for _ in 0..300 {
        if recorded(&funnel_acks).len() >= 80 && recorded(&member_acks).len() >= 16 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Acknowledged before the backup began: in it, whatever else is.
    let funnel_before = recorded(&funnel_acks);
    let member_before = recorded(&member_acks);
    assert!(
        funnel_before.len() >= 80 && member_before.len() >= 16,
        "the load writes: {} funnel and {} member messages acknowledged",
        funnel_before.len(),
        member_before.len()
    );
    let file = folder.path().join("under-load.surql");
    let backup_started = Instant::now();
    let output = helpnow_async(&["backup", file.to_str().expect("a path")], &live, &[]).await;
    let backup_took = backup_started.elapsed();
    let said = succeeded(&output, "the backup under load");
    assert!(said.contains("backed up to"), "{said}");
    assert!(file.exists() && !backup::partial_path(&file).exists());
    #[cfg(unix)]
    assert_eq!(mode_of(&file), 0o600, "a backup holds password hashes");
    let header = backup::read_header(&file).expect("the header");
    assert_eq!(header.store, "surrealkv");
    assert_eq!(header.version, env!("CARGO_PKG_VERSION"));
    assert_eq!(
        header.migration,
        MIGRATIONS.last().expect("migrations").name
    );
    let acked_during = recorded(&funnel_acks).len() + recorded(&member_acks).len()
        - funnel_before.len()
        - member_before.len();

    // Restoring onto the store the server serves from is refused.
    let serving = helpnow_async(&["restore", file.to_str().expect("a path")], &live, &[]).await;
    assert_eq!(serving.status.code(), Some(1), "{}", text(&serving));
    assert!(
        String::from_utf8_lossy(&serving.stderr).contains("stop HelpNow first"),
        "{}",
        text(&serving)
    );

    let funnel_outcome = funnel_run.await.expect("task").expect("the run");
    let member_outcome = member_run.await.expect("task").expect("the run");
    let funnel_after = recorded(&funnel_acks).len();
    let member_after = recorded(&member_acks).len();
    assert!(
        funnel_after > funnel_before.len() && member_after > member_before.len(),
        "the load went on writing after the backup began: {}",
        funnel_outcome.report.to_json(&funnel_outcome.stats)
    );
    let _ = member_outcome;
    let (exit, log) = tokio::task::spawn_blocking(move || server.terminate())
        .await
        .expect("stopped");
    assert!(exit.success(), "{exit}");
    assert!(
        log.iter().any(|line| line["message"] == "backup written"),
        "the server took the backup"
    );
    assert!(!socket.exists(), "a clean stop removes the control socket");

    let said = succeeded(
        &helpnow_async(&["restore", file.to_str().expect("a path")], &restored, &[]).await,
        "the restore",
    );
    assert!(said.contains("no newer migration to apply"), "{said}");
    // Refused onto the store it just filled.
    let refused = helpnow_async(&["restore", file.to_str().expect("a path")], &restored, &[]).await;
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("the target store is not empty"),
        "{}",
        text(&refused)
    );
    // No server on the restored store: the command opens it itself.
    let second = folder.path().join("of-the-restored.surql");
    succeeded(
        &helpnow_async(
            &["backup", second.to_str().expect("a path")],
            &restored,
            &[],
        )
        .await,
        "the backup of the restored store",
    );
    succeeded(
        &helpnow_async(&["restore", second.to_str().expect("a path")], &again, &[]).await,
        "the second restore",
    );

    let live = open(&live).await;
    let restored = open(&restored).await;
    let again = open(&again).await;
    let restored_all = everything(&restored).await;
    let live_all = everything(&live).await;
    let count = |table: &str| restored_all.get(table).map_or(0, BTreeMap::len);
    for table in [
        "user",
        "session",
        "chat",
        "message",
        "funnel_conversation",
        "funnel_message",
        "checkout_session",
        "subscription",
    ] {
        assert!(count(table) > 0, "the backup holds {table} records");
    }

    // (a) Each restored record is the live store's (a sample of 20 a table, every one of a
    // small table).
    let mut compared = 0;
    for (table, rows) in &restored_all {
        let written_once = WRITTEN_ONCE.contains(&table.as_str());
        if !written_once && !KEPT.contains(&table.as_str()) {
            continue;
        }
        let step = (rows.len() / 20).max(1);
        let live_rows = &live_all[table];
        for (id, row) in rows.iter().step_by(if rows.len() <= 50 { 1 } else { step }) {
            let live_row = live_rows
                .get(id)
                .unwrap_or_else(|| panic!("{table} {id} is in the live store"));
            if written_once {
                assert_eq!(row, live_row, "{table} {id}");
            }
            compared += 1;
        }
    }
    assert!(compared > 100, "{compared} records compared");

    // (b) Every message acknowledged before the backup began is in it.
    let pairs = |rows: Vec<Value>| -> HashSet<(String, String)> {
        rows.into_iter()
            .map(|pair| {
                let text = |n: usize| pair[n].as_str().unwrap_or_default().to_owned();
                (text(0), text(1))
            })
            .collect()
    };
    let funnel_messages = pairs(
        read(
            &restored,
            "SELECT VALUE [<string> record::id(id)[0], text] FROM funnel_message",
        )
        .await,
    );
    let members = pairs(
        read(
            &restored,
            "SELECT VALUE [record::id(id), record::id(chat)] FROM message",
        )
        .await,
    );
    let conversations: HashSet<String> = read(
        &restored,
        "SELECT VALUE record::id(id) FROM funnel_conversation",
    )
    .await
    .into_iter()
    .filter_map(|id| id.as_str().map(str::to_owned))
    .collect();
    for ack in funnel_before.iter().chain(&member_before) {
        match ack {
            Ack::Funnel {
                conversation, text, ..
            } => assert!(
                funnel_messages.contains(&(conversation.clone(), text.clone())),
                "the acknowledged funnel message {ack:?} is restored"
            ),
            Ack::Member { chat, message, .. } => assert!(
                members.contains(&(message.clone(), chat.clone())),
                "the acknowledged member message {ack:?} is restored"
            ),
        }
    }

    // (c) One moment: each chat holds its greeting, its first message and one more for each
    // revision, and each funnel message's conversation is there.
    let chats: Vec<(String, i64)> = read(
        &restored,
        "SELECT VALUE [record::id(id), revision] FROM chat",
    )
    .await
    .into_iter()
    .map(|pair| {
        (
            pair[0].as_str().unwrap_or_default().to_owned(),
            pair[1].as_i64().unwrap_or(-1),
        )
    })
    .collect();
    let mut per_chat: HashMap<String, i64> = HashMap::new();
    for (_, chat) in &members {
        *per_chat.entry(chat.clone()).or_default() += 1;
    }
    for (chat, revision) in &chats {
        assert_eq!(
            per_chat.get(chat).copied().unwrap_or(0),
            revision + 2,
            "chat {chat} at revision {revision} has its messages"
        );
    }
    for (conversation, _) in &funnel_messages {
        assert!(
            conversations.contains(conversation),
            "the conversation of a funnel message, {conversation}, is restored"
        );
    }

    // (d) A backup of the restored store, restored again, is the same store.
    let again_all = everything(&again).await;
    assert_eq!(
        again_all.keys().collect::<Vec<_>>(),
        restored_all.keys().collect::<Vec<_>>()
    );
    for (table, rows) in &restored_all {
        assert_eq!(rows.len(), again_all[table].len(), "{table}");
        assert!(rows == &again_all[table], "{table}: every record the same");
    }
    let filled: Vec<String> = restored_all
        .iter()
        .filter(|(_, rows)| !rows.is_empty())
        .map(|(table, rows)| format!("{table} {}", rows.len()))
        .collect();
    eprintln!(
        "restore drill: {} tables, {} records ({}); {} funnel and {} member messages \
         acknowledged before the backup, {acked_during} while it ran ({:.2} s), {} and {} in \
         all; {} records compared with the live store; {:.1} s in all",
        restored_all.len(),
        restored_all.values().map(BTreeMap::len).sum::<usize>(),
        filled.join(", "),
        funnel_before.len(),
        member_before.len(),
        backup_took.as_secs_f64(),
        funnel_after,
        member_after,
        compared,
        started.elapsed().as_secs_f64()
    );
}

/// A backup of an older schema (every migration but the last) restores onto this binary and
/// migrates forward; one whose header names a migration this binary does not know is refused,
/// and so is a restore onto a store that is not empty, and a file that is no backup.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_backup_migrates_forward_and_the_refusals_say_why() {
    let folder = tempfile::tempdir().expect("temp dir");
    let older = open(&kv_url(folder.path(), "older")).await;
    let before_last = MIGRATIONS.len() - 1;
    store::migrate_first(&older, before_last)
        .await
        .expect("the older schema");
    older
        .query(
            "CREATE chat:old SET user = user:u;
             CREATE message:m1 SET chat = chat:old, role = 'user', content = 'kept',
                 created_at = d'2026-01-01T00:00:00Z';",
        )
        .await
        .and_then(|response| response.check())
        .expect("records of the older version");
    let file = folder.path().join("older.surql");
    let written = backup::backup(&older, "surrealkv", &file)
        .await
        .expect("backed up");
    assert_eq!(written.header.migration, MIGRATIONS[before_last - 1].name);
    // A backup is never written over.
    let again = backup::backup(&older, "surrealkv", &file)
        .await
        .expect_err("the file exists");
    assert!(again.to_string().contains("already exists"), "{again}");

    let target = open(&kv_url(folder.path(), "target")).await;
    let restored = backup::restore(&target, &file).await.expect("restored");
    let last = MIGRATIONS.last().expect("migrations").name;
    assert_eq!(restored.migrated, [last]);
    assert!(
        restored
            .to_string()
            .contains(&format!("then migrated forward: {last}"))
    );
    assert_eq!(
        backup::last_migration(&target)
            .await
            .expect("ledger")
            .as_deref(),
        Some(last)
    );
    let content: Option<String> = target
        .query("RETURN message:m1.content")
        .await
        .and_then(|mut response| response.take(0))
        .expect("read");
    assert_eq!(content.as_deref(), Some("kept"));

    // Onto a store that is not empty: refused, and the store as it was.
    let refused = backup::restore(&target, &file)
        .await
        .expect_err("not empty");
    assert!(
        matches!(refused, RestoreError::NotEmpty { .. }),
        "{refused}"
    );
    assert!(
        refused
            .to_string()
            .contains("a restore goes onto an empty store only"),
        "{refused}"
    );

    // Made by a newer HelpNow: refused before the store is touched.
    let newer = folder.path().join("newer.surql");
    let body = std::fs::read_to_string(&file).expect("the backup");
    let (_, rest) = body.split_once('\n').expect("a header line");
    let header = backup::Header {
        version: "99.0.0".into(),
        migration: "9999_from_the_future".into(),
        taken_at: "2030-01-01T00:00:00.000Z".into(),
        store: "surrealkv".into(),
    };
    std::fs::write(
        &newer,
        format!(
            "-- helpnow-backup {}\n{rest}",
            serde_json::to_string(&header).expect("JSON")
        ),
    )
    .expect("written");
    let fresh_url = kv_url(folder.path(), "fresh");
    let output = helpnow_async(
        &["restore", newer.to_str().expect("a path")],
        &fresh_url,
        &[],
    )
    .await;
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("the backup was made by a newer HelpNow (99.0.0, schema at migration 9999_from_the_future)")
            && said.contains(&format!("this one knows migrations up to {last}")),
        "{said}"
    );
    assert!(!folder.path().join("fresh").exists(), "nothing was created");

    // Not a backup at all.
    let plain = folder.path().join("plain.surql");
    std::fs::write(&plain, rest).expect("written");
    let fresh = open(&fresh_url).await;
    let refused = backup::restore(&fresh, &plain)
        .await
        .expect_err("no header");
    assert!(
        refused.to_string().contains("is not a HelpNow backup"),
        "{refused}"
    );
    assert!(backup::tables(&fresh).await.expect("tables").is_empty());
}

/// The command line: usage for `--help` and for what it does not know; a mem:// store cannot be
/// backed up from outside; a backup of a folder with no store is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_commands_explain_what_they_cannot_do() {
    let help = helpnow_async(&["--help"], "mem://", &[]).await;
    assert_eq!(help.status.code(), Some(0), "{}", text(&help));
    assert!(String::from_utf8_lossy(&help.stdout).contains("helpnow backup FILE"));
    let unknown = helpnow_async(&["frobnicate"], "mem://", &[]).await;
    assert_eq!(unknown.status.code(), Some(2), "{}", text(&unknown));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("usage: helpnow"));

    let folder = tempfile::tempdir().expect("temp dir");
    let file = folder.path().join("b.surql");
    let memory = helpnow_async(&["backup", file.to_str().expect("a path")], "mem://", &[]).await;
    assert_eq!(memory.status.code(), Some(1), "{}", text(&memory));
    assert!(
        String::from_utf8_lossy(&memory.stderr)
            .contains("cannot be backed up or restored from outside"),
        "{}",
        text(&memory)
    );
    let nothing = helpnow_async(
        &["backup", file.to_str().expect("a path")],
        &kv_url(folder.path(), "nothing"),
        &[],
    )
    .await;
    assert_eq!(nothing.status.code(), Some(1), "{}", text(&nothing));
    assert!(
        String::from_utf8_lossy(&nothing.stderr).contains("there is no store at"),
        "{}",
        text(&nothing)
    );
    assert!(!file.exists());
}

/// Through a SurrealDB server: a backup while HelpNow serves from it, restored into another
/// database of the same server and into an embedded SurrealKV folder (moving between engines),
/// each table by table the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backup_and_restore_through_a_surrealdb_server_and_onto_the_embedded_store() {
    let surreal = SurrealServer::start();
    let settings: Vec<(&str, String)> = surreal.settings();
    let credentials: Vec<(&str, String)> = settings
        .iter()
        .filter(|(key, _)| *key != "APP__DATABASE__URL")
        .cloned()
        .collect();
    let server = {
        let url = surreal.url.clone();
        let env: Vec<(&'static str, String)> = credentials.clone();
        tokio::task::spawn_blocking(move || {
            let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
            start_with(&url, &env)
        })
        .await
        .expect("started")
    };
    let folder = tempfile::tempdir().expect("temp dir");
    let acks_file = folder.path().join("acks.jsonl");
    let outcome = loadtest::run(&load(&server.address, Scenario::Funnel, 4, 2.0, &acks_file))
        .await
        .expect("the run");
    assert!(
        !recorded(&acks_file).is_empty(),
        "{}",
        outcome.report.to_json(&outcome.stats)
    );

    let file = folder.path().join("server.surql");
    let said = succeeded(
        &helpnow_async(
            &["backup", file.to_str().expect("a path")],
            &surreal.url,
            &credentials,
        )
        .await,
        "the backup from the SurrealDB server",
    );
    assert!(said.contains("backed up to"), "{said}");
    assert_eq!(
        backup::read_header(&file).expect("header").store,
        "surrealdb-server"
    );
    let (exit, _) = tokio::task::spawn_blocking(move || server.terminate())
        .await
        .expect("stopped");
    assert!(exit.success(), "{exit}");

    // Into another database of the same server.
    let mut into_other = credentials.clone();
    into_other.push(("APP__DATABASE__DATABASE", "restored".to_owned()));
    succeeded(
        &helpnow_async(
            &["restore", file.to_str().expect("a path")],
            &surreal.url,
            &into_other,
        )
        .await,
        "the restore into the SurrealDB server",
    );
    // Onto the database it came from: not empty.
    let refused = helpnow_async(
        &["restore", file.to_str().expect("a path")],
        &surreal.url,
        &credentials,
    )
    .await;
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("not empty"));
    // Onto the embedded store.
    let embedded = kv_url(folder.path(), "embedded");
    succeeded(
        &helpnow_async(&["restore", file.to_str().expect("a path")], &embedded, &[]).await,
        "the restore from the server onto SurrealKV",
    );

    let mut source = database(&surreal.url);
    source.username = Some(surreal.username.clone());
    source.password = Some(surreal.password.clone().into());
    let mut other = source.clone();
    other.database = "restored".into();
    let source = store::open(&source).await.expect("the source database");
    let other = store::open(&other).await.expect("the restored database");
    let embedded = open(&embedded).await;
    let source_all = everything(&source).await;
    let other_all = everything(&other).await;
    let embedded_all = everything(&embedded).await;
    assert!(!other_all["funnel_message"].is_empty());
    // The two restores of one file, on two engines, are the same store.
    assert_eq!(
        embedded_all.keys().collect::<Vec<_>>(),
        other_all.keys().collect::<Vec<_>>()
    );
    for (table, rows) in &other_all {
        assert!(
            rows == &embedded_all[table],
            "{table} the same on both engines"
        );
    }
    // And the database it came from holds each of its records (the server wrote on after the
    // backup: its last counts at the stop), the messages as they are.
    for (table, rows) in &other_all {
        for (id, row) in rows {
            let source_row = source_all[table]
                .get(id)
                .unwrap_or_else(|| panic!("{table} {id} is in the source"));
            if WRITTEN_ONCE.contains(&table.as_str()) {
                assert_eq!(row, source_row, "{table} {id}");
            }
        }
    }
    assert_eq!(
        other_all["funnel_message"].len(),
        source_all["funnel_message"].len()
    );
}

/// Scheduled backups (`backup.folder`, `backup.every_secs`, `backup.keep`): the server takes them
/// by itself, and keeps the newest `keep`; each one restores.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_takes_scheduled_backups_and_keeps_the_newest() {
    let folder = tempfile::tempdir().expect("temp dir");
    let backups = folder.path().join("backups");
    let url = kv_url(folder.path(), "store");
    let backups_setting = backups.display().to_string();
    let server = start_with(
        &url,
        &[
            ("APP__BACKUP__FOLDER", backups_setting.as_str()),
            ("APP__BACKUP__EVERY_SECS", "1"),
            ("APP__BACKUP__KEEP", "2"),
        ],
    );
    let listing = || -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&backups)
            .map(|entries| {
                entries
                    .filter_map(|entry| entry.ok())
                    .map(|entry| entry.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    };
    // Until a fourth backup was seen: the oldest ones were removed by then.
    let mut seen = HashSet::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while seen.len() < 4 && Instant::now() < deadline {
        seen.extend(
            listing()
                .into_iter()
                .filter(|name| name.ends_with(".surql")),
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(seen.len() >= 4, "four backups within 30 s: {seen:?}");
    let (exit, _) = tokio::task::spawn_blocking(move || server.terminate())
        .await
        .expect("stopped");
    assert!(exit.success());
    let left = listing();
    assert_eq!(left.len(), 2, "the newest two are kept: {left:?}");
    assert!(
        left.iter()
            .all(|name| name.starts_with("helpnow-backup-") && name.ends_with(".surql")),
        "{left:?}"
    );
    let newest = backups.join(left.last().expect("one"));
    assert_eq!(mode_of(&newest), 0o600);
    let restored = kv_url(folder.path(), "restored");
    let output = helpnow_async(&["restore", newest.to_str().expect("path")], &restored, &[]).await;
    succeeded(&output, "restore of a scheduled backup");
}
