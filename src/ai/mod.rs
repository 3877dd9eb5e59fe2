//! The AI providers behind the actors' [`Ai`] port, chosen by `ai.provider`:
//!
//! - [`OfflineAi`] (`offline`, the default): needs no network and no key. It writes the help
//!   funnel's issue summary from the visitor's own words, answers members (chat, task help, the
//!   funnel solution) from the help library (`config/help-library/`, [`library`]; the members'
//!   chat says once, above the conversation, that answers come from it), and declines the funnels' replies and intro with
//!   [`AiError::Offline`], so callers fall back to their scripts and default texts.
//! - [`OpenAiCompatible`] (`openai`): any OpenAI-compatible chat-completion API at `ai.base_url`,
//!   called with `ai.api_key`, `ai.model` and `ai.temperature`; errors map onto [`AiError`] so
//!   callers can tell a refused key, a rate limit and a timeout apart.
//!
//! Callers never see which provider they hold: they get an `Arc<dyn Ai>` from [`provider`].
//! The spec's rate-limit backoff is [`WithBackoff`], a wrapper that implements [`Ai`] around the
//! OpenAI provider, so the provider itself only reports what the API said. The offline provider
//! is never rate limited and goes unwrapped. Behind the OpenAI provider stands the offline one
//! ([`fallback::WithFallback`]): when the service fails, members still get a guide, which then
//! says first that the live assistant can't answer just now.

mod backoff;
#[cfg(test)]
mod eval;
pub mod fallback;
pub mod library;
mod offline;
mod openai;
mod ranking;

use std::sync::Arc;

pub use backoff::WithBackoff;
pub use helpnow_actors::ports::{Ai, AiError, AiMessage, AiPurpose, AiRequest, Role};
pub use offline::OfflineAi;
pub use openai::OpenAiCompatible;

use crate::config::{AiProviderKind, AiSettings};

/// Why the configured AI provider cannot be built. Settings validation catches most of these
/// first; they stay here so a provider built from hand-made settings (a tool, a test) fails
/// with a clear message instead of at its first call.
#[derive(Debug, thiserror::Error)]
pub enum AiSetupError {
    #[error("`{0}` is required when ai.provider = \"openai\"")]
    Missing(&'static str),
    #[error("`ai.base_url` must be an http or https URL such as https://api.openai.com/v1: {0}")]
    InvalidBaseUrl(String),
    #[error("cannot set up TLS for the AI provider: {0}")]
    Tls(#[source] rustls::Error),
    #[error("cannot build the AI provider's HTTP client: {0}")]
    Client(#[source] reqwest::Error),
}

/// The provider `settings.provider` names. Every caller shares the one returned, and with it
/// the OpenAI provider's connection pool and rate-limit backoff.
/// `timed` wraps the configured provider itself (inside the offline fallback), so what it
/// measures is the provider's own answers and failures.
pub fn provider(
    settings: &AiSettings,
    library: Arc<library::HelpLibrary>,
    timed: impl FnOnce(Arc<dyn Ai>) -> Arc<dyn Ai>,
) -> Result<Arc<dyn Ai>, AiSetupError> {
    Ok(match settings.provider {
        AiProviderKind::Offline => timed(Arc::new(OfflineAi::new(library))),
        AiProviderKind::Openai => Arc::new(fallback::WithFallback::new(
            timed(Arc::new(WithBackoff::new(OpenAiCompatible::new(settings)?))),
            Arc::new(OfflineAi::standing_in(library)),
        )),
    })
}
