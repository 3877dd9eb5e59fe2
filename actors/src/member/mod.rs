//! The members' chat: one actor per signed-in member, serving all of the member's sockets (tabs
//! and devices). It writes every chat and message through the store, streams each reply as the
//! AI writes it, stops a reply on request (dropping the AI call), and answers task help.
//!
//! A chat is saved on its first send, titled by the spec's rule and starting with the greeting;
//! later sends add to it. While a chat has a reply being written (or a message being saved) it
//! takes no other send, so its messages stay in order.

use std::sync::Arc;
use std::time::Duration;

mod actor;
mod messages;
pub mod ports;
mod prompts;
mod registry;

pub use actor::{CHAT_ERROR, ClientSessions, MemberActor, TASK_ERROR, TASK_FALLBACK};
pub use messages::{
    Drain, Event, FromPeer, Join, Refusal, SendAck, SignedOut, StopAck, TaskHelpAck,
};
pub use registry::{MemberRegistry, Unavailable};

use crate::ports::{Ai, Analytics, Telemetry};
use ports::{MemberPeers, MemberStore};

/// What the member brought from a funnel checkout (the funnel record on the account).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunnelBrief {
    /// The issue as summarised (`userIssue`).
    pub issue: String,
    /// The visitor's own words, when the record kept them (`rawUserInput`).
    pub raw_input: Option<String>,
    /// A chat funnel's messages (`userMessages`).
    pub user_messages: Vec<String>,
}

/// The member chat's numbers.
#[derive(Debug, Clone)]
pub struct MemberSettings {
    pub assistant_name: String,
    pub product_name: String,
    /// The longest wait for the AI's next piece (the provider bounds each wait by it too).
    pub ai_timeout: Duration,
    /// How long an actor with no client and nothing to finish stays alive.
    pub idle_stop_after: Duration,
    pub max_message_chars: usize,
    /// How many of a chat's last messages the AI sees.
    pub context_messages: usize,
    /// The longest a store call may take before the member is told to try again.
    pub store_timeout: Duration,
    /// How often a finished reply's save is tried, a second apart.
    pub reply_save_attempts: u32,
    /// How long a member's access, once read, lets their sends and task help through without
    /// another read, counted from when the read began and never past the end of a trial that
    /// alone grants it. A member whose access ends keeps chatting for at most this long on a
    /// page already open; joining checks every time, and a refusal is never kept.
    pub access_trusted_for: Duration,
}

impl MemberSettings {
    pub fn new(assistant_name: impl Into<String>, product_name: impl Into<String>) -> Self {
        Self {
            assistant_name: assistant_name.into(),
            product_name: product_name.into(),
            ai_timeout: Duration::from_secs(30),
            idle_stop_after: Duration::from_secs(60),
            max_message_chars: 4000,
            context_messages: 20,
            store_timeout: Duration::from_secs(5),
            reply_save_attempts: 3,
            access_trusted_for: Duration::from_secs(30),
        }
    }
}

/// What every member actor of a process shares.
pub struct Deps {
    pub store: Arc<dyn MemberStore>,
    pub ai: Arc<dyn Ai>,
    /// Recorded with the member's user id.
    pub analytics: Arc<dyn Analytics>,
    /// Actors started and stopped, messages stored, timer lateness (the server's metrics).
    pub telemetry: Arc<dyn Telemetry>,
    /// The member's actors on other processes.
    pub peers: Arc<dyn MemberPeers>,
    pub settings: MemberSettings,
}

#[cfg(test)]
mod tests;
