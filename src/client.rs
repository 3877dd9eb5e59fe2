//! Who is asking: the client's address, for per-client limits, and the keyed limiter they and
//! the account limits counted in one process use. Below the HTTP handlers and the real-time
//! layer, which both ask.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::num::NonZeroU32;

use actix_web::HttpRequest;
use actix_web::http::header::HeaderMap;
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

/// Past this many tracked keys, keys whose quota has refilled are forgotten.
const LIMITER_CLEANUP_THRESHOLD: usize = 10_000;

/// governor's keyed limiter that forgets the keys whose quota refilled once it tracks many: the
/// per-address limits here, and the account limits a process counts alone (`cluster.rs`).
pub struct KeyedLimiter<K: std::hash::Hash + Eq + Clone>(DefaultKeyedRateLimiter<K>);

impl<K: std::hash::Hash + Eq + Clone> KeyedLimiter<K> {
    pub fn new(quota: Quota) -> Self {
        Self(RateLimiter::keyed(quota))
    }

    /// Counts one attempt for `key`; false when it is over the quota.
    pub fn allow(&self, key: &K) -> bool {
        if self.0.len() > LIMITER_CLEANUP_THRESHOLD {
            self.0.retain_recent();
        }
        self.0.check_key(key).is_ok()
    }
}

/// A per-address rate limit.
pub struct AddressLimiter(KeyedLimiter<IpAddr>);

impl AddressLimiter {
    /// `per_minute` steadily, with bursts up to `burst` (both at least 1).
    pub fn per_minute(per_minute: u32, burst: u32) -> Self {
        let per_minute = NonZeroU32::new(per_minute).unwrap_or(NonZeroU32::MIN);
        let burst = NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN);
        Self(KeyedLimiter::new(
            Quota::per_minute(per_minute).allow_burst(burst),
        ))
    }

    /// Whether `address` may go on now; an unknown address (no peer) is let through.
    pub fn allow(&self, address: Option<IpAddr>) -> bool {
        address.is_none_or(|address| self.0.allow(&address))
    }
}

/// The client's address as a rate-limit key. Behind a trusted proxy (`server.trust_forwarded_for`)
/// it is the last `X-Forwarded-For` entry, the one the proxy itself added; otherwise the peer.
/// IPv6 addresses are grouped by /64, the block one subscriber usually holds, so rotating through
/// a block does not escape a limit.
pub fn client_key(req: &HttpRequest, trust_forwarded_for: bool) -> Option<IpAddr> {
    client_key_of(req.headers(), req.peer_addr(), trust_forwarded_for)
}

/// [`client_key`] from a request's headers and peer, for requests that are not an actix-web
/// `HttpRequest` (a WebSocket upgrade taken off the HTTP dispatcher).
pub fn client_key_of(
    headers: &HeaderMap,
    peer: Option<SocketAddr>,
    trust_forwarded_for: bool,
) -> Option<IpAddr> {
    let forwarded = trust_forwarded_for
        .then(|| {
            headers
                .get_all("x-forwarded-for")
                .filter_map(|value| value.to_str().ok())
                .flat_map(|value| value.split(','))
                .filter_map(|entry| entry.trim().parse::<IpAddr>().ok())
                .last()
        })
        .flatten();
    forwarded
        .or_else(|| peer.map(|peer| peer.ip()))
        .map(group_v6)
}

fn group_v6(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let mut segments = v6.segments();
                segments[4..].fill(0);
                IpAddr::V6(Ipv6Addr::from(segments))
            }
        },
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;

    use super::*;

    #[test]
    fn the_peer_is_the_client_unless_a_proxy_is_trusted() {
        let req = TestRequest::default()
            .peer_addr("10.0.0.9:5000".parse().expect("addr"))
            .insert_header(("x-forwarded-for", "1.1.1.1, 203.0.113.7"))
            .to_http_request();
        assert_eq!(
            client_key(&req, false),
            Some("10.0.0.9".parse().expect("ip"))
        );
        assert_eq!(
            client_key(&req, true),
            Some("203.0.113.7".parse().expect("ip")),
            "the entry the proxy added, not one the client wrote"
        );
    }

    #[test]
    fn ipv6_clients_are_grouped_by_their_64_block() {
        let one = TestRequest::default()
            .peer_addr("[2001:db8:1:2:aaaa::1]:1".parse().expect("addr"))
            .to_http_request();
        let other = TestRequest::default()
            .peer_addr("[2001:db8:1:2:bbbb::9]:1".parse().expect("addr"))
            .to_http_request();
        assert_eq!(client_key(&one, false), client_key(&other, false));
        assert_eq!(
            client_key(&one, false),
            Some("2001:db8:1:2::".parse().expect("ip"))
        );
    }
}
