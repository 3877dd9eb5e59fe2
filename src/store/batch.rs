//! Group commit for the live conversations' store calls: funnel conversation loads and writes,
//! visits, and the member chat's access reads, messages and chat reads. The server runs a second
//! batcher for the analytics events (page views among them), so those writes never lengthen a
//! transaction that an acknowledgement waits for; the dashboard's journey steps are recorded
//! behind both ([`super::journeys::JourneyRecorder`]).
//!
//! Thousands of live conversations each load once and write a few times a minute. A transaction
//! has a cost of its own, whatever it holds: SurrealDB decodes the table's definitions again for
//! every transaction, parses and plans the query, and on SurrealKV the commit writes and syncs the
//! log (measured: about 420 us of CPU a transaction on SurrealKV, 130 us on `mem://`, against
//! 30-40 us a message; docs/benchmarks.md, "The store alone"). So one batcher takes the calls
//! that arrive while it is busy, and waits up to [`GATHER`] for more when it has only a few, and
//! runs them together in one transaction: the classic group commit of databases (PostgreSQL's
//! `commit_delay`). Each caller is answered only when the transaction holding its statement has
//! committed (SurrealKV syncs its log before a commit returns), so an acknowledgement still means
//! "on disk".
//!
//! Within a batch, the writes of one kind go as one `INSERT` of all their rows (new messages,
//! visits, analytics events): SurrealDB runs a statement's rows through one plan, which costs a
//! fraction of a statement each (docs/benchmarks.md, "The store alone"). The new conversations go
//! together too ([`START_ALL`]: one read of their ids, the `INSERT`s of those not there yet), so
//! a visitor who already has one gets a conflict of their own and the batch goes on.
//! The member chat's appends go together too ([`chats::APPEND_ALL`]: one read of their chats and
//! messages, one `INSERT` of the messages), each answered from its row of the result, when two
//! or more are alone on their chat and message id in the batch ([`appends_together`]); the others
//! keep their place in the order with statements of their own. Loads and the rare writes that
//! depend on what is stored (a conversation started over, an auto-checkout change) are
//! statements of their own.
//!
//! - A batch that fails fails every caller in it, with the same error, except a batch that lost a
//!   race (a conflict with another transaction, a message or a unique index that another process
//!   filled first): then each caller's writes run again on their own, so the one in conflict gets
//!   its conflict and the others land.
//! - A conversation write that finds the conversation changed (another version, a message
//!   already in its place, or a new conversation whose record is already there) lands nowhere
//!   and answers [`Outcome::Conflict`]; the rest of its batch is unaffected.
//! - A conversation write made at another epoch than the stored one (its writer was taken over,
//!   [`fence`]) lands nowhere and answers [`Outcome::Fenced`], whatever else it found; the rest
//!   of its batch is unaffected.
//! - A batch that the database does not answer within [`BATCH_LIMIT`] fails all its callers.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use helpnow_actors::mutation;
use surrealdb::types::{Number, RecordId, SurrealValue, Value};
use tokio::sync::{mpsc, oneshot};

use super::funnel_rows::{
    self, CheckoutRow, ConversationRow, ExposureRow, FencedMessageRow, MessageRow,
};
use super::{Db, chats};

/// The most calls one transaction carries.
const MAX_BATCH: usize = 256;
/// How long the batcher waits for more calls when it has fewer than [`FULL_ENOUGH`]: a call
/// waits this much longer at most, and a busy server commits several times fewer transactions
/// (10,000 funnel conversations: 74,000 transactions with four batchers that did not wait, 11,000
/// with one that waits 2 ms; the server's CPU 75 s -> 44 s).
const GATHER: Duration = Duration::from_millis(2);
/// A batch this large goes at once.
const FULL_ENOUGH: usize = 64;
/// Transactions in flight at once: a second starts only with a full batch of calls that touch
/// nothing the first touches ([`Statement::key`]), so one conversation's (or chat's) calls still
/// commit in the order they came, and a slow commit (a sync of the log) no longer holds up
/// every call behind it.
const IN_FLIGHT: usize = 2;
/// How often a call that runs on its own is tried while it conflicts with other writers.
const ALONE_ATTEMPTS: u64 = 5;
/// The longest a batch may take before its callers are told it failed.
const BATCH_LIMIT: Duration = Duration::from_secs(5);

/// One store call of the live conversations, as part of a batch.
#[derive(Debug, Clone)]
pub enum Statement {
    /// A funnel conversation starts: its record and its messages (the greeting). Created when
    /// `previous` is none, or nothing if its record is already there (a conflict); otherwise
    /// started over in the record at version `previous` and at the row's epoch (its earlier
    /// messages removed), or nothing if that record is at another version (a conflict) or epoch
    /// (fenced).
    StartConversation {
        id: String,
        previous: Option<i64>,
        row: Box<ConversationRow>,
        messages: Vec<MessageRow>,
        /// Its exposure, when it starts in an experiment's arm.
        exposure: Option<Box<ExposureRow>>,
    },
    /// A message of conversation `conversation` added in its place by its holder at `epoch`:
    /// fenced if the conversation is at another epoch (or gone), a conflict if that place is
    /// taken.
    AddMessage {
        conversation: String,
        epoch: i64,
        message: Box<MessageRow>,
    },
    /// A conversation's auto-checkout fields at a new version, if it is still at `previous` (a
    /// conflict otherwise) and at `epoch` (fenced otherwise).
    CheckoutChanged {
        id: String,
        previous: i64,
        epoch: i64,
        change: CheckoutRow,
    },
    /// A visit: when the visitor was last seen, and the first ad click's attribution.
    Visitor {
        id: String,
        attribution: Option<serde_json::Value>,
    },
    /// An analytics event.
    Analytics(super::analytics::NewAnalyticsEvent),
    /// Reads a conversation, with its messages.
    LoadConversation { id: String },
    /// Reads a conversation, with its messages, for a new holder: its epoch moves on by one
    /// first ([`funnel_rows::TAKE_OVER`]).
    TakeOver { id: String },
    /// Reads a member's access facts ([`super::billing::ACCESS_FACTS`]): what it found.
    AccessFacts { user: String },
    /// A message appended to a member's chat ([`super::chats::APPEND_AS`], or with the batch's
    /// other appends in one go, [`super::chats::APPEND_ALL`]; [`appends_together`]): what it
    /// found (the chat's revision before it, `-1` if the message was already there, none when the
    /// member has no such chat and nothing was written).
    AppendChatMessage(Box<super::chats::AppendVars>),
    /// Reads a member's chat with its last messages ([`super::chats::RECENT_CHAT`]).
    RecentChat(super::chats::RecentVars),
    /// An analytics event of a member's.
    MemberEvent {
        name: String,
        user: String,
        properties: serde_json::Value,
    },
}

/// What became of one call of a batch that committed.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Done,
    /// A conversation write found the conversation changed: nothing of it was written.
    Conflict,
    /// A conversation write found the conversation at another epoch than its writer's (taken
    /// over by another holder, or gone): nothing of it was written.
    Fenced,
    /// The answer of a call that reads (or a write that answers what it found), if any.
    Loaded(Option<surrealdb::types::Value>),
}

impl Outcome {
    /// What a call that reads found, as `T`; an error for any other outcome or a value that is
    /// not a `T`.
    pub fn found<T: SurrealValue>(self) -> Result<Option<T>, surrealdb::Error> {
        match self {
            Outcome::Loaded(None) => Ok(None),
            Outcome::Loaded(Some(value)) => T::from_value(value).map(Some).map_err(|error| {
                surrealdb::Error::internal(format!("a stored record cannot be read: {error}"))
            }),
            other => Err(surrealdb::Error::internal(format!(
                "a read answered {other:?}"
            ))),
        }
    }
}

/// The variables a statement of its own reads, bound as one object under its own name.
#[derive(Debug, Clone, SurrealValue)]
struct RestartVars {
    id: String,
    previous: i64,
    row: ConversationRow,
    messages: Vec<MessageRow>,
    exposure: Option<ExposureRow>,
}

#[derive(Debug, Clone, SurrealValue)]
struct CheckoutVars {
    id: String,
    previous: i64,
    epoch: i64,
    change: CheckoutRow,
}

#[derive(Debug, Clone, SurrealValue)]
struct LoadVars {
    id: String,
}

/// The members' events of a batch, each with its first touch taken from the account's
/// acquisition in the same statement. Without it the field's `VALUE` clause (migration 0015) would
/// run `fn::first_touch` for each row, whose statements cost about 550 us of CPU an event
/// (`examples/store_bench.rs`, "member event"). A member's event names no visitor and no campaign
/// of its own, so the account's acquisition is all that function would find; an account without
/// one gets an empty first touch (`{}`), which the field keeps as given.
const MEMBER_EVENTS: &str = "INSERT INTO analytics_event $member_events.map(|$e| $e + { first_touch:
        ($e.user.acquisition ?? {}).{ campaignid, keyword, utm_source, utm_medium, utm_campaign, gclid } })
    RETURN NONE;";

/// A member's event as a row of the members' events' `INSERT` ([`MEMBER_EVENTS`]).
#[derive(Debug, Clone, SurrealValue)]
struct MemberEventRow {
    name: String,
    properties: serde_json::Value,
    user: RecordId,
}

/// The fence of a conversation's writes (issue 49, docs/operations.md, "Fencing a stale
/// holder"): `holds`, SurrealQL true when the record's epoch is the writer's. The store moves
/// the epoch on whenever an actor takes the conversation over ([`funnel_rows::TAKE_OVER`]), so
/// a write of the holder before (paused, or cut off from the claims, past its claim) is
/// refused. Equal, not at most: only the store issues epochs, so one that differs is never a
/// newer holder's.
fn fence(holds: &str) -> &str {
    // A build with the `no_fence` mutation lets every write through, as before the fence, for
    // the fault run's checker to catch a stale holder's writes (actors/src/mutation.rs).
    if mutation::on("no_fence") {
        return "true";
    }
    holds
}

/// The batch's new messages (`$messages`: each a [`FencedMessageRow`]), inserted together,
/// but for those whose conversation is at another epoch than their writer's (fenced; or no
/// longer there). One read of the batch's conversations by their ids, as `[id, epoch]` pairs,
/// compared whole with the pairs the rows bring: equal, as almost always, all rows go in and the
/// value is empty; otherwise a row goes in if its pair was read, and the value is, row by row,
/// whether it did. A record read in a closure row by row, or the rows' pairs built in
/// SurrealQL, cost several times more (docs/benchmarks.md, "The fence").
fn add_messages() -> String {
    format!(
        "{{ LET $messages_found = (SELECT VALUE [id, epoch] FROM $messages.conversation); \
         IF {} {{ \
             INSERT INTO funnel_message $messages.row RETURN NONE; [] \
         }} ELSE {{ \
             LET $messages_fenced = $messages.map(|$m| $m + \
                 {{ passed: $m.fence INSIDE $messages_found }}); \
             INSERT INTO funnel_message $messages_fenced.filter(|$m| $m.passed).row \
                 RETURN NONE; \
             $messages_fenced.passed \
         }} }};",
        fence("$messages_found = $messages.fence")
    )
}

/// The answer of a conversation write of its own that found the conversation at another epoch
/// than its writer's: `IF <the update> { true } ELSE IF <at its epoch> { false } ELSE
/// { 'fenced' }`, so the epoch is read again only when the update found nothing to change.
const FENCED: &str = "fenced";

/// The batch's new conversations (`$starts`: each `{ row, messages }`), each stored with its
/// messages unless its record is already there: the value is the ids of those that were, whose
/// calls answer [`Outcome::Conflict`] with nothing written. So a visitor who already has a
/// conversation fails only their own start, not the batch's other calls (a plain `INSERT` of an
/// id that is taken fails the whole statement), and the funnel actor can try the start before
/// any read: one store call for a new visitor's join. A start that races another writer's
/// between the read and the commit fails the batch as a lost race ([`lost_a_race`]).
const START_ALL: &str = "{ LET $starts_found = (SELECT VALUE id FROM $starts.row.id); \
    LET $starts_new = IF $starts_found { $starts.filter(|$c| $c.row.id NOTINSIDE $starts_found) } \
        ELSE { $starts }; \
    IF $starts_new { \
        INSERT INTO funnel_conversation $starts_new.row RETURN NONE; \
        INSERT INTO funnel_message array::flatten($starts_new.messages) RETURN NONE; \
    }; \
    $starts_found };";

/// [`START_ALL`] for a batch whose new conversations include some in an experiment's arm
/// (`$exposures`, one row each, keyed by the conversation): their exposures, written with them
/// (migration 0029), for those that started here (not those found already there). A batch
/// without any is [`START_ALL`] itself, so experiments cost nothing when none runs.
const START_ALL_EXPOSED: &str = "{ LET $starts_found = (SELECT VALUE id FROM $starts.row.id); \
    LET $starts_new = IF $starts_found { $starts.filter(|$c| $c.row.id NOTINSIDE $starts_found) } \
        ELSE { $starts }; \
    IF $starts_new { \
        INSERT INTO funnel_conversation $starts_new.row RETURN NONE; \
        INSERT INTO funnel_message array::flatten($starts_new.messages) RETURN NONE; \
        INSERT IGNORE INTO experiment_exposure IF $starts_found { \
            $exposures.filter(|$x| $x.conversation NOTINSIDE $starts_found) } \
            ELSE { $exposures } RETURN NONE; \
    }; \
    $starts_found };";

/// A new conversation as a row of [`START_ALL`].
#[derive(Debug, Clone, SurrealValue)]
struct StartRow {
    row: ConversationRow,
    messages: Vec<MessageRow>,
}

/// A visit as a row of the visits' `INSERT`.
#[derive(Debug, Clone, SurrealValue)]
struct VisitRow {
    id: RecordId,
    acquisition: Option<serde_json::Value>,
}

/// Where a call's answer is in a batch's response.
#[derive(Debug, Clone)]
enum Slot {
    /// A write whose rows went with its kind's: nothing to read.
    None,
    /// The result of the call's own statement.
    Own(usize),
    /// A new conversation of the batch's [`START_ALL`]: a conflict if this record was there.
    Start(RecordId),
    /// The place of the call's row in the answers of the batch's appends ([`chats::APPEND_ALL`]).
    Append(usize),
    /// The place of the call's row in the batch's new messages ([`add_messages`]): fenced
    /// unless it passed.
    Message(usize),
}

/// A batch as SurrealQL: the statements of their own first, then the new conversations
/// ([`START_ALL`]), then one `INSERT` per kind of row, then the appends that go together
/// ([`chats::APPEND_ALL`]).
/// No statement of a batch may be `RETURN` (nor hold one): in a transaction SurrealDB 3 ends the
/// whole script at a `RETURN` and commits what ran before it, silently skipping the rest. A
/// statement that answers yes or no is an expression, or a block whose last line is its value.
#[derive(Default)]
struct Script {
    sql: String,
    vars: Vec<(String, Value)>,
    /// For each call: where its answer is.
    own: Vec<Slot>,
    statements: usize,
    /// The new conversations ([`START_ALL`]).
    starts: Vec<Value>,
    /// The exposures of those in an experiment's arm ([`START_ALL_EXPOSED`]).
    exposures: Vec<Value>,
    messages: Vec<Value>,
    visits: Vec<Value>,
    events: Vec<Value>,
    /// Members' events, whose first touch is their account's (see [`MEMBER_EVENTS`]).
    member_events: Vec<Value>,
    /// The appends to chats that no other call of the batch touches ([`chats::APPEND_ALL`]).
    appends: Vec<Value>,
}

impl Script {
    fn own_statement(&mut self, sql: String, vars: Value) -> Slot {
        let name = format!("s{}", self.statements);
        let sql = sql
            .replace("$s.", &format!("${name}."))
            .replace("$s_", &format!("${name}_"));
        self.sql.push_str(&sql);
        self.vars.push((name, vars));
        self.statements += 1;
        Slot::Own(self.statements - 1)
    }

    /// Adds a call; `together` for an append that goes with the batch's other appends
    /// ([`appends_together`]).
    fn add(&mut self, statement: &Statement, together: bool) {
        let own = match statement.clone() {
            Statement::StartConversation {
                previous: None,
                row,
                messages,
                exposure,
                ..
            } => {
                let id = row.id.clone();
                if let Some(exposure) = exposure {
                    self.exposures.push(exposure.into_value());
                }
                self.starts.push(
                    StartRow {
                        row: *row,
                        messages,
                    }
                    .into_value(),
                );
                Slot::Start(id)
            }
            Statement::StartConversation {
                id,
                previous: Some(previous),
                row,
                messages,
                exposure,
            } => self.own_statement(
                format!(
                    "IF (UPDATE type::record('funnel_conversation', $s.id) MERGE $s.row \
                       WHERE version = $s.previous AND {} RETURN VALUE id) {{ \
                       DELETE funnel_message:[$s.id, 0]..[$s.id, 1000000000]; \
                       INSERT INTO funnel_message $s.messages RETURN NONE; \
                       IF $s.exposure != NONE {{ \
                           INSERT IGNORE INTO experiment_exposure $s.exposure RETURN NONE; \
                       }}; true \
                     }} ELSE IF {} {{ false }} ELSE {{ '{FENCED}' }};",
                    fence("epoch = $s.row.epoch"),
                    fence("type::record('funnel_conversation', $s.id).epoch = $s.row.epoch"),
                ),
                RestartVars {
                    id,
                    previous,
                    row: *row,
                    messages,
                    exposure: exposure.map(|exposure| *exposure),
                }
                .into_value(),
            ),
            Statement::AddMessage {
                conversation,
                epoch,
                message,
            } => {
                let conversation = RecordId::new("funnel_conversation", conversation);
                let fence = vec![
                    Value::RecordId(conversation.clone()),
                    Value::Number(Number::Int(epoch)),
                ];
                self.messages.push(
                    FencedMessageRow {
                        conversation,
                        fence: fence.into(),
                        row: *message,
                    }
                    .into_value(),
                );
                Slot::Message(self.messages.len() - 1)
            }
            Statement::CheckoutChanged {
                id,
                previous,
                epoch,
                change,
            } => self.own_statement(
                format!(
                    "IF (UPDATE type::record('funnel_conversation', $s.id) MERGE $s.change \
                     WHERE version = $s.previous AND {} RETURN VALUE id) {{ true }} \
                     ELSE IF {} {{ false }} ELSE {{ '{FENCED}' }};",
                    fence("epoch = $s.epoch"),
                    fence("type::record('funnel_conversation', $s.id).epoch = $s.epoch"),
                ),
                CheckoutVars {
                    id,
                    previous,
                    epoch,
                    change,
                }
                .into_value(),
            ),
            Statement::Visitor { id, attribution } => {
                self.visits.push(
                    VisitRow {
                        id: RecordId::new("visitor", id),
                        acquisition: attribution,
                    }
                    .into_value(),
                );
                Slot::None
            }
            Statement::Analytics(event) => {
                self.events.push(event.into_value());
                Slot::None
            }
            Statement::LoadConversation { id } => {
                self.own_statement(funnel_rows::LOAD.to_owned(), LoadVars { id }.into_value())
            }
            Statement::TakeOver { id } => self.own_statement(
                funnel_rows::TAKE_OVER.to_owned(),
                LoadVars { id }.into_value(),
            ),
            Statement::AccessFacts { user } => self.own_statement(
                super::billing::ACCESS_FACTS.to_owned(),
                super::billing::AccessVars { user }.into_value(),
            ),
            Statement::AppendChatMessage(vars) if together => {
                self.appends.push(vars.row());
                Slot::Append(self.appends.len() - 1)
            }
            Statement::AppendChatMessage(vars) => {
                self.own_statement(chats::APPEND_AS.to_owned(), vars.into_value())
            }
            Statement::RecentChat(vars) => {
                self.own_statement(super::chats::RECENT_CHAT.to_owned(), vars.into_value())
            }
            Statement::MemberEvent {
                name,
                user,
                properties,
            } => {
                self.member_events.push(
                    MemberEventRow {
                        name,
                        properties,
                        user: RecordId::new("user", user),
                    }
                    .into_value(),
                );
                Slot::None
            }
        };
        self.own.push(own);
    }

    /// Adds `sql`, `statements` statements that read `rows` as `$name`, unless there are no rows:
    /// the index of its last statement, whose result answers the rows' calls.
    fn rows_statement(
        &mut self,
        name: &str,
        rows: Vec<Value>,
        sql: &str,
        statements: usize,
    ) -> Option<usize> {
        if rows.is_empty() {
            return None;
        }
        self.sql.push_str(sql);
        self.vars.push((name.to_owned(), Value::Array(rows.into())));
        self.statements += statements;
        Some(self.statements - 1)
    }

    /// The SurrealQL of the whole batch (a transaction when it is more than one statement), the
    /// variables it reads, and where each call's answer is.
    fn finish(mut self) -> Finished {
        let starts = std::mem::take(&mut self.starts);
        let exposures = std::mem::take(&mut self.exposures);
        let started = if exposures.is_empty() {
            self.rows_statement("starts", starts, START_ALL, 1)
        } else {
            self.vars
                .push(("exposures".to_owned(), Value::Array(exposures.into())));
            self.rows_statement("starts", starts, START_ALL_EXPOSED, 1)
        };
        let messages = std::mem::take(&mut self.messages);
        let added = self.rows_statement("messages", messages, &add_messages(), 1);
        let bulk = [
            (
                "visits",
                std::mem::take(&mut self.visits),
                "INSERT INTO visitor $visits ON DUPLICATE KEY UPDATE last_seen_at = time::now(), \
                 acquisition = acquisition ?? $input.acquisition RETURN NONE;",
            ),
            (
                "events",
                std::mem::take(&mut self.events),
                "INSERT INTO analytics_event $events RETURN NONE;",
            ),
            (
                "member_events",
                std::mem::take(&mut self.member_events),
                MEMBER_EVENTS,
            ),
        ];
        for (name, rows, sql) in bulk {
            self.rows_statement(name, rows, sql, 1);
        }
        let appends = std::mem::take(&mut self.appends);
        let appended = self.rows_statement(
            "appends",
            appends,
            chats::APPEND_ALL,
            chats::APPEND_ALL_STATEMENTS,
        );
        let transaction = self.statements > 1;
        let sql = if transaction {
            format!("BEGIN TRANSACTION;{}COMMIT TRANSACTION;", self.sql)
        } else {
            self.sql
        };
        Finished {
            sql,
            vars: self.vars,
            own: self.own,
            started,
            added,
            appended,
            transaction,
        }
    }
}

struct Finished {
    sql: String,
    vars: Vec<(String, Value)>,
    own: Vec<Slot>,
    /// The result that answers the new conversations ([`START_ALL`]), if any.
    started: Option<usize>,
    /// The result that answers the new messages ([`add_messages`]), if any.
    added: Option<usize>,
    /// The result that answers the appends that went together, if any did.
    appended: Option<usize>,
    transaction: bool,
}

impl Statement {
    /// The conversation or chat this call reads or writes, when its order among the other calls
    /// on it matters: two calls of one key are never in flight at once, so they commit in the
    /// order they came. Visits, events and access reads have none (nothing batched writes what
    /// an access read reads).
    pub fn key(&self) -> Option<&str> {
        match self {
            Statement::StartConversation { id, .. }
            | Statement::CheckoutChanged { id, .. }
            | Statement::LoadConversation { id }
            | Statement::TakeOver { id } => Some(id),
            Statement::AddMessage { conversation, .. } => Some(conversation),
            Statement::AppendChatMessage(vars) => Some(vars.chat()),
            Statement::RecentChat(vars) => Some(vars.chat()),
            Statement::Visitor { .. }
            | Statement::Analytics(_)
            | Statement::AccessFacts { .. }
            | Statement::MemberEvent { .. } => None,
        }
    }

    /// Reads this call's outcome from the result of its own statement.
    fn outcome(
        &self,
        response: &mut surrealdb::IndexedResults,
        index: usize,
    ) -> Result<Outcome, surrealdb::Error> {
        match self {
            Statement::LoadConversation { .. }
            | Statement::TakeOver { .. }
            | Statement::AccessFacts { .. }
            | Statement::AppendChatMessage(_)
            | Statement::RecentChat(_) => {
                let found: Option<surrealdb::types::Value> = response.take(index)?;
                Ok(Outcome::Loaded(found))
            }
            _ => {
                let landed: Option<surrealdb::types::Value> = response.take(index)?;
                Ok(match landed {
                    Some(Value::Bool(true)) => Outcome::Done,
                    Some(Value::String(answer)) if answer == FENCED => Outcome::Fenced,
                    _ => Outcome::Conflict,
                })
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

/// Told of every batch once it is done: how many calls it held and how long it took.
pub type BatchObserver = Arc<dyn Fn(usize, Duration) + Send + Sync>;

#[derive(Default)]
struct Counts {
    transactions: AtomicU64,
    statements: AtomicU64,
}

impl Batcher {
    /// Starts the batchers' tasks on the current runtime.
    pub fn start(db: Db) -> Self {
        Self::observed(db, Arc::new(|_, _| {}))
    }

    /// Like [`Batcher::start`], telling `observer` of every batch (the server's metrics).
    pub fn observed(db: Db, observer: BatchObserver) -> Self {
        let (jobs, queue) = mpsc::unbounded_channel();
        let counts = Arc::new(Counts::default());
        tokio::spawn(batcher(db, queue, counts.clone(), observer));
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

/// Runs one call in a transaction of its own, at once (the paths that are not hot).
pub async fn run_alone(db: &Db, statement: Statement) -> Result<Outcome, surrealdb::Error> {
    alone(db, &statement).await
}

/// Gathers the calls into batches and commits each batch in a transaction of its own, at most
/// [`IN_FLIGHT`] at once. With none in flight, a batch goes once it is [`FULL_ENOUGH`] or its
/// first call has waited [`GATHER`]: calls that came while one committed go as soon as it ends,
/// without a second wait. With one in flight, a second goes only with a full batch of calls
/// whose keys the first does not hold ([`take_free`]): a second transaction is worth its cost
/// only when the first cannot keep up, and one conversation's calls still commit in order.
async fn batcher(
    db: Db,
    mut queue: mpsc::UnboundedReceiver<Job>,
    counts: Arc<Counts>,
    observer: BatchObserver,
) {
    let (done, mut finished) = mpsc::unbounded_channel::<u64>();
    let mut jobs: Vec<Job> = Vec::with_capacity(MAX_BATCH);
    // The batches in flight, each with the keys of its calls.
    let mut flying: Vec<(u64, HashSet<String>)> = Vec::with_capacity(IN_FLIGHT);
    let mut launched = 0_u64;
    let mut open = true;
    let mut gathered = tokio::time::Instant::now();
    while open || !jobs.is_empty() || !flying.is_empty() {
        if !jobs.is_empty() && flying.len() < IN_FLIGHT {
            let busy: HashSet<&str> = flying
                .iter()
                .flat_map(|(_, keys)| keys.iter().map(String::as_str))
                .collect();
            let free = if busy.is_empty() {
                jobs.len()
            } else {
                jobs.iter()
                    .filter(|job| job_key(job).is_none_or(|k| !busy.contains(k)))
                    .count()
            };
            let due = if flying.is_empty() {
                !open || free >= FULL_ENOUGH || tokio::time::Instant::now() >= gathered
            } else {
                free >= FULL_ENOUGH || !open
            };
            if due && free > 0 {
                let batch = take_free(&mut jobs, &busy, job_key);
                let keys = batch
                    .iter()
                    .filter_map(|job| job_key(job).map(str::to_owned))
                    .collect();
                counts.transactions.fetch_add(1, Ordering::Relaxed);
                counts
                    .statements
                    .fetch_add(batch.len() as u64, Ordering::Relaxed);
                launched += 1;
                flying.push((launched, keys));
                tokio::spawn(commit_batch(
                    db.clone(),
                    batch,
                    observer.clone(),
                    (launched, done.clone()),
                ));
                continue;
            }
        }
        let room = MAX_BATCH.saturating_sub(jobs.len());
        tokio::select! {
            received = queue.recv_many(&mut jobs, room), if open && room > 0 => {
                if received == 0 {
                    open = false;
                } else if received == jobs.len() {
                    gathered = tokio::time::Instant::now() + GATHER;
                }
            }
            Some(ended) = finished.recv(), if !flying.is_empty() => {
                flying.retain(|(batch, _)| *batch != ended);
            }
            () = tokio::time::sleep_until(gathered), if flying.is_empty() && !jobs.is_empty() => {}
        }
    }
}

fn job_key(job: &Job) -> Option<&str> {
    job.statement.key()
}

/// Takes from `items`, in order, those whose key (if any) is not `busy`, at most [`MAX_BATCH`];
/// the others stay, in order.
fn take_free<T>(
    items: &mut Vec<T>,
    busy: &HashSet<&str>,
    key: impl Fn(&T) -> Option<&str>,
) -> Vec<T> {
    if busy.is_empty() && items.len() <= MAX_BATCH {
        return std::mem::replace(items, Vec::with_capacity(MAX_BATCH));
    }
    let mut taken = Vec::with_capacity(MAX_BATCH.min(items.len()));
    let mut kept = Vec::with_capacity(MAX_BATCH);
    for item in items.drain(..) {
        if taken.len() < MAX_BATCH && key(&item).is_none_or(|k| !busy.contains(k)) {
            taken.push(item);
        } else {
            kept.push(item);
        }
    }
    *items = kept;
    taken
}

/// For each call, whether it goes with the batch's other appends ([`chats::APPEND_ALL`]): an
/// append whose chat no other call of the batch touches and whose message id no other append
/// names (two rows of one id would both find it free, and their `INSERT` fail the batch), when
/// there are at least two such (one alone is cheaper as its own block, [`chats::APPEND_AS`]).
/// The others keep their place in the order with statements of their own.
fn appends_together(statements: &[&Statement]) -> Vec<bool> {
    let mut calls_on: HashMap<&str, usize> = HashMap::new();
    let mut ids: HashMap<&str, usize> = HashMap::new();
    for statement in statements {
        if let Some(key) = statement.key() {
            *calls_on.entry(key).or_default() += 1;
        }
        if let Statement::AppendChatMessage(vars) = statement {
            *ids.entry(vars.message()).or_default() += 1;
        }
    }
    let together: Vec<bool> = statements
        .iter()
        .map(|statement| match statement {
            Statement::AppendChatMessage(vars) => {
                calls_on[vars.chat()] == 1 && ids[vars.message()] == 1
            }
            _ => false,
        })
        .collect();
    if together.iter().filter(|&&t| t).count() < 2 {
        return vec![false; statements.len()];
    }
    together
}

/// Commits one batch and answers its callers, then says it is done.
async fn commit_batch(
    db: Db,
    batch: Vec<Job>,
    observer: BatchObserver,
    (id, done): (u64, mpsc::UnboundedSender<u64>),
) {
    let (statements, answers): (Vec<Statement>, Vec<Answer>) = batch
        .into_iter()
        .map(|job| (job.statement, job.answer))
        .unzip();
    let (calls, began) = (statements.len(), tokio::time::Instant::now());
    let outcomes = commit_together(&db, statements).await;
    observer(calls, began.elapsed());
    for (answer, outcome) in answers.into_iter().zip(outcomes) {
        // A caller that stopped waiting (its own time-out) is simply not told.
        let _ = answer.send(outcome);
    }
    let _ = done.send(id);
}

/// What a batcher does with one batch: commits `statements` in one transaction and gives each
/// its outcome, in order. A failed transaction fails every statement with its error, unless it
/// lost a race: then each statement runs again on its own ([`each_alone`]).
pub async fn commit_together(
    db: &Db,
    statements: Vec<Statement>,
) -> Vec<Result<Outcome, surrealdb::Error>> {
    if let [one] = statements.as_slice() {
        return vec![alone(db, one).await];
    }
    let all: Vec<&Statement> = statements.iter().collect();
    match run(db, &all).await {
        Ok(outcomes) => outcomes,
        Err(error) if lost_a_race(&error) => each_alone(db, &statements).await,
        Err(error) => statements.iter().map(|_| Err(error.clone())).collect(),
    }
}

/// Runs each statement in a transaction of its own: those of one conversation or chat
/// ([`Statement::key`]) one after another in the order they came, as the batch would have (a
/// message after its conversation's start, or the fence finds no conversation yet), the others
/// side by side.
async fn each_alone(db: &Db, statements: &[Statement]) -> Vec<Result<Outcome, surrealdb::Error>> {
    let mut in_turn: Vec<Vec<usize>> = Vec::new();
    let mut turn_of: HashMap<&str, usize> = HashMap::new();
    for (index, statement) in statements.iter().enumerate() {
        match statement.key().and_then(|key| turn_of.get(key).copied()) {
            Some(turn) => in_turn[turn].push(index),
            None => {
                if let Some(key) = statement.key() {
                    turn_of.insert(key, in_turn.len());
                }
                in_turn.push(vec![index]);
            }
        }
    }
    let turns = in_turn.into_iter().map(|indexes| async move {
        let mut outcomes = Vec::with_capacity(indexes.len());
        for index in indexes {
            outcomes.push((index, alone(db, &statements[index]).await));
        }
        outcomes
    });
    let mut outcomes: Vec<(usize, Result<Outcome, surrealdb::Error>)> =
        futures_util::future::join_all(turns)
            .await
            .into_iter()
            .flatten()
            .collect();
    outcomes.sort_by_key(|(index, _)| *index);
    outcomes.into_iter().map(|(_, outcome)| outcome).collect()
}

/// Whether a failed batch lost a race with another writer: a conflict, a unique index or a
/// message place filled first.
fn lost_a_race(error: &surrealdb::Error) -> bool {
    super::billing::is_conflict(error) || is_taken(error)
}

/// Whether a write found its record already there.
fn is_taken(error: &surrealdb::Error) -> bool {
    error.to_string().contains("already exists")
}

/// Runs one call in a transaction of its own, again while it conflicts with another writer. A
/// message whose place is taken, or a new conversation that is already there, is a conflict.
async fn alone(db: &Db, statement: &Statement) -> Result<Outcome, surrealdb::Error> {
    let creates = matches!(
        statement,
        Statement::AddMessage { .. } | Statement::StartConversation { previous: None, .. }
    );
    let one = [statement];
    match super::retry_conflicts(ALONE_ATTEMPTS, || run(db, &one)).await {
        Ok(mut outcomes) => outcomes.remove(0),
        Err(error) if creates && is_taken(&error) => Ok(Outcome::Conflict),
        Err(error) => Err(error),
    }
}

/// Runs `statements` in one transaction: each one's outcome, or the error that failed them all.
async fn run(
    db: &Db,
    statements: &[&Statement],
) -> Result<Vec<Result<Outcome, surrealdb::Error>>, surrealdb::Error> {
    let mut script = Script::default();
    for (statement, together) in statements.iter().zip(appends_together(statements)) {
        script.add(statement, together);
    }
    let Finished {
        sql,
        vars,
        own,
        started,
        added,
        appended,
        transaction,
    } = script.finish();
    let mut query = db.query(sql);
    for variable in vars {
        query = query.bind(variable);
    }
    let mut response = tokio::time::timeout(BATCH_LIMIT, query)
        .await
        .map_err(|_| surrealdb::Error::internal("the database did not answer in time".to_owned()))?
        .and_then(super::check_transaction)?;
    // `BEGIN` is a statement of the response too.
    let first = usize::from(transaction);
    let already_there: Vec<RecordId> = match started {
        Some(index) => response.take(first + index)?,
        None => Vec::new(),
    };
    // Empty when every message passed the fence, else one answer a row.
    let passed: Vec<bool> = match added {
        Some(index) => response.take(first + index)?,
        None => Vec::new(),
    };
    let mut appended: Vec<Value> = match appended {
        Some(index) => response.take(first + index)?,
        None => Vec::new(),
    };
    Ok(statements
        .iter()
        .zip(own)
        .map(|(statement, slot)| match slot {
            Slot::None => Ok(Outcome::Done),
            Slot::Own(index) => statement.outcome(&mut response, first + index),
            Slot::Start(id) if already_there.contains(&id) => Ok(Outcome::Conflict),
            Slot::Start(_) => Ok(Outcome::Done),
            Slot::Message(row) => match passed.get(row) {
                None if passed.is_empty() => Ok(Outcome::Done),
                Some(true) => Ok(Outcome::Done),
                Some(false) => Ok(Outcome::Fenced),
                None => Err(surrealdb::Error::internal(
                    "the batch's messages answered fewer rows than they had".to_owned(),
                )),
            },
            Slot::Append(row) => match appended.get_mut(row).map(std::mem::take) {
                Some(Value::None | Value::Null) => Ok(Outcome::Loaded(None)),
                Some(answer) => Ok(Outcome::Loaded(Some(answer))),
                None => Err(surrealdb::Error::internal(
                    "the batch's appends answered fewer rows than they had".to_owned(),
                )),
            },
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_of<'a>(item: &'a (&'static str, u32)) -> Option<&'a str> {
        (!item.0.is_empty()).then_some(item.0)
    }

    #[test]
    fn a_second_batch_takes_only_calls_whose_key_is_not_in_flight_and_the_rest_keep_their_order() {
        let mut items = vec![("a", 1), ("b", 2), ("", 3), ("a", 4), ("c", 5), ("b", 6)];
        let busy: HashSet<&str> = ["a"].into();
        let taken = take_free(&mut items, &busy, key_of);
        assert_eq!(taken, [("b", 2), ("", 3), ("c", 5), ("b", 6)]);
        assert_eq!(items, [("a", 1), ("a", 4)], "a's calls wait, in order");
        // With nothing in flight, all go.
        let taken = take_free(&mut items, &HashSet::new(), key_of);
        assert_eq!(taken, [("a", 1), ("a", 4)]);
        assert!(items.is_empty());
    }

    fn append(chat: &str, message: &str) -> Statement {
        Statement::AppendChatMessage(Box::new(chats::AppendVars::new(
            "member1",
            &chats::ChatId::parse(chat).expect("an id"),
            &chats::MessageId::parse(message).expect("an id"),
            chats::Role::User,
            "text",
            None,
        )))
    }

    #[test]
    fn appends_go_together_only_alone_on_their_chat_and_id_and_at_least_two() {
        let batch = [
            append("chat1", "m1"),
            append("chat2", "m2"),
            append("chat3", "m3"),
            append("chat3", "m4"),
            append("chat4", "m5"),
            append("chat5", "m5"),
            Statement::RecentChat(chats::RecentVars::new(
                "member1",
                &chats::ChatId::parse("chat2").expect("an id"),
                20,
            )),
            append("chat6", "m6"),
            Statement::AccessFacts {
                user: "member1".into(),
            },
        ];
        let all: Vec<&Statement> = batch.iter().collect();
        let together = appends_together(&all);
        assert_eq!(
            together,
            [true, false, false, false, false, false, false, true, false],
            "chat2 is read in the batch, chat3 has two, m5 is named twice"
        );
        let mut script = Script::default();
        for (statement, together) in all.iter().zip(&together) {
            script.add(statement, *together);
        }
        let finished = script.finish();
        assert!(matches!(finished.own[0], Slot::Append(0)));
        assert!(matches!(finished.own[7], Slot::Append(1)));
        assert!(matches!(finished.own[1], Slot::Own(_)));
        assert_eq!(finished.sql.matches(chats::APPEND_ALL).count(), 1);
        assert!(finished.appended.is_some());
        // One append alone is a block of its own.
        let one = [append("chat1", "m1"), append("chat1", "m2")];
        let one: Vec<&Statement> = one.iter().collect();
        assert_eq!(appends_together(&one), [false, false]);
        let lone = [
            append("chat1", "m1"),
            Statement::AccessFacts { user: "u".into() },
        ];
        let lone: Vec<&Statement> = lone.iter().collect();
        assert_eq!(appends_together(&lone), [false, false]);
    }

    #[test]
    fn a_batch_holds_at_most_its_limit_and_the_rest_stay() {
        let mut items: Vec<(&str, u32)> = (0..MAX_BATCH as u32 + 10).map(|n| ("", n)).collect();
        let busy: HashSet<&str> = ["z"].into();
        let taken = take_free(&mut items, &busy, key_of);
        assert_eq!(taken.len(), MAX_BATCH);
        assert_eq!(items.first(), Some(&("", MAX_BATCH as u32)));
        assert_eq!(items.len(), 10);
    }
}
