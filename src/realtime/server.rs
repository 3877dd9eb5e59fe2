//! The real-time server as the application sees it: built with its namespaces, served at
//! `/socket.io/` ([`super::endpoint`]) and on WebSocket upgrades ([`super::upgrade`]), closed on
//! stop. It holds what the connections share ([`ServerState`]) and the polling sessions by sid
//! ([`PollingSessions`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use prometheus::IntGauge;

use super::config::RealtimeConfig;
use super::namespace::Namespace;
use super::sessions::PollingSessions;
use super::state::ServerState;

#[derive(Clone)]
pub struct RealtimeServer {
    state: ServerState,
    sessions: PollingSessions,
}

pub struct RealtimeServerBuilder {
    config: RealtimeConfig,
    namespaces: HashMap<String, Arc<dyn Namespace>>,
    connections: Option<IntGauge>,
}

impl RealtimeServerBuilder {
    /// Serves `namespace` (such as `/` or `/funnel`); any other namespace is refused.
    pub fn namespace(mut self, path: &str, namespace: impl Namespace) -> Self {
        self.namespaces
            .insert(path.to_owned(), Arc::new(namespace) as Arc<dyn Namespace>);
        self
    }

    /// Counts open Engine.IO connections in `gauge`.
    pub fn connection_gauge(mut self, gauge: IntGauge) -> Self {
        self.connections = Some(gauge);
        self
    }

    pub fn build(self) -> RealtimeServer {
        RealtimeServer {
            state: ServerState::new(self.config, self.namespaces, self.connections),
            sessions: PollingSessions::default(),
        }
    }
}

impl RealtimeServer {
    pub fn builder(config: RealtimeConfig) -> RealtimeServerBuilder {
        RealtimeServerBuilder {
            config,
            namespaces: HashMap::new(),
            connections: None,
        }
    }

    pub fn config(&self) -> &RealtimeConfig {
        self.state.config()
    }

    /// Open connections, over any transport.
    pub fn connection_count(&self) -> usize {
        self.state.connection_count()
    }

    /// Closes every connection with `server shutting down`, so that clients reconnect (to
    /// another process) and recover, instead of holding a stopping server open.
    pub fn close_all(&self) {
        self.state.close_all();
    }

    /// Waits, at most `limit`, until every WebSocket socket has written its last frames and
    /// closed. The HTTP server does not count them once upgraded, so a stop that closed the
    /// connections ([`Self::close_all`]) waits here before the workers go.
    pub async fn wait_for_websockets(&self, limit: Duration) {
        self.state.wait_for_websockets(limit).await;
    }

    /// The first step of a stop: readiness fails, so a balancer sends new clients elsewhere,
    /// while the open connections are served and new ones still taken.
    pub fn drain(&self) {
        self.state.drain();
    }

    /// Whether the process is stopping ([`Self::drain`] or later): its readiness fails.
    pub fn is_draining(&self) -> bool {
        self.state.is_draining()
    }

    /// Refuses new connections from now on, and keeps those open.
    pub fn refuse_new(&self) {
        self.state.refuse_new();
    }

    /// Whether `close_all` or `refuse_new` ran: the server takes no new connections.
    pub fn is_stopping(&self) -> bool {
        self.state.is_stopping()
    }

    pub(crate) fn state(&self) -> &ServerState {
        &self.state
    }

    pub(crate) fn sessions(&self) -> &PollingSessions {
        &self.sessions
    }
}
