//! The traits the server implements for the actors: AI, clock and the funnel's store, checkout and
//! analytics. Every call returns a `'static` future, so an actor can spawn it without borrowing.

use std::time::Duration;

use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use serde::{Deserialize, Serialize};

/// Who wrote a chat-completion message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
}

/// One message of a chat-completion request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AiMessage {
    pub role: Role,
    pub content: String,
}

impl AiMessage {
    pub fn system(content: impl Into<String>) -> Self {
        Self {
            role: Role::System,
            content: content.into(),
        }
    }

    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: content.into(),
        }
    }

    pub fn assistant(content: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// What an AI call is for. A provider may pick its behaviour by it (the offline provider answers
/// from the help library only where that makes sense, and declines the rest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AiPurpose {
    /// A chat funnel's reply at stage 0 (empathy) or 1 (what was tried).
    FunnelFollowUp,
    /// The help funnel's 50-60 character summary of the visitor's issue.
    IssueSummary,
    /// The help funnel's 2-3 sentence intro above the paywall.
    FunnelIntro,
    /// The members page's chat.
    MemberChat,
    /// AI help on a task.
    TaskHelp,
    /// The step-by-step solution from a funnel's data after checkout.
    FunnelSolution,
}

/// One chat-completion call.
#[derive(Debug, Clone, PartialEq)]
pub struct AiRequest {
    pub purpose: AiPurpose,
    pub messages: Vec<AiMessage>,
    /// The whole call, connection included, must finish within this.
    pub timeout: Duration,
}

/// Why an AI call gave no usable text. Callers fall back (scripts, default texts); none of these
/// texts reaches a visitor.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AiError {
    #[error("the AI provider is offline (ai.provider = \"offline\")")]
    Offline,
    #[error("the AI call timed out")]
    Timeout,
    #[error("the AI provider is rate limiting us; retry after {retry_after:?}")]
    RateLimited { retry_after: Duration },
    #[error("the AI provider refused the API key (401)")]
    Unauthorized,
    #[error("unexpected response format from the AI provider: {0}")]
    UnexpectedResponse(String),
    #[error("the AI call failed: {0}")]
    Failed(String),
}

/// A chat-completion provider (`src/ai/` in the server: OpenAI-compatible or offline).
pub trait Ai: Send + Sync + 'static {
    /// The first choice's message content.
    fn complete(&self, request: AiRequest) -> BoxFuture<'static, Result<String, AiError>>;

    /// The reply as it is generated: its pieces in order (joined, they are the whole reply).
    /// Dropping the stream stops the call. Providers that cannot stream give one piece.
    fn stream(&self, request: AiRequest) -> BoxStream<'static, Result<String, AiError>> {
        futures_util::stream::once(self.complete(request)).boxed()
    }
}

/// What the actors report for the server's metrics (`/metrics`). Every method does nothing
/// unless the implementation says otherwise; reporting never fails an actor.
pub trait Telemetry: Send + Sync + 'static {
    /// An actor of `kind` (`"funnel"`, `"member"`) started.
    fn actor_started(&self, _kind: &'static str) {}
    /// An actor of `kind` stopped.
    fn actor_stopped(&self, _kind: &'static str) {}
    /// A chat message (a visitor's, a member's or the assistant's) was stored by an actor of `kind`.
    fn message_stored(&self, _kind: &'static str) {}
    /// A timer (`"typing"`, `"auto_checkout"`) ran `late` after it was due.
    fn timer_fired(&self, _timer: &'static str, _late: Duration) {}
    /// A streamed AI piece waited `waited` between being read from the provider and being sent
    /// to the member's sockets.
    fn piece_forwarded(&self, _waited: Duration) {}
}

/// Reports nothing (tests, tools).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTelemetry;

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

/// Which process holds a funnel conversation's live actor, when several serve one deployment:
/// one at a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holder {
    /// This process.
    Here,
    /// Another process, which lives: the conversation is served there.
    Elsewhere(String),
}

/// The claims on funnel conversations shared by the processes of a deployment. A funnel actor
/// claims its conversation before it loads it, claims it again every `renew_every` while it
/// lives, and releases it when it stops. A claim names the process and the actor (`actor`, a
/// random number of its own), so an actor that stops releases only its own claim, never that of
/// the actor that took over on the same process. One process alone holds every conversation
/// (the defaults).
pub trait FunnelClaims: Send + Sync + 'static {
    /// Claims (or renews the claim on) the conversation of this id for this process's `actor`.
    fn claim(&self, _conversation_id: &str, _actor: u64) -> BoxFuture<'static, Holder> {
        Box::pin(futures_util::future::ready(Holder::Here))
    }
    /// Gives up `actor`'s claim, if it still holds it, without waiting.
    fn release(&self, _conversation_id: &str, _actor: u64) {}
    /// How often a held claim is renewed (none: it never lapses).
    fn renew_every(&self) -> Option<std::time::Duration> {
        None
    }
}

/// A process alone.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoClaims;

impl FunnelClaims for NoClaims {}

impl Telemetry for NoTelemetry {}

/// Wall-clock time. Stored deadlines are wall-clock instants; tests use a clock that follows
/// tokio's paused time.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> DateTime<Utc>;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A store failure as the actors see it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// Another process saved the record first (its version moved on).
    #[error("the record was changed by someone else")]
    Conflict,
    #[error("the store failed: {0}")]
    Failed(String),
}

/// Where funnel conversations live (SurrealDB in the server).
pub trait FunnelStore: Send + Sync + 'static {
    fn load(
        &self,
        key: &crate::funnel::ConversationKey,
    ) -> BoxFuture<'static, Result<Option<crate::funnel::Conversation>, StoreError>>;

    /// Stores what `change` says changed in `conversation`, or answers `StoreError::Conflict`
    /// when the stored conversation is not the one the change was made from (another process
    /// changed it first); then nothing is written.
    fn save(
        &self,
        conversation: &crate::funnel::Conversation,
        change: ConversationChange,
    ) -> BoxFuture<'static, Result<(), StoreError>>;
}

/// What a save of a funnel conversation writes. The actor knows what it changed, so the store
/// writes only that: a new message is one small record, not the whole conversation again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConversationChange {
    /// The conversation starts with its greeting: at version 1 a new one (a conflict if the
    /// visitor already has one in this funnel), at a later version one that starts over in the
    /// record of an expired one (a conflict unless that is stored at the version before), its
    /// earlier messages gone.
    Started,
    /// Its last message is new: a visitor's message, or a reply with what a reply changes (the
    /// stage, the end, the auto-checkout's deadline). A conflict if a message is already stored
    /// in that place.
    MessageAdded,
    /// Its auto-checkout's deadline moved or a checkout opened (`checkout_deadline`,
    /// `checkout_started_at`), at a new version: a conflict unless the stored conversation is at
    /// the version before.
    CheckoutChanged,
}

/// A checkout the funnel opens for its visitor.
#[derive(Debug, Clone, PartialEq)]
pub struct FunnelCheckoutRequest {
    pub conversation_id: String,
    pub visitor_id: String,
    pub funnel: crate::rules::FunnelKind,
    pub headline: String,
    pub attribution: crate::funnel::Attribution,
    /// The spec's funnel record of the conversation.
    pub record: serde_json::Value,
    /// The address of the client the checkout is for (per-address limits on checkouts).
    pub client_address: Option<std::net::IpAddr>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the checkout could not be opened: {0}")]
pub struct CheckoutError(pub String);

/// Opens checkouts (the server's billing).
pub trait FunnelCheckout: Send + Sync + 'static {
    /// The same-site URL that sends the visitor's browser to the checkout.
    fn start(
        &self,
        request: FunnelCheckoutRequest,
    ) -> BoxFuture<'static, Result<String, CheckoutError>>;
}

/// The analytics events table. Recording never fails the conversation.
pub trait Analytics: Send + Sync + 'static {
    /// `subject`: the visitor id (funnels) or the user id (members), as the implementation says.
    fn record(&self, event: &'static str, subject: &str, properties: serde_json::Value);
}

/// One connected client of an actor (a Socket.IO socket in the server).
pub trait FunnelClient: Send + Sync + 'static {
    /// Unique among the actor's clients; a client that comes back keeps it.
    fn id(&self) -> &str;
    /// Where the client connects from, when known.
    fn address(&self) -> Option<std::net::IpAddr>;
    fn emit(&self, event: &'static str, data: serde_json::Value);
    /// An event a slow client may miss (a streamed piece whose whole follows later).
    fn emit_volatile(&self, event: &'static str, data: serde_json::Value) {
        self.emit(event, data);
    }
    /// Closes the client's connection (its member signed out).
    fn disconnect(&self) {}
    /// Closes the client's connection so that it connects again by itself (its conversation is
    /// served by another process now).
    fn reconnect(&self) {}
}

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
    /// Whether the member has an active trial or subscription now.
    fn has_access(&self, user_id: &str) -> BoxFuture<'static, Result<bool, StoreError>>;

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

    /// Appends a message under the id the actor chose (see [`Appended`]).
    fn append_message(
        &self,
        user_id: &str,
        chat_id: &str,
        message_id: &str,
        role: Role,
        content: &str,
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
