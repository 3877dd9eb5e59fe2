//! Logging: readable lines locally, one JSON object per line in production. A line logged while
//! an HTTP request is handled carries the request's span (`tracing_actix_web`): its `request_id`,
//! which the answer's `x-request-id` header names too.

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
            // The request's span (its `request_id`, method and route) on every line.
            .with_current_span(true)
            .try_init(),
    };
}
