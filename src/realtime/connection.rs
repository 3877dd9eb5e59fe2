//! One Engine.IO connection and the Socket.IO sockets it carries, whatever its transport.
//!
//! The state lives in [`Connection`]; the functions here drive it from inside a transport actor
//! (WebSocket or long-polling), which only knows how to write packets and how to close. When a
//! polling connection upgrades, its `Connection` moves to the WebSocket actor whole.

use std::sync::Arc;
use std::time::Instant;

use actix::dev::ToEnvelope;
use actix::{Actor, AsyncContext, Handler, SpawnHandle};
use bytes::Bytes;
use governor::clock::DefaultClock;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use serde_json::{Map, Value, json};

use super::engineio::{self, Message, OpenPayload};
use super::namespace::{ConnectRequest, Handshake};
use super::payload::{ConnectError, DisconnectReason, Outgoing, Payload};
use super::route::Route;
use super::socket::{AckSender, ConnectFinished, Outbound, Resume, SocketEvent, SocketRef};
use super::socketio::{self, PacketType};
use super::state::{AddressPlace, ServerState};
use actix::Recipient;
use tokio::sync::oneshot;

/// A transport actor: it carries one [`Connection`] (none while it is only probing an upgrade,
/// or after it handed its connection over).
pub(crate) trait Transport: Actor + Handler<Outbound> + Sized {
    fn connection(&mut self) -> Option<&mut Connection>;
    /// Writes Engine.IO packets to the client, in order.
    fn write(&mut self, ctx: &mut Self::Context, packets: Vec<engineio::Packet>);
    /// Ends the transport once its connection has closed. `owe_close`: the server closed it on
    /// purpose, so a long-polling client that has no GET waiting gets the close packet with its
    /// next one (see [`close`]).
    fn close_transport(&mut self, ctx: &mut Self::Context, owe_close: bool);
}

pub(crate) struct Connection {
    server: ServerState,
    /// Its place among its client address's connections, given back when the connection goes.
    _place: AddressPlace,
    pub sid: Arc<str>,
    handshake: Arc<Handshake>,
    /// Where this connection's sockets send to; follows the connection across an upgrade.
    pub route: Arc<Route<Outbound>>,
    sockets: Vec<Joined>,
    /// Namespaces whose connect handler has not answered yet.
    connecting: Vec<Arc<str>>,
    /// A binary packet waiting for its attachments (boxed: rare, and every connection would
    /// carry its size).
    partial: Option<Box<Partial>>,
    acks: Vec<PendingAck>,
    next_ack_id: u64,
    limiter: Option<DefaultDirectRateLimiter>,
    /// The next ping, or the deadline for the pong of the last one.
    heartbeat: Option<SpawnHandle>,
    awaiting_pong: bool,
    /// A packet other than a pong came while the pong was awaited, and the wait started over (once
    /// per ping, as engine.io does: the client is alive, its pong may be behind other packets).
    pong_wait_extended: bool,
    connect_timer: Option<SpawnHandle>,
    opened_at: Instant,
    closed: bool,
}

struct Joined {
    socket: SocketRef,
    handler: Recipient<SocketEvent>,
}

struct Partial {
    packet: socketio::Packet,
    attachments: Vec<Bytes>,
    /// Text and attachments so far; one packet may not exceed the payload limit.
    bytes: usize,
}

struct PendingAck {
    namespace: Arc<str>,
    id: u64,
    reply: oneshot::Sender<Payload>,
}

/// The clock of every connection's rate limiter. Making one calibrates it with CPUID, which a
/// virtual machine traps: one per connection was 1 % of the server's CPU at 19,000 funnel
/// conversations.
static LIMITER_CLOCK: std::sync::LazyLock<DefaultClock> =
    std::sync::LazyLock::new(DefaultClock::default);

impl Connection {
    pub fn new(server: ServerState, handshake: Handshake, place: AddressPlace) -> Self {
        let limiter = server.config().rate_limit.map(|limit| {
            let quota = Quota::per_second(limit.per_second).allow_burst(limit.burst);
            RateLimiter::direct_with_clock(quota, LIMITER_CLOCK.clone())
        });
        let sid: Arc<str> = super::socket::random_id().into();
        let route = Arc::new(Route::default());
        server.connection_opened(sid.clone(), route.clone());
        Self {
            server,
            _place: place,
            sid,
            handshake: Arc::new(handshake),
            route,
            sockets: Vec::new(),
            connecting: Vec::new(),
            partial: None,
            acks: Vec::new(),
            next_ack_id: 0,
            limiter,
            heartbeat: None,
            awaiting_pong: false,
            pong_wait_extended: false,
            connect_timer: None,
            opened_at: Instant::now(),
            closed: false,
        }
    }

    /// The handshake packet: what the client needs to know to keep the connection alive.
    pub fn open_packet(&self, upgrades: &[&str]) -> engineio::Packet {
        let config = self.server.config();
        engineio::Packet::Open(OpenPayload {
            sid: self.sid.to_string(),
            upgrades: upgrades.iter().map(|u| (*u).to_owned()).collect(),
            ping_interval: config.ping_interval.as_millis() as u64,
            ping_timeout: config.ping_timeout.as_millis() as u64,
            max_payload: config.max_payload as u64,
        })
    }

    fn joined(&self, namespace: &str) -> Option<&Joined> {
        self.sockets
            .iter()
            .find(|joined| joined.socket.namespace() == namespace)
    }

    /// Takes the socket of `namespace` off this connection for good: its pending acks end and its
    /// handler is told why. False when the connection has no such socket.
    fn leave(&mut self, namespace: &str, reason: DisconnectReason) -> bool {
        let Some(index) = self
            .sockets
            .iter()
            .position(|joined| joined.socket.namespace() == namespace)
        else {
            return false;
        };
        let joined = self.sockets.remove(index);
        self.acks.retain(|pending| *pending.namespace != *namespace);
        joined.socket.detach(false);
        joined.handler.do_send(SocketEvent::Disconnected {
            socket: joined.socket,
            reason,
        });
        true
    }

    /// Marks the connection closed and tells every socket's handler. Sockets lost to a dropped
    /// connection wait for their client when recovery is on.
    fn shut(&mut self, reason: DisconnectReason) {
        if self.closed {
            return;
        }
        self.closed = true;
        self.route.set(None);
        self.partial = None;
        self.acks.clear();
        let recoverable = reason.is_recoverable() && self.server.config().recovery_window.is_some();
        for joined in self.sockets.drain(..) {
            joined.socket.detach(recoverable);
            // The old handler hears of the loss before a recovering client can be attached.
            joined.handler.do_send(SocketEvent::Disconnected {
                socket: joined.socket.clone(),
                reason,
            });
            if recoverable {
                self.server.park(joined.socket);
            }
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.shut(DisconnectReason::TransportClose);
        self.server.connection_closed(&self.sid);
    }
}

fn open_conn<A: Transport>(act: &mut A) -> Option<&mut Connection> {
    act.connection().filter(|conn| !conn.closed)
}

/// Starts the timers of a connection that just opened (or just moved to this actor).
pub(crate) fn start<A>(act: &mut A, ctx: &mut A::Context)
where
    A: Transport,
    A::Context: AsyncContext<A> + ToEnvelope<A, Outbound>,
{
    let Some(conn) = open_conn(act) else { return };
    let connect_left = conn
        .server
        .config()
        .connect_timeout
        .saturating_sub(conn.opened_at.elapsed());
    let connect_timer = conn
        .sockets
        .is_empty()
        .then(|| ctx.run_later(connect_left, close_if_no_namespace::<A>));
    conn.connect_timer = connect_timer;
    schedule_ping(act, ctx);
}

/// The next ping, a ping interval from now.
fn schedule_ping<A>(act: &mut A, ctx: &mut A::Context)
where
    A: Transport,
    A::Context: AsyncContext<A> + ToEnvelope<A, Outbound>,
{
    let Some(conn) = open_conn(act) else { return };
    conn.awaiting_pong = false;
    conn.heartbeat = Some(ctx.run_later(conn.server.config().ping_interval, ping::<A>));
}

fn ping<A>(act: &mut A, ctx: &mut A::Context)
where
    A: Transport,
    A::Context: AsyncContext<A> + ToEnvelope<A, Outbound>,
{
    let Some(conn) = open_conn(act) else { return };
    conn.awaiting_pong = true;
    conn.pong_wait_extended = false;
    await_pong(act, ctx);
    act.write(ctx, vec![engineio::Packet::Ping(String::new())]);
}

/// Closes the connection unless a pong comes within the ping timeout.
fn await_pong<A>(act: &mut A, ctx: &mut A::Context)
where
    A: Transport,
    A::Context: AsyncContext<A> + ToEnvelope<A, Outbound>,
{
    let Some(conn) = open_conn(act) else { return };
    if let Some(deadline) = conn.heartbeat.take() {
        ctx.cancel_future(deadline);
    }
    let timeout = conn.server.config().ping_timeout;
    conn.heartbeat = Some(ctx.run_later(timeout, |act: &mut A, ctx: &mut A::Context| {
        close(act, ctx, DisconnectReason::PingTimeout);
    }));
}

fn close_if_no_namespace<A>(act: &mut A, ctx: &mut A::Context)
where
    A: Transport,
    A::Context: AsyncContext<A> + ToEnvelope<A, Outbound>,
{
    let Some(conn) = open_conn(act) else { return };
    conn.connect_timer = None;
    if conn.sockets.is_empty() {
        tracing::debug!(sid = %conn.sid, "no namespace joined in time");
        close(act, ctx, DisconnectReason::TransportClose);
    }
}

/// Closes the connection: handlers are told, then the transport ends. As in engine.io, a failure
/// of the transport or of Engine.IO's framing, or a missed pong, forgets the session at once
/// (the socket's `onClose`); any other close is the server's decision (`socket.close()`), after
/// which a long-polling client's next GET still gets the close packet.
pub(crate) fn close<A>(act: &mut A, ctx: &mut A::Context, reason: DisconnectReason)
where
    A: Transport,
{
    let failed = matches!(
        reason,
        DisconnectReason::TransportError
            | DisconnectReason::PingTimeout
            | DisconnectReason::ParseError
    );
    close_with(act, ctx, reason, !failed);
}

/// A Socket.IO packet the protocol does not allow: socket.io closes the connection on purpose
/// (`conn.close()`), though the reason its sockets get is the parse error.
fn protocol_error<A>(act: &mut A, ctx: &mut A::Context)
where
    A: Transport,
{
    close_with(act, ctx, DisconnectReason::ParseError, true);
}

fn close_with<A>(act: &mut A, ctx: &mut A::Context, reason: DisconnectReason, owe_close: bool)
where
    A: Transport,
{
    if let Some(conn) = act.connection() {
        tracing::debug!(sid = %conn.sid, reason = reason.as_str(), "connection closed");
        conn.shut(reason);
    }
    act.close_transport(ctx, owe_close);
}

/// Handles one Engine.IO packet from the client.
pub(crate) fn on_packet<A>(act: &mut A, ctx: &mut A::Context, packet: engineio::Packet)
where
    A: Transport,
    A::Context: AsyncContext<A> + ToEnvelope<A, Outbound>,
{
    let Some(conn) = open_conn(act) else { return };
    if conn.awaiting_pong
        && !conn.pong_wait_extended
        && !matches!(packet, engineio::Packet::Pong(_))
    {
        conn.pong_wait_extended = true;
        await_pong(act, ctx);
    }
    let Some(conn) = open_conn(act) else { return };
    match packet {
        // Awaited or not, a pong starts the ping interval over (engine.io refreshes its timer).
        engineio::Packet::Pong(_) => {
            if let Some(timer) = conn.heartbeat.take() {
                ctx.cancel_future(timer);
            }
            schedule_ping(act, ctx);
        }
        // In Engine.IO v4 only the server pings (the upgrade probe is the WebSocket's business).
        engineio::Packet::Ping(_) => close(act, ctx, DisconnectReason::TransportError),
        engineio::Packet::Message(message) => {
            // One Socket.IO packet is one text message; its binary attachments ride along.
            let counted = matches!(message, Message::Text(_));
            if counted
                && conn
                    .limiter
                    .as_ref()
                    .is_some_and(|limiter| limiter.check().is_err())
            {
                tracing::info!(sid = %conn.sid, "a client sent messages too fast; closing it");
                close(act, ctx, DisconnectReason::RateLimited);
                return;
            }
            on_message(act, ctx, message);
        }
        engineio::Packet::Close => close(act, ctx, DisconnectReason::TransportClose),
        // The client has no business sending these; the reference ignores them.
        engineio::Packet::Noop | engineio::Packet::Open(_) | engineio::Packet::Upgrade => {}
    }
}

fn on_message<A>(act: &mut A, ctx: &mut A::Context, message: Message)
where
    A: Transport,
    A::Context: AsyncContext<A> + ToEnvelope<A, Outbound>,
{
    let Some(conn) = open_conn(act) else { return };
    let complete = match message {
        Message::Text(text) => match socketio::Packet::decode(&text) {
            Ok(packet) if packet.attachments > 0 => {
                if conn.partial.is_some() {
                    None
                } else {
                    conn.partial = Some(Box::new(Partial {
                        attachments: Vec::with_capacity(packet.attachments),
                        packet,
                        bytes: text.len(),
                    }));
                    return;
                }
            }
            Ok(packet) if conn.partial.is_none() => Some((packet, Vec::new())),
            Ok(_) => None,
            Err(err) => {
                tracing::debug!(sid = %conn.sid, %err, "undecodable packet");
                None
            }
        },
        Message::Binary(bytes) => match conn.partial.as_mut() {
            Some(partial) if partial.bytes + bytes.len() > conn.server.config().max_payload => {
                tracing::debug!(sid = %conn.sid, "a binary packet over the payload limit");
                None
            }
            Some(partial) => {
                partial.bytes += bytes.len();
                partial.attachments.push(bytes);
                if partial.attachments.len() < partial.packet.attachments {
                    return;
                }
                conn.partial
                    .take()
                    .map(|partial| (partial.packet, partial.attachments))
            }
            None => None,
        },
    };
    match complete {
        Some((packet, attachments)) => dispatch(act, ctx, packet, attachments),
        None => protocol_error(act, ctx),
    }
}

fn dispatch<A>(act: &mut A, ctx: &mut A::Context, packet: socketio::Packet, attachments: Vec<Bytes>)
where
    A: Transport,
    A::Context: AsyncContext<A> + ToEnvelope<A, Outbound>,
{
    let Some(conn) = open_conn(act) else { return };
    let namespace = packet.namespace;
    match packet.kind {
        PacketType::Connect => {
            let busy = conn.joined(&namespace).is_some()
                || conn.connecting.iter().any(|n| **n == *namespace);
            if busy {
                protocol_error(act, ctx);
            } else {
                connect(act, ctx, namespace, packet.data);
            }
        }
        PacketType::Disconnect => {
            if !conn.leave(&namespace, DisconnectReason::ClientNamespaceDisconnect) {
                protocol_error(act, ctx);
            }
        }
        PacketType::Event | PacketType::BinaryEvent => {
            let Some(joined) = conn.joined(&namespace) else {
                protocol_error(act, ctx);
                return;
            };
            let Some(Value::Array(mut items)) = packet.data else {
                protocol_error(act, ctx);
                return;
            };
            // The decoder guarantees a leading event name: a string, or a number (named by its
            // digits, as a JavaScript handler would see it).
            let name = match items.remove(0) {
                Value::String(name) => name,
                Value::Number(number) => number.to_string(),
                _ => return,
            };
            let socket = joined.socket.clone();
            let ack = packet.ack_id.map(|id| AckSender::new(socket.clone(), id));
            joined.handler.do_send(SocketEvent::Event {
                socket,
                name,
                payload: Payload {
                    args: items,
                    attachments,
                },
                ack,
            });
        }
        PacketType::Ack | PacketType::BinaryAck => {
            let position = conn.acks.iter().position(|pending| {
                Some(pending.id) == packet.ack_id && *pending.namespace == *namespace
            });
            // An answer nobody waits for any more (timed out) is dropped.
            if let Some(position) = position {
                let pending = conn.acks.swap_remove(position);
                let args = match packet.data {
                    Some(Value::Array(args)) => args,
                    _ => Vec::new(),
                };
                let _ = pending.reply.send(Payload { args, attachments });
            }
        }
        PacketType::ConnectError => protocol_error(act, ctx),
    }
}

/// A CONNECT: recover the client's session if it asks and can, else start a new socket; then
/// let the namespace decide, off the actor.
fn connect<A>(act: &mut A, ctx: &mut A::Context, namespace: String, data: Option<Value>)
where
    A: Transport,
    A::Context: AsyncContext<A> + ToEnvelope<A, Outbound>,
{
    let Some(conn) = open_conn(act) else { return };
    let Some(handler) = conn.server.namespace(&namespace) else {
        let refusal = socketio::Packet {
            kind: PacketType::ConnectError,
            namespace,
            ack_id: None,
            data: Some(json!({"message": "Invalid namespace"})),
            attachments: 0,
        };
        act.write(ctx, vec![text_message(refusal.encode())]);
        return;
    };
    let auth = match data {
        Some(Value::Object(auth)) => auth,
        _ => Map::new(),
    };
    let recovered = recover(&conn.server, &namespace, &auth);
    let (socket, resume) = match recovered {
        Some((socket, offset)) => (socket, Resume::After(offset)),
        None => (
            SocketRef::new(
                Arc::from(namespace.as_str()),
                conn.server.config().recovery_window,
            ),
            Resume::Fresh,
        ),
    };
    conn.connecting.push(socket.namespace_arc());
    let request = ConnectRequest {
        auth,
        handshake: conn.handshake.clone(),
        recovered: matches!(resume, Resume::After(_)),
    };
    let decision = handler.connect(request, socket.clone());
    let route = conn.route.clone();
    let patience = conn.server.config().connect_timeout;
    actix::spawn(async move {
        let result = tokio::time::timeout(patience, decision)
            .await
            .unwrap_or_else(|_| Err(ConnectError::new("Connection timed out")));
        let finished = ConnectFinished {
            socket,
            result: Some(result),
            resume,
        };
        // Delivered or not, an unhandled answer cleans up after itself when dropped.
        let _ = route.deliver(Outbound::ConnectFinished(Box::new(finished)));
    });
}

fn recover(
    server: &ServerState,
    namespace: &str,
    auth: &Map<String, Value>,
) -> Option<(SocketRef, Option<String>)> {
    server.config().recovery_window?;
    // Both as strings, or no recovery (the reference's Namespace._createSocket).
    let pid = auth.get("pid")?.as_str()?;
    let offset = auth.get("offset")?.as_str()?;
    let socket = server.take_parked(pid, namespace, offset)?;
    Some((socket, Some(offset.to_owned())))
}

/// Handles what a socket asked its transport to do.
pub(crate) fn on_outbound<A>(act: &mut A, ctx: &mut A::Context, message: Outbound)
where
    A: Transport,
    A::Context: AsyncContext<A> + ToEnvelope<A, Outbound>,
{
    // Dropping an unhandled ConnectFinished closes its socket and tells its handler.
    let Some(conn) = open_conn(act) else { return };
    match message {
        Outbound::Send(outgoing) => act.write(ctx, frames(outgoing)),
        Outbound::EmitWithAck {
            namespace,
            event,
            payload,
            reply,
        } => {
            let id = conn.next_ack_id;
            conn.next_ack_id += 1;
            // Forget the waits whose callers gave up.
            conn.acks.retain(|pending| !pending.reply.is_closed());
            let outgoing = Outgoing::event(&namespace, &event, payload, Some(id));
            conn.acks.push(PendingAck {
                namespace,
                id,
                reply,
            });
            act.write(ctx, frames(outgoing));
        }
        Outbound::Disconnect { namespace } => {
            if !conn.leave(&namespace, DisconnectReason::ServerNamespaceDisconnect) {
                return;
            }
            let packet = socketio::Packet {
                kind: PacketType::Disconnect,
                namespace: namespace.to_string(),
                ack_id: None,
                data: None,
                attachments: 0,
            };
            act.write(ctx, vec![text_message(packet.encode())]);
        }
        Outbound::ConnectFinished(finished) => finish_connect(act, ctx, *finished),
        Outbound::Close(reason) => close(act, ctx, reason),
    }
}

fn finish_connect<A>(act: &mut A, ctx: &mut A::Context, mut finished: ConnectFinished)
where
    A: Transport,
    A::Context: AsyncContext<A> + ToEnvelope<A, Outbound>,
{
    let Some(conn) = open_conn(act) else { return };
    let Some(result) = finished.result.take() else {
        return;
    };
    let socket = finished.socket.clone();
    let resume = finished.resume.clone();
    conn.connecting
        .retain(|namespace| **namespace != *socket.namespace());
    match result {
        Ok(handler) => {
            let mut data = Map::new();
            data.insert("sid".into(), Value::String(socket.id().to_owned()));
            if let Some(pid) = socket.pid() {
                data.insert("pid".into(), Value::String(pid.to_owned()));
            }
            let accepted = socketio::Packet {
                kind: PacketType::Connect,
                namespace: socket.namespace().to_owned(),
                ack_id: None,
                data: Some(Value::Object(data)),
                attachments: 0,
            };
            let queued = socket.attach(conn.route.clone(), &resume);
            conn.sockets.push(Joined { socket, handler });
            if let Some(timer) = conn.connect_timer.take() {
                ctx.cancel_future(timer);
            }
            act.write(ctx, vec![text_message(accepted.encode())]);
            for message in queued {
                on_outbound(act, ctx, message);
            }
        }
        Err(refusal) => {
            socket.detach(false);
            let packet = socketio::Packet {
                kind: PacketType::ConnectError,
                namespace: socket.namespace().to_owned(),
                ack_id: None,
                data: Some(refusal.to_json()),
                attachments: 0,
            };
            act.write(ctx, vec![text_message(packet.encode())]);
        }
    }
}

fn text_message(text: String) -> engineio::Packet {
    engineio::Packet::Message(Message::Text(text))
}

/// The Engine.IO packets of one Socket.IO packet: its text, then each attachment.
fn frames(outgoing: Outgoing) -> Vec<engineio::Packet> {
    let mut packets = Vec::with_capacity(1 + outgoing.attachments.len());
    packets.push(text_message(outgoing.text));
    packets.extend(
        outgoing
            .attachments
            .into_iter()
            .map(|bytes| engineio::Packet::Message(Message::Binary(bytes))),
    );
    packets
}
