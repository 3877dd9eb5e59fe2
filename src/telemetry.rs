//! Logging: readable lines locally, one JSON object per line in production.

use tracing_subscriber::EnvFilter;

use crate::config::{LogFormat, LogSettings};

/// Installs the global subscriber. `RUST_LOG`, when set, wins over `log.filter`.
pub fn init(settings: &LogSettings) {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(&settings.filter))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(true);
    // `try_init` fails only when a subscriber is already installed (tests call this more than once).
    let _ = match settings.format {
        LogFormat::Pretty => builder.compact().try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init(),
    };
}
