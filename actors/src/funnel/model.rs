//! A funnel conversation as it is stored, and the views the client gets of it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::rules::FunnelKind;
use crate::rules::experiments::ArmRef;
use crate::rules::flows::FlowRef;

/// A conversation is one per visitor and funnel.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ConversationKey {
    pub visitor_id: String,
    pub funnel: FunnelKind,
}

impl ConversationKey {
    /// The conversation's id, which follows from the visitor and the funnel: finding a visitor's
    /// conversation is a read of one record (no index), and two processes starting the same
    /// conversation collide on it. A hash, so the id, which travels to the payment provider and
    /// into analytics, does not give away the visitor's cookie. The store's migration 0008
    /// computes the same in SurrealQL.
    pub fn conversation_id(&self) -> String {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(format!("{}:{}", self.funnel.as_str(), self.visitor_id));
        digest
            .iter()
            .take(12)
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }
}

/// Where the visitor came from (the ad click's query parameters).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attribution {
    pub campaignid: Option<String>,
    pub keyword: Option<String>,
    pub utm_source: Option<String>,
    pub utm_medium: Option<String>,
    pub utm_campaign: Option<String>,
    pub gclid: Option<String>,
}

impl Attribution {
    pub fn is_empty(&self) -> bool {
        *self == Attribution::default()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Speaker {
    Assistant,
    User,
}

/// One message of the chat window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunnelMessage {
    pub role: Speaker,
    pub text: String,
    /// The scripted final message (with the 'Get started >>' button).
    #[serde(default)]
    pub is_final: bool,
    /// For a visitor's message: whether it was junk.
    #[serde(default)]
    pub junk: bool,
    /// For an assistant reply: where it came from ("greeting", "ai", "script", "final").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub at: DateTime<Utc>,
}

/// The whole state of one conversation; the actor is only its live copy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    pub id: String,
    pub key: ConversationKey,
    /// Bumped when the conversation starts over and when its auto-checkout changes (messages
    /// are numbered by their place instead); a save that finds another version, or a message
    /// already in its place, lost a race with another process.
    pub version: u64,
    /// The fencing token of the actor that holds the conversation (issue 49): the store adds one
    /// whenever an actor takes the conversation over (the first join of a new holder loads it so,
    /// `FunnelStore::take_over`) and refuses every write made at another (`StoreError::Fenced`).
    /// A holder that was paused, or cut off from the claims, past its claim writes nothing once
    /// another has taken over. Never shown to clients.
    #[serde(default)]
    pub epoch: u64,
    /// The flow and version chosen at the start (see `rules::flows`): the conversation follows
    /// it to the end, whatever is published meanwhile.
    pub flow: FlowRef,
    /// The experiment's arm the visitor is in, chosen at the start with the flow (issue 48).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arm: Option<ArmRef>,
    pub headline: String,
    pub attribution: Attribution,
    /// 0 before the first reply, 1 after the empathetic follow-up, 2 after the troubleshooting
    /// question: the next reply is the final message.
    pub stage: u8,
    pub junk_count: u32,
    /// The final message was sent: further sends are ignored.
    pub is_final: bool,
    pub first_message_tracked: bool,
    pub messages: Vec<FunnelMessage>,
    /// When the auto-checkout fires (15 s after the final message), until it has.
    pub checkout_deadline: Option<DateTime<Utc>>,
    /// When the auto-checkout (or the button) last opened a checkout.
    pub checkout_started_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// `message` and the entries of `conversation.messages`, as the client contract has them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageView<'a> {
    pub role: Speaker,
    pub text: &'a str,
    pub is_final: bool,
    pub show_subscribe_button: bool,
}

impl FunnelMessage {
    pub fn view(&self) -> MessageView<'_> {
        MessageView {
            role: self.role,
            text: &self.text,
            is_final: self.is_final,
            show_subscribe_button: self.is_final,
        }
    }
}

impl Conversation {
    /// The `conversation` event's data.
    /// With `experiment` ({id, arm}) when the visitor is in an experiment's arm, as testing
    /// tools tell a page its variant (docs/protocol.md).
    pub fn view(&self, typing: bool) -> Value {
        let mut view = json!({
            "id": self.id,
            "funnel": self.key.funnel,
            "headline": self.headline,
            "stage": self.stage,
            "final": self.is_final,
            "typing": typing,
            "messages": self.messages.iter().map(FunnelMessage::view).collect::<Vec<_>>(),
        });
        if let (Some(arm), Some(fields)) = (&self.arm, view.as_object_mut()) {
            fields.insert(
                "experiment".into(),
                json!({ "id": arm.experiment, "arm": arm.arm }),
            );
        }
        view
    }

    /// Rebuilds what follows from the messages alone (the stage, the junk count, the end, whether
    /// the first message was counted, the last change), for a store that keeps only the messages
    /// and the conversation's other fields. The first message is the greeting; each reply after
    /// it moves the stage on, up to the final step.
    pub fn settle_from_messages(&mut self) {
        let replies = self
            .messages
            .iter()
            .skip(1)
            .filter(|m| m.role == Speaker::Assistant)
            .count();
        self.stage = u8::try_from(replies.min(2)).unwrap_or(2);
        let junk = self
            .messages
            .iter()
            .filter(|m| m.role == Speaker::User && m.junk)
            .count();
        self.junk_count = u32::try_from(junk).unwrap_or(u32::MAX);
        self.is_final = self.messages.iter().any(|m| m.is_final);
        self.first_message_tracked = self.messages.iter().any(|m| m.role == Speaker::User);
        if let Some(last) = self.messages.last() {
            self.updated_at = self.updated_at.max(last.at);
        }
    }

    /// The visitor's messages, oldest first.
    pub fn user_messages(&self) -> impl Iterator<Item = &str> {
        self.messages
            .iter()
            .filter(|m| m.role == Speaker::User)
            .map(|m| m.text.as_str())
    }

    /// A reply is owed: the last message is the visitor's and the conversation is not over.
    pub fn awaits_reply(&self) -> bool {
        !self.is_final
            && self
                .messages
                .last()
                .is_some_and(|message| message.role == Speaker::User)
    }

    /// The spec's funnel record (section 3) of a chat funnel, as it travels to the checkout and
    /// the member's account.
    pub fn record(&self) -> Value {
        let assistant: Vec<&str> = self
            .messages
            .iter()
            .filter(|m| m.role == Speaker::Assistant)
            .map(|m| m.text.as_str())
            .collect();
        let user: Vec<&str> = self.user_messages().collect();
        json!({
            "funnel": funnel_record_name(self.key.funnel),
            "timestamp": self.updated_at,
            "userMessages": user,
            "assistantMessages": assistant,
            "conversationStage": self.stage,
            "campaignid": self.attribution.campaignid,
            "keyword": self.attribution.keyword,
            "headline": self.headline,
            "userIssue": user.first(),
            "rawUserInput": user.join("\n"),
            "conversationId": self.id,
        })
    }
}

/// The sub-record names of the spec's funnel record.
pub fn funnel_record_name(funnel: FunnelKind) -> &'static str {
    match funnel {
        FunnelKind::Chat => "chat_funnel",
        FunnelKind::Refundable => "refundable_fee_funnel",
        FunnelKind::Help => "help_funnel",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conversation_id_is_the_start_of_the_hash_of_funnel_and_visitor() {
        let key = ConversationKey {
            visitor_id: "visitor-1".into(),
            funnel: FunnelKind::Chat,
        };
        // SurrealQL's `string::slice(crypto::sha256('chat:visitor-1'), 0, 24)`, as migration
        // 0008 computes it for conversations stored before.
        assert_eq!(key.conversation_id(), "841643f5646ec2410b6a1b21");
        let other = ConversationKey {
            funnel: FunnelKind::Refundable,
            ..key.clone()
        };
        assert_ne!(other.conversation_id(), key.conversation_id());
    }
}
