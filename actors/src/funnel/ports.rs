//! The funnel actor's ports: where its conversations live, the checkout it opens, and which
//! process holds each conversation.

use futures_util::future::BoxFuture;

use crate::ports::StoreError;

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

/// Where funnel conversations live (SurrealDB in the server).
pub trait FunnelStore: Send + Sync + 'static {
    fn load(
        &self,
        key: &super::ConversationKey,
    ) -> BoxFuture<'static, Result<Option<super::Conversation>, StoreError>>;

    /// Reads the conversation for a new holder (the first join of an actor): in the same
    /// transaction the stored epoch moves on by one, and the conversation comes back at the new
    /// one, so the actor that held it before (paused, or cut off from the claims, it may still
    /// believe it does) has every later write refused. None when there is none.
    fn take_over(
        &self,
        key: &super::ConversationKey,
    ) -> BoxFuture<'static, Result<Option<super::Conversation>, StoreError>>;

    /// Stores what `change` says changed in `conversation`, or answers `StoreError::Fenced`
    /// when the stored conversation is at another epoch (another actor took it over since this
    /// one loaded it), else `StoreError::Conflict` when it is not the one the change was made
    /// from (changed first by another writer); then nothing is written.
    fn save(
        &self,
        conversation: &super::Conversation,
        change: ConversationChange,
    ) -> BoxFuture<'static, Result<(), StoreError>>;
}

/// What a save of a funnel conversation writes. The actor knows what it changed, so the store
/// writes only that: a new message is one small record, not the whole conversation again.
/// Every change but a new conversation's start is fenced: it lands only while the stored
/// conversation is at the writer's epoch (`StoreError::Fenced` otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConversationChange {
    /// The conversation starts with its greeting: at version 1 a new one, at epoch 1 (a
    /// conflict if the visitor already has one in this funnel), at a later version one that
    /// starts over in the record of an expired one, at the epoch its take-over gave (a conflict
    /// unless that is stored at the version before), its earlier messages gone.
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
    pub attribution: super::Attribution,
    /// The experiment's arm of the conversation, kept on the checkout (issue 48).
    pub arm: Option<crate::rules::experiments::ArmRef>,
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

/// A step of a chat funnel conversation, in order, for the drop-off by flow version (issue 47).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FlowStep {
    /// The conversation started (its greeting).
    Joined,
    FirstMessage,
    FirstReply,
    SecondMessage,
    SecondReply,
    ThirdMessage,
    FinalMessage,
    /// The first checkout of the conversation opened, by the 'Get started >>' button.
    CheckoutButton,
    /// The first checkout opened by itself after the final message.
    CheckoutAuto,
}

impl FlowStep {
    /// The step a visitor's message of this number (1 for the first) is.
    pub fn message(number: usize) -> Option<Self> {
        match number {
            1 => Some(FlowStep::FirstMessage),
            2 => Some(FlowStep::SecondMessage),
            3 => Some(FlowStep::ThirdMessage),
            _ => None,
        }
    }

    /// The step a reply is, by the stage it moved the conversation to (1 after the first, 2
    /// after the second) and whether it is the final message.
    pub fn reply(stage: u8, is_final: bool) -> Option<Self> {
        match (stage, is_final) {
            (_, true) => Some(FlowStep::FinalMessage),
            (1, false) => Some(FlowStep::FirstReply),
            (2, false) => Some(FlowStep::SecondReply),
            _ => None,
        }
    }
}

/// A conversation reached a step: what the drop-off counts it under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepReached {
    pub conversation_id: String,
    /// The conversation's cohort: the UTC day it started.
    pub day: chrono::NaiveDate,
    pub funnel: crate::rules::FunnelKind,
    /// The flow and the version the conversation follows (never a preview: those count nowhere).
    pub flow: String,
    pub version: u32,
    pub campaignid: Option<String>,
    pub keyword: Option<String>,
    pub step: FlowStep,
    /// How long the conversation spent at the step before this one (none for `Joined`).
    pub after: Option<std::time::Duration>,
}

/// Counts the steps conversations reach, by flow version (the drop-off on `/admin`).
pub trait FlowTally: Send + Sync + 'static {
    fn reached(&self, step: StepReached);
}

/// Counts nothing (previews, tests).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTally;

impl FlowTally for NoTally {
    fn reached(&self, _step: StepReached) {}
}
