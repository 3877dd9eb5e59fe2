//! The WebSocket transport: each connection is an actor on actix-web-actors' `WebsocketContext`.
//! A text frame is one Engine.IO packet; a binary frame is a binary message. A WebSocket opened
//! with the sid of a polling session first probes, then takes that session's connection over.

use std::sync::Arc;

use actix::{
    Actor, ActorContext, ActorFutureExt, Addr, AsyncContext, Handler, StreamHandler, WrapFuture,
};
use actix_http::ws::Item;
use actix_web::{HttpRequest, HttpResponse, web};
use actix_web_actors::ws::{self, CloseCode, CloseReason, WebsocketContext};
use bytes::{Bytes, BytesMut};

use super::RealtimeServer;
use super::connection::{self, Connection, Transport};
use super::engineio::{Message, Packet};
use super::polling::{Discard, HandOver, PollingTransport, Undiscard};
use super::server::EngineError;
use super::socket::{DisconnectReason, Outbound};

pub(crate) struct WebSocketTransport {
    state: State,
    /// A message arriving in several frames, put back together up to the payload limit.
    fragments: Option<Fragments>,
    max_payload: usize,
}

// Nearly every WebSocket is `Open`; boxing the connection would cost each one an allocation.
#[allow(clippy::large_enum_variant)]
enum State {
    Open(Connection),
    /// Probing an upgrade of the polling session `sid`.
    Probing {
        server: RealtimeServer,
        sid: Arc<str>,
        polling: Addr<PollingTransport>,
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
            server.abandon_upgrade(sid);
            polling.do_send(Undiscard);
            self.state = State::Closed;
        }
    }

    fn handle_packet(&mut self, packet: Packet, ctx: &mut WebsocketContext<Self>) {
        match &self.state {
            // A WebSocket ends by closing itself; a close packet on it means nothing, as in
            // the reference.
            State::Open(_) if packet == Packet::Close => {}
            State::Open(_) => connection::on_packet(self, ctx, packet),
            State::Probing { polling, .. } => match packet {
                Packet::Ping(data) if data == "probe" => {
                    ctx.text(Packet::Pong(data).encode_text());
                    polling.do_send(Discard);
                }
                Packet::Upgrade => self.complete_upgrade(ctx),
                _ => ctx.stop(),
            },
            State::Closed => {}
        }
    }

    fn complete_upgrade(&mut self, ctx: &mut WebsocketContext<Self>) {
        let State::Probing { polling, .. } = &self.state else {
            return;
        };
        let handover = polling.send(HandOver {
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
                _ => {
                    act.abandon_upgrade();
                    ctx.stop();
                }
            }
        }));
    }

    fn handle_frame(&mut self, text: bool, data: Bytes, ctx: &mut WebsocketContext<Self>) {
        if !text {
            self.handle_packet(Packet::Message(Message::Binary(data)), ctx);
            return;
        }
        match std::str::from_utf8(&data)
            .ok()
            .and_then(|text| Packet::decode_text(text).ok())
        {
            Some(packet) => self.handle_packet(packet, ctx),
            None => connection::close(self, ctx, DisconnectReason::ParseError),
        }
    }
}

impl Actor for WebSocketTransport {
    type Context = WebsocketContext<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        match &self.state {
            State::Open(conn) => {
                conn.route.set(Some(ctx.address().recipient()));
                let open = conn.open_packet(&[]);
                self.write(ctx, vec![open]);
                connection::start(self, ctx);
            }
            State::Probing { server, .. } => {
                let timeout = server.config().upgrade_timeout;
                // Only a probe that is still a probe gives up: once the upgrade finished, this
                // actor carries the connection and must outlive the timer.
                ctx.run_later(timeout, |act, ctx| {
                    if matches!(act.state, State::Probing { .. }) {
                        act.abandon_upgrade();
                        ctx.stop();
                    }
                });
            }
            State::Closed => {}
        }
    }

    fn stopped(&mut self, _: &mut Self::Context) {
        self.abandon_upgrade();
        // Dropping the connection tells its sockets' handlers.
        self.state = State::Closed;
    }
}

impl Transport for WebSocketTransport {
    fn connection(&mut self) -> Option<&mut Connection> {
        match &mut self.state {
            State::Open(conn) => Some(conn),
            _ => None,
        }
    }

    fn write(&mut self, ctx: &mut Self::Context, packets: Vec<Packet>) {
        for packet in packets {
            match packet {
                Packet::Message(Message::Binary(bytes)) => ctx.binary(bytes),
                other => ctx.text(other.encode_text()),
            }
        }
    }

    fn close_transport(&mut self, ctx: &mut Self::Context) {
        ctx.close(Some(CloseReason::from(CloseCode::Normal)));
        ctx.stop();
    }
}

impl Handler<Outbound> for WebSocketTransport {
    type Result = ();

    fn handle(&mut self, message: Outbound, ctx: &mut Self::Context) {
        connection::on_outbound(self, ctx, message);
    }
}

impl StreamHandler<Result<ws::Message, ws::ProtocolError>> for WebSocketTransport {
    fn handle(&mut self, frame: Result<ws::Message, ws::ProtocolError>, ctx: &mut Self::Context) {
        let frame = match frame {
            Ok(frame) => frame,
            Err(err) => {
                tracing::debug!(%err, "WebSocket protocol error");
                connection::close(self, ctx, DisconnectReason::TransportError);
                return;
            }
        };
        match frame {
            ws::Message::Text(text) => self.handle_frame(true, text.into_bytes(), ctx),
            ws::Message::Binary(data) => self.handle_frame(false, data, ctx),
            ws::Message::Continuation(item) => {
                let (first, last, chunk) = match item {
                    Item::FirstText(chunk) => (Some(true), false, chunk),
                    Item::FirstBinary(chunk) => (Some(false), false, chunk),
                    Item::Continue(chunk) => (None, false, chunk),
                    Item::Last(chunk) => (None, true, chunk),
                };
                if let Some(text) = first {
                    self.fragments = Some(Fragments {
                        text,
                        data: BytesMut::new(),
                    });
                }
                let Some(fragments) = self.fragments.as_mut() else {
                    connection::close(self, ctx, DisconnectReason::TransportError);
                    return;
                };
                if fragments.data.len() + chunk.len() > self.max_payload {
                    connection::close(self, ctx, DisconnectReason::TransportError);
                    return;
                }
                fragments.data.extend_from_slice(&chunk);
                if last && let Some(done) = self.fragments.take() {
                    self.handle_frame(done.text, done.data.freeze(), ctx);
                }
            }
            ws::Message::Ping(data) => ctx.pong(&data),
            ws::Message::Pong(_) | ws::Message::Nop => {}
            ws::Message::Close(_) => connection::close(self, ctx, DisconnectReason::TransportClose),
        }
    }

    fn finished(&mut self, ctx: &mut Self::Context) {
        connection::close(self, ctx, DisconnectReason::TransportClose);
    }
}

fn start(
    transport: WebSocketTransport,
    req: &HttpRequest,
    body: web::Payload,
) -> Result<HttpResponse, actix_web::Error> {
    let max_payload = transport.max_payload;
    ws::WsResponseBuilder::new(transport, req, body)
        .frame_size(max_payload)
        .start()
}

/// A new connection that starts on WebSocket.
pub(crate) fn open(server: &RealtimeServer, req: &HttpRequest, body: web::Payload) -> HttpResponse {
    if ws::handshake(req).is_err() {
        return EngineError::BadRequest.response();
    }
    let transport = WebSocketTransport {
        state: State::Open(Connection::new(server.clone(), server.handshake(req))),
        fragments: None,
        max_payload: server.config().max_payload,
    };
    start(transport, req, body).unwrap_or_else(|_| EngineError::BadRequest.response())
}

/// A WebSocket that wants to take over the polling session `sid`.
pub(crate) fn upgrade(
    server: &RealtimeServer,
    sid: &str,
    req: &HttpRequest,
    body: web::Payload,
) -> HttpResponse {
    if ws::handshake(req).is_err() {
        return EngineError::BadRequest.response();
    }
    let polling = match server.begin_upgrade(sid) {
        Ok(polling) => polling,
        Err(error) => return error.response(),
    };
    let transport = WebSocketTransport {
        state: State::Probing {
            server: server.clone(),
            sid: Arc::from(sid),
            polling,
        },
        fragments: None,
        max_payload: server.config().max_payload,
    };
    start(transport, req, body).unwrap_or_else(|_| {
        server.abandon_upgrade(sid);
        EngineError::BadRequest.response()
    })
}
