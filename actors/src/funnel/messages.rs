//! What the funnel actor is sent (a client's join and events) and what it answers with.

use std::sync::Arc;

use actix::prelude::*;
use serde_json::{Value, json};

use super::model::Attribution;
use crate::ports::ActorClient;
use crate::reply::Reply;

/// Why a visitor's message was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    Empty,
    Final,
    Busy,
    TooLong,
    Unavailable,
}

impl Refusal {
    pub fn code(self) -> &'static str {
        match self {
            Refusal::Empty => "empty",
            Refusal::Final => "final",
            Refusal::Busy => "busy",
            Refusal::TooLong => "too_long",
            Refusal::Unavailable => "unavailable",
        }
    }

    pub fn text(self) -> &'static str {
        match self {
            Refusal::Empty => "Please type your question first.",
            Refusal::Final => {
                "Your assistant is ready for you: click 'Get started >>' to continue."
            }
            Refusal::Busy => "Please wait for the reply before sending another message.",
            Refusal::TooLong => "Please keep your message under 2,000 characters.",
            Refusal::Unavailable => {
                "Your message could not be saved just now. Please try again in a moment."
            }
        }
    }
}

/// The acknowledgement of `send`: only once the message is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendAck {
    Stored,
    Refused(Refusal),
}

impl SendAck {
    pub fn to_json(self) -> Value {
        match self {
            SendAck::Stored => json!({ "ok": true }),
            SendAck::Refused(refusal) => {
                json!({ "ok": false, "code": refusal.code(), "error": refusal.text() })
            }
        }
    }
}

/// The acknowledgement of the 'Get started >>' button.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckoutAck {
    Url(String),
    NotReady,
}

impl CheckoutAck {
    pub fn to_json(&self) -> Value {
        match self {
            CheckoutAck::Url(url) => json!({ "url": url }),
            CheckoutAck::NotReady => json!({
                "error": "Checkout opens after your assistant's last message."
            }),
        }
    }
}

/// What a client does in the conversation.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub enum ClientEvent {
    Send {
        client_id: String,
        text: String,
        reply: Reply<SendAck>,
    },
    Checkout {
        client_id: String,
        reply: Reply<CheckoutAck>,
    },
    Left {
        client_id: String,
    },
}

/// What a new conversation starts from: the first handshake's ad parameters, and (a preview of a
/// draft) the flow it must follow whatever the routing says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewConversation {
    pub attribution: Attribution,
    pub flow: Option<crate::rules::flows::FlowRef>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JoinError {
    #[error("the conversation could not be loaded")]
    Unavailable,
    /// Another process holds the conversation (its id): the client is to be served there.
    #[error("the conversation is held by another process")]
    Elsewhere(String),
    /// This process is stopping: the client is to connect again, to another process.
    #[error("this process is stopping")]
    Stopping,
}

/// The process is stopping: the actor finishes the saves it began (a message acknowledged only
/// once stored), asks its clients to connect again (to another process) and stops, which gives
/// up its claim. A reply not yet being saved is left to the process that loads the conversation
/// next, as after a crash; the automatic checkout's deadline is stored.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Drain;

/// A client joins (or rejoins) the conversation: it gets the `conversation` event.
#[derive(Message)]
#[rtype(result = "Result<(), JoinError>")]
pub struct Join {
    pub client: Arc<dyn ActorClient>,
    pub start: NewConversation,
}
