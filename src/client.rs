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

/// Where the client's address comes from behind load balancers (`server.trust_forwarded_for`,
/// `server.trusted_proxies`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Forwarding {
    /// Behind a load balancer: read `X-Forwarded-For`, else the peer is the client.
    pub trusted: bool,
    /// Proxies besides the last one that also append to `X-Forwarded-For` (a CDN in front of the
    /// balancer, say): their entries are skipped from the right.
    pub proxies: std::sync::Arc<[IpAddr]>,
}

impl Forwarding {
    /// The client's address by `X-Forwarded-For`: the right-most entry that is not one of our own
    /// proxies, the one they saw. Entries left of it are written by the client and never read; an
    /// entry that is not an address there means nothing can be trusted (the peer is used).
    fn client_of(&self, headers: &HeaderMap) -> Option<IpAddr> {
        if !self.trusted {
            return None;
        }
        let entries: Vec<&str> = headers
            .get_all("x-forwarded-for")
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .map(str::trim)
            .collect();
        for entry in entries.iter().rev() {
            let address = entry.parse::<IpAddr>().ok()?;
            if !self.proxies.contains(&address) {
                return Some(address);
            }
        }
        None
    }
}

/// The client's address as a rate-limit key. Behind a trusted proxy it is the right-most
/// `X-Forwarded-For` entry not written by one of our proxies ([`Forwarding`]); otherwise the
/// peer. IPv6 addresses are grouped by /64, the block one subscriber usually holds, so rotating
/// through a block does not escape a limit.
pub fn client_key(req: &HttpRequest, forwarding: &Forwarding) -> Option<IpAddr> {
    client_key_of(req.headers(), req.peer_addr(), forwarding)
}

/// [`client_key`] from a request's headers and peer, for requests that are not an actix-web
/// `HttpRequest` (a WebSocket upgrade taken off the HTTP dispatcher).
pub fn client_key_of(
    headers: &HeaderMap,
    peer: Option<SocketAddr>,
    forwarding: &Forwarding,
) -> Option<IpAddr> {
    forwarding
        .client_of(headers)
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

    fn forwarding(trusted: bool, proxies: &[&str]) -> Forwarding {
        Forwarding {
            trusted,
            proxies: proxies
                .iter()
                .map(|proxy| proxy.parse().expect("ip"))
                .collect(),
        }
    }

    fn request(forwarded_for: &str) -> HttpRequest {
        TestRequest::default()
            .peer_addr("10.0.0.9:5000".parse().expect("addr"))
            .insert_header(("x-forwarded-for", forwarded_for))
            .to_http_request()
    }

    #[test]
    fn the_peer_is_the_client_unless_a_proxy_is_trusted() {
        let req = request("1.1.1.1, 203.0.113.7");
        assert_eq!(
            client_key(&req, &forwarding(false, &[])),
            Some("10.0.0.9".parse().expect("ip"))
        );
        assert_eq!(
            client_key(&req, &forwarding(true, &[])),
            Some("203.0.113.7".parse().expect("ip")),
            "the entry the proxy added, not one the client wrote"
        );
    }

    #[test]
    fn a_client_written_entry_is_never_the_client() {
        // The client wrote garbage after a made-up address; the balancer appended the real one.
        let req = request("6.6.6.6, not-an-address, 203.0.113.7");
        assert_eq!(
            client_key(&req, &forwarding(true, &[])),
            Some("203.0.113.7".parse().expect("ip"))
        );
        // The right-most entry is not an address: nothing there can be trusted, the peer is used
        // (the old reading took the last entry that parsed, one the client wrote).
        let req = request("6.6.6.6, garbage");
        assert_eq!(
            client_key(&req, &forwarding(true, &[])),
            Some("10.0.0.9".parse().expect("ip"))
        );
        // Behind a CDN that appends too: its entry is skipped from the right.
        let req = request("6.6.6.6, 198.51.100.4, 192.0.2.1");
        assert_eq!(
            client_key(&req, &forwarding(true, &["192.0.2.1"])),
            Some("198.51.100.4".parse().expect("ip"))
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
        let direct = forwarding(false, &[]);
        assert_eq!(client_key(&one, &direct), client_key(&other, &direct));
        assert_eq!(
            client_key(&one, &direct),
            Some("2001:db8:1:2::".parse().expect("ip"))
        );
    }
}
