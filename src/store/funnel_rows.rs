//! The funnel tables' rows as written, and the read of a conversation: what the funnel store
//! builds and the batcher ([`super::batch`]) writes and runs.

use chrono::{DateTime, Utc};
use surrealdb::types::{Array, RecordId, SurrealValue};

/// Reads a conversation with its messages, as one statement of a batch (`$s.id` its id): the
/// records as stored, their fields read here. A projection with computed fields, or a subquery
/// in it, cost SurrealDB several times the read itself (docs/benchmarks.md, "The store alone").
pub const LOAD: &str = "{ LET $s_found = type::record('funnel_conversation', $s.id).*; \
     IF $s_found { { conversation: $s_found, \
     messages: (SELECT * FROM funnel_message:[$s.id, 0]..[$s.id, 1000000000]) } } };";

/// Reads a conversation with its messages for a new holder, as one statement of a batch (`$s.id`
/// its id): [`LOAD`], with the record's epoch moved on by one in the same statement, so the
/// conversation comes back at the new epoch and the holder before is fenced (migration 0030).
/// The update answers the record itself: no second read.
pub const TAKE_OVER: &str = "{ LET $s_found = (UPDATE type::record('funnel_conversation', $s.id) \
     SET epoch += 1 RETURN AFTER)[0]; \
     IF $s_found { { conversation: $s_found, \
     messages: (SELECT * FROM funnel_message:[$s.id, 0]..[$s.id, 1000000000]) } } };";

/// A conversation's record as written when it starts: created with `CONTENT`, or merged over an
/// expired one (so the fields other writers keep on it, the checkout's `user`, stay).
#[derive(Debug, Clone, SurrealValue)]
pub struct ConversationRow {
    pub(super) id: RecordId,
    pub(super) visitor: RecordId,
    pub(super) funnel: String,
    pub(super) version: i64,
    /// Its holder's epoch: 1 for a new conversation, the take-over's for one started over.
    pub(super) epoch: i64,
    pub(super) flow: String,
    /// The flow's version the conversation follows (issue 47; none stored before it: 1).
    pub(super) flow_version: i64,
    /// A preview's id (`/admin`'s "Try it"), only on a preview's conversation.
    pub(super) flow_preview: Option<String>,
    /// The experiment's arm the visitor is in (issue 48), if any.
    pub(super) arm: Option<ArmRow>,
    pub(super) headline: String,
    pub(super) keyword: Option<String>,
    pub(super) campaignid: Option<String>,
    /// Only the fields the visit brought: none at all for a visitor who came without them (the
    /// record keeps no six empty fields), as a visitor's acquisition is kept.
    pub(super) attribution: Option<serde_json::Value>,
    pub(super) checkout_deadline: Option<DateTime<Utc>>,
    pub(super) checkout_started_at: Option<DateTime<Utc>>,
    pub(super) created_at: DateTime<Utc>,
    pub(super) updated_at: DateTime<Utc>,
}

/// The exposure of a conversation that starts in an experiment's arm (migration 0029):
/// `experiment_exposure:[experiment, visitor]`, written with the conversation.
#[derive(Debug, Clone, SurrealValue)]
pub struct ExposureRow {
    pub(super) id: RecordId,
    pub(super) arm: String,
    /// The checkout source's name of the funnel (`chat_funnel`, ...), as journeys name it.
    pub(super) funnel: String,
    pub(super) conversation: RecordId,
    pub(super) at: DateTime<Utc>,
}

/// A conversation's experiment and arm.
#[derive(Debug, Clone, SurrealValue)]
pub struct ArmRow {
    pub(super) experiment: String,
    pub(super) arm: String,
}

/// A new message as a row of the batch's messages: written (its `row`) only while its
/// conversation is at its writer's epoch, `fence` being `[conversation, epoch]` (the shape of the
/// conversations' read, so the batch compares the two whole).
#[derive(Debug, Clone, SurrealValue)]
pub struct FencedMessageRow {
    pub(super) conversation: RecordId,
    pub(super) fence: Array,
    pub(super) row: MessageRow,
}

/// One message of a conversation, in its place, as written and as read back.
#[derive(Debug, Clone, SurrealValue)]
pub struct MessageRow {
    pub(super) id: RecordId,
    pub(super) role: String,
    pub(super) text: String,
    pub(super) is_final: bool,
    pub(super) junk: bool,
    pub(super) source: Option<String>,
    pub(super) at: DateTime<Utc>,
    /// On the final message: when its auto-checkout opens.
    pub(super) checkout_at: Option<DateTime<Utc>>,
}

/// What the auto-checkout's changes write, at the conversation's new version.
#[derive(Debug, Clone, SurrealValue)]
pub struct CheckoutRow {
    pub(super) version: i64,
    pub(super) checkout_deadline: Option<DateTime<Utc>>,
    pub(super) checkout_started_at: Option<DateTime<Utc>>,
    pub(super) updated_at: DateTime<Utc>,
}
