//! The real-time server: its namespaces, the polling sessions it can find by sid, the sockets
//! waiting to be recovered, and the HTTP entry point at `/socket.io/`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix::Addr;
use actix_web::http::header::{self, HeaderMap, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::{HttpRequest, HttpResponse, web};
use prometheus::IntGauge;

use super::config::RealtimeConfig;
use super::polling::{self, PollingTransport};
use super::socket::{DisconnectReason, Handshake, Namespace, Outbound, Route, SocketRef};
use crate::client::client_key_of;

/// Recovery sweeps run at most this often.
const SWEEP_EVERY: Duration = Duration::from_secs(5);

#[derive(Clone)]
pub struct RealtimeServer(Arc<Inner>);

struct Inner {
    config: RealtimeConfig,
    namespaces: HashMap<String, Arc<dyn Namespace>>,
    polling: Mutex<HashMap<Arc<str>, PollingEntry>>,
    /// Every open connection's route, to close them all when the server stops.
    live: Mutex<HashMap<Arc<str>, Arc<Route>>>,
    /// Set by `close_all`: new connections are refused from then on.
    stopping: AtomicBool,
    /// Upgraded WebSocket sockets still open, until their last frames are written.
    websockets: AtomicUsize,
    parked: Mutex<Parked>,
    connections: Option<IntGauge>,
}

struct PollingEntry {
    transport: Addr<PollingTransport>,
    upgrading: bool,
}

/// Sockets of lost connections, by pid, until their recovery window ends.
struct Parked {
    sockets: HashMap<Box<str>, (SocketRef, Instant)>,
    last_sweep: Instant,
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
        RealtimeServer(Arc::new(Inner {
            config: self.config,
            namespaces: self.namespaces,
            polling: Mutex::new(HashMap::new()),
            live: Mutex::new(HashMap::new()),
            stopping: AtomicBool::new(false),
            websockets: AtomicUsize::new(0),
            parked: Mutex::new(Parked {
                sockets: HashMap::new(),
                last_sweep: Instant::now(),
            }),
            connections: self.connections,
        }))
    }
}

/// One open WebSocket socket, counted while this lives.
pub(crate) struct OpenWebSocket(RealtimeServer);

impl Drop for OpenWebSocket {
    fn drop(&mut self) {
        self.0.0.websockets.fetch_sub(1, Ordering::SeqCst);
    }
}

use crate::sync::lock;

/// The Engine.IO errors, with the reference implementation's codes and texts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EngineError {
    UnknownTransport,
    UnknownSid,
    BadHandshakeMethod,
    BadRequest,
    Forbidden,
    UnsupportedProtocolVersion,
    PayloadTooLarge,
}

impl EngineError {
    pub fn response(self) -> HttpResponse {
        let (status, code, message) = match self {
            Self::UnknownTransport => (StatusCode::BAD_REQUEST, 0, "Transport unknown"),
            Self::UnknownSid => (StatusCode::BAD_REQUEST, 1, "Session ID unknown"),
            Self::BadHandshakeMethod => (StatusCode::BAD_REQUEST, 2, "Bad handshake method"),
            Self::BadRequest => (StatusCode::BAD_REQUEST, 3, "Bad request"),
            Self::Forbidden => (StatusCode::FORBIDDEN, 4, "Forbidden"),
            Self::UnsupportedProtocolVersion => {
                (StatusCode::BAD_REQUEST, 5, "Unsupported protocol version")
            }
            Self::PayloadTooLarge => {
                return HttpResponse::PayloadTooLarge().finish();
            }
        };
        HttpResponse::build(status).json(serde_json::json!({"code": code, "message": message}))
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
        &self.0.config
    }

    /// The `/socket.io/` resource, to add to an actix-web `App`.
    pub fn service(&self) -> actix_web::Resource {
        web::resource("/socket.io/")
            .app_data(web::Data::new(self.clone()))
            .default_service(web::to(endpoint))
    }

    pub(crate) fn namespace(&self, path: &str) -> Option<Arc<dyn Namespace>> {
        self.0.namespaces.get(path).cloned()
    }

    pub(crate) fn connection_opened(&self, sid: Arc<str>, route: Arc<Route>) {
        lock(&self.0.live).insert(sid, route);
        if let Some(gauge) = &self.0.connections {
            gauge.inc();
        }
    }

    pub(crate) fn connection_closed(&self, sid: &str) {
        lock(&self.0.live).remove(sid);
        if let Some(gauge) = &self.0.connections {
            gauge.dec();
        }
    }

    pub(crate) fn is_live(&self, sid: &str) -> bool {
        lock(&self.0.live).contains_key(sid)
    }

    /// Open connections, over any transport.
    pub fn connection_count(&self) -> usize {
        lock(&self.0.live).len()
    }

    /// Closes every connection with `server shutting down`, so that clients reconnect (to
    /// another process) and recover, instead of holding a stopping server open.
    pub fn close_all(&self) {
        self.0.stopping.store(true, Ordering::SeqCst);
        let routes: Vec<Arc<Route>> = lock(&self.0.live).values().cloned().collect();
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
    /// closed. The HTTP server does not count them once upgraded, so a stop that closed the
    /// connections ([`Self::close_all`]) waits here before the workers go.
    pub async fn wait_for_websockets(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        while self.0.websockets.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    pub(crate) fn register_polling(&self, sid: Arc<str>, transport: Addr<PollingTransport>) {
        lock(&self.0.polling).insert(
            sid,
            PollingEntry {
                transport,
                upgrading: false,
            },
        );
    }

    pub(crate) fn polling(&self, sid: &str) -> Option<Addr<PollingTransport>> {
        lock(&self.0.polling)
            .get(sid)
            .map(|entry| entry.transport.clone())
    }

    pub(crate) fn remove_polling(&self, sid: &str) {
        lock(&self.0.polling).remove(sid);
    }

    /// Claims a polling session for a WebSocket upgrade; only one may try at a time.
    pub(crate) fn begin_upgrade(&self, sid: &str) -> Result<Addr<PollingTransport>, EngineError> {
        let mut sessions = lock(&self.0.polling);
        let entry = sessions.get_mut(sid).ok_or(EngineError::UnknownSid)?;
        if entry.upgrading {
            return Err(EngineError::BadRequest);
        }
        entry.upgrading = true;
        Ok(entry.transport.clone())
    }

    /// An upgrade attempt failed: the session may try again.
    pub(crate) fn abandon_upgrade(&self, sid: &str) {
        if let Some(entry) = lock(&self.0.polling).get_mut(sid) {
            entry.upgrading = false;
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
        offset: Option<&str>,
    ) -> Option<SocketRef> {
        let mut parked = lock(&self.0.parked);
        let (socket, expires) = parked.sockets.remove(pid)?;
        if expires <= Instant::now() {
            socket.expire();
            return None;
        }
        if socket.namespace() != namespace || !socket.can_resume(offset) {
            // A failed recovery ends the old session, as in the reference.
            socket.expire();
            return None;
        }
        Some(socket)
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
            address: client_key_of(headers, peer, self.0.config.trust_forwarded_for),
        }
    }
}

#[derive(Debug, Default)]
struct EngineQuery {
    eio: Option<String>,
    transport: Option<String>,
    sid: Option<String>,
}

impl EngineQuery {
    fn parse(query: &str) -> Self {
        let mut parsed = Self::default();
        for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
            match &*key {
                "EIO" => parsed.eio = Some(value.into_owned()),
                "transport" => parsed.transport = Some(value.into_owned()),
                "sid" => parsed.sid = Some(value.into_owned()),
                _ => {}
            }
        }
        parsed
    }
}

/// What a request to `/socket.io/` asks for, once it passed the reference's checks.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admitted {
    OpenWebSocket,
    /// A WebSocket that takes over the polling session `sid`.
    UpgradeWebSocket(String),
    OpenPolling,
    Poll(String),
    Post(String),
}

impl RealtimeServer {
    /// Checks a request to `/socket.io/` from an allowed origin in the reference's order: its
    /// transport, sid, method and protocol version, and whether a new connection is welcome now.
    /// The error is the answer to give instead.
    pub(crate) fn admit(&self, method: &Method, query: &str) -> Result<Admitted, Refusal> {
        let query = EngineQuery::parse(query);
        let websocket = match query.transport.as_deref() {
            Some("polling") => false,
            Some("websocket") => true,
            _ => return Err(EngineError::UnknownTransport.into()),
        };
        match query.sid {
            None => {
                if method != Method::GET {
                    return Err(EngineError::BadHandshakeMethod.into());
                }
                if query.eio.as_deref() != Some("4") {
                    return Err(EngineError::UnsupportedProtocolVersion.into());
                }
                if self.0.stopping.load(Ordering::SeqCst) {
                    // Clients retry, and reach another process or this one restarted.
                    return Err(Refusal::Stopping);
                }
                if self
                    .0
                    .config
                    .max_connections
                    .is_some_and(|max| self.connection_count() >= max)
                {
                    // Refused at once while the server can still answer, rather than left
                    // waiting unaccepted once it runs out of open files; clients retry later.
                    return Err(Refusal::AtCapacity);
                }
                Ok(if websocket {
                    Admitted::OpenWebSocket
                } else {
                    Admitted::OpenPolling
                })
            }
            Some(sid) if websocket => Ok(Admitted::UpgradeWebSocket(sid)),
            Some(sid) => match *method {
                Method::GET => Ok(Admitted::Poll(sid)),
                Method::POST => Ok(Admitted::Post(sid)),
                _ => Err(EngineError::BadRequest.into()),
            },
        }
    }
}

/// Every HTTP request to `/socket.io/`. WebSocket upgrades never reach it: the HTTP layer hands
/// them to [`super::upgrade`] before routing, so a WebSocket request here is a bad one.
async fn endpoint(
    req: HttpRequest,
    body: web::Payload,
    server: web::Data<RealtimeServer>,
) -> HttpResponse {
    let origin = req
        .headers()
        .get(header::ORIGIN)
        .and_then(|value| value.to_str().ok());
    if !server.config().origins.allows(origin) {
        return EngineError::Forbidden.response();
    }
    let mut response = if req.method() == Method::OPTIONS {
        HttpResponse::NoContent()
            .insert_header((header::ACCESS_CONTROL_ALLOW_METHODS, "GET, POST"))
            .insert_header((header::ACCESS_CONTROL_ALLOW_HEADERS, "content-type"))
            .finish()
    } else {
        match server.admit(req.method(), req.query_string()) {
            Err(refused) => refused.response(),
            Ok(Admitted::OpenPolling) => polling::open(&server, &req),
            Ok(Admitted::Poll(sid)) => polling::poll(&server, &sid).await,
            Ok(Admitted::Post(sid)) => polling::post(&server, &sid, body).await,
            Ok(Admitted::OpenWebSocket | Admitted::UpgradeWebSocket(_)) => {
                EngineError::BadRequest.response()
            }
        }
    };
    // Browsers on an allowed origin other than ours may read the answers.
    if let Some(origin) = origin.and_then(|o| HeaderValue::from_str(o).ok()) {
        let headers = response.headers_mut();
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
            HeaderValue::from_static("true"),
        );
        headers.insert(header::VARY, HeaderValue::from_static("Origin"));
    }
    response
}

/// Why a request to `/socket.io/` is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    Engine(EngineError),
    /// The server is stopping: no new connections.
    Stopping,
    /// A new connection past `max_connections`.
    AtCapacity,
    /// A WebSocket asked for off `/socket.io/`.
    NotFound,
}

impl From<EngineError> for Refusal {
    fn from(error: EngineError) -> Self {
        Self::Engine(error)
    }
}

impl Refusal {
    pub fn response(self) -> HttpResponse {
        match self {
            Self::Engine(error) => error.response(),
            Self::Stopping => HttpResponse::ServiceUnavailable().finish(),
            Self::AtCapacity => HttpResponse::ServiceUnavailable()
                .insert_header((header::RETRY_AFTER, "5"))
                .json(serde_json::json!({
                    "code": "at_capacity",
                    "message": "The server is busy. Please try again in a moment.",
                })),
            Self::NotFound => HttpResponse::NotFound().finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_gives_version_transport_and_sid() {
        let query = EngineQuery::parse("EIO=4&transport=polling&t=Nx1&sid=a%2Bb");
        assert_eq!(query.eio.as_deref(), Some("4"));
        assert_eq!(query.transport.as_deref(), Some("polling"));
        assert_eq!(query.sid.as_deref(), Some("a+b"));
    }
}
