//! The transport settings of the real-time channel.

use std::num::NonZeroU32;
use std::time::Duration;

/// How the real-time server treats its connections.
#[derive(Debug, Clone)]
pub struct RealtimeConfig {
    /// The server pings this long after the last pong...
    pub ping_interval: Duration,
    /// ...and closes the connection when no pong comes back within this.
    pub ping_timeout: Duration,
    /// A connection that joins no namespace within this is closed.
    pub connect_timeout: Duration,
    /// A WebSocket that does not finish upgrading a polling connection within this is closed.
    pub upgrade_timeout: Duration,
    /// The largest message (and polling request body) accepted, in bytes.
    pub max_payload: usize,
    /// Messages a connection may send; beyond it the connection is closed.
    pub rate_limit: Option<RateLimit>,
    /// How long a lost connection's sockets wait for the client to recover them.
    pub recovery_window: Option<Duration>,
    pub origins: OriginPolicy,
    /// Where the client's address comes from (behind a proxy: `X-Forwarded-For`).
    pub forwarding: crate::client::Forwarding,
    /// Connections held at once; past it a new one is refused with 503 (see `route`).
    pub max_connections: Option<usize>,
    /// Connections one client address (as `forwarding` reads it) may hold at once; past it a new
    /// one is refused with 429. A client that only holds connections costs nothing to keep open,
    /// so without it one address could take every place under `max_connections`.
    pub max_connections_per_address: Option<usize>,
    /// Bytes waiting for one client that does not take them (a WebSocket's frames the socket would
    /// not take, a long-polling client's packets until its next GET); past it the connection is
    /// dropped, as a lost one (its sockets may be recovered).
    pub max_buffered_bytes: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    pub per_second: NonZeroU32,
    pub burst: NonZeroU32,
}

/// Which browser origins may open connections. Requests without an `Origin` header (clients
/// that are not browsers) are always let in: the check exists to keep other web sites out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OriginPolicy {
    Any,
    /// Serialized origins such as `https://helpnow.example` or `http://127.0.0.1:8080`.
    Only(Vec<String>),
}

impl OriginPolicy {
    pub fn allows(&self, origin: Option<&str>) -> bool {
        match (self, origin) {
            (_, None) | (OriginPolicy::Any, _) => true,
            (OriginPolicy::Only(allowed), Some(origin)) => allowed
                .iter()
                .any(|entry| entry.eq_ignore_ascii_case(origin)),
        }
    }
}

impl Default for RealtimeConfig {
    /// The reference implementation's defaults; no rate limit, no recovery, any origin, no cap
    /// on connections or on what waits for a client.
    fn default() -> Self {
        Self {
            ping_interval: Duration::from_millis(25_000),
            ping_timeout: Duration::from_millis(20_000),
            connect_timeout: Duration::from_millis(45_000),
            upgrade_timeout: Duration::from_millis(10_000),
            max_payload: 1_000_000,
            rate_limit: None,
            recovery_window: None,
            origins: OriginPolicy::Any,
            forwarding: crate::client::Forwarding::default(),
            max_connections: None,
            max_connections_per_address: None,
            max_buffered_bytes: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_allowlist_lets_in_its_origins_and_clients_without_one() {
        let policy = OriginPolicy::Only(vec!["https://helpnow.example".into()]);
        assert!(policy.allows(Some("https://helpnow.example")));
        assert!(policy.allows(Some("HTTPS://HELPNOW.EXAMPLE")));
        assert!(policy.allows(None));
        assert!(!policy.allows(Some("https://evil.example")));
        assert!(!policy.allows(Some("null")));
        assert!(OriginPolicy::Any.allows(Some("https://anything.example")));
    }
}
