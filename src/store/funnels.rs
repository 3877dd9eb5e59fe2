//! Funnel conversations (one per visitor and funnel), the help funnel's record, and visitors.
//!
//! A conversation is saved whole with a version: a save only lands on the version before it, so
//! two processes holding the same conversation cannot overwrite each other unnoticed. The live
//! conversations' saves and visits are committed in groups ([`super::batch`]).

use chrono::{DateTime, Utc};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use helpnow_actors::funnel::{Attribution, Conversation, ConversationKey, FunnelMessage};
use helpnow_actors::ports::{FunnelStore, StoreError};
use helpnow_actors::rules::FunnelKind;
use surrealdb::types::{RecordId, SurrealValue};

use super::Db;
use super::batch::{Batcher, Outcome, Statement};

pub(super) const READ_FIELDS: &str = "record::id(id) AS id, record::id(visitor) AS visitor_id, funnel, \
     version, flow ?? 'default' AS flow, headline ?? '' AS headline, attribution ?? {} AS attribution, \
     stage, junk_count, is_final, first_message_tracked, messages, checkout_deadline, \
     checkout_started_at, created_at, updated_at";

/// A conversation as written: created with `CONTENT`, updated with `MERGE` (so the fields other
/// writers keep on the row, the help funnel's `record` and the checkout's `user`, stay).
#[derive(Debug, Clone, SurrealValue)]
pub struct ConversationRow {
    visitor: RecordId,
    funnel: String,
    version: i64,
    flow: String,
    headline: String,
    keyword: Option<String>,
    campaignid: Option<String>,
    attribution: serde_json::Value,
    stage: i64,
    junk_count: i64,
    is_final: bool,
    first_message_tracked: bool,
    messages: serde_json::Value,
    checkout_deadline: Option<DateTime<Utc>>,
    checkout_started_at: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

#[derive(Debug, Clone, SurrealValue)]
struct StoredRow {
    id: String,
    visitor_id: String,
    funnel: String,
    version: i64,
    flow: String,
    headline: String,
    attribution: serde_json::Value,
    stage: i64,
    junk_count: i64,
    is_final: bool,
    first_message_tracked: bool,
    messages: serde_json::Value,
    checkout_deadline: Option<DateTime<Utc>>,
    checkout_started_at: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

fn to_row(conversation: &Conversation) -> Result<ConversationRow, StoreError> {
    let encode = |what: &str, error: serde_json::Error| {
        StoreError::Failed(format!("cannot encode the {what}: {error}"))
    };
    Ok(ConversationRow {
        visitor: RecordId::new("visitor", conversation.key.visitor_id.as_str()),
        funnel: conversation.key.funnel.as_str().to_owned(),
        version: i64::try_from(conversation.version).unwrap_or(i64::MAX),
        flow: conversation.flow.clone(),
        headline: conversation.headline.clone(),
        keyword: conversation.attribution.keyword.clone(),
        campaignid: conversation.attribution.campaignid.clone(),
        attribution: serde_json::to_value(&conversation.attribution)
            .map_err(|e| encode("attribution", e))?,
        stage: i64::from(conversation.stage),
        junk_count: i64::from(conversation.junk_count),
        is_final: conversation.is_final,
        first_message_tracked: conversation.first_message_tracked,
        messages: serde_json::to_value(&conversation.messages)
            .map_err(|e| encode("messages", e))?,
        checkout_deadline: conversation.checkout_deadline,
        checkout_started_at: conversation.checkout_started_at,
        created_at: conversation.created_at,
        updated_at: conversation.updated_at,
    })
}

fn from_row(row: StoredRow) -> Result<Conversation, StoreError> {
    let decode = |what: &str, error: serde_json::Error| {
        StoreError::Failed(format!(
            "a stored conversation has a broken {what}: {error}"
        ))
    };
    let funnel = FunnelKind::parse(&row.funnel)
        .ok_or_else(|| StoreError::Failed(format!("unknown funnel {}", row.funnel)))?;
    let messages: Vec<FunnelMessage> =
        serde_json::from_value(row.messages).map_err(|e| decode("message list", e))?;
    let attribution: Attribution = if row.attribution.is_null() {
        Attribution::default()
    } else {
        serde_json::from_value(row.attribution).map_err(|e| decode("attribution", e))?
    };
    Ok(Conversation {
        id: row.id,
        key: ConversationKey {
            visitor_id: row.visitor_id,
            funnel,
        },
        version: u64::try_from(row.version).unwrap_or(0),
        flow: row.flow,
        headline: row.headline,
        attribution,
        stage: u8::try_from(row.stage.clamp(0, 2)).unwrap_or(0),
        junk_count: u32::try_from(row.junk_count.max(0)).unwrap_or(u32::MAX),
        is_final: row.is_final,
        first_message_tracked: row.first_message_tracked,
        messages,
        checkout_deadline: row.checkout_deadline,
        checkout_started_at: row.checkout_started_at,
        created_at: row.created_at,
        updated_at: row.updated_at,
    })
}

fn failed(error: surrealdb::Error) -> StoreError {
    if super::billing::is_conflict(&error) {
        StoreError::Conflict
    } else {
        StoreError::Failed(error.to_string())
    }
}

/// The statement that reads a visitor's conversation of one funnel.
pub fn load_statement(key: &ConversationKey) -> Statement {
    Statement::LoadConversation {
        visitor: key.visitor_id.clone(),
        funnel: key.funnel.as_str().to_owned(),
    }
}

fn loaded(outcome: Result<Outcome, surrealdb::Error>) -> Result<Option<Conversation>, StoreError> {
    match outcome.map_err(failed)? {
        Outcome::Loaded(Some(row)) => from_row(StoredRow::from_value(row).map_err(|error| {
            StoreError::Failed(format!("a stored conversation cannot be read: {error}"))
        })?)
        .map(Some),
        Outcome::Loaded(None) => Ok(None),
        other => Err(StoreError::Failed(format!("a load answered {other:?}"))),
    }
}

/// Reads a visitor's conversation of one funnel, in a transaction of its own.
pub async fn load_conversation(
    db: &Db,
    key: &ConversationKey,
) -> Result<Option<Conversation>, StoreError> {
    loaded(super::batch::run_alone(db, load_statement(key)).await)
}

/// The statement that saves `conversation`: its creation at version 1, otherwise an update that
/// lands only on the version before it (so two processes holding it cannot overwrite each other).
pub fn save_statement(conversation: &Conversation) -> Result<Statement, StoreError> {
    Ok(Statement::Conversation {
        id: conversation.id.clone(),
        previous: (conversation.version > 1)
            .then(|| i64::try_from(conversation.version - 1).unwrap_or(i64::MAX)),
        row: Box::new(to_row(conversation)?),
    })
}

fn saved(outcome: Result<Outcome, surrealdb::Error>) -> Result<(), StoreError> {
    match outcome.map_err(failed)? {
        Outcome::Done => Ok(()),
        Outcome::Conflict => Err(StoreError::Conflict),
        other => Err(StoreError::Failed(format!("a save answered {other:?}"))),
    }
}

/// Saves a conversation in a transaction of its own (the actors' saves go through
/// [`ConversationStore`], which commits them in groups).
pub async fn save_conversation(db: &Db, conversation: &Conversation) -> Result<(), StoreError> {
    saved(super::batch::run_alone(db, save_statement(conversation)?).await)
}

/// A store call the actors wait for longer than this counts as failed: some of them pause the
/// conversation while they wait, and a hung database must not freeze it.
const STORE_CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The funnel actors' store port: their loads and saves run in groups ([`Batcher`]).
#[derive(Clone)]
pub struct ConversationStore(Batcher);

impl ConversationStore {
    pub fn new(batcher: Batcher) -> Self {
        Self(batcher)
    }

    /// Runs `statement` with the others waiting; a call that takes too long counts as failed.
    fn submit(
        &self,
        statement: Statement,
    ) -> impl std::future::Future<Output = Result<Outcome, surrealdb::Error>> + 'static {
        let batcher = self.0.clone();
        async move {
            tokio::time::timeout(STORE_CALL_TIMEOUT, batcher.submit(statement))
                .await
                .unwrap_or_else(|_| {
                    Err(surrealdb::Error::internal(
                        "the store did not answer in time".to_owned(),
                    ))
                })
        }
    }
}

impl FunnelStore for ConversationStore {
    fn load(
        &self,
        key: &ConversationKey,
    ) -> BoxFuture<'static, Result<Option<Conversation>, StoreError>> {
        let call = self.submit(load_statement(key));
        async move { loaded(call.await) }.boxed()
    }

    fn save(&self, conversation: &Conversation) -> BoxFuture<'static, Result<(), StoreError>> {
        let call = save_statement(conversation).map(|statement| self.submit(statement));
        async move { saved(call?.await) }.boxed()
    }
}

/// The statement that notes a visitor's visit; the first ad click's attribution stays.
pub fn visit(visitor_id: &str, attribution: &Attribution) -> Statement {
    Statement::Visitor {
        id: visitor_id.to_owned(),
        attribution: (!attribution.is_empty())
            .then(|| serde_json::to_value(attribution).ok())
            .flatten(),
    }
}

/// Notes a visitor's visit, in a transaction of its own.
pub async fn touch_visitor(
    db: &Db,
    visitor_id: &str,
    attribution: &Attribution,
) -> Result<(), surrealdb::Error> {
    let statement = visit(visitor_id, attribution);
    super::retry_on_conflict(|| super::in_turn(super::batch::run_alone(db, statement.clone())))
        .await?;
    Ok(())
}

/// Stores the help funnel's record for a visitor (one per visitor; a new issue replaces it).
pub async fn save_help_record(
    db: &Db,
    visitor_id: &str,
    headline: &str,
    attribution: &Attribution,
    record: &serde_json::Value,
) -> Result<(), surrealdb::Error> {
    let attribution = serde_json::to_value(attribution).unwrap_or_default();
    super::retry_on_conflict(|| async {
        db.query(
            "LET $found = (SELECT VALUE id FROM funnel_conversation \
               WHERE visitor = type::record('visitor', $visitor) AND funnel = 'help' LIMIT 1)[0]; \
             IF $found != NONE { \
               UPDATE $found SET record = $record, headline = $headline, attribution = $attribution, \
                 keyword = $attribution.keyword ?? NONE, campaignid = $attribution.campaignid ?? NONE, \
                 version = version + 1, updated_at = time::now(); \
             } ELSE { \
               CREATE funnel_conversation SET visitor = type::record('visitor', $visitor), \
                 funnel = 'help', flow = 'help', record = $record, headline = $headline, \
                 attribution = $attribution, keyword = $attribution.keyword ?? NONE, \
                 campaignid = $attribution.campaignid ?? NONE, version = 1, stage = 0, junk_count = 0, \
                 is_final = false, first_message_tracked = true, messages = [], \
                 created_at = time::now(), updated_at = time::now(); \
             };",
        )
        .bind(("visitor", visitor_id.to_owned()))
        .bind(("headline", headline.to_owned()))
        .bind(("attribution", attribution.clone()))
        .bind(("record", record.clone()))
        .await?
        .check()
    })
    .await?;
    Ok(())
}

/// The visitor's help funnel record and its conversation id, if they used the help funnel.
pub async fn help_record(
    db: &Db,
    visitor_id: &str,
) -> Result<Option<(String, serde_json::Value)>, surrealdb::Error> {
    #[derive(SurrealValue)]
    struct Row {
        id: String,
        record: Option<serde_json::Value>,
    }
    let mut response = db
        .query(
            "SELECT record::id(id) AS id, record FROM funnel_conversation \
             WHERE visitor = type::record('visitor', $visitor) AND funnel = 'help' LIMIT 1",
        )
        .bind(("visitor", visitor_id.to_owned()))
        .await?
        .check()?;
    let rows: Vec<Row> = response.take(0)?;
    Ok(rows
        .into_iter()
        .next()
        .and_then(|row| row.record.map(|record| (row.id, record))))
}
