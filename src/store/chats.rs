//! The `chat` and `message` tables: a member's saved conversations (spec sections 2, 3, 4 and 5,
//! `users/{uid}/chats`). The member chat actor writes them: `start_chat` (a chat with its greeting
//! and the member's first message) and `append_message_as` (a message under the id the actor gave
//! it); the history API reads and deletes them. Every statement names the owner
//! (`user = type::record('user', $user)`) next to the record, so a chat id of another member finds
//! nothing here: the routes answer that as "not found", the writers get `ChatStoreError::NotFound`.
//!
//! Shape: a `chat` record (title, `updated_at` = last activity, `preview`: the history list's cut
//! of its last message, kept up to date by every write so listing is one indexed read, and
//! `revision`: how many messages were appended after it started, so a writer that keeps the
//! chat's recent messages can tell whether anyone else wrote in it) and one
//! `message` record per message, linked by `chat` and read through the `(chat, newest_first)` index
//! (newest first, always scanning forward; the whole chat is turned around to oldest first).
//!
//! Concurrency: a message is created in the same transaction that bumps its chat, and a chat is
//! deleted with its messages in one transaction, so an append racing a delete either lands before
//! it (and is deleted with the chat) or finds no chat; the embedded engines abort one of two
//! transactions touching the same chat and `store::retry_conflicts` runs it again. Running a write
//! again is safe: the ids of new records are chosen before the first attempt and nothing of an
//! aborted attempt is written. An append may name the revision it expects the chat at: the
//! member's actors on several processes (a member's devices) each write their own replies, and
//! that condition is what keeps them from both answering one message (the revision is the
//! chat's fencing token; only the store moves it on).

use chrono::{DateTime, Utc};
use helpnow_actors::mutation;
use helpnow_actors::rules::chat::preview;
use surrealdb::types::{RecordId, SurrealValue};

use super::Db;

/// A chat's title until its first message names it (the table's default too).
pub const DEFAULT_TITLE: &str = "New Conversation";
/// A stored message keeps at most this many characters; longer content is cut.
pub const MAX_CONTENT_CHARS: usize = 20_000;
/// A stored title keeps at most this many characters (the spec's titles are far shorter).
pub const MAX_TITLE_CHARS: usize = 200;
/// The history list shows at most this many chats, the most recently active.
pub const MAX_LISTED_CHATS: usize = 1_000;
/// Record keys we generate are this many random letters and digits.
const ID_LEN: usize = 20;
/// Anything much longer than our keys is not one of ours.
const MAX_ID_LEN: usize = 64;
/// A member typing while the assistant streams makes several writers of one chat record.
const WRITE_ATTEMPTS: u64 = 40;
/// What a transaction throws when the member has no such chat.
const NOT_FOUND_MARK: &str = "chat_not_found";

/// A chat id as a client sends it (the record key): ASCII letters and digits only, so it can only
/// ever name a `chat` record. Anything else is simply not found.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChatId(String);

impl ChatId {
    pub fn parse(raw: &str) -> Option<Self> {
        let shaped = !raw.is_empty()
            && raw.len() <= MAX_ID_LEN
            && raw.bytes().all(|b| b.is_ascii_alphanumeric());
        shaped.then(|| Self(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A fresh record key: 20 random letters and digits (119 bits).
fn random_key() -> String {
    crate::ids::alphanumeric(ID_LEN)
}

/// Who wrote a stored message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
}

impl Role {
    /// The stored (and API) name: `user` or `assistant`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }

    fn parse(raw: &str) -> Option<Self> {
        match raw {
            "user" => Some(Role::User),
            "assistant" => Some(Role::Assistant),
            _ => None,
        }
    }
}

/// A stored chat, without its messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chat {
    pub id: String,
    pub title: String,
    pub created_at: DateTime<Utc>,
    /// The last activity: creation or the last message.
    pub updated_at: DateTime<Utc>,
}

/// A stored message of a chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub id: String,
    pub role: Role,
    pub content: String,
    pub created_at: DateTime<Utc>,
}

/// One row of the history list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatSummary {
    pub id: String,
    pub title: String,
    /// The last message as the list previews it (`rules::chat::preview`: 60 characters at most).
    pub preview: String,
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug, thiserror::Error)]
pub enum ChatStoreError {
    /// The member has no chat of this id (none at all, or another member's).
    #[error("conversation not found")]
    NotFound,
    /// A stored message has a role other than `user` or `assistant`.
    #[error("a stored message has an unknown role: {0}")]
    Broken(String),
    #[error("database: {0}")]
    Database(#[from] surrealdb::Error),
}

/// `NotFound` where a transaction threw it, otherwise the database error.
fn from_transaction(error: surrealdb::Error) -> ChatStoreError {
    if error.to_string().contains(NOT_FOUND_MARK) {
        ChatStoreError::NotFound
    } else {
        ChatStoreError::Database(error)
    }
}

#[derive(Debug, Clone, SurrealValue)]
struct ChatRow {
    id: String,
    title: String,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

const CHAT_FIELDS: &str = "record::id(id) AS id, title, created_at, updated_at";

impl From<ChatRow> for Chat {
    fn from(row: ChatRow) -> Self {
        Self {
            id: row.id,
            title: row.title,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

#[derive(Debug, Clone, SurrealValue)]
struct MessageRow {
    id: String,
    role: String,
    content: String,
    created_at: DateTime<Utc>,
}

/// The fields of a [`MessageRow`], as every read of messages selects them (a macro, so the
/// queries can be constants).
macro_rules! message_fields {
    () => {
        "record::id(id) AS id, role, content, created_at"
    };
}

impl TryFrom<MessageRow> for Message {
    type Error = ChatStoreError;

    fn try_from(row: MessageRow) -> Result<Self, Self::Error> {
        let role = Role::parse(&row.role).ok_or(ChatStoreError::Broken(row.role))?;
        Ok(Self {
            id: row.id,
            role,
            content: row.content,
            created_at: row.created_at,
        })
    }
}

#[derive(Debug, Clone, SurrealValue)]
struct SummaryRow {
    id: String,
    title: String,
    preview: Option<String>,
    updated_at: DateTime<Utc>,
}

/// The first `max` characters of `text`.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => text[..end].to_owned(),
        None => text.to_owned(),
    }
}

/// A title as stored: trimmed, at most `MAX_TITLE_CHARS`, `DEFAULT_TITLE` when blank.
fn stored_title(title: &str) -> String {
    let title = title.trim();
    if title.is_empty() {
        DEFAULT_TITLE.to_owned()
    } else {
        cut(title, MAX_TITLE_CHARS)
    }
}

/// The member's chat of this id, without its messages.
async fn find_chat(
    db: &Db,
    user_id: &str,
    chat_id: &str,
) -> Result<Option<Chat>, surrealdb::Error> {
    let mut response = db
        .query(format!(
            "SELECT {CHAT_FIELDS} FROM type::record('chat', $id) \
             WHERE user = type::record('user', $user)"
        ))
        .bind(("id", chat_id.to_owned()))
        .bind(("user", user_id.to_owned()))
        .await?
        .check()?;
    let rows: Vec<ChatRow> = response.take(0)?;
    Ok(rows.into_iter().next().map(Chat::from))
}

/// Creates a chat as the member chat starts one: the assistant's `greeting`, then the member's
/// first message under `message_id`, all in one transaction (so a chat never exists without the
/// message that named it). The message is a millisecond younger than the greeting, so the two
/// keep their order. Returns the chat.
pub async fn start_chat(
    db: &Db,
    user_id: &str,
    title: &str,
    greeting: &str,
    message_id: &MessageId,
    content: &str,
) -> Result<Chat, ChatStoreError> {
    let chat_id = random_key();
    let greeting_id = random_key();
    let greeting = cut(greeting, MAX_CONTENT_CHARS);
    let content = cut(content, MAX_CONTENT_CHARS);
    let title = stored_title(title);
    super::retry_conflicts(WRITE_ATTEMPTS, || async {
        db.query(
            "BEGIN TRANSACTION;
             LET $now = time::now();
             LET $then = $now + 1ms;
             LET $chat = type::record('chat', $id);
             CREATE $chat CONTENT {
                 user: type::record('user', $user), title: $title, preview: $preview,
                 created_at: $now, updated_at: $then
             };
             CREATE type::record('message', $greeting_id) CONTENT {
                 chat: $chat, role: 'assistant', content: $greeting, created_at: $now
             };
             CREATE type::record('message', $message_id) CONTENT {
                 chat: $chat, role: 'user', content: $content, created_at: $then
             };
             COMMIT TRANSACTION;",
        )
        .bind(("id", chat_id.clone()))
        .bind(("user", user_id.to_owned()))
        .bind(("title", title.clone()))
        .bind(("preview", preview(&content)))
        .bind(("greeting_id", greeting_id.clone()))
        .bind(("greeting", greeting.clone()))
        .bind(("message_id", message_id.0.clone()))
        .bind(("content", content.clone()))
        .await
        .and_then(super::check_transaction)
    })
    .await?;
    find_chat(db, user_id, &chat_id).await?.ok_or_else(|| {
        ChatStoreError::Database(surrealdb::Error::internal(
            "a created chat was not found".to_owned(),
        ))
    })
}

/// A message id chosen by the writer (the member actor names a reply before it is stored, so
/// its streamed pieces and the stored message share the id): shaped like our keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageId(String);

impl MessageId {
    pub fn parse(raw: &str) -> Option<Self> {
        ChatId::parse(raw).map(|id| Self(id.0))
    }
}

/// Appends the message `$s.message` (an [`AppendVars`] bound as `$s`) to the member's chat and
/// makes it the chat's last activity (`updated_at` becomes the message's `created_at`; the
/// history preview its content) and its next revision. One block whose value is the chat's
/// revision before the write; `-1` ([`ALREADY_THERE`]) when an append of this id already landed
/// in this chat (a write retried after a time-out neither fails nor doubles; checked first, so a
/// retry is answered so even though its own first try moved the revision on); `-2` ([`MOVED`])
/// when `$s.expected` is set and the chat is at another revision (someone else wrote in it since
/// the writer looked: the write that would follow a message it has not seen is refused, so two
/// writers of one chat cannot both answer the same message); `NONE` when the member has no such
/// chat or the id is another chat's message. Only an answered revision means a write. Neither
/// `THROW` nor `RETURN`, so a batch can carry it (`store::batch`). Nothing is read back: the
/// writer knows what it wrote (each member reply appends twice), and the revision tells it
/// whether anyone else wrote in between.
pub(crate) const APPEND_AS: &str = "{
    LET $s_chat = type::record('chat', $s.chat);
    LET $s_found = $s_chat.*;
    IF $s_found.user != type::record('user', $s.user) { NONE } ELSE {
        LET $s_existing = type::record('message', $s.message).chat;
        IF $s_existing = NONE {
            LET $s_revision = $s_found.revision ?? 0;
            IF $s.expected != NONE AND $s.expected != $s_revision { -2 } ELSE {
                LET $s_now = time::now();
                UPDATE $s_chat SET updated_at = $s_now, preview = $s.preview,
                    revision = $s_revision + 1 RETURN NONE;
                CREATE type::record('message', $s.message) CONTENT {
                    chat: $s_chat, role: $s.role, content: $s.content, created_at: $s_now
                } RETURN NONE;
                $s_revision
            }
        } ELSE IF $s_existing = $s_chat { -1 } ELSE { NONE }
    }
};";

/// The appends of one batch that are alone on their chat and id in it (`store::batch`), as
/// `$appends` rows ([`AppendVars::row`]), in one go: what [`APPEND_AS`] does for each, with one read of all
/// the chats and messages, one `FOR` of chat updates and one `INSERT` of all the messages,
/// instead of a block of five statements for each (an append 460 -> 285 us of CPU on SurrealKV in
/// transactions of 32, 467 -> 365 us in transactions of 8; docs/benchmarks.md). The rows' chats
/// must differ (a second append to a chat would read the revision before the first), and so must
/// their message ids (both rows would find the id free). Each row takes its own `time::now()`, as
/// its own block would. A row whose chat is not at its `expected` revision is left out of the
/// writes and answered `-2` on its own; the other rows are written. The last of its
/// [`APPEND_ALL_STATEMENTS`] statements answers each row, in order, as [`APPEND_AS`] would.
pub(crate) const APPEND_ALL: &str = "LET $appends_read = SELECT *, chat.user = user AS owned,
        chat.revision ?? 0 AS revision, message.chat AS existing, time::now() AS at FROM $appends;
    LET $appends_new = SELECT * FROM $appends_read WHERE owned AND existing = NONE
        AND (expected = NONE OR expected = revision);
    FOR $row IN $appends_new {
        UPDATE $row.chat SET updated_at = $row.at, preview = $row.preview,
            revision = $row.revision + 1 RETURN NONE;
    };
    INSERT INTO message (SELECT message AS id, chat, role, content, at AS created_at
        FROM $appends_new) RETURN NONE;
    SELECT VALUE IF !owned { NONE } ELSE IF existing = NONE {
            IF expected = NONE OR expected = revision { revision } ELSE { -2 }
        } ELSE IF existing = chat { -1 } ELSE { NONE } FROM $appends_read;";

/// How many statements (results) [`APPEND_ALL`] has.
pub(crate) const APPEND_ALL_STATEMENTS: usize = 5;

/// The answer of an append ([`APPEND_AS`], [`APPEND_ALL`]) whose message of this id is already
/// in the chat: nothing was written.
pub const ALREADY_THERE: i64 = -1;
/// The answer of an append whose chat was not at the revision it expected: nothing was written.
pub const MOVED: i64 = -2;

/// What an append found, from its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Appended {
    /// Stored; the chat was at this revision before it.
    After(u64),
    /// A message of this id was already in the chat ([`ALREADY_THERE`]).
    AlreadyThere,
    /// The chat was not at the expected revision ([`MOVED`]).
    Moved,
}

impl Appended {
    /// The append's answer as this names it; `None` for `NONE` (no such chat of the member).
    pub fn from_answer(answer: Option<i64>) -> Option<Self> {
        answer.map(|answer| match u64::try_from(answer) {
            Ok(revision) => Appended::After(revision),
            Err(_) if answer == MOVED => Appended::Moved,
            Err(_) => Appended::AlreadyThere,
        })
    }
}

/// One row of [`APPEND_ALL`].
#[derive(Debug, Clone, SurrealValue)]
struct AppendRow {
    chat: RecordId,
    user: RecordId,
    message: RecordId,
    role: String,
    content: String,
    preview: String,
    expected: Option<i64>,
}

/// The variables of [`APPEND_AS`].
#[derive(Debug, Clone, SurrealValue)]
pub struct AppendVars {
    user: String,
    chat: String,
    message: String,
    role: String,
    content: String,
    preview: String,
    /// The revision the chat must be at for the message to be written; `None`: any.
    expected: Option<i64>,
}

impl AppendVars {
    /// The chat's id.
    pub fn chat(&self) -> &str {
        &self.chat
    }

    /// The message's id.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// This append as a row of [`APPEND_ALL`].
    pub(crate) fn row(self) -> surrealdb::types::Value {
        AppendRow {
            chat: RecordId::new("chat", self.chat),
            user: RecordId::new("user", self.user),
            message: RecordId::new("message", self.message),
            role: self.role,
            content: self.content,
            preview: self.preview,
            expected: self.expected,
        }
        .into_value()
    }

    /// A message for the member's chat; content over `MAX_CONTENT_CHARS` characters is cut.
    /// Written only while the chat is at the revision `expected` (with `None`, at any).
    pub fn new(
        user_id: &str,
        chat_id: &ChatId,
        message_id: &MessageId,
        role: Role,
        content: &str,
        expected: Option<u64>,
    ) -> Self {
        let content = cut(content, MAX_CONTENT_CHARS);
        let expected = expected.map(|revision| i64::try_from(revision).unwrap_or(i64::MAX));
        Self {
            user: user_id.to_owned(),
            chat: chat_id.as_str().to_owned(),
            message: message_id.0.clone(),
            role: role.as_str().to_owned(),
            preview: preview(&content),
            content,
            // The fault run's mutation: the revision is not checked, so two writers of one chat
            // both store their replies (helpnow_actors::mutation).
            expected: expected.filter(|_| !mutation::on("no_revision_check")),
        }
    }
}

/// Appends a message under `message_id` to the member's chat ([`APPEND_AS`]) in a transaction of
/// its own, if the chat is at the revision `expected` (with `None`, at any). `NotFound` when the
/// member has no such chat (nothing is written then).
pub async fn append_message_as(
    db: &Db,
    user_id: &str,
    chat_id: &ChatId,
    message_id: &MessageId,
    role: Role,
    content: &str,
    expected: Option<u64>,
) -> Result<Appended, ChatStoreError> {
    let vars = AppendVars::new(user_id, chat_id, message_id, role, content, expected);
    let written: Option<i64> = super::retry_conflicts(WRITE_ATTEMPTS, || async {
        db.query(APPEND_AS)
            .bind(("s", vars.clone()))
            .await
            .and_then(|response| response.check())?
            .take(0)
    })
    .await?;
    Appended::from_answer(written).ok_or(ChatStoreError::NotFound)
}

/// All the messages of the member's chat (`$id` of `$user`), newest first.
const CHAT_MESSAGES: &str = concat!(
    "SELECT ",
    message_fields!(),
    " FROM message WHERE chat = type::record('chat', $id) \
     AND chat.user = type::record('user', $user) ORDER BY newest_first ASC"
);

/// The member's chat with its messages, oldest first; `None` when the member has no such chat.
/// Read newest first through the `(chat, newest_first)` index, the one every message keeps
/// (migration 0009 removed the `(chat, created_at)` one), and turned around.
pub async fn chat_with_messages(
    db: &Db,
    user_id: &str,
    chat_id: &ChatId,
) -> Result<Option<(Chat, Vec<Message>)>, ChatStoreError> {
    let mut response = db
        .query(format!(
            "SELECT {CHAT_FIELDS} FROM type::record('chat', $id) \
             WHERE user = type::record('user', $user); {CHAT_MESSAGES}"
        ))
        .bind(("id", chat_id.as_str().to_owned()))
        .bind(("user", user_id.to_owned()))
        .await?
        .check()?;
    let chats: Vec<ChatRow> = response.take(0)?;
    let Some(chat) = chats.into_iter().next() else {
        return Ok(None);
    };
    let rows: Vec<MessageRow> = response.take(1)?;
    let mut messages = rows
        .into_iter()
        .map(Message::try_from)
        .collect::<Result<Vec<_>, _>>()?;
    messages.reverse();
    Ok(Some((chat.into(), messages)))
}

/// The read of a chat's last messages in [`RECENT_CHAT`] (a macro, so the constant can hold it
/// and the index test can explain it).
macro_rules! recent_messages {
    () => {
        concat!(
            "SELECT ",
            message_fields!(),
            " FROM message WHERE chat = type::record('chat', $s.chat) \
             ORDER BY newest_first ASC LIMIT $s.last"
        )
    };
}

/// The member's chat (`$s.chat` of `$s.user`, a [`RecentVars`] bound as `$s`) with its last
/// `$s.last` messages, newest first, or `NONE` when the member has no such chat: one block, so a
/// batch can carry it (`store::batch`). Read forward through the `(chat, newest_first)` index, so
/// a long chat costs no more than a short one. Not `ORDER BY created_at DESC`: SurrealKV walks a
/// reverse scan back from the end of its in-memory table one entry at a time, so that read grew
/// with everything written since the last flush (migration 0006).
pub(crate) const RECENT_CHAT: &str = concat!(
    "{
    LET $s_chat = type::record('chat', $s.chat);
    LET $s_found = $s_chat.*;
    IF $s_found.user = type::record('user', $s.user) {
        {
            chat: {
                id: record::id($s_found.id), title: $s_found.title,
                created_at: $s_found.created_at, updated_at: $s_found.updated_at
            },
            revision: $s_found.revision ?? 0,
            messages: (",
    recent_messages!(),
    ")
        }
    } ELSE { NONE }
};"
);

/// The variables of [`RECENT_CHAT`].
#[derive(Debug, Clone, SurrealValue)]
pub struct RecentVars {
    user: String,
    chat: String,
    last: i64,
}

impl RecentVars {
    /// The chat's id.
    pub fn chat(&self) -> &str {
        &self.chat
    }

    pub fn new(user_id: &str, chat_id: &ChatId, last: usize) -> Self {
        Self {
            user: user_id.to_owned(),
            chat: chat_id.as_str().to_owned(),
            last: i64::try_from(last).unwrap_or(i64::MAX),
        }
    }
}

/// What [`RECENT_CHAT`] finds.
#[derive(Debug, Clone, SurrealValue)]
pub struct RecentRow {
    chat: ChatRow,
    revision: i64,
    messages: Vec<MessageRow>,
}

impl RecentRow {
    /// The chat's revision when read (each message stored in it adds one).
    pub fn revision(&self) -> u64 {
        u64::try_from(self.revision).unwrap_or(0)
    }

    /// The chat and its messages, oldest first.
    pub fn into_chat(self) -> Result<(Chat, Vec<Message>), ChatStoreError> {
        let mut messages = self
            .messages
            .into_iter()
            .map(Message::try_from)
            .collect::<Result<Vec<_>, _>>()?;
        messages.reverse();
        Ok((self.chat.into(), messages))
    }
}

/// The member's chat with its last `last` messages, oldest first (what the AI sees of it);
/// `None` when the member has no such chat ([`RECENT_CHAT`]).
pub async fn chat_with_recent_messages(
    db: &Db,
    user_id: &str,
    chat_id: &ChatId,
    last: usize,
) -> Result<Option<(Chat, Vec<Message>)>, ChatStoreError> {
    let found: Option<RecentRow> = db
        .query(RECENT_CHAT)
        .bind(("s", RecentVars::new(user_id, chat_id, last)))
        .await?
        .check()?
        .take(0)?;
    found.map(RecentRow::into_chat).transpose()
}

/// The member's (`$user`) chats, the most recently active first, at most `$limit`: forward
/// through `(user, newest_first)` (see `recent_messages`).
const LIST_CHATS: &str = "SELECT record::id(id) AS id, title, preview, updated_at FROM chat \
     WHERE user = type::record('user', $user) ORDER BY newest_first ASC LIMIT $limit";

/// The member's chats for the history list, the most recently active first; at most `limit`
/// (and never more than `MAX_LISTED_CHATS`).
pub async fn list_chats(
    db: &Db,
    user_id: &str,
    limit: usize,
) -> Result<Vec<ChatSummary>, ChatStoreError> {
    let limit = limit.min(MAX_LISTED_CHATS);
    let mut response = db
        .query(LIST_CHATS)
        .bind(("user", user_id.to_owned()))
        .bind(("limit", limit as i64))
        .await?
        .check()?;
    let rows: Vec<SummaryRow> = response.take(0)?;
    Ok(rows
        .into_iter()
        .map(|row| ChatSummary {
            id: row.id,
            title: row.title,
            preview: row.preview.unwrap_or_default(),
            updated_at: row.updated_at,
        })
        .collect())
}

/// Deletes the member's chat and all its messages in one transaction (the messages are found
/// through the `(chat, newest_first)` index, never by a scan of the table); `false` when the
/// member has no such chat.
pub async fn delete_chat(db: &Db, user_id: &str, chat_id: &ChatId) -> Result<bool, ChatStoreError> {
    let result = super::retry_conflicts(WRITE_ATTEMPTS, || async {
        db.query(
            "BEGIN TRANSACTION;
             LET $chat = type::record('chat', $id);
             LET $owned = (SELECT VALUE id FROM $chat WHERE user = type::record('user', $user));
             IF array::len($owned) = 0 { THROW 'chat_not_found'; };
             DELETE (SELECT VALUE id FROM message WHERE chat = $chat);
             DELETE $chat WHERE user = type::record('user', $user);
             COMMIT TRANSACTION;",
        )
        .bind(("id", chat_id.as_str().to_owned()))
        .bind(("user", user_id.to_owned()))
        .await
        .and_then(super::check_transaction)
    })
    .await;
    match result.map_err(from_transaction) {
        Ok(_) => Ok(true),
        Err(ChatStoreError::NotFound) => Ok(false),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_letters_and_digits_only() {
        assert!(ChatId::parse("k3j2h4g5f6d7s8a9q0w1").is_some());
        for raw in ["", "chat:abc", "a b", "x'y", "⟨abc⟩", &"a".repeat(65)] {
            assert_eq!(ChatId::parse(raw), None, "{raw:?}");
        }
        let key = random_key();
        assert_eq!(key.len(), ID_LEN);
        assert!(ChatId::parse(&key).is_some());
    }

    #[test]
    fn long_content_and_titles_are_cut_in_characters() {
        assert_eq!(
            cut(&"é".repeat(MAX_CONTENT_CHARS + 5), MAX_CONTENT_CHARS)
                .chars()
                .count(),
            MAX_CONTENT_CHARS
        );
        assert_eq!(cut("short", MAX_CONTENT_CHARS), "short");
        assert_eq!(stored_title("   "), DEFAULT_TITLE);
        assert_eq!(stored_title(" Printer "), "Printer");
        assert_eq!(
            stored_title(&"t".repeat(500)).chars().count(),
            MAX_TITLE_CHARS
        );
    }

    /// The reads behind every member reply and every member join go forward through the
    /// newest-first indexes: a backward index scan on SurrealKV costs as much as everything
    /// written since its last flush.
    #[tokio::test]
    async fn newest_first_reads_go_forward_through_their_indexes() {
        let db = crate::store::migrate::migrated_memory_db().await;
        for (query, index) in [
            (
                recent_messages!()
                    .replace("$s.chat", "$id")
                    .replace("$s.last", "$last"),
                "message_chat_newest",
            ),
            (LIST_CHATS.to_owned(), "chat_user_newest"),
            // The whole chat (the history page), and its messages as a delete finds them.
            (CHAT_MESSAGES.to_owned(), "message_chat_newest"),
            (
                "SELECT VALUE id FROM message WHERE chat = type::record('chat', $id)".to_owned(),
                "message_chat_newest",
            ),
        ] {
            let plan = crate::store::migrate::plan_of(&db, &query).await;
            assert!(plan.contains(&format!("\"index\":\"{index}\"")), "{plan}");
            assert!(plan.contains("\"direction\":\"Forward\""), "{plan}");
        }
    }

    #[test]
    fn roles_round_trip() {
        for role in [Role::User, Role::Assistant] {
            assert_eq!(Role::parse(role.as_str()), Some(role));
        }
        assert_eq!(Role::parse("system"), None);
    }
}
