//! The settings translated into what the parts are built from: the payment provider and the
//! real-time server's configuration (with the open-file limit it derives the connection cap from).

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use crate::billing::demo::DemoProvider;
use crate::billing::stripe::StripeProvider;
use crate::billing::{BillingError, PaymentProvider};
use crate::config::{PaymentProviderKind, Settings};
use crate::realtime::{OriginPolicy, RateLimit, RealtimeConfig};
use crate::store::Db;

/// The payment provider `payments.provider` names.
pub(super) fn payment_provider(
    settings: &Settings,
    db: Db,
) -> Result<Arc<dyn PaymentProvider>, BillingError> {
    Ok(match settings.payments.provider {
        PaymentProviderKind::Demo => Arc::new(DemoProvider::new(db)),
        PaymentProviderKind::Stripe => Arc::new(StripeProvider::new(&settings.stripe)?),
    })
}

/// The real-time channel's settings. Browsers may connect from the public URL's origin and from
/// `server.allowed_origins`.
pub(super) fn realtime_config(settings: &Settings) -> RealtimeConfig {
    let realtime = &settings.realtime;
    RealtimeConfig {
        ping_interval: Duration::from_millis(realtime.ping_interval_ms),
        ping_timeout: Duration::from_millis(realtime.ping_timeout_ms),
        connect_timeout: Duration::from_millis(realtime.connect_timeout_ms),
        max_payload: realtime.max_payload_bytes,
        rate_limit: NonZeroU32::new(realtime.messages_per_second).map(|per_second| RateLimit {
            per_second,
            burst: NonZeroU32::new(realtime.message_burst).unwrap_or(per_second),
        }),
        recovery_window: (realtime.recovery_window_secs > 0)
            .then(|| Duration::from_secs(realtime.recovery_window_secs)),
        origins: OriginPolicy::Only(settings.server.site_origins()),
        forwarding: settings.server.forwarding(),
        max_connections: match realtime.max_connections {
            0 => open_file_limit().map(connections_within),
            max => Some(max),
        },
        max_connections_per_address: (realtime.max_connections_per_address > 0)
            .then_some(realtime.max_connections_per_address),
        max_buffered_bytes: (realtime.max_buffered_bytes > 0)
            .then_some(realtime.max_buffered_bytes),
        ..RealtimeConfig::default()
    }
}

/// Open files kept for what is not a real-time connection (HTTP requests, the database, the AI):
/// a quarter of the limit, at most this many.
const RESERVED_FILES: usize = 1000;

/// The real-time connections a process with `limit` open files holds at once.
fn connections_within(limit: usize) -> usize {
    limit.saturating_sub((limit / 4).min(RESERVED_FILES)).max(1)
}

/// This process's soft limit on open files (Linux: `/proc/self/limits`), if it has one.
fn open_file_limit() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    parse_open_file_limit(&limits)
}

fn parse_open_file_limit(limits: &str) -> Option<usize> {
    let line = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))?;
    // "Max open files            20000                20000                files"
    line.trim_start_matches("Max open files")
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_open_file_limit_is_read_from_proc_limits() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max processes             95488                95488                processes \n\
                      Max open files            20000                40000                files     \n";
        assert_eq!(parse_open_file_limit(limits), Some(20_000));
        let unlimited =
            "Max open files            unlimited            unlimited            files\n";
        assert_eq!(parse_open_file_limit(unlimited), None);
        assert_eq!(parse_open_file_limit(""), None);
    }

    #[test]
    fn a_quarter_of_the_open_files_and_at_most_a_thousand_are_kept_for_the_rest() {
        assert_eq!(connections_within(20_000), 19_000);
        assert_eq!(connections_within(1024), 768);
        assert_eq!(connections_within(1), 1);
    }
}
