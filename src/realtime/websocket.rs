//! The WebSocket transport: each connection is an actor reading frames from its socket
//! ([`wire::FrameReader`]) and queueing frames to it ([`wire::FrameWriter`]); the upgrade that
//! opened it ([`super::upgrade`]) writes them out. A text frame is one Engine.IO packet; a binary
//! frame is a binary message. A WebSocket opened with the sid of a polling session first probes,
//! then takes that session's connection over.

use std::sync::Arc;

use actix::{
    Actor, ActorContext, ActorFutureExt, Addr, AsyncContext, Context, Handler, StreamHandler,
    WrapFuture,
};
use actix_http::ws::{CloseCode, CloseReason, Frame, Item, ProtocolError};
use bytes::{Bytes, BytesMut};

use super::RealtimeServer;
use super::connection::{self, Connection, Transport};
use super::engineio::{Message, Packet};
use super::errors::EngineError;
use super::namespace::Handshake;
use super::payload::DisconnectReason;
use super::session_messages::{Discard, HandOver, PollingHandle, Probing, SessionEnded, Undiscard};
use super::socket::Outbound;
use super::state::AddressPlace;
use super::wire::{FrameReader, FrameWriter};

pub(crate) struct WebSocketTransport {
    state: State,
    /// Set when the actor starts.
    writer: Option<FrameWriter>,
    /// A message arriving in several frames, put back together up to the payload limit (boxed:
    /// rare, and every connection would carry its size).
    fragments: Option<Box<Fragments>>,
    max_payload: usize,
    /// The status of the close frame this side sends. Like the reference (the `ws` package under
    /// engine.io), a close of ours carries none (the client reads 1005), a client's close is
    /// answered with its own status, and a message over the payload limit gets 1009.
    close_reason: Option<CloseReason>,
}

// Nearly every WebSocket is `Open`; boxing the connection would cost each one an allocation.
#[allow(clippy::large_enum_variant)]
enum State {
    Open(Connection),
    /// Probing an upgrade of the polling session `sid`.
    Probing {
        server: RealtimeServer,
        sid: Arc<str>,
        polling: Arc<PollingHandle>,
    },
    Closed,
}

struct Fragments {
    text: bool,
    data: BytesMut,
}

impl WebSocketTransport {
    /// A probe that did not become an upgrade: the polling session goes on as before.
    fn abandon_upgrade(&mut self) {
        if let State::Probing {
            server,
            sid,
            polling,
        } = &self.state
        {
            server.sessions().abandon_upgrade(sid);
            polling.undiscard.do_send(Undiscard);
            self.state = State::Closed;
        }
    }

    fn handle_packet(&mut self, packet: Packet, ctx: &mut Context<Self>) {
        match &self.state {
            // A WebSocket ends by closing itself; a close packet on it means nothing, as in
            // the reference.
            State::Open(_) if packet == Packet::Close => {}
            State::Open(_) => connection::on_packet(self, ctx, packet),
            State::Probing { polling, .. } => match packet {
                Packet::Ping(data) if data == "probe" => {
                    self.send_text(Packet::Pong(data).encode_text());
                    polling.discard.do_send(Discard);
                }
                Packet::Upgrade => self.complete_upgrade(ctx),
                // The reference closes such a probe (without a status); polling goes on.
                _ => self.end_probe(ctx),
            },
            State::Closed => {}
        }
    }

    /// Ends a probe that did not become an upgrade with a close frame: polling goes on.
    fn end_probe(&mut self, ctx: &mut Context<Self>) {
        self.abandon_upgrade();
        if let Some(writer) = &self.writer {
            writer.close(self.close_reason.take());
        }
        ctx.stop();
    }

    fn complete_upgrade(&mut self, ctx: &mut Context<Self>) {
        let State::Probing { polling, .. } = &self.state else {
            return;
        };
        let handover = polling.hand_over.send(HandOver {
            to: ctx.address().recipient(),
        });
        // Nothing else is handled until the connection has moved here.
        ctx.wait(handover.into_actor(self).map(|result, act, ctx| {
            if !matches!(act.state, State::Probing { .. }) {
                return;
            }
            match result {
                Ok(Some(handed)) => {
                    act.state = State::Open(handed.conn);
                    act.write(ctx, handed.unsent);
                    connection::start(act, ctx);
                }
                _ => act.end_probe(ctx),
            }
        }));
    }

    fn handle_frame(&mut self, text: bool, data: Bytes, ctx: &mut Context<Self>) {
        if !text {
            self.handle_packet(Packet::Message(Message::Binary(data)), ctx);
            return;
        }
        // A text frame that is not UTF-8 breaks the WebSocket protocol itself.
        let Ok(text) = std::str::from_utf8(&data) else {
            connection::close(self, ctx, DisconnectReason::TransportError);
            return;
        };
        match Packet::decode_from_client(text) {
            Ok(packet) => self.handle_packet(packet, ctx),
            Err(_) => connection::close(self, ctx, DisconnectReason::ParseError),
        }
    }

    fn send_text(&self, text: String) {
        if let Some(writer) = &self.writer {
            writer.text(text);
        }
    }

    /// Drops the connection of a client that left more unread than `max_buffered_bytes` (its
    /// frames were dropped already): as a lost connection, whose sockets may be recovered. A probe
    /// just ends, and its polling session goes on.
    fn drop_if_overflowed(&mut self, ctx: &mut Context<Self>) {
        if !self.writer.as_ref().is_some_and(FrameWriter::overflowed) {
            return;
        }
        tracing::info!("a WebSocket client left too much unread; dropping it");
        match self.state {
            State::Probing { .. } => self.end_probe(ctx),
            _ => connection::close(self, ctx, DisconnectReason::TransportError),
        }
    }
}

impl Actor for WebSocketTransport {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        match &self.state {
            State::Open(conn) => {
                conn.route.set(Some(ctx.address().recipient()));
                let open = conn.open_packet(&[]);
                self.write(ctx, vec![open]);
                connection::start(self, ctx);
            }
            State::Probing {
                server, polling, ..
            } => {
                polling.probing.do_send(Probing(ctx.address().recipient()));
                let timeout = server.config().upgrade_timeout;
                // Only a probe that is still a probe gives up: once the upgrade finished, this
                // actor carries the connection and must outlive the timer.
                ctx.run_later(timeout, |act, ctx| {
                    if matches!(act.state, State::Probing { .. }) {
                        act.end_probe(ctx);
                    }
                });
            }
            State::Closed => {
                if let Some(writer) = &self.writer {
                    writer.close(None);
                }
                ctx.stop();
            }
        }
    }

    fn stopped(&mut self, _: &mut Self::Context) {
        self.abandon_upgrade();
        // Dropping the connection tells its sockets' handlers; dropping the writer lets its last
        // frames go out and then the socket close.
        self.state = State::Closed;
        self.writer = None;
    }
}

impl Drop for WebSocketTransport {
    /// A transport dropped before it ran (its upgrade was never answered) gives the probe up too.
    fn drop(&mut self) {
        self.abandon_upgrade();
    }
}

impl Transport for WebSocketTransport {
    fn connection(&mut self) -> Option<&mut Connection> {
        match &mut self.state {
            State::Open(conn) => Some(conn),
            _ => None,
        }
    }

    /// The frames of one turn of the actor go out together: the first write of a turn holds the
    /// writer, and a future spawned on the actor's context releases it once the turn's messages
    /// have been handled (actix polls the context's futures after its mailbox). An ack and the
    /// typing event that follows it, or the typing's end and the reply, are one system call
    /// instead of two.
    fn write(&mut self, ctx: &mut Self::Context, packets: Vec<Packet>) {
        let Some(writer) = &self.writer else { return };
        let began = writer.hold();
        for packet in packets {
            match packet {
                Packet::Message(Message::Binary(bytes)) => writer.binary(bytes),
                other => writer.text(other.encode_text()),
            }
        }
        if began {
            ctx.spawn(actix::fut::ready(()).map(|(), act: &mut Self, ctx| {
                if let Some(writer) = &act.writer {
                    writer.release();
                }
                act.drop_if_overflowed(ctx);
            }));
        }
    }

    fn close_transport(&mut self, ctx: &mut Self::Context, _owe_close: bool) {
        if let Some(writer) = &self.writer {
            writer.close(self.close_reason.take());
        }
        ctx.stop();
    }
}

impl Handler<SessionEnded> for WebSocketTransport {
    type Result = ();

    fn handle(&mut self, _: SessionEnded, ctx: &mut Self::Context) {
        if matches!(self.state, State::Probing { .. }) {
            self.end_probe(ctx);
        }
    }
}

impl Handler<Outbound> for WebSocketTransport {
    type Result = ();

    fn handle(&mut self, message: Outbound, ctx: &mut Self::Context) {
        connection::on_outbound(self, ctx, message);
    }
}

impl StreamHandler<Result<Frame, ProtocolError>> for WebSocketTransport {
    /// Handles one frame from the client. What it was answered with at once (a pong, a probe's
    /// pong) may be what overflowed a client that does not read.
    fn handle(&mut self, frame: Result<Frame, ProtocolError>, ctx: &mut Self::Context) {
        self.handle_client_frame(frame, ctx);
        self.drop_if_overflowed(ctx);
    }

    fn finished(&mut self, ctx: &mut Self::Context) {
        connection::close(self, ctx, DisconnectReason::TransportClose);
    }
}

impl WebSocketTransport {
    fn handle_client_frame(
        &mut self,
        frame: Result<Frame, ProtocolError>,
        ctx: &mut Context<Self>,
    ) {
        let frame = match frame {
            Ok(frame) => frame,
            Err(err) => {
                tracing::debug!(%err, "WebSocket protocol error");
                if matches!(err, ProtocolError::Overflow) {
                    self.close_reason = Some(CloseReason::from(CloseCode::Size));
                }
                connection::close(self, ctx, DisconnectReason::TransportError);
                return;
            }
        };
        match frame {
            Frame::Text(text) => self.handle_frame(true, text, ctx),
            Frame::Binary(data) => self.handle_frame(false, data, ctx),
            Frame::Continuation(item) => {
                let (first, last, chunk) = match item {
                    Item::FirstText(chunk) => (Some(true), false, chunk),
                    Item::FirstBinary(chunk) => (Some(false), false, chunk),
                    Item::Continue(chunk) => (None, false, chunk),
                    Item::Last(chunk) => (None, true, chunk),
                };
                if let Some(text) = first {
                    self.fragments = Some(Box::new(Fragments {
                        text,
                        data: BytesMut::new(),
                    }));
                }
                let Some(fragments) = self.fragments.as_mut() else {
                    connection::close(self, ctx, DisconnectReason::TransportError);
                    return;
                };
                if fragments.data.len() + chunk.len() > self.max_payload {
                    self.close_reason = Some(CloseReason::from(CloseCode::Size));
                    connection::close(self, ctx, DisconnectReason::TransportError);
                    return;
                }
                fragments.data.extend_from_slice(&chunk);
                if last && let Some(done) = self.fragments.take() {
                    self.handle_frame(done.text, done.data.freeze(), ctx);
                }
            }
            Frame::Ping(data) => {
                if let Some(writer) = &self.writer {
                    writer.pong(data);
                }
            }
            Frame::Pong(_) => {}
            Frame::Close(reason) => {
                self.close_reason = reason;
                match self.state {
                    State::Probing { .. } => self.end_probe(ctx),
                    _ => connection::close(self, ctx, DisconnectReason::TransportClose),
                }
            }
        }
    }
}

/// A new connection that starts on WebSocket.
pub(crate) fn open(
    server: &RealtimeServer,
    handshake: Handshake,
    place: AddressPlace,
) -> WebSocketTransport {
    WebSocketTransport {
        state: State::Open(Connection::new(server.state().clone(), handshake, place)),
        writer: None,
        fragments: None,
        max_payload: server.config().max_payload,
        close_reason: None,
    }
}

/// A WebSocket the reference accepts only to close it at once (without a status).
pub(crate) fn closed_at_once() -> WebSocketTransport {
    WebSocketTransport {
        state: State::Closed,
        writer: None,
        fragments: None,
        max_payload: 0,
        close_reason: None,
    }
}

/// A WebSocket that wants to take over the polling session `sid`.
pub(crate) fn upgrade(
    server: &RealtimeServer,
    sid: &str,
) -> Result<WebSocketTransport, EngineError> {
    let polling = server.sessions().begin_upgrade(sid)?;
    Ok(WebSocketTransport {
        state: State::Probing {
            server: server.clone(),
            sid: Arc::from(sid),
            polling,
        },
        writer: None,
        fragments: None,
        max_payload: server.config().max_payload,
        close_reason: None,
    })
}

impl WebSocketTransport {
    /// Starts the actor on an upgraded socket: it reads `reader`'s frames and queues its own to
    /// `writer`.
    pub(crate) fn run(mut self, reader: FrameReader, writer: FrameWriter) -> Addr<Self> {
        self.writer = Some(writer);
        Self::create(move |ctx| {
            ctx.add_stream(reader);
            self
        })
    }

    /// The largest frame the client may send.
    pub(crate) fn max_payload(&self) -> usize {
        self.max_payload
    }
}
