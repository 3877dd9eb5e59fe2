//! HTTP long-polling: each session is an actor found by its sid ([`super::sessions`]). A GET
//! waits for packets (at the latest the next ping), a POST delivers the client's packets
//! ([`super::endpoint`] passes them on). When the client upgrades, the session hands its
//! connection to the WebSocket actor and forwards what is still on its way.

use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, ActorContext, AsyncContext, Context, Handler, Message, MessageResult};
use tokio::sync::oneshot;

use super::connection::{self, Connection, Transport};
use super::engineio::{self, Packet};
use super::errors::EngineError;
use super::payload::DisconnectReason;
use super::route::Route;
use super::session_messages::{
    Deliver, Discard, Fail, HandOver, HandedOver, Poll, PollingHandle, Probing, SessionEnded,
    Undiscard,
};
use super::sessions::PollingSessions;
use super::socket::Outbound;

/// How long a session the server closed while no GET was pending keeps the close for the
/// client's next GET (engine.io's `closeTimeout`).
const CLOSE_TIMEOUT: Duration = Duration::from_secs(30);

pub(crate) struct PollingTransport {
    sessions: PollingSessions,
    sid: Arc<str>,
    /// `None` once handed to a WebSocket.
    conn: Option<Connection>,
    route: Arc<Route<Outbound>>,
    /// Packets waiting for the next GET.
    outbox: Vec<Packet>,
    /// The outbox's size as a GET's payload: past `limit` the client is dropped.
    outbox_bytes: usize,
    /// Most bytes that may wait for the client's next GET (`max_buffered_bytes`).
    limit: Option<usize>,
    /// The GET waiting for packets.
    waiting: Option<oneshot::Sender<String>>,
    /// A WebSocket is probing: answer GETs at once so the client can pause polling.
    discarded: bool,
    closed: bool,
    /// The client sent a close packet: nothing more is owed to it.
    client_closed: bool,
    /// The server closed the session while no GET was pending: the next GET gets what is left
    /// and the close packet, then the sid is forgotten.
    close_owed: bool,
    /// After the handover: the WebSocket that now carries the connection.
    forward_to: Option<actix::Recipient<Outbound>>,
    /// A WebSocket probing this session, told if it ends first.
    prober: Option<actix::Recipient<SessionEnded>>,
}

impl PollingTransport {
    pub(crate) fn new(sessions: PollingSessions, conn: Connection, limit: Option<usize>) -> Self {
        Self {
            sessions,
            sid: conn.sid.clone(),
            route: conn.route.clone(),
            conn: Some(conn),
            outbox: Vec::new(),
            outbox_bytes: 0,
            limit,
            waiting: None,
            discarded: false,
            closed: false,
            client_closed: false,
            close_owed: false,
            forward_to: None,
            prober: None,
        }
    }

    /// Answers the waiting GET with everything in the outbox.
    fn flush(&mut self) {
        if self.outbox.is_empty() {
            return;
        }
        let Some(waiting) = self.waiting.take() else {
            return;
        };
        // A GET the client gave up on keeps the packets for the next one.
        if waiting.send(engineio::encode_payload(&self.outbox)).is_ok() {
            self.take_outbox();
        }
    }

    fn take_outbox(&mut self) -> Vec<Packet> {
        self.outbox_bytes = 0;
        std::mem::take(&mut self.outbox)
    }

    fn answer_now(&mut self, packet: Packet) {
        if let Some(waiting) = self.waiting.take() {
            let _ = waiting.send(packet.encode_text());
        }
    }
}

impl Actor for PollingTransport {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.route.set(Some(ctx.address().recipient()));
        connection::start(self, ctx);
    }

    fn stopped(&mut self, _: &mut Self::Context) {
        if self.conn.is_some() || self.close_owed {
            self.sessions.remove(&self.sid);
            self.answer_now(Packet::Close);
            if let Some(prober) = self.prober.take() {
                prober.do_send(SessionEnded);
            }
        }
    }
}

impl Transport for PollingTransport {
    fn connection(&mut self) -> Option<&mut Connection> {
        self.conn.as_mut()
    }

    /// Packets wait for the next GET; a client that does not come for them while they pass the
    /// bound is dropped (its sockets may be recovered), rather than held in memory without end.
    fn write(&mut self, ctx: &mut Self::Context, packets: Vec<Packet>) {
        self.outbox_bytes += packets.iter().map(Packet::payload_len).sum::<usize>();
        self.outbox.extend(packets);
        self.flush();
        if self.limit.is_some_and(|limit| self.outbox_bytes > limit) {
            tracing::info!(sid = %self.sid, "a long-polling client left too much unread; dropping it");
            self.take_outbox();
            connection::close(self, ctx, DisconnectReason::TransportError);
        }
    }

    fn close_transport(&mut self, ctx: &mut Self::Context, owe_close: bool) {
        // Once handed over, the connection is the WebSocket's to close; this actor must live
        // until it has passed on what it still holds.
        if self.closed || self.conn.is_none() {
            return;
        }
        self.closed = true;
        let get_pending = self.waiting.as_ref().is_some_and(|w| !w.is_closed());
        if self.client_closed || self.discarded {
            // Nothing is owed to a client that left, or that is upgrading (its probe is told).
        } else if get_pending {
            // The waiting GET learns of the close; after that the sid is unknown.
            self.outbox.push(Packet::Close);
            self.flush();
        } else if owe_close {
            // As engine.io does, the close waits for the client's next GET, so that the client
            // sees "transport close" rather than an unknown session. The connection is gone
            // already (it counts no more); only the sid and the outbox wait.
            self.close_owed = true;
            self.conn = None;
            ctx.run_later(CLOSE_TIMEOUT, |_, ctx| ctx.stop());
            return;
        }
        ctx.stop();
    }
}

impl Handler<Outbound> for PollingTransport {
    type Result = ();

    fn handle(&mut self, message: Outbound, ctx: &mut Self::Context) {
        if self.conn.is_some() {
            connection::on_outbound(self, ctx, message);
        } else if let Some(websocket) = &self.forward_to {
            // Handed over: pass it on, in order, to the WebSocket.
            websocket.do_send(message);
        }
    }
}

impl Handler<Poll> for PollingTransport {
    type Result = Result<oneshot::Receiver<String>, EngineError>;

    fn handle(&mut self, _: Poll, ctx: &mut Self::Context) -> Self::Result {
        if self.close_owed {
            // What was left, or a noop (engine.io's flush of an empty buffer), then the close.
            if self.outbox.is_empty() {
                self.outbox.push(Packet::Noop);
            }
            self.outbox.push(Packet::Close);
            let (sender, receiver) = oneshot::channel();
            let _ = sender.send(engineio::encode_payload(&self.take_outbox()));
            ctx.stop();
            return Ok(receiver);
        }
        if self.conn.is_none() || self.closed {
            return Err(EngineError::UnknownSid);
        }
        if self.waiting.as_ref().is_some_and(|w| !w.is_closed()) {
            // Two GETs at once: the reference ends such a session.
            connection::close(self, ctx, DisconnectReason::TransportError);
            return Err(EngineError::BadRequest);
        }
        let (sender, receiver) = oneshot::channel();
        self.waiting = Some(sender);
        if self.discarded {
            self.answer_now(Packet::Noop);
        } else {
            self.flush();
        }
        Ok(receiver)
    }
}

impl Handler<Deliver> for PollingTransport {
    type Result = ();

    fn handle(&mut self, Deliver(packets): Deliver, ctx: &mut Self::Context) {
        if self.close_owed {
            // The session is closed; a client that says it is leaving is owed nothing more.
            if packets.contains(&Packet::Close) {
                ctx.stop();
            }
            return;
        }
        for packet in packets {
            if packet == Packet::Close {
                // The client is leaving: its waiting GET ends with a noop and the sid is gone.
                self.client_closed = true;
                self.answer_now(Packet::Noop);
            }
            connection::on_packet(self, ctx, packet);
        }
    }
}

impl Handler<Fail> for PollingTransport {
    type Result = ();

    fn handle(&mut self, Fail(reason): Fail, ctx: &mut Self::Context) {
        connection::close(self, ctx, reason);
    }
}

impl Handler<Discard> for PollingTransport {
    type Result = ();

    fn handle(&mut self, _: Discard, _: &mut Self::Context) {
        self.discarded = true;
        self.answer_now(Packet::Noop);
    }
}

impl Handler<Undiscard> for PollingTransport {
    type Result = ();

    fn handle(&mut self, _: Undiscard, _: &mut Self::Context) {
        self.discarded = false;
        self.prober = None;
        self.flush();
    }
}

impl Handler<Probing> for PollingTransport {
    type Result = ();

    fn handle(&mut self, Probing(prober): Probing, _: &mut Self::Context) {
        self.prober = Some(prober);
    }
}

impl Handler<HandOver> for PollingTransport {
    type Result = MessageResult<HandOver>;

    fn handle(&mut self, HandOver { to }: HandOver, ctx: &mut Self::Context) -> Self::Result {
        if self.closed {
            return MessageResult(None);
        }
        let Some(conn) = self.conn.take() else {
            return MessageResult(None);
        };
        self.sessions.remove(&self.sid);
        self.answer_now(Packet::Noop);
        // Messages already queued here are passed on by this actor; messages sent from now on
        // wait in the route until those are through, so the client gets everything in order.
        self.route.hold();
        self.forward_to = Some(to.clone());
        ctx.address().do_send(Retarget(to));
        MessageResult(Some(HandedOver {
            conn,
            unsent: self.take_outbox(),
        }))
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct Retarget(actix::Recipient<Outbound>);

impl Handler<Retarget> for PollingTransport {
    type Result = ();

    fn handle(&mut self, Retarget(to): Retarget, ctx: &mut Self::Context) {
        self.route.release_to(to);
        ctx.stop();
    }
}

/// Starts the polling session of `conn`, holding at most `limit` bytes for the client between
/// two GETs: its handle, for the session table.
pub(crate) fn start(
    sessions: PollingSessions,
    conn: Connection,
    limit: Option<usize>,
) -> PollingHandle {
    PollingHandle::of(&PollingTransport::new(sessions, conn, limit).start())
}
