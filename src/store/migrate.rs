//! Forward-only migrations from `surreal/migrations/*.surql`, embedded at build time.
//! Each one runs in a transaction together with its record in the `migration` table, so a migration
//! is applied whole or not at all, and running the runner twice applies nothing the second time.
//! A migration that was edited after it was applied is refused: its checksum no longer matches.

use surrealdb::types::SurrealValue;

use super::Db;

/// One migration file: `name` is its file stem (`0001_init`), `sql` its text.
#[derive(Debug)]
pub struct Migration {
    pub name: &'static str,
    pub sql: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/migrations.rs"));

#[derive(Debug, thiserror::Error)]
pub enum MigrationError {
    #[error("migration {name} failed: {source}")]
    Failed {
        name: String,
        source: surrealdb::Error,
    },
    #[error(
        "migration {name} was changed after it was applied (checksum {stored} is now {current}); add a new migration instead"
    )]
    Changed {
        name: String,
        stored: String,
        current: String,
    },
    #[error("cannot read the applied migrations: {0}")]
    Ledger(surrealdb::Error),
}

#[derive(Debug, SurrealValue)]
struct Applied {
    name: String,
    checksum: String,
}

/// Applies every embedded migration not yet recorded; returns the names it applied.
pub async fn migrate(db: &Db) -> Result<Vec<&'static str>, MigrationError> {
    apply(db, MIGRATIONS).await
}

/// Applies only the first `count` embedded migrations: a store of an older HelpNow, for the tests
/// of what a newer one makes of it (a restored backup migrating forward).
pub async fn migrate_first(db: &Db, count: usize) -> Result<Vec<&'static str>, MigrationError> {
    apply(db, &MIGRATIONS[..count.min(MIGRATIONS.len())]).await
}

pub(crate) async fn apply(
    db: &Db,
    migrations: &'static [Migration],
) -> Result<Vec<&'static str>, MigrationError> {
    db.query("DEFINE TABLE IF NOT EXISTS migration SCHEMALESS;")
        .await
        .and_then(|r| r.check())
        .map_err(MigrationError::Ledger)?;

    let mut newly_applied = Vec::new();
    for migration in migrations {
        let checksum = checksum(migration.sql);
        if let Some(stored) = applied_checksum(db, migration.name).await? {
            if stored != checksum {
                return Err(MigrationError::Changed {
                    name: migration.name.to_owned(),
                    stored,
                    current: checksum,
                });
            }
            continue;
        }
        let statement = format!(
            "BEGIN TRANSACTION;\n{sql}\n;CREATE type::record('migration', $name) SET name = $name, checksum = $checksum, applied_at = time::now();\nCOMMIT TRANSACTION;",
            sql = migration.sql
        );
        let result = db
            .query(statement)
            .bind(("name", migration.name))
            .bind(("checksum", checksum.clone()))
            .await
            .and_then(|r| r.check());
        match result {
            Ok(_) => {
                tracing::info!(migration = migration.name, "migration applied");
                newly_applied.push(migration.name);
            }
            // Another process starting at the same moment may have applied it first.
            Err(source) => match applied_checksum(db, migration.name).await? {
                Some(stored) if stored == checksum => {}
                _ => {
                    return Err(MigrationError::Failed {
                        name: migration.name.to_owned(),
                        source,
                    });
                }
            },
        }
    }
    Ok(newly_applied)
}

async fn applied_checksum(db: &Db, name: &str) -> Result<Option<String>, MigrationError> {
    let mut response = db
        .query("SELECT name, checksum FROM type::record('migration', $name)")
        .bind(("name", name.to_owned()))
        .await
        .map_err(MigrationError::Ledger)?;
    let rows: Vec<Applied> = response.take(0).map_err(MigrationError::Ledger)?;
    Ok(rows
        .into_iter()
        .find(|row| row.name == name)
        .map(|row| row.checksum))
}

/// FNV-1a, 64 bit: stable across builds and platforms, enough to notice an edited file.
fn checksum(text: &str) -> String {
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{hash:016x}")
}

/// A fresh, empty in-memory database, for the store's unit tests.
#[cfg(test)]
pub(crate) async fn memory_db() -> Db {
    let db = surrealdb::engine::any::connect("mem://")
        .await
        .expect("in-memory database");
    db.query("DEFINE NAMESPACE t; USE NS t; DEFINE DATABASE t;")
        .await
        .and_then(|r| r.check())
        .expect("define ns/db");
    db.use_ns("t").use_db("t").await.expect("use ns/db");
    Db::new(db)
}

/// The same with every migration applied.
#[cfg(test)]
pub(crate) async fn migrated_memory_db() -> Db {
    let db = memory_db().await;
    migrate(&db).await.expect("migrates");
    db
}

/// SurrealDB's plan for `query` (its parameters unbound), as JSON text.
#[cfg(test)]
pub(crate) async fn plan_of(db: &Db, query: &str) -> String {
    let mut plan = db
        .query(format!("{query} EXPLAIN"))
        .bind(("id", "c"))
        .bind(("user", "u"))
        .bind(("last", 20))
        .bind(("limit", 20))
        .await
        .expect("explained");
    let plan: Option<serde_json::Value> = plan.take(0).expect("the plan");
    plan.expect("a plan").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_are_stable_and_notice_edits() {
        assert_eq!(
            checksum("DEFINE TABLE user;"),
            checksum("DEFINE TABLE user;")
        );
        assert_ne!(
            checksum("DEFINE TABLE user;"),
            checksum("DEFINE TABLE users;")
        );
        assert_eq!(checksum(""), "cbf29ce484222325");
    }

    #[test]
    fn migrations_are_embedded_in_name_order() {
        assert!(
            !MIGRATIONS.is_empty(),
            "surreal/migrations holds at least the first migration"
        );
        let names: Vec<_> = MIGRATIONS.iter().map(|m| m.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
        assert_eq!(names[0], "0001_init");
    }
}

#[cfg(test)]
mod database_tests {
    use super::*;

    #[tokio::test]
    async fn running_the_migrations_twice_applies_nothing_the_second_time() {
        let db = memory_db().await;
        let first = migrate(&db).await.expect("first run");
        assert_eq!(first, MIGRATIONS.iter().map(|m| m.name).collect::<Vec<_>>());
        let second = migrate(&db).await.expect("second run");
        assert!(second.is_empty(), "{second:?}");
    }

    #[tokio::test]
    async fn an_edited_migration_is_refused() {
        static ORIGINAL: &[Migration] = &[Migration {
            name: "0001_x",
            sql: "DEFINE TABLE thing SCHEMALESS;",
        }];
        static EDITED: &[Migration] = &[Migration {
            name: "0001_x",
            sql: "DEFINE TABLE things SCHEMALESS;",
        }];
        let db = memory_db().await;
        apply(&db, ORIGINAL).await.expect("applies");
        let err = apply(&db, EDITED)
            .await
            .expect_err("an edited migration is refused");
        assert!(matches!(err, MigrationError::Changed { .. }), "{err}");
    }

    #[tokio::test]
    async fn a_failing_migration_leaves_nothing_behind() {
        static BROKEN: &[Migration] = &[Migration {
            name: "0001_broken",
            sql: "DEFINE TABLE half SCHEMALESS; THROW 'boom';",
        }];
        let db = memory_db().await;
        let err = apply(&db, BROKEN).await.expect_err("the migration fails");
        assert!(matches!(err, MigrationError::Failed { .. }), "{err}");
        assert_eq!(
            applied_checksum(&db, "0001_broken").await.expect("ledger"),
            None
        );
        let mut info = db.query("INFO FOR DB").await.expect("info");
        let tables: Option<serde_json::Value> = info.take((0, "tables")).expect("tables");
        let tables = tables.unwrap_or_default();
        assert!(
            tables.get("half").is_none(),
            "the transaction was rolled back: {tables}"
        );
    }

    /// Read through the newest-first indexes, messages, chats and tasks stored before migrations
    /// 0006 and 0007 and after them come newest first, each once (an index defined in the same
    /// transaction as the backfill missed the backfilled values and later kept two entries).
    #[tokio::test]
    async fn rows_stored_before_0006_are_listed_newest_first_after_it() {
        let db = migrated_before("0006_newest_first").await;
        run(
            &db,
            "CREATE chat:c SET user = user:u;
             CREATE message:a SET chat = chat:c, role = 'user', content = 'a',
                 created_at = d'2026-01-01T00:00:00Z';
             CREATE message:b SET chat = chat:c, role = 'assistant', content = 'b',
                 created_at = d'2026-01-01T00:00:01Z';
             CREATE task:t1 SET user = user:u, name = 'old', created_at = d'2026-01-01T00:00:00Z';",
        )
        .await
        .expect("messages of an older version");
        migrate(&db).await.expect("0006 and 0007 apply");
        // A message written after the migration gets its key from the table.
        run(
            &db,
            "CREATE message:c SET chat = chat:c, role = 'user', content = 'c',
                 created_at = d'2026-01-01T00:00:02Z';",
        )
        .await
        .expect("a new message");
        let mut newest = db
            .query(
                "SELECT record::id(id) AS id, newest_first FROM message WHERE chat = chat:c \
                 ORDER BY newest_first ASC",
            )
            .await
            .expect("read");
        let ids: Vec<String> = newest.take((0, "id")).expect("ids");
        assert_eq!(ids, ["c", "b", "a"]);
        // Chats follow their activity, tasks their creation.
        run(
            &db,
            "CREATE chat:d SET user = user:u, updated_at = d'2026-01-02T00:00:00Z';
             UPDATE chat:c SET updated_at = d'2026-01-03T00:00:00Z';
             CREATE task:t2 SET user = user:u, name = 'new', created_at = d'2026-01-02T00:00:00Z';
             CREATE chat:e SET user = user:u;",
        )
        .await
        .expect("chats and tasks");
        let mut lists = db
            .query(
                "SELECT record::id(id) AS id, newest_first FROM chat WHERE user = user:u \
                 ORDER BY newest_first ASC;
                 SELECT record::id(id) AS id, newest_first FROM task WHERE user = user:u \
                 ORDER BY newest_first ASC;",
            )
            .await
            .expect("read");
        let chats: Vec<String> = lists.take((0, "id")).expect("chats");
        assert_eq!(chats, ["e", "c", "d"]);
        let tasks: Vec<String> = lists.take((1, "id")).expect("tasks");
        assert_eq!(tasks, ["t2", "t1"]);
    }

    /// A funnel conversation stored whole before migration 0008 (its messages an array on the
    /// record, as that version wrote them, under a random id) loads after it as it was: under the
    /// id that follows from its visitor and funnel, its messages in order as records of their
    /// own, its checkout's link moved with it; and a message's place, once taken, stays taken.
    #[tokio::test]
    async fn a_conversation_stored_before_0008_loads_from_its_message_records_after_it() {
        use helpnow_actors::funnel::{ConversationKey, Speaker};
        use helpnow_actors::rules::FunnelKind;

        let db = migrated_before("0008_funnel_messages").await;
        run(
            &db,
            "CREATE funnel_conversation:old CONTENT {
                 visitor: visitor:v1, funnel: 'chat', version: 7, flow: 'email',
                 headline: 'Need Help?', attribution: { keyword: 'outlook email' },
                 stage: 2, junk_count: 1, is_final: true, first_message_tracked: true,
                 messages: [
                     { role: 'assistant', text: 'Hi', is_final: false, junk: false,
                       source: 'greeting', at: '2026-11-01T10:00:00Z' },
                     { role: 'user', text: '??', is_final: false, junk: true,
                       at: '2026-11-01T10:00:05Z' },
                     { role: 'assistant', text: 'Tell me more', is_final: false, junk: false,
                       source: 'script', at: '2026-11-01T10:00:07Z' },
                     { role: 'user', text: 'my email', is_final: false, junk: false,
                       at: '2026-11-01T10:00:10Z' },
                     { role: 'assistant', text: 'What did you try?', is_final: false,
                       junk: false, source: 'ai', at: '2026-11-01T10:00:12Z' },
                     { role: 'user', text: 'a restart', is_final: false, junk: false,
                       at: '2026-11-01T10:00:15Z' },
                     { role: 'assistant', text: 'Get started', is_final: true, junk: false,
                       source: 'final', at: '2026-11-01T10:00:17Z' },
                 ],
                 checkout_deadline: d'2026-11-01T10:00:32Z', user: user:u1,
                 created_at: d'2026-11-01T10:00:00Z', updated_at: d'2026-11-01T10:00:17Z'
             };
             CREATE checkout_session:cs1 CONTENT {
                 provider: 'demo', provider_session_id: 'demo_cs_1', source: 'chat_funnel',
                 tracking_id: 't1', success_url: '/', cancel_url: '/',
                 funnel_conversation: funnel_conversation:old
             };
             CREATE checkout_session:cs2 CONTENT {
                 provider: 'demo', provider_session_id: 'demo_cs_2', source: 'direct_signup',
                 tracking_id: 't2', success_url: '/', cancel_url: '/'
             };",
        )
        .await
        .expect("a conversation of the older version");
        migrate(&db).await.expect("0008 applies");

        let key = ConversationKey {
            visitor_id: "v1".into(),
            funnel: FunnelKind::Chat,
        };
        let loaded = crate::store::funnels::load_conversation(&db, &key)
            .await
            .expect("loads")
            .expect("found");
        let texts: Vec<&str> = loaded.messages.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "Hi",
                "??",
                "Tell me more",
                "my email",
                "What did you try?",
                "a restart",
                "Get started"
            ]
        );
        assert_eq!(loaded.messages[1].role, Speaker::User);
        assert!(loaded.messages[1].junk);
        assert_eq!(loaded.messages[4].source.as_deref(), Some("ai"));
        assert_eq!(
            (
                loaded.version,
                loaded.stage,
                loaded.junk_count,
                loaded.is_final
            ),
            (7, 2, 1, true)
        );
        assert!(loaded.first_message_tracked);
        assert_eq!(
            loaded.checkout_deadline.map(|d| d.to_rfc3339()).as_deref(),
            Some("2026-11-01T10:00:32+00:00")
        );
        assert_eq!(loaded.id, key.conversation_id());
        let mut left = db
            .query(
                "SELECT * FROM type::record('funnel_conversation', $id);
                 RETURN count(SELECT id FROM funnel_conversation);
                 RETURN [record::id(checkout_session:cs1.funnel_conversation),
                     checkout_session:cs2.funnel_conversation];",
            )
            .bind(("id", key.conversation_id()))
            .await
            .expect("read");
        let row: Option<serde_json::Value> = left.take(0).expect("the record");
        let row = row.unwrap_or_default();
        for moved in [
            "messages",
            "stage",
            "junk_count",
            "is_final",
            "first_message_tracked",
        ] {
            assert!(
                row.get(moved).is_none(),
                "{moved} left on the record: {row}"
            );
        }
        assert_eq!(row["user"], "user:u1", "{row}");
        let count: Option<i64> = left.take(1).expect("count");
        assert_eq!(count, Some(1), "the record under the old id is gone");
        let links: Vec<Option<String>> = left.take(2).expect("links");
        assert_eq!(links, [Some(key.conversation_id()), None]);
        // A place that is taken stays as it is.
        let again = format!(
            "INSERT INTO funnel_message [{{ id: ['{}', 3], role: 'user', text: 'again', \
             at: time::now() }}];",
            key.conversation_id()
        );
        assert!(run(&db, &again).await.is_err());
    }

    /// Journeys stored before 0022 (with the indexes it removes) are found after it by the ids
    /// the upkeep and the deletion read: every one by its start, a trial's by its account and
    /// its retention clock.
    #[tokio::test]
    async fn journeys_stored_before_0022_are_found_by_their_ids_after_it() {
        let db = migrated_before("0022_journeys_without_indexes").await;
        run(
            &db,
            "CREATE journey:['v1', 'chat_funnel'] CONTENT { visitor: 'v1', funnel: 'chat_funnel',
                 started_at: d'2026-10-01T10:00:00Z', day: '2026-10-01' };
             CREATE journey:['v2', 'chat_funnel'] CONTENT { visitor: 'v2', funnel: 'chat_funnel',
                 started_at: d'2026-11-01T10:00:00Z', day: '2026-11-01', user: user:u2,
                 retain_from: d'2026-10-20T10:05:00Z', retain_at: d'2026-11-19T10:05:00Z' };",
        )
        .await
        .expect("journeys");
        apply(&db, MIGRATIONS).await.expect("0022");
        let mut response = db
            .query(
                "SELECT VALUE record::id(id) FROM journey_start;
                 SELECT VALUE record::id(id) FROM journey_user;
                 SELECT VALUE record::id(id) FROM journey_due;
                 (INFO FOR TABLE journey).indexes;",
            )
            .await
            .expect("query");
        let starts: Vec<serde_json::Value> = response.take(0).expect("starts");
        let users: Vec<serde_json::Value> = response.take(1).expect("users");
        let due: Vec<serde_json::Value> = response.take(2).expect("due");
        let indexes: Option<serde_json::Value> = response.take(3).expect("indexes");
        assert_eq!(
            starts,
            [
                serde_json::json!(["2026-10-01T10:00:00Z", "v1", "chat_funnel"]),
                serde_json::json!(["2026-11-01T10:00:00Z", "v2", "chat_funnel"])
            ]
        );
        assert_eq!(users, [serde_json::json!(["user:u2", "v2", "chat_funnel"])]);
        assert_eq!(
            due,
            [serde_json::json!([
                "2026-11-19T10:05:00Z",
                "v2",
                "chat_funnel"
            ])]
        );
        assert_eq!(indexes, Some(serde_json::json!({})));
        // The upkeep finds them so: the due retention decided, the older journey forgotten.
        let decided = super::super::journeys::decide_retention(&db)
            .await
            .expect("decided");
        assert_eq!(decided, 1);
        let cutoff = chrono::DateTime::parse_from_rfc3339("2026-10-15T00:00:00Z")
            .expect("a time")
            .to_utc();
        let gone = super::super::journeys::forget_before(&db, cutoff)
            .await
            .expect("forgotten");
        assert_eq!(gone, 1);
        let mut left = db
            .query(
                "SELECT VALUE record::id(id) FROM journey_start, journey_user, journey_due;
                 SELECT VALUE [visitor, retain_at] FROM journey;",
            )
            .await
            .expect("query");
        let ids: Vec<serde_json::Value> = left.take(0).expect("ids");
        let journeys: Vec<serde_json::Value> = left.take(1).expect("journeys");
        assert_eq!(
            ids,
            [
                serde_json::json!(["2026-11-01T10:00:00Z", "v2", "chat_funnel"]),
                serde_json::json!(["user:u2", "v2", "chat_funnel"])
            ]
        );
        assert_eq!(journeys, [serde_json::json!(["v2", null])]);
    }

    /// A funnel conversation stored before 0030 has no epoch: after it, the writes that do not
    /// name one (the checkout's link to its account) still pass the field's type, it loads at
    /// epoch 0, and its first take-over moves it to 1; a write at epoch 0 is then fenced.
    #[tokio::test]
    async fn a_conversation_stored_before_0030_is_at_epoch_0_until_taken_over() {
        use helpnow_actors::funnel::ConversationKey;
        use helpnow_actors::funnel::ports::ConversationChange;
        use helpnow_actors::ports::StoreError;
        use helpnow_actors::rules::FunnelKind;

        let key = ConversationKey {
            visitor_id: "v1".into(),
            funnel: FunnelKind::Chat,
        };
        let id = key.conversation_id();
        let db = migrated_before("0030_funnel_epoch").await;
        run(
            &db,
            &format!(
                "CREATE funnel_conversation:`{id}` CONTENT {{
                     visitor: visitor:v1, funnel: 'chat', version: 3, flow: 'email',
                     flow_version: 1, headline: 'Need Help?',
                     created_at: time::now(), updated_at: time::now()
                 }};
                 CREATE funnel_message:['{id}', 0] CONTENT {{
                     role: 'assistant', text: 'Hi', is_final: false, junk: false,
                     source: 'greeting', at: time::now()
                 }};"
            ),
        )
        .await
        .expect("a conversation of the older version");
        apply(&db, MIGRATIONS).await.expect("0030 applies");

        run(
            &db,
            &format!("UPDATE funnel_conversation:`{id}` SET user = user:u1 RETURN NONE;"),
        )
        .await
        .expect("a write that names no epoch");
        let loaded = crate::store::funnels::load_conversation(&db, &key)
            .await
            .expect("loads")
            .expect("found");
        assert_eq!((loaded.version, loaded.epoch), (3, 0));
        let taken = crate::store::funnels::take_over_conversation(&db, &key)
            .await
            .expect("taken over")
            .expect("found");
        assert_eq!((taken.version, taken.epoch), (3, 1));
        assert_eq!(taken.messages, loaded.messages);
        let mut stale = loaded.clone();
        stale.version = 4;
        assert_eq!(
            crate::store::funnels::save_conversation(
                &db,
                &stale,
                ConversationChange::CheckoutChanged
            )
            .await,
            Err(StoreError::Fenced)
        );
    }

    /// A memory database with the migrations before `name` applied (to store rows as they were
    /// before it).
    async fn migrated_before(name: &str) -> Db {
        let db = memory_db().await;
        let before = MIGRATIONS
            .iter()
            .position(|m| m.name == name)
            .unwrap_or_else(|| panic!("no migration {name}"));
        apply(&db, &MIGRATIONS[..before])
            .await
            .unwrap_or_else(|error| panic!("the migrations before {name}: {error}"));
        db
    }

    /// Runs one statement and reports whether the database accepted it.
    async fn run(db: &Db, sql: &str) -> Result<(), surrealdb::Error> {
        db.query(sql).await.and_then(|r| r.check()).map(|_| ())
    }

    #[tokio::test]
    async fn the_schema_enforces_unique_emails_and_payment_event_ids() {
        let db = memory_db().await;
        migrate(&db).await.expect("migrates");
        run(&db, "CREATE user SET email = 'ann@example.com'")
            .await
            .expect("first user");
        assert!(
            run(&db, "CREATE user SET email = 'ann@example.com'")
                .await
                .is_err(),
            "a second account with the same email is refused"
        );
        assert!(
            run(&db, "CREATE user SET email = ' Ann@Example.com'")
                .await
                .is_err(),
            "emails are unique whatever their letter case"
        );
        assert!(
            run(&db, "CREATE user SET email = 'nope'").await.is_err(),
            "an invalid email is refused"
        );

        let event = "CREATE webhook_event SET event_id = 'evt_1', event_type = 'invoice.paid', payload = {}";
        run(&db, event).await.expect("first event");
        assert!(
            run(&db, event).await.is_err(),
            "a payment event is stored once"
        );
    }
}
