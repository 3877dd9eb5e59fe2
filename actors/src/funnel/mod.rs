//! The chat funnel and refundable-fee funnel conversations: one actor per visitor and funnel.
//!
//! Stage 0 -> 1 -> 2: the visitor's first message gets the empathetic follow-up, the second the
//! question about what was tried, the third the scripted final message with 'Get started >>'.
//! A typing indicator shows for a random 1.5-2.5 s before each reply. Scripts replace the AI when
//! its reply mentions an error, when the call fails, or after the second junk message. The
//! auto-checkout opens 15 s after the final message (or at once on the button); its deadline is
//! stored, so a rebuilt actor re-arms it.

use std::sync::Arc;
use std::time::Duration;

mod actor;
mod messages;
mod model;
pub mod ports;
mod prompts;
mod registry;

pub use crate::reply::Reply;
pub use actor::{CHECKOUT_FALLBACK_URL, FunnelActor};
pub use messages::{
    CheckoutAck, ClientEvent, Drain, Join, JoinError, NewConversation, Refusal, SendAck,
};
pub use model::{
    Attribution, Conversation, ConversationKey, FunnelMessage, MessageView, Speaker,
    funnel_record_name,
};
pub use prompts::follow_up_system_prompt;
pub use registry::FunnelRegistry;

use crate::ports::{Ai, Analytics, Clock, Telemetry};
use crate::rules::flows::FlowSource;
use ports::{FlowTally, FunnelCheckout, FunnelClaims, FunnelStore};

/// The funnel's numbers besides its flows' (the typing delay and the automatic checkout are a
/// flow version's: `rules::flows::FlowScript`).
#[derive(Debug, Clone)]
pub struct FunnelSettings {
    pub assistant_name: String,
    pub product_name: String,
    pub ai_timeout: Duration,
    pub idle_stop_after: Duration,
    /// A conversation untouched this long starts over (the spec's 1 hour for funnel data).
    pub conversation_lifetime: Duration,
    pub reply_retry_after: Duration,
    pub max_message_chars: usize,
}

impl FunnelSettings {
    pub fn new(assistant_name: impl Into<String>, product_name: impl Into<String>) -> Self {
        Self {
            assistant_name: assistant_name.into(),
            product_name: product_name.into(),
            ai_timeout: Duration::from_secs(8),
            idle_stop_after: Duration::from_secs(60),
            conversation_lifetime: Duration::from_secs(3600),
            reply_retry_after: Duration::from_secs(10),
            max_message_chars: 2000,
        }
    }
}

/// What every funnel actor of a process shares.
pub struct Deps {
    pub store: Arc<dyn FunnelStore>,
    pub ai: Arc<dyn Ai>,
    pub checkout: Arc<dyn FunnelCheckout>,
    pub analytics: Arc<dyn Analytics>,
    pub clock: Arc<dyn Clock>,
    /// The flows in memory: which one a new conversation follows, and each version's script.
    pub flows: Arc<dyn FlowSource>,
    /// The steps conversations reach, by flow version (`NoTally` for previews).
    pub tally: Arc<dyn FlowTally>,
    /// Actors started and stopped, messages stored, timer lateness (the server's metrics).
    pub telemetry: Arc<dyn Telemetry>,
    /// Which process holds each conversation (`NoClaims` for one process alone).
    pub claims: Arc<dyn FunnelClaims>,
    pub settings: FunnelSettings,
}

#[cfg(test)]
mod tests;
