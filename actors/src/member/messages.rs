//! What the member actor is sent (a client's join and events, a sign-out, a peer's event) and
//! what it answers with.

use std::sync::Arc;

use actix::prelude::*;
use serde_json::{Value, json};

use super::FunnelBrief;
use crate::ports::ActorClient;
use crate::reply::Reply;

/// Why a member's request was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    Empty,
    TooLong,
    Busy,
    /// The member already has `MAX_REPLIES_AT_ONCE` replies on their way.
    TooManyReplies,
    ChatNotFound,
    TaskNotFound,
    UpgradeRequired,
    Unavailable,
}

impl Refusal {
    pub fn code(self) -> &'static str {
        match self {
            Refusal::Empty => "empty",
            Refusal::TooLong => "too_long",
            Refusal::Busy | Refusal::TooManyReplies => "busy",
            Refusal::ChatNotFound | Refusal::TaskNotFound => "not_found",
            Refusal::UpgradeRequired => "upgrade_required",
            Refusal::Unavailable => "unavailable",
        }
    }

    pub fn text(self) -> &'static str {
        match self {
            Refusal::Empty => "Please type your question first.",
            Refusal::TooLong => "Please keep your message to 4,000 characters or fewer.",
            Refusal::Busy | Refusal::TooManyReplies => {
                "Please wait for the reply before sending another message."
            }
            Refusal::ChatNotFound => "Conversation not found.",
            Refusal::TaskNotFound => "Task not found.",
            Refusal::UpgradeRequired => "Start your trial to chat with your assistant.",
            Refusal::Unavailable => {
                "Your message could not be saved just now. Please try again in a moment."
            }
        }
    }

    fn to_json(self) -> Value {
        json!({ "ok": false, "code": self.code(), "error": self.text() })
    }
}

/// The acknowledgement of `chat:send`: only once the message is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendAck {
    Stored {
        chat_id: String,
        message_id: String,
        title: String,
    },
    Refused(Refusal),
}

impl SendAck {
    pub fn to_json(&self) -> Value {
        match self {
            SendAck::Stored {
                chat_id,
                message_id,
                title,
            } => json!({ "ok": true, "chatId": chat_id, "messageId": message_id, "title": title }),
            SendAck::Refused(refusal) => refusal.to_json(),
        }
    }
}

/// The acknowledgement of `task:help`: the chat that holds the request and its reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskHelpAck {
    Started { chat_id: String, title: String },
    Refused(Refusal),
}

impl TaskHelpAck {
    pub fn to_json(&self) -> Value {
        match self {
            TaskHelpAck::Started { chat_id, title } => {
                json!({ "ok": true, "chatId": chat_id, "title": title })
            }
            TaskHelpAck::Refused(refusal) => refusal.to_json(),
        }
    }
}

/// The acknowledgement of `chat:stop`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StopAck;

impl StopAck {
    pub fn to_json(&self) -> Value {
        json!({ "ok": true })
    }
}

/// A client joins the member's actor: it gets `chat:ready` with the greeting of a new chat.
#[derive(Clone, Message)]
#[rtype(result = "()")]
pub struct Join {
    pub client: Arc<dyn ActorClient>,
    /// The session the client signed in with (its hash), so signing out of it closes the client;
    /// `None` for a client that came with a one-time sign-in token.
    pub session: Option<String>,
    /// The funnel record on the member's account, while the member has no chat yet (the funnel
    /// greeting and its shortcut belong to the first chat after the checkout).
    pub funnel: Option<FunnelBrief>,
}

/// The process is stopping: the actor lets the replies it writes end (stored, and sent to the
/// member's devices), then asks its sockets to connect again (to another process) and stops.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Drain;

/// The member signed out of `session` (or, with `None`, of every session: a password reset):
/// the clients that came with it are disconnected.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct SignedOut {
    pub session: Option<String>,
}

/// What a client does.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub enum Event {
    Send {
        chat_id: Option<String>,
        text: String,
        reply: Reply<SendAck>,
    },
    Stop {
        chat_id: String,
        reply: Reply<StopAck>,
    },
    TaskHelp {
        task_id: String,
        reply: Reply<TaskHelpAck>,
    },
    Left {
        client_id: String,
    },
}

/// An event that the member's actor on another process emitted to all of the member's sockets.
#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct FromPeer {
    /// The process it came from.
    pub from: String,
    pub event: String,
    pub data: Value,
    /// A streamed piece: not kept for a socket that recovers its connection.
    pub volatile: bool,
}
