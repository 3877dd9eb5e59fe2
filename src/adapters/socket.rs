//! A real-time socket as an actor's client ([`ActorClient`]) and a client's acknowledgement as
//! an actor's [`Reply`]: what the funnel and member namespaces share, below both.

use std::net::IpAddr;

use helpnow_actors::ports::ActorClient;
use helpnow_actors::reply::Reply;
use serde_json::Value;

use crate::realtime::{AckSender, SocketRef};

/// A socket as an actor sees it (the funnel's and the member's).
pub struct SocketClient {
    pub socket: SocketRef,
    pub address: Option<IpAddr>,
}

impl ActorClient for SocketClient {
    fn id(&self) -> &str {
        self.socket.id()
    }

    fn address(&self) -> Option<IpAddr> {
        self.address
    }

    fn emit(&self, event: &'static str, data: Value) {
        self.socket.emit(event, &data);
    }

    fn emit_volatile(&self, event: &'static str, data: Value) {
        self.socket.emit_volatile(event, data);
    }

    fn disconnect(&self) {
        self.socket.disconnect();
    }

    fn reconnect(&self) {
        self.socket.close_connection();
    }
}

/// The acknowledgement of a client's event as an actor's `Reply` (none when none was asked for).
pub fn reply<T: 'static>(ack: Option<AckSender>, to_json: fn(&T) -> Value) -> Reply<T> {
    match ack {
        Some(ack) => Reply::new(move |answer: T| ack.send_json(&to_json(&answer))),
        None => Reply::none(),
    }
}
