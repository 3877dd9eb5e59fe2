//! The values a socket's events and answers carry: the arguments (JSON and binary attachments), a
//! refusal of a connect request, why a socket was disconnected, why an acknowledgement did not come.

use bytes::Bytes;
use serde::Serialize;
use serde_json::{Map, Value};

use super::socketio;

/// The arguments of an event or acknowledgement. Binary arguments sit in `attachments` and are
/// referred to from `args` by `{"_placeholder": true, "num": N}`, as on the wire.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Payload {
    pub args: Vec<Value>,
    pub attachments: Vec<Bytes>,
}

impl Payload {
    /// One JSON argument.
    pub fn json<T: Serialize + ?Sized>(data: &T) -> Result<Self, serde_json::Error> {
        Ok(Self::value(serde_json::to_value(data)?))
    }

    /// One JSON argument, already a value (taken as it is, not copied).
    pub fn value(data: Value) -> Self {
        Self {
            args: vec![data],
            attachments: Vec::new(),
        }
    }

    /// Adds a binary argument and returns the placeholder that stands for it in `args`.
    pub fn attach(&mut self, bytes: Bytes) -> Value {
        self.attachments.push(bytes);
        serde_json::json!({"_placeholder": true, "num": self.attachments.len() - 1})
    }
}

/// Why a socket was disconnected, in the reference implementation's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DisconnectReason {
    TransportClose,
    TransportError,
    PingTimeout,
    ParseError,
    ServerShuttingDown,
    ClientNamespaceDisconnect,
    ServerNamespaceDisconnect,
    RateLimited,
    /// The server closed the connection for the client to connect again.
    ForcedClose,
}

impl DisconnectReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::TransportClose => "transport close",
            Self::TransportError => "transport error",
            Self::PingTimeout => "ping timeout",
            Self::ParseError => "parse error",
            Self::ServerShuttingDown => "server shutting down",
            Self::ClientNamespaceDisconnect => "client namespace disconnect",
            Self::ServerNamespaceDisconnect => "server namespace disconnect",
            Self::RateLimited => "rate limited",
            Self::ForcedClose => "forced close",
        }
    }

    /// Whether the client may come back and recover its session: the connection was lost, not
    /// ended on purpose (the same list as the reference).
    pub fn is_recoverable(self) -> bool {
        matches!(
            self,
            Self::TransportClose
                | Self::TransportError
                | Self::PingTimeout
                | Self::ServerShuttingDown
                | Self::ForcedClose
        )
    }
}

/// A refusal: the client's `connect_error` gets `message` and, when set, `data`.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectError {
    pub message: String,
    pub data: Option<Value>,
}

impl ConnectError {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            data: None,
        }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    pub(crate) fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert("message".into(), Value::String(self.message.clone()));
        if let Some(data) = &self.data {
            object.insert("data".into(), data.clone());
        }
        Value::Object(object)
    }
}

/// The client did not acknowledge in time, or went away first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AckError {
    #[error("the client did not acknowledge in time")]
    Timeout,
    #[error("the socket is not connected")]
    Disconnected,
}

/// One encoded Socket.IO packet: its text frame, then its binary attachments.
#[derive(Debug, Clone)]
pub(crate) struct Outgoing {
    pub text: String,
    pub attachments: Vec<Bytes>,
}

impl Outgoing {
    /// Encodes an EVENT (BINARY_EVENT when it has attachments).
    pub(crate) fn event(
        namespace: &str,
        event: &str,
        payload: Payload,
        ack_id: Option<u64>,
    ) -> Outgoing {
        let packet = socketio::Packet::event(
            namespace,
            event,
            payload.args,
            ack_id,
            payload.attachments.len(),
        );
        Self {
            text: packet.encode(),
            attachments: payload.attachments,
        }
    }

    /// Encodes an ACK (BINARY_ACK when it has attachments) answering the client's event `id`.
    pub(crate) fn ack(namespace: &str, id: u64, payload: Payload) -> Outgoing {
        let packet = socketio::Packet {
            kind: if payload.attachments.is_empty() {
                socketio::PacketType::Ack
            } else {
                socketio::PacketType::BinaryAck
            },
            namespace: namespace.to_owned(),
            ack_id: Some(id),
            data: Some(Value::Array(payload.args)),
            attachments: payload.attachments.len(),
        };
        Self {
            text: packet.encode(),
            attachments: payload.attachments,
        }
    }
}
