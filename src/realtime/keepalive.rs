//! The `/` namespace of the product: it accepts any client and ignores what it sends. A client
//! that only wants to hold a connection (a monitor, the load generator's `idle` scenario) joins it,
//! so an idle connection costs the server its transport and socket, nothing more.

use actix::{Actor, Context, Handler, Recipient};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;

use super::{ConnectError, ConnectRequest, Namespace, SocketEvent, SocketRef};

/// Receives the events of every `/` socket and drops them.
struct Sink;

impl Actor for Sink {
    type Context = Context<Self>;
}

impl Handler<SocketEvent> for Sink {
    type Result = ();

    fn handle(&mut self, event: SocketEvent, _ctx: &mut Self::Context) {
        if let SocketEvent::Event { ack: Some(ack), .. } = event {
            // A client that asks for an answer gets an empty one rather than waiting forever.
            ack.send_json(&serde_json::json!({}));
        }
    }
}

/// Serves `/`: every connection is accepted; all of them share one sink actor.
pub struct KeepAlive {
    sink: std::sync::OnceLock<Recipient<SocketEvent>>,
}

impl KeepAlive {
    pub fn new() -> Self {
        Self {
            sink: std::sync::OnceLock::new(),
        }
    }
}

impl Default for KeepAlive {
    fn default() -> Self {
        Self::new()
    }
}

impl Namespace for KeepAlive {
    fn connect(
        &self,
        _request: ConnectRequest,
        _socket: SocketRef,
    ) -> BoxFuture<'static, Result<Recipient<SocketEvent>, ConnectError>> {
        // Started on the first connection, on the arbiter that serves it.
        let sink = self.sink.get_or_init(|| Sink.start().recipient()).clone();
        futures_util::future::ready(Ok(sink)).boxed()
    }
}
