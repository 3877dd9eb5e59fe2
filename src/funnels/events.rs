//! A funnel socket's events as the namespace and the relay read them.

use serde_json::{Value, json};

use crate::realtime::{AckSender, Payload};

/// The text of a `send` event (`{text}`; anything else is empty, which the actor refuses).
pub(super) fn sent_text(payload: &Payload) -> String {
    payload
        .args
        .first()
        .and_then(|data| data.get("text"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// Answers an event the funnel does not know, if an answer was asked for.
pub(super) fn refuse_unknown(ack: Option<AckSender>) {
    if let Some(ack) = ack {
        ack.send_json(&json!({ "error": "Unknown event." }));
    }
}
