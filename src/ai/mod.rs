//! The AI providers behind the actors' [`Ai`] port, chosen by `ai.provider`:
//!
//! - [`OfflineAi`] (`offline`, the default): needs no network and no key. It writes the help
//!   funnel's issue summary from the visitor's own words and declines every other purpose with
//!   [`AiError::Offline`], so callers fall back to their scripts and default texts.
//! - [`OpenAiCompatible`] (`openai`): any OpenAI-compatible chat-completion API at `ai.base_url`,
//!   called with `ai.api_key`, `ai.model` and `ai.temperature`; errors map onto [`AiError`] so
//!   callers can tell a refused key, a rate limit and a timeout apart.
//!
//! Callers never see which provider they hold: they get an `Arc<dyn Ai>` from [`provider`].
//! Rate-limit backoff belongs in a wrapper that implements [`Ai`] around either provider, so
//! neither provider needs to know about it.

mod offline;
mod openai;

use std::sync::Arc;

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

/// The provider `settings.provider` names.
pub fn provider(settings: &AiSettings) -> Result<Arc<dyn Ai>, AiSetupError> {
    Ok(match settings.provider {
        AiProviderKind::Offline => Arc::new(OfflineAi),
        AiProviderKind::Openai => Arc::new(OpenAiCompatible::new(settings)?),
    })
}
