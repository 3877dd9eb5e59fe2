//! What a namespace decides with: the connect request of a socket (its `auth` and the handshake
//! of its connection) and the answer, the recipient of its events or a refusal.

use std::net::IpAddr;
use std::sync::Arc;

use actix::Recipient;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value};

use super::payload::ConnectError;
use super::socket::{SocketEvent, SocketRef};

/// A namespace: decides who may connect and hands each accepted socket to its handler.
pub trait Namespace: Send + Sync + 'static {
    /// Accepts the socket by returning the recipient of its events (usually the conversation
    /// actor it belongs to), or refuses it with the `CONNECT_ERROR` the client will see.
    /// Also called when a client recovers its session, with `request.recovered` set.
    fn connect(
        &self,
        request: ConnectRequest,
        socket: SocketRef,
    ) -> BoxFuture<'static, Result<Recipient<SocketEvent>, ConnectError>>;
}

/// The Socket.IO handshake of one namespace connection.
#[derive(Debug, Clone)]
pub struct ConnectRequest {
    /// The client's `auth` object (empty when it sent none).
    pub auth: Map<String, Value>,
    /// What the HTTP request that opened the connection said.
    pub handshake: Arc<Handshake>,
    /// The client came back within the recovery window and keeps its socket id.
    pub recovered: bool,
}

/// What the request that opened an Engine.IO connection carried.
#[derive(Debug, Clone, Default)]
pub struct Handshake {
    pub origin: Option<String>,
    pub cookie_header: Option<String>,
    /// The client's address (the trusted proxy's `X-Forwarded-For` entry when configured).
    pub address: Option<IpAddr>,
}

impl Handshake {
    /// The value of the cookie `name`, if the request sent one.
    /// Parsed as actix-web parses a request's cookies (`HttpRequest::cookies`): each pair by the
    /// `cookie` crate, quotes around a value taken off.
    pub fn cookie(&self, name: &str) -> Option<&str> {
        self.cookie_header
            .as_deref()?
            .split(';')
            .filter_map(|pair| actix_web::cookie::Cookie::parse(pair.trim()).ok())
            .find(|cookie| cookie.name() == name)
            .and_then(|cookie| cookie.value_raw())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_found_by_name() {
        let handshake = Handshake {
            cookie_header: Some("a=1; vid=abc; session=\"x y\"".into()),
            ..Handshake::default()
        };
        assert_eq!(handshake.cookie("vid"), Some("abc"));
        assert_eq!(handshake.cookie("session"), Some("x y"));
        assert_eq!(handshake.cookie("missing"), None);
    }
}
