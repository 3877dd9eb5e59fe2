//! Funnel conversations (one per visitor and funnel), the help funnel's record, and visitors.
//!
//! A conversation is a `funnel_conversation` record (who, which funnel, where from, the
//! auto-checkout's state, a version; its id follows from the visitor and the funnel,
//! `ConversationKey::conversation_id`) and its messages, each a `funnel_message` record keyed by
//! the conversation and its place (`funnel_message:[conversation, 0]` is the greeting). A save
//! writes only what changed ([`ConversationChange`]): a new message is one small record, so the
//! conversation is never rewritten whole, and a message already in its place means another
//! process got there first (the same optimistic concurrency as the version, per message). The
//! stage, the junk count and the end follow from the messages
//! (`Conversation::settle_from_messages`); the auto-checkout's deadline is the final message's
//! unless the record holds a later one or a checkout opened. The live conversations' writes are
//! committed in groups ([`super::batch`]).
//!
//! The record's `epoch` fences its holders (migration 0030): an actor that becomes the
//! conversation's holder loads it with [`take_over_statement`], which moves the epoch on, and
//! every write but a new conversation's start carries the writer's epoch and lands only while the
//! record is at it (`StoreError::Fenced` otherwise).

use crate::domain::VisitorId;
use chrono::{DateTime, Utc};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use helpnow_actors::funnel::ports::{ConversationChange, FunnelStore};
use helpnow_actors::funnel::{
    Attribution, Conversation, ConversationKey, FunnelMessage, Speaker, funnel_record_name,
};
use helpnow_actors::ports::StoreError;
use helpnow_actors::rules::FunnelKind;
use helpnow_actors::rules::experiments::ArmRef;
use helpnow_actors::rules::flows::{DEFAULT_FLOW, FlowRef};
use surrealdb::types::{Array, Number, RecordId, RecordIdKey, SurrealValue, Value};

use super::Db;
use super::batch::{Batcher, Outcome, Statement};

pub use super::funnel_rows::{ArmRow, CheckoutRow, ConversationRow, ExposureRow, MessageRow};

#[derive(Debug, Clone, SurrealValue)]
struct StoredConversation {
    id: RecordId,
    visitor: RecordId,
    funnel: String,
    version: i64,
    /// None only for a record written before migration 0030 and not since.
    epoch: Option<i64>,
    flow: Option<String>,
    flow_version: Option<i64>,
    flow_preview: Option<String>,
    arm: Option<ArmRow>,
    headline: Option<String>,
    attribution: Option<serde_json::Value>,
    checkout_deadline: Option<DateTime<Utc>>,
    checkout_started_at: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

#[derive(Debug, Clone, SurrealValue)]
struct Stored {
    conversation: StoredConversation,
    messages: Vec<MessageRow>,
}

/// The text of a record id's key (conversations and visitors have text keys).
fn text_key(id: RecordId) -> Result<String, StoreError> {
    match id.key {
        RecordIdKey::String(key) => Ok(key),
        other => Err(StoreError::Failed(format!(
            "a stored conversation refers to an unexpected key {other:?}"
        ))),
    }
}

/// A message's place in its conversation, from its key `[conversation, place]`.
fn place(id: &RecordId) -> Option<i64> {
    match &id.key {
        RecordIdKey::Array(key) => match key.get(1) {
            Some(Value::Number(Number::Int(place))) => Some(*place),
            _ => None,
        },
        _ => None,
    }
}

fn version(conversation: &Conversation) -> i64 {
    i64::try_from(conversation.version).unwrap_or(i64::MAX)
}

fn epoch(conversation: &Conversation) -> i64 {
    i64::try_from(conversation.epoch).unwrap_or(i64::MAX)
}

fn to_row(conversation: &Conversation) -> Result<ConversationRow, StoreError> {
    Ok(ConversationRow {
        id: RecordId::new("funnel_conversation", conversation.id.as_str()),
        visitor: RecordId::new("visitor", conversation.key.visitor_id.as_str()),
        funnel: conversation.key.funnel.as_str().to_owned(),
        version: version(conversation),
        epoch: epoch(conversation),
        flow: conversation.flow.name.clone(),
        flow_version: i64::from(conversation.flow.version),
        flow_preview: conversation.flow.preview.clone(),
        arm: conversation.arm.as_ref().map(|arm| ArmRow {
            experiment: arm.experiment.clone(),
            arm: arm.arm.clone(),
        }),
        headline: conversation.headline.clone(),
        keyword: conversation.attribution.keyword.clone(),
        campaignid: conversation.attribution.campaignid.clone(),
        attribution: attribution_value(&conversation.attribution).map_err(|error| {
            StoreError::Failed(format!("cannot encode the attribution: {error}"))
        })?,
        checkout_deadline: conversation.checkout_deadline,
        checkout_started_at: conversation.checkout_started_at,
        created_at: conversation.created_at,
        updated_at: conversation.updated_at,
    })
}

/// The exposure of a conversation that starts in an experiment's arm: the arm shown with the
/// greeting (docs/dashboard.md, "Experiments").
fn exposure_row(conversation: &Conversation) -> Option<ExposureRow> {
    let arm = conversation.arm.as_ref()?;
    let key = Array::from(vec![
        Value::String(arm.experiment.clone()),
        Value::String(conversation.key.visitor_id.clone()),
    ]);
    Some(ExposureRow {
        id: RecordId::new("experiment_exposure", RecordIdKey::Array(key)),
        arm: arm.arm.clone(),
        funnel: funnel_record_name(conversation.key.funnel).to_owned(),
        conversation: RecordId::new("funnel_conversation", conversation.id.as_str()),
        at: conversation.created_at,
    })
}

/// The key of a conversation's message in place `seq` (the greeting is 0).
fn message_key(conversation_id: &str, seq: usize) -> RecordId {
    let place = Number::Int(i64::try_from(seq).unwrap_or(i64::MAX));
    let key = Array::from(vec![
        Value::String(conversation_id.to_owned()),
        Value::Number(place),
    ]);
    RecordId::new("funnel_message", RecordIdKey::Array(key))
}

fn message_row(conversation: &Conversation, seq: usize, message: &FunnelMessage) -> MessageRow {
    MessageRow {
        id: message_key(&conversation.id, seq),
        role: match message.role {
            Speaker::User => "user",
            Speaker::Assistant => "assistant",
        }
        .to_owned(),
        text: message.text.clone(),
        is_final: message.is_final,
        junk: message.junk,
        source: message.source.clone(),
        at: message.at,
        checkout_at: message
            .is_final
            .then_some(conversation.checkout_deadline)
            .flatten(),
    }
}

fn from_stored(stored: Stored) -> Result<Conversation, StoreError> {
    let broken = |what: &str| StoreError::Failed(format!("a stored conversation has {what}"));
    let row = stored.conversation;
    let funnel = FunnelKind::parse(&row.funnel)
        .ok_or_else(|| broken(&format!("an unknown funnel {}", row.funnel)))?;
    let attribution: Attribution = match row.attribution {
        None | Some(serde_json::Value::Null) => Attribution::default(),
        Some(attribution) => serde_json::from_value(attribution)
            .map_err(|error| broken(&format!("a broken attribution: {error}")))?,
    };
    let mut stored_messages = stored.messages;
    stored_messages.sort_by_key(|message| place(&message.id));
    let final_checkout = stored_messages
        .iter()
        .find_map(|message| message.checkout_at);
    let messages = stored_messages
        .into_iter()
        .map(|message| {
            let role = match message.role.as_str() {
                "user" => Speaker::User,
                "assistant" => Speaker::Assistant,
                other => return Err(broken(&format!("a message from {other}"))),
            };
            Ok(FunnelMessage {
                role,
                text: message.text,
                is_final: message.is_final,
                junk: message.junk,
                source: message.source,
                at: message.at,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    // The final message set the auto-checkout's deadline; the record holds it once it moved
    // (the visitor was away when it came) or a checkout opened (then there is none).
    let checkout_deadline = match (row.checkout_deadline, row.checkout_started_at) {
        (None, None) => final_checkout,
        (deadline, _) => deadline,
    };
    let mut conversation = Conversation {
        id: text_key(row.id)?,
        key: ConversationKey {
            visitor_id: text_key(row.visitor)?,
            funnel,
        },
        version: u64::try_from(row.version).unwrap_or(0),
        epoch: row
            .epoch
            .and_then(|epoch| u64::try_from(epoch).ok())
            .unwrap_or(0),
        flow: FlowRef {
            name: row.flow.unwrap_or_else(|| DEFAULT_FLOW.to_owned()),
            version: row
                .flow_version
                .and_then(|version| u32::try_from(version).ok())
                .unwrap_or(1),
            preview: row.flow_preview,
        },
        arm: row.arm.map(|arm| ArmRef {
            experiment: arm.experiment,
            arm: arm.arm,
        }),
        headline: row.headline.unwrap_or_default(),
        attribution,
        stage: 0,
        junk_count: 0,
        is_final: false,
        first_message_tracked: false,
        messages,
        checkout_deadline,
        checkout_started_at: row.checkout_started_at,
        created_at: row.created_at,
        updated_at: row.updated_at,
    };
    conversation.settle_from_messages();
    Ok(conversation)
}

fn failed(error: surrealdb::Error) -> StoreError {
    if super::billing::is_conflict(&error) {
        StoreError::Conflict
    } else {
        StoreError::Failed(error.to_string())
    }
}

/// The statement that reads a visitor's conversation of one funnel (its id follows from them).
pub fn load_statement(key: &ConversationKey) -> Statement {
    Statement::LoadConversation {
        id: key.conversation_id(),
    }
}

/// The statement that reads a visitor's conversation of one funnel for its new holder: its epoch
/// moves on by one, and the conversation comes back at the new one.
pub fn take_over_statement(key: &ConversationKey) -> Statement {
    Statement::TakeOver {
        id: key.conversation_id(),
    }
}

fn loaded(outcome: Result<Outcome, surrealdb::Error>) -> Result<Option<Conversation>, StoreError> {
    let stored: Option<Stored> = outcome.and_then(Outcome::found).map_err(failed)?;
    stored.map(from_stored).transpose()
}

/// Reads a visitor's conversation of one funnel, in a transaction of its own.
pub async fn load_conversation(
    db: &Db,
    key: &ConversationKey,
) -> Result<Option<Conversation>, StoreError> {
    loaded(super::batch::run_alone(db, load_statement(key)).await)
}

/// Reads a visitor's conversation of one funnel for its new holder, in a transaction of its own
/// (see [`take_over_statement`]).
pub async fn take_over_conversation(
    db: &Db,
    key: &ConversationKey,
) -> Result<Option<Conversation>, StoreError> {
    loaded(super::batch::run_alone(db, take_over_statement(key)).await)
}

/// The statement that stores `change` of `conversation` (see [`ConversationChange`]), fenced at
/// its epoch.
pub fn save_statement(
    conversation: &Conversation,
    change: ConversationChange,
) -> Result<Statement, StoreError> {
    let previous = i64::try_from(conversation.version.saturating_sub(1)).unwrap_or(i64::MAX);
    Ok(match change {
        ConversationChange::Started => Statement::StartConversation {
            id: conversation.id.clone(),
            previous: (conversation.version > 1).then_some(previous),
            row: Box::new(to_row(conversation)?),
            messages: conversation
                .messages
                .iter()
                .enumerate()
                .map(|(seq, message)| message_row(conversation, seq, message))
                .collect(),
            exposure: exposure_row(conversation).map(Box::new),
        },
        ConversationChange::MessageAdded => {
            let seq = conversation.messages.len().checked_sub(1).ok_or_else(|| {
                StoreError::Failed("a conversation without messages has none to add".into())
            })?;
            let message = &conversation.messages[seq];
            Statement::AddMessage {
                conversation: conversation.id.clone(),
                epoch: epoch(conversation),
                message: Box::new(message_row(conversation, seq, message)),
            }
        }
        ConversationChange::CheckoutChanged => Statement::CheckoutChanged {
            id: conversation.id.clone(),
            previous,
            epoch: epoch(conversation),
            change: CheckoutRow {
                version: version(conversation),
                checkout_deadline: conversation.checkout_deadline,
                checkout_started_at: conversation.checkout_started_at,
                updated_at: conversation.updated_at,
            },
        },
    })
}

fn saved(outcome: Result<Outcome, surrealdb::Error>) -> Result<(), StoreError> {
    match outcome.map_err(failed)? {
        Outcome::Done => Ok(()),
        Outcome::Conflict => Err(StoreError::Conflict),
        Outcome::Fenced => Err(StoreError::Fenced),
        other => Err(StoreError::Failed(format!("a save answered {other:?}"))),
    }
}

/// Stores `change` of a conversation in a transaction of its own (the actors' saves go through
/// [`ConversationStore`], which commits them in groups).
pub async fn save_conversation(
    db: &Db,
    conversation: &Conversation,
    change: ConversationChange,
) -> Result<(), StoreError> {
    saved(super::batch::run_alone(db, save_statement(conversation, change)?).await)
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

    fn take_over(
        &self,
        key: &ConversationKey,
    ) -> BoxFuture<'static, Result<Option<Conversation>, StoreError>> {
        let call = self.submit(take_over_statement(key));
        async move { loaded(call.await) }.boxed()
    }

    fn save(
        &self,
        conversation: &Conversation,
        change: ConversationChange,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        let call = save_statement(conversation, change).map(|statement| self.submit(statement));
        async move { saved(call?.await) }.boxed()
    }
}

/// An attribution as stored: the fields it has, or nothing when it has none.
fn attribution_value(
    attribution: &Attribution,
) -> Result<Option<serde_json::Value>, serde_json::Error> {
    if attribution.is_empty() {
        return Ok(None);
    }
    let mut value = serde_json::to_value(attribution)?;
    if let serde_json::Value::Object(fields) = &mut value {
        fields.retain(|_, field| !field.is_null());
    }
    Ok(Some(value))
}

/// The statement that notes a visitor's visit; the first ad click's attribution stays.
pub fn visit(visitor_id: &VisitorId, attribution: &Attribution) -> Statement {
    Statement::Visitor {
        id: visitor_id.as_str().to_owned(),
        attribution: attribution_value(attribution).ok().flatten(),
    }
}

/// Notes a visitor's visit, in a transaction of its own.
pub async fn touch_visitor(
    db: &Db,
    visitor_id: &VisitorId,
    attribution: &Attribution,
) -> Result<(), surrealdb::Error> {
    let statement = visit(visitor_id, attribution);
    super::retry_on_conflict(|| super::in_turn(super::batch::run_alone(db, statement.clone())))
        .await?;
    Ok(())
}

/// The help funnel's conversation record of a visitor (one per visitor, keyed like the chats').
fn help_conversation(visitor_id: &str) -> String {
    ConversationKey {
        visitor_id: visitor_id.to_owned(),
        funnel: FunnelKind::Help,
    }
    .conversation_id()
}

/// Stores the help funnel's record for a visitor (one per visitor; a new issue replaces it).
pub async fn save_help_record(
    db: &Db,
    visitor_id: &VisitorId,
    headline: &str,
    attribution: &Attribution,
    record: &serde_json::Value,
) -> Result<(), surrealdb::Error> {
    let attribution = serde_json::to_value(attribution).unwrap_or_default();
    super::retry_on_conflict(|| async {
        db.query(
            "UPSERT type::record('funnel_conversation', $id) SET \
               visitor = type::record('visitor', $visitor), funnel = 'help', flow = 'help', \
               record = $record, headline = $headline, attribution = $attribution, \
               keyword = $attribution.keyword ?? NONE, campaignid = $attribution.campaignid ?? NONE, \
               version = (version ?? 0) + 1, created_at = created_at ?? time::now(), \
               updated_at = time::now() RETURN NONE;",
        )
        .bind(("id", help_conversation(visitor_id.as_str())))
        .bind(("visitor", visitor_id.as_str().to_owned()))
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
        .query("SELECT record::id(id) AS id, record FROM type::record('funnel_conversation', $id)")
        .bind(("id", help_conversation(visitor_id)))
        .await?
        .check()?;
    let rows: Vec<Row> = response.take(0)?;
    Ok(rows
        .into_iter()
        .next()
        .and_then(|row| row.record.map(|record| (row.id, record))))
}
