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

    /// Stores what `change` says changed in `conversation`, or answers `StoreError::Conflict`
    /// when the stored conversation is not the one the change was made from (another process
    /// changed it first); then nothing is written.
    fn save(
        &self,
        conversation: &super::Conversation,
        change: ConversationChange,
    ) -> BoxFuture<'static, Result<(), StoreError>>;
}

/// What a save of a funnel conversation writes. The actor knows what it changed, so the store
/// writes only that: a new message is one small record, not the whole conversation again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConversationChange {
    /// The conversation starts with its greeting: at version 1 a new one (a conflict if the
    /// visitor already has one in this funnel), at a later version one that starts over in the
    /// record of an expired one (a conflict unless that is stored at the version before), its
    /// earlier messages gone.
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
