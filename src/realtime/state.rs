//! What every connection of the server shares: the settings, the namespaces, the open
//! connections' routes (to close them all on stop) and their count by client address, the sockets
//! of lost connections waiting to be recovered, and the count of open WebSockets. Below the
//! transports and the session table.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::http::header::{self, HeaderMap};
use prometheus::IntGauge;

use super::config::RealtimeConfig;
use super::namespace::{Handshake, Namespace};
use super::payload::DisconnectReason;
use super::route::Route;
use super::socket::{Outbound, SocketRef};
use crate::client::client_key_of;
use crate::sync::lock;

/// Recovery sweeps run at most this often.
const SWEEP_EVERY: Duration = Duration::from_secs(5);

#[derive(Clone)]
pub(crate) struct ServerState(Arc<Inner>);

struct Inner {
    config: RealtimeConfig,
    namespaces: HashMap<String, Arc<dyn Namespace>>,
    live: Mutex<Live>,
    /// Set by `close_all`: new connections are refused from then on.
    stopping: AtomicBool,
    /// Set by `drain`: readiness fails (the balancer takes the process out) while connections
    /// are still served and taken.
    draining: AtomicBool,
    /// Upgraded WebSocket sockets still open, until their last frames are written.
    websockets: AtomicUsize,
    parked: Mutex<Parked>,
    connections: Option<IntGauge>,
}

/// The open connections.
#[derive(Default)]
struct Live {
    /// Every open connection's route, to close them all when the server stops.
    routes: HashMap<Arc<str>, Arc<Route<Outbound>>>,
    /// Open connections by client address, counted only under `max_connections_per_address`.
    by_address: HashMap<IpAddr, usize>,
}

/// Sockets of lost connections, by pid, until their recovery window ends.
struct Parked {
    sockets: HashMap<Box<str>, (SocketRef, Instant)>,
    last_sweep: Instant,
}

/// One open WebSocket socket, counted while this lives.
pub(crate) struct OpenWebSocket(ServerState);

/// A connection's place among its client address's (`max_connections_per_address`), taken
/// before the connection opens and given back when this is dropped: with the connection, or
/// with a handshake that never became one. Empty where addresses are not counted.
pub(crate) struct AddressPlace(Option<(ServerState, IpAddr)>);

impl Drop for AddressPlace {
    fn drop(&mut self) {
        let Some((state, address)) = self.0.take() else {
            return;
        };
        let mut live = lock(&state.0.live);
        // The last connection of an address takes its entry along.
        if let Entry::Occupied(mut count) = live.by_address.entry(address) {
            *count.get_mut() = count.get().saturating_sub(1);
            if *count.get() == 0 {
                count.remove();
            }
        }
    }
}

impl std::fmt::Debug for AddressPlace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("AddressPlace")
            .field(&self.0.as_ref().map(|(_, address)| address))
            .finish()
    }
}

/// Places are alike when they are for the same address (what tests of admission compare).
impl PartialEq for AddressPlace {
    fn eq(&self, other: &Self) -> bool {
        self.0.as_ref().map(|(_, address)| address) == other.0.as_ref().map(|(_, address)| address)
    }
}

impl Eq for AddressPlace {}

impl Drop for OpenWebSocket {
    fn drop(&mut self) {
        self.0.0.websockets.fetch_sub(1, Ordering::SeqCst);
    }
}

impl ServerState {
    pub(crate) fn new(
        config: RealtimeConfig,
        namespaces: HashMap<String, Arc<dyn Namespace>>,
        connections: Option<IntGauge>,
    ) -> Self {
        Self(Arc::new(Inner {
            config,
            namespaces,
            live: Mutex::new(Live::default()),
            stopping: AtomicBool::new(false),
            draining: AtomicBool::new(false),
            websockets: AtomicUsize::new(0),
            parked: Mutex::new(Parked {
                sockets: HashMap::new(),
                last_sweep: Instant::now(),
            }),
            connections,
        }))
    }

    pub(crate) fn config(&self) -> &RealtimeConfig {
        &self.0.config
    }

    pub(crate) fn namespace(&self, path: &str) -> Option<Arc<dyn Namespace>> {
        self.0.namespaces.get(path).cloned()
    }

    /// Counts a new connection (its client's address was counted by [`Self::take_address_place`]).
    pub(crate) fn connection_opened(&self, sid: Arc<str>, route: Arc<Route<Outbound>>) {
        lock(&self.0.live).routes.insert(sid, route);
        if let Some(gauge) = &self.0.connections {
            gauge.inc();
        }
    }

    /// Counts off the connection `sid` (its address place goes with the connection).
    pub(crate) fn connection_closed(&self, sid: &str) {
        lock(&self.0.live).routes.remove(sid);
        if let Some(gauge) = &self.0.connections {
            gauge.dec();
        }
    }

    /// A place for one more connection of the client at `address`, counted at once, or `None`
    /// when that client holds as many as one address may. Checking and counting are one step
    /// under one lock, so a burst of handshakes from one address cannot all pass the check
    /// before any is counted. A client whose address is unknown is let through, as by the other
    /// per-address limits.
    pub(crate) fn take_address_place(&self, address: Option<IpAddr>) -> Option<AddressPlace> {
        let (Some(max), Some(address)) = (self.0.config.max_connections_per_address, address)
        else {
            return Some(AddressPlace(None));
        };
        let mut live = lock(&self.0.live);
        let count = live.by_address.entry(address).or_default();
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(AddressPlace(Some((self.clone(), address))))
    }

    pub(crate) fn is_live(&self, sid: &str) -> bool {
        lock(&self.0.live).routes.contains_key(sid)
    }

    /// Open connections, over any transport.
    pub(crate) fn connection_count(&self) -> usize {
        lock(&self.0.live).routes.len()
    }

    pub(crate) fn is_stopping(&self) -> bool {
        self.0.stopping.load(Ordering::SeqCst)
    }

    pub(crate) fn drain(&self) {
        self.0.draining.store(true, Ordering::SeqCst);
    }

    pub(crate) fn is_draining(&self) -> bool {
        self.0.draining.load(Ordering::SeqCst) || self.is_stopping()
    }

    /// Refuses new connections from now on; those open stay.
    pub(crate) fn refuse_new(&self) {
        self.0.draining.store(true, Ordering::SeqCst);
        self.0.stopping.store(true, Ordering::SeqCst);
    }

    /// Closes every connection with `server shutting down`, and refuses new ones from now on.
    pub(crate) fn close_all(&self) {
        self.0.stopping.store(true, Ordering::SeqCst);
        let routes: Vec<Arc<Route<Outbound>>> =
            lock(&self.0.live).routes.values().cloned().collect();
        for route in routes {
            route.send(Outbound::Close(DisconnectReason::ServerShuttingDown));
        }
    }

    /// Counts an upgraded WebSocket socket open until the guard is dropped.
    pub(crate) fn websocket_opened(&self) -> OpenWebSocket {
        self.0.websockets.fetch_add(1, Ordering::SeqCst);
        OpenWebSocket(self.clone())
    }

    /// Waits, at most `limit`, until every WebSocket socket has written its last frames and
    /// closed.
    pub(crate) async fn wait_for_websockets(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        while self.0.websockets.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Keeps the socket of a lost connection for its client to recover.
    pub(crate) fn park(&self, socket: SocketRef) {
        let (Some(pid), Some(window)) = (socket.pid(), self.0.config.recovery_window) else {
            return;
        };
        let now = Instant::now();
        let mut parked = lock(&self.0.parked);
        parked
            .sockets
            .insert(pid.into(), (socket.clone(), now + window));
        if now.duration_since(parked.last_sweep) >= SWEEP_EVERY {
            parked.last_sweep = now;
            parked.sockets.retain(|_, (socket, expires)| {
                let alive = *expires > now;
                if !alive {
                    socket.expire();
                }
                alive
            });
        }
    }

    /// The parked socket `pid` of `namespace`, if it is still within its window and still holds
    /// everything after `offset`.
    pub(crate) fn take_parked(
        &self,
        pid: &str,
        namespace: &str,
        offset: &str,
    ) -> Option<SocketRef> {
        let mut parked = lock(&self.0.parked);
        let (socket, expires) = parked.sockets.remove(pid)?;
        if expires <= Instant::now() {
            socket.expire();
            return None;
        }
        if socket.namespace() != namespace || !socket.can_resume(Some(offset)) {
            // As in the reference, a failed attempt leaves the session to a later one within
            // its window.
            parked.sockets.insert(pid.into(), (socket, expires));
            return None;
        }
        Some(socket)
    }

    /// The address of the client that sent a request, as the per-address limits key it.
    pub(crate) fn client_address(
        &self,
        headers: &HeaderMap,
        peer: Option<SocketAddr>,
    ) -> Option<IpAddr> {
        client_key_of(headers, peer, &self.0.config.forwarding)
    }

    /// What the request that opens a connection says about its client.
    pub(crate) fn handshake(&self, headers: &HeaderMap, peer: Option<SocketAddr>) -> Handshake {
        let text = |name: header::HeaderName| {
            headers
                .get(name)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned)
        };
        Handshake {
            origin: text(header::ORIGIN),
            cookie_header: text(header::COOKIE),
            address: self.client_address(headers, peer),
        }
    }
}
