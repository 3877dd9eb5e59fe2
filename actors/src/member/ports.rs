//! The member actor's ports: where members' chats and tasks live (and their access), and the
//! member's actors on other processes.

use futures_util::future::BoxFuture;

use crate::ports::{AiMessage, Role, StoreError};

/// The member's actors on the deployment's other processes (a member's devices may reach
/// different processes): each passes on to the others what it emits to all of the member's
/// sockets, and emits theirs to its own. One process alone has no peers (the defaults).
pub trait MemberPeers: Send + Sync + 'static {
    /// The actor of `user_id` started here: its peers' events are wanted.
    fn joined(&self, _user_id: &str) {}
    /// The actor of `user_id` stopped here.
    fn left(&self, _user_id: &str) {}
    /// An event for every socket of the member (`volatile`: a streamed piece, not kept for a
    /// socket that recovers its connection), in the order they are passed.
    fn publish(
        &self,
        _user_id: &str,
        _event: &'static str,
        _data: &serde_json::Value,
        _volatile: bool,
    ) {
    }
    /// Whether the process named `process` (a peer event's `from`) is still alive.
    fn alive(&self, _process: &str) -> BoxFuture<'static, bool> {
        Box::pin(futures_util::future::ready(true))
    }
}

/// A process alone.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoPeers;

impl MemberPeers for NoPeers {}

/// A member's saved chat as the member actor needs it for the next reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredChat {
    pub title: String,
    /// The last messages, oldest first (user and assistant only).
    pub messages: Vec<AiMessage>,
    /// The chat's revision when read: a new chat is at 0, and each message stored in it adds one.
    pub revision: u64,
}

/// What became of a message appended to a member's chat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Appended {
    /// Stored; the chat was at `revision` before it, and is at `revision + 1` now.
    After { revision: u64 },
    /// A message of this id was already in the chat (a retried write that had landed).
    AlreadyThere,
    /// The chat was not at the revision the append expected (someone else wrote in it since):
    /// nothing was written.
    Moved,
    /// The member has no such chat: nothing was written.
    NoSuchChat,
}

/// A member's task as the request for AI help on it names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskBrief {
    pub name: String,
    pub items: Vec<TaskItemBrief>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskItemBrief {
    pub text: String,
    pub completed: bool,
}

/// Where members' chats live, and what decides their access (SurrealDB in the server). Every
/// call names the member: another member's chat or task is simply not found.
pub trait MemberStore: Send + Sync + 'static {
    /// How long the member's access lasts, as far as the store knows now: `None` without an
    /// active trial or subscription; the trial's time left when only the trial grants it;
    /// `Duration::MAX` when a subscription grants it (until a payment event changes it).
    fn access_left(
        &self,
        user_id: &str,
    ) -> BoxFuture<'static, Result<Option<std::time::Duration>, StoreError>>;

    /// A new chat titled `title`: the assistant's `greeting`, then the member's first message
    /// (`content`, under `message_id`), written together, at revision 0. Its id.
    fn create_chat(
        &self,
        user_id: &str,
        title: &str,
        greeting: &str,
        message_id: &str,
        content: &str,
    ) -> BoxFuture<'static, Result<String, StoreError>>;

    /// Appends a message under the id the actor chose (see [`Appended`]), only while the chat is
    /// at the revision `expected` (`None`: at any). A message of this id already there is
    /// answered so before the revision is looked at, so a retried write that had landed is not
    /// refused for the revision its own first try moved on.
    fn append_message(
        &self,
        user_id: &str,
        chat_id: &str,
        message_id: &str,
        role: Role,
        content: &str,
        expected: Option<u64>,
    ) -> BoxFuture<'static, Result<Appended, StoreError>>;

    /// The chat's title and its last `last` messages; `None` when the member has no such chat.
    fn chat(
        &self,
        user_id: &str,
        chat_id: &str,
        last: usize,
    ) -> BoxFuture<'static, Result<Option<StoredChat>, StoreError>>;

    /// The member's task; `None` when the member has no such task.
    fn task(
        &self,
        user_id: &str,
        task_id: &str,
    ) -> BoxFuture<'static, Result<Option<TaskBrief>, StoreError>>;
}
