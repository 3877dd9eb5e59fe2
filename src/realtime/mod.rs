//! The real-time channel: Engine.IO v4 below, Socket.IO v5 above, as the official client speaks them.
//!
//! Layers, bottom up: the pure packet codecs (`engineio`, `socketio`); WebSocket frames on the
//! socket (`wire`), once `upgrade` took the connection off the HTTP layer; the transports, each
//! connection an actor (`websocket`, `polling`) driving one transport-independent `connection`;
//! and the namespaces the application registers on the [`RealtimeServer`], whose handlers get
//! [`SocketEvent`]s and emit through [`SocketRef`]s.

mod config;
mod connection;
mod endpoint;
pub mod engineio;
mod errors;
mod keepalive;
mod namespace;
mod payload;
mod polling;
mod recovery;
mod route;
mod server;
mod session_messages;
mod sessions;
mod socket;
pub mod socketio;
mod state;
mod upgrade;
mod websocket;
mod wire;

pub use config::{OriginPolicy, RateLimit, RealtimeConfig};
pub use keepalive::KeepAlive;
pub use namespace::{ConnectRequest, Handshake, Namespace};
pub use payload::{AckError, ConnectError, DisconnectReason, Payload};
pub use server::{RealtimeServer, RealtimeServerBuilder};
pub use socket::{AckSender, SocketEvent, SocketRef};
pub use upgrade::UpgradeRequest;
