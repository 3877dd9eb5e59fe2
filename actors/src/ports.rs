//! The traits the server implements for the actors, by owner: what both kinds of actor use here
//! (AI, clock, analytics, telemetry, the store's errors and the actors' clients), the funnel's in
//! [`crate::funnel::ports`] (its store, checkout and claims) and the member's in
//! [`crate::member::ports`] (its store and peers). Every call returns a `'static` future, so an actor can spawn it without borrowing.

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
    /// An actor of `kind` found its record taken over by another holder and handed it over.
    fn fenced(&self, _kind: &'static str) {}
}

/// Reports nothing (tests, tools).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTelemetry;

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
    /// The record is held by someone else now: another actor took the funnel conversation over
    /// since this one loaded it (the store moved its epoch on). Nothing was written, and the
    /// actor must stop acting for the record: it is no longer its holder.
    #[error("the record was taken over by another holder")]
    Fenced,
    #[error("the store failed: {0}")]
    Failed(String),
}

/// The analytics events table. Recording never fails the conversation.
pub trait Analytics: Send + Sync + 'static {
    /// `subject`: the visitor id (funnels) or the user id (members), as the implementation says.
    fn record(&self, event: &'static str, subject: &str, properties: serde_json::Value);
}

/// One connected client of an actor, funnel or member (a Socket.IO socket in the server).
pub trait ActorClient: Send + Sync + 'static {
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
