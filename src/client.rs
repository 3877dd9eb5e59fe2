//! Who is asking: the client's address, for per-client limits, and the keyed limiter they and
//! the account limits counted in one process use. Below the HTTP handlers and the real-time
//! layer, which both ask.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::num::NonZeroU32;

use actix_web::HttpRequest;
use actix_web::http::header::{HeaderMap, X_FORWARDED_FOR};
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

/// A trusted proxy's address or network (`server.trusted_proxies`): `10.0.0.5`, `10.0.0.0/24`,
/// `::1`, `fd00::/8`. Bits past the prefix are ignored, as nginx's `set_real_ip_from` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProxyNetwork {
    network: IpAddr,
    prefix: u8,
}

/// Why an entry of `server.trusted_proxies` is not an address or network.
#[derive(Debug, thiserror::Error)]
#[error("\"{0}\" is not an IP address or a network such as 10.0.0.0/8 or fd00::/8")]
pub struct NotAProxyNetwork(String);

impl std::str::FromStr for ProxyNetwork {
    type Err = NotAProxyNetwork;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = || NotAProxyNetwork(text.to_owned());
        let (address, prefix) = match text.trim().split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (text.trim(), None),
        };
        let network = address
            .parse::<IpAddr>()
            .map_err(|_| invalid())?
            .to_canonical();
        let bits = if network.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => bits,
            Some(prefix) => prefix
                .parse::<u8>()
                .ok()
                .filter(|prefix| *prefix <= bits)
                .ok_or_else(invalid)?,
        };
        Ok(Self { network, prefix })
    }
}

impl ProxyNetwork {
    /// 127.0.0.0/8 and ::1: a proxy on this machine.
    pub const LOOPBACK: [ProxyNetwork; 2] = [
        ProxyNetwork {
            network: IpAddr::V4(Ipv4Addr::new(127, 0, 0, 0)),
            prefix: 8,
        },
        ProxyNetwork {
            network: IpAddr::V6(Ipv6Addr::LOCALHOST),
            prefix: 128,
        },
    ];

    /// Whether `address` is in this network (an IPv4-mapped IPv6 address as its IPv4 one).
    pub fn contains(&self, address: IpAddr) -> bool {
        match (self.network, address.to_canonical()) {
            (IpAddr::V4(network), IpAddr::V4(address)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(network) & mask == u32::from(address) & mask
            }
            (IpAddr::V6(network), IpAddr::V6(address)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(network) & mask == u128::from(address) & mask
            }
            _ => false,
        }
    }
}

/// Where the client's address comes from (`server.trusted_proxies`): `X-Forwarded-For` is read
/// exactly when the peer is one of our proxies. The default lists none: the peer is the client.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Forwarding {
    /// Our own proxies: only a peer among them is believed, and their entries in the header are
    /// skipped from the right.
    pub proxies: std::sync::Arc<[ProxyNetwork]>,
}

impl Forwarding {
    fn is_proxy(&self, address: IpAddr) -> bool {
        self.proxies.iter().any(|proxy| proxy.contains(address))
    }

    /// The client's address seen from `peer`. With `peer` one of our proxies, `X-Forwarded-For`
    /// is walked from the right past our proxies' entries: the first
    /// entry that is not one of them is the client, the one they saw. Entries left of it are
    /// written by the client and never read; an entry on the way that is not an address means
    /// nothing can be trusted (the peer is used). When every entry is one of our proxies the
    /// left-most is the client. From any other peer the header is ignored.
    fn client_of(&self, headers: &HeaderMap, peer: IpAddr) -> IpAddr {
        if !self.is_proxy(peer) {
            if !self.proxies.is_empty() && headers.contains_key(X_FORWARDED_FOR) {
                warn_once_of_an_untrusted_peer(peer);
            }
            return peer;
        }
        let mut client = peer;
        let entries = headers
            .get_all(X_FORWARDED_FOR)
            .map(|value| value.to_str().unwrap_or_default())
            .flat_map(|value| value.split(','))
            .collect::<Vec<_>>();
        for entry in entries.into_iter().rev() {
            let Ok(address) = entry.trim().parse::<IpAddr>() else {
                return peer;
            };
            client = address;
            if !self.is_proxy(address) {
                break;
            }
        }
        client
    }
}

/// Said once a process: a header from a peer that is not listed is ignored, so a balancer missing
/// from `server.trusted_proxies` makes all its clients one address. (With the list empty the
/// header is never wanted, and nothing is said.)
fn warn_once_of_an_untrusted_peer(peer: IpAddr) {
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
        tracing::warn!(
            %peer,
            "X-Forwarded-For ignored: the peer is not in server.trusted_proxies, so it is taken as \
             the client (said once; if it is your load balancer, add it to server.trusted_proxies)"
        );
    }
}

/// The client's address as a rate-limit key: from `X-Forwarded-For` when the peer is one of our
/// proxies ([`Forwarding`]), otherwise the peer. IPv6 addresses are grouped by /64, the block
/// one subscriber usually holds, so rotating through a block does not escape a limit.
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
    peer.map(|peer| group_v6(forwarding.client_of(headers, peer.ip().to_canonical())))
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

    fn forwarding(proxies: &[&str]) -> Forwarding {
        Forwarding {
            proxies: proxies
                .iter()
                .map(|proxy| proxy.parse().expect("network"))
                .collect(),
        }
    }

    fn ip(text: &str) -> Option<IpAddr> {
        Some(text.parse().expect("ip"))
    }

    /// A request from `peer` carrying `forwarded_for`.
    fn request_via(peer: &str, forwarded_for: &str) -> HttpRequest {
        TestRequest::default()
            .peer_addr(peer.parse().expect("addr"))
            .insert_header(("x-forwarded-for", forwarded_for))
            .to_http_request()
    }

    /// A request from our balancer at 10.0.0.9.
    fn request(forwarded_for: &str) -> HttpRequest {
        request_via("10.0.0.9:5000", forwarded_for)
    }

    #[test]
    fn the_peer_is_the_client_unless_it_is_a_trusted_proxy() {
        let req = request("1.1.1.1, 203.0.113.7");
        assert_eq!(
            client_key(&req, &forwarding(&[])),
            ip("10.0.0.9"),
            "no proxies: the header is never read"
        );
        assert_eq!(
            client_key(&req, &forwarding(&["10.0.0.9"])),
            ip("203.0.113.7"),
            "the entry the proxy added, not one the client wrote"
        );
    }

    #[test]
    fn a_peer_that_is_not_a_trusted_proxy_is_the_client_whatever_it_forwards() {
        let behind_others = forwarding(&["10.0.0.0/24", "::1"]);
        let req = request_via("198.51.100.4:5000", "203.0.113.7");
        assert_eq!(client_key(&req, &behind_others), ip("198.51.100.4"));
        // Loopback is a proxy only while it is listed.
        let req = request_via("127.0.0.1:5000", "203.0.113.7");
        assert_eq!(client_key(&req, &behind_others), ip("127.0.0.1"));
        assert_eq!(
            client_key(&req, &forwarding(&["127.0.0.0/8"])),
            ip("203.0.113.7")
        );
        // A dual-stack listener sees an IPv4 peer as IPv4-mapped IPv6.
        let req = request_via("[::ffff:10.0.0.9]:5000", "203.0.113.7");
        assert_eq!(client_key(&req, &behind_others), ip("203.0.113.7"));
    }

    #[test]
    fn a_client_written_entry_is_never_the_client() {
        let balancer = forwarding(&["10.0.0.9"]);
        // The client wrote garbage after a made-up address; the balancer appended the real one.
        let req = request("6.6.6.6, not-an-address, 203.0.113.7");
        assert_eq!(client_key(&req, &balancer), ip("203.0.113.7"));
        // The right-most entry is not an address: nothing there can be trusted, the peer is used
        // (the old reading took the last entry that parsed, one the client wrote).
        let req = request("6.6.6.6, garbage");
        assert_eq!(client_key(&req, &balancer), ip("10.0.0.9"));
        // Behind a CDN that appends too: its entries are skipped from the right, by network.
        let behind_a_cdn = forwarding(&["10.0.0.9", "192.0.2.0/24"]);
        let req = request("6.6.6.6, 198.51.100.4, 192.0.2.1, 192.0.2.200");
        assert_eq!(client_key(&req, &behind_a_cdn), ip("198.51.100.4"));
        // Only our proxies wrote it: the left-most entry is the one the first of them saw.
        let req = request("192.0.2.9, 192.0.2.1");
        assert_eq!(client_key(&req, &behind_a_cdn), ip("192.0.2.9"));
        // No header: the proxy's own request.
        let req = TestRequest::default()
            .peer_addr("10.0.0.9:5000".parse().expect("addr"))
            .to_http_request();
        assert_eq!(client_key(&req, &behind_a_cdn), ip("10.0.0.9"));
    }

    #[test]
    fn proxy_networks_are_addresses_or_prefixes() {
        let network = |text: &str| text.parse::<ProxyNetwork>();
        let contains = |net: &str, address: &str| {
            network(net)
                .expect("network")
                .contains(address.parse().expect("ip"))
        };
        assert!(contains("10.0.0.0/8", "10.255.0.1"));
        assert!(!contains("10.0.0.0/8", "11.0.0.1"));
        assert!(contains("10.1.2.3/16", "10.1.200.1"), "host bits ignored");
        assert!(contains("192.0.2.7", "192.0.2.7"));
        assert!(!contains("192.0.2.7", "192.0.2.8"));
        assert!(contains("0.0.0.0/0", "203.0.113.1"));
        assert!(!contains("0.0.0.0/0", "2001:db8::1"));
        assert!(contains("fd00::/8", "fd12:3456::1"));
        assert!(!contains("fd00::/8", "fe80::1"));
        assert!(contains("::1", "::1"));
        assert!(contains("127.0.0.0/8", "::ffff:127.0.0.2"));
        for bad in [
            "",
            "10.0.0",
            "10.0.0.0/33",
            "::/129",
            "10.0.0.0/",
            "/8",
            "host.lan",
        ] {
            let error = network(bad).expect_err(bad);
            assert!(error.to_string().contains(&format!("\"{bad}\"")), "{error}");
        }
    }

    #[test]
    fn ipv6_clients_are_grouped_by_their_64_block() {
        let one = TestRequest::default()
            .peer_addr("[2001:db8:1:2:aaaa::1]:1".parse().expect("addr"))
            .to_http_request();
        let other = TestRequest::default()
            .peer_addr("[2001:db8:1:2:bbbb::9]:1".parse().expect("addr"))
            .to_http_request();
        let direct = forwarding(&[]);
        assert_eq!(client_key(&one, &direct), client_key(&other, &direct));
        assert_eq!(client_key(&one, &direct), ip("2001:db8:1:2::"));
    }
}
