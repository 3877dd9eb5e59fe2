//! The socket a namespace emits to from any actor ([`SocketRef`]), the events its handler receives
//! ([`SocketEvent`]) with their acknowledgements ([`AckSender`]), and what a socket asks of its
//! connection's transport ([`Outbound`]). What a namespace decides with is in
//! [`super::namespace`]; the values the events carry and their encoding in [`super::payload`];
//! the way to the current transport in [`super::route`]; the recovery log in
//! [`super::recovery`].
//!
//! A `SocketRef` outlives its transport. Events emitted while the socket is still connecting wait
//! for the connection; with connection state recovery, events emitted while it is disconnected
//! wait for the client to come back (up to the recovery window), and every event carries an
//! offset so that a returning client gets exactly the ones it missed.
//!
//! The acknowledgements stay here: an [`AckSender`] answers through its `SocketRef`, a
//! [`SocketEvent`] carries both, and the namespace's decision ([`ConnectFinished`], one of the
//! [`Outbound`] messages a connecting `SocketRef` queues) carries the handler that receives
//! `SocketEvent`s. Those types refer to each other, so a file of their own would import this one
//! and be imported by it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::{Message, Recipient};

use serde::Serialize;
use serde_json::Value;
use tokio::sync::oneshot;

use super::payload::{AckError, ConnectError, DisconnectReason, Outgoing, Payload};
use super::recovery::RecoveryLog;
use super::route::Route;
use crate::sync::lock;

/// What a socket's handler receives, in the order the client sent it.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub enum SocketEvent {
    Event {
        socket: SocketRef,
        name: String,
        payload: Payload,
        /// Present when the client asked for an acknowledgement.
        ack: Option<AckSender>,
    },
    Disconnected {
        socket: SocketRef,
        reason: DisconnectReason,
    },
}

/// Answers one client event that asked for an acknowledgement.
#[derive(Debug)]
pub struct AckSender {
    socket: SocketRef,
    id: u64,
}

impl AckSender {
    pub(crate) fn new(socket: SocketRef, id: u64) -> Self {
        Self { socket, id }
    }

    pub fn send(self, payload: Payload) {
        let packet = Outgoing::ack(self.socket.namespace(), self.id, payload);
        self.socket.deliver(Outbound::Send(packet));
    }

    /// Acknowledges with one JSON argument.
    pub fn send_json<T: Serialize + ?Sized>(self, data: &T) {
        match Payload::json(data) {
            Ok(payload) => self.send(payload),
            Err(err) => tracing::error!(%err, "an acknowledgement could not be serialized"),
        }
    }
}

/// What a transport actor is asked to do for the sockets it carries.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub(crate) enum Outbound {
    Send(Outgoing),
    /// An event that waits for the client's acknowledgement (the actor picks the ack id).
    EmitWithAck {
        namespace: Arc<str>,
        event: String,
        payload: Payload,
        reply: oneshot::Sender<Payload>,
    },
    Disconnect {
        namespace: Arc<str>,
    },
    /// A namespace decided on a connect request.
    ConnectFinished(Box<ConnectFinished>),
    /// Close the whole connection (the server is stopping).
    Close(DisconnectReason),
}

/// The namespace's answer, on its way to the transport. If it is dropped unhandled (the
/// connection went away first), the socket is closed and an accepting handler is told.
#[derive(Debug)]
pub(crate) struct ConnectFinished {
    pub socket: SocketRef,
    /// Taken by the transport that handles it.
    pub result: Option<Result<Recipient<SocketEvent>, ConnectError>>,
    pub resume: Resume,
}

impl Drop for ConnectFinished {
    fn drop(&mut self) {
        if let Some(result) = self.result.take() {
            self.socket.detach(false);
            if let Ok(handler) = result {
                handler.do_send(SocketEvent::Disconnected {
                    socket: self.socket.clone(),
                    reason: DisconnectReason::TransportClose,
                });
            }
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) enum Resume {
    /// A new socket: send what was emitted while it was connecting.
    Fresh,
    /// A recovered socket: send what was logged after this offset (all of the log when the
    /// client had received nothing yet).
    After(Option<String>),
}

/// A handle on one connected (or connecting, or recovering) socket. Cheap to clone; any actor may
/// hold one and emit through it.
#[derive(Debug, Clone)]
pub struct SocketRef(Arc<Shared>);

#[derive(Debug)]
struct Shared {
    id: Box<str>,
    namespace: Arc<str>,
    /// The private session id a client presents to recover this socket.
    pid: Option<Box<str>>,
    recovery_window: Option<Duration>,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    target: Target,
    /// With recovery on: what a returning client may have missed.
    log: RecoveryLog,
}

#[derive(Debug)]
enum Target {
    /// The namespace has not decided yet; what is emitted meanwhile waits here.
    Connecting(Vec<Outbound>),
    Attached(Arc<Route<Outbound>>),
    /// Disconnected, waiting for the client to recover the session.
    Detached,
    Closed,
}

impl SocketRef {
    pub(crate) fn new(namespace: Arc<str>, recovery_window: Option<Duration>) -> Self {
        Self(Arc::new(Shared {
            id: random_id().into(),
            namespace,
            pid: recovery_window.map(|_| random_id().into()),
            recovery_window,
            state: Mutex::new(State {
                target: Target::Connecting(Vec::new()),
                log: RecoveryLog::default(),
            }),
        }))
    }

    /// The socket id the client sees as `socket.id`.
    pub fn id(&self) -> &str {
        &self.0.id
    }

    pub fn namespace(&self) -> &str {
        &self.0.namespace
    }

    pub(crate) fn namespace_arc(&self) -> Arc<str> {
        self.0.namespace.clone()
    }

    pub(crate) fn pid(&self) -> Option<&str> {
        self.0.pid.as_deref()
    }

    /// Whether this is the same socket as `other`.
    pub fn same(&self, other: &SocketRef) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Whether events still go somewhere: to the client, or to the log it will recover.
    pub fn is_open(&self) -> bool {
        !matches!(lock(&self.0.state).target, Target::Closed)
    }

    /// Emits `event` with one JSON argument.
    pub fn emit<T: Serialize + ?Sized>(&self, event: &str, data: &T) {
        if let Some(payload) = event_payload(event, data) {
            self.emit_payload(event, payload);
        }
    }

    /// Emits `event` with any arguments, binary ones included. With recovery on, the event is
    /// logged with an offset so that a client that misses it gets it on reconnection.
    pub fn emit_payload(&self, event: &str, payload: Payload) {
        self.send_event(event, payload, true);
    }

    /// Emits `event` with one JSON argument, without keeping it for recovery: for events whose
    /// loss a later one makes good (streamed deltas before the complete text).
    /// The value is taken as it is (a streamed piece is sent without a copy of it).
    pub fn emit_volatile(&self, event: &str, data: Value) {
        self.send_event(event, Payload::value(data), false);
    }

    /// Sends an event; `recoverable` ones get an offset and a place in the recovery log when
    /// recovery is on.
    fn send_event(&self, event: &str, mut payload: Payload, recoverable: bool) {
        let mut state = lock(&self.0.state);
        if matches!(state.target, Target::Closed) {
            return;
        }
        let window = self.0.recovery_window.filter(|_| recoverable);
        let offset = window.map(|_| {
            let offset = state.log.take_offset();
            payload.args.push(Value::String(offset.to_string()));
            offset
        });
        let packet = Outgoing::event(&self.0.namespace, event, payload, None);
        if let (Some(offset), Some(window)) = (offset, window) {
            state.log.record(offset, packet.clone(), window);
        }
        Self::route(&mut state, Outbound::Send(packet));
    }

    /// Emits `event` and waits for the client's acknowledgement. Such events are not kept for
    /// recovery (the wait could not survive a reconnection), as in the reference.
    pub async fn emit_with_ack(
        &self,
        event: &str,
        payload: Payload,
        timeout: Duration,
    ) -> Result<Payload, AckError> {
        let (reply, answer) = oneshot::channel();
        {
            let mut state = lock(&self.0.state);
            if matches!(state.target, Target::Detached | Target::Closed) {
                return Err(AckError::Disconnected);
            }
            Self::route(
                &mut state,
                Outbound::EmitWithAck {
                    namespace: self.0.namespace.clone(),
                    event: event.to_owned(),
                    payload,
                    reply,
                },
            );
        }
        match tokio::time::timeout(timeout, answer).await {
            Ok(Ok(payload)) => Ok(payload),
            Ok(Err(_)) => Err(AckError::Disconnected),
            Err(_) => Err(AckError::Timeout),
        }
    }

    /// Disconnects this socket from its namespace (the client sees "io server disconnect").
    pub fn disconnect(&self) {
        let mut state = lock(&self.0.state);
        let namespace = self.0.namespace.clone();
        match state.target {
            Target::Detached => {
                state.target = Target::Closed;
                state.log.discard();
            }
            Target::Closed => {}
            _ => Self::route(&mut state, Outbound::Disconnect { namespace }),
        }
    }

    /// Closes the whole connection this socket came on (every namespace of it), as a lost
    /// connection: the client connects again by itself, and may recover its sessions.
    pub fn close_connection(&self) {
        let mut state = lock(&self.0.state);
        if matches!(state.target, Target::Attached(_) | Target::Connecting(_)) {
            Self::route(&mut state, Outbound::Close(DisconnectReason::ForcedClose));
        }
    }

    /// Sends a packet that is not logged (acknowledgements).
    pub(crate) fn deliver(&self, message: Outbound) {
        let mut state = lock(&self.0.state);
        Self::route(&mut state, message);
    }

    fn route(state: &mut State, message: Outbound) {
        match &mut state.target {
            Target::Connecting(waiting) => waiting.push(message),
            Target::Attached(route) => {
                // A transport that is gone has already detached or closed this socket, or is
                // about to; what it misses is in the log when recovery is on.
                route.send(message);
            }
            Target::Detached | Target::Closed => {}
        }
    }

    /// Connects the socket to a transport and returns what must be written right after the
    /// CONNECT packet: the events emitted while connecting, or the ones a recovering client
    /// missed. From then on, events go to the transport.
    pub(crate) fn attach(&self, route: Arc<Route<Outbound>>, resume: &Resume) -> Vec<Outbound> {
        let mut state = lock(&self.0.state);
        let waiting = match std::mem::replace(&mut state.target, Target::Attached(route)) {
            Target::Connecting(waiting) => waiting,
            _ => Vec::new(),
        };
        match resume {
            Resume::Fresh => waiting,
            Resume::After(offset) => {
                let missed = state
                    .log
                    .after(offset.as_deref())
                    .map(|packet| Outbound::Send(packet.clone()));
                // Acknowledgement waits and acks queued while recovering are not in the log.
                missed
                    .chain(
                        waiting
                            .into_iter()
                            .filter(|message| !matches!(message, Outbound::Send(_))),
                    )
                    .collect()
            }
        }
    }

    /// Whether a client that last got event `offset` can be given everything it missed.
    pub(crate) fn can_resume(&self, offset: Option<&str>) -> bool {
        let state = lock(&self.0.state);
        matches!(state.target, Target::Detached) && state.log.can_resume(offset)
    }

    /// The transport is gone: keep logging for a recovering client, or close for good.
    pub(crate) fn detach(&self, keep_for_recovery: bool) {
        let mut state = lock(&self.0.state);
        if matches!(state.target, Target::Closed) {
            return;
        }
        if keep_for_recovery && self.0.recovery_window.is_some() {
            state.target = Target::Detached;
        } else {
            state.target = Target::Closed;
            state.log.discard();
        }
    }

    /// The recovery window ran out.
    pub(crate) fn expire(&self) {
        let mut state = lock(&self.0.state);
        if matches!(state.target, Target::Detached) {
            state.target = Target::Closed;
            state.log.discard();
        }
    }
}

/// One JSON argument for `event`; a value that cannot be serialized is logged and not sent.
fn event_payload<T: Serialize + ?Sized>(event: &str, data: &T) -> Option<Payload> {
    Payload::json(data)
        .inspect_err(|err| tracing::error!(%err, event, "an event could not be serialized"))
        .ok()
}

/// A random id of 20 URL-safe characters (120 bits), for sids and pids.
pub(crate) fn random_id() -> String {
    crate::ids::token(15)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connecting_socket_keeps_what_is_emitted_until_it_is_attached() {
        let socket = SocketRef::new("/chat".into(), None);
        socket.emit("hello", &1);
        let sent = socket.attach(Arc::new(Route::default()), &Resume::Fresh);
        assert_eq!(sent.len(), 1);
        assert!(
            matches!(&sent[0], Outbound::Send(out) if out.text == r#"2/chat,["hello",1]"#),
            "{sent:?}"
        );
    }

    #[test]
    fn a_recovering_client_gets_exactly_the_events_after_its_offset() {
        let socket = SocketRef::new("/".into(), Some(Duration::from_secs(120)));
        socket.attach(Arc::new(Route::default()), &Resume::Fresh);
        socket.emit("a", &1);
        socket.emit("b", &2);
        socket.detach(true);
        socket.emit("c", &3);
        assert!(socket.can_resume(Some("0")));
        assert!(!socket.can_resume(Some("7")));
        let missed = socket.attach(Arc::new(Route::default()), &Resume::After(Some("0".into())));
        let texts: Vec<_> = missed
            .iter()
            .map(|m| match m {
                Outbound::Send(out) => out.text.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(texts, [r#"2["b",2,"1"]"#, r#"2["c",3,"2"]"#]);
    }

    #[test]
    fn volatile_events_carry_no_offset_and_are_not_replayed() {
        let socket = SocketRef::new("/".into(), Some(Duration::from_secs(120)));
        let sent = socket.attach(Arc::new(Route::default()), &Resume::Fresh);
        assert!(sent.is_empty());
        socket.emit_volatile("delta", Value::from("x"));
        socket.emit("done", "xy");
        socket.detach(true);
        let missed = socket.attach(Arc::new(Route::default()), &Resume::After(None));
        assert_eq!(missed.len(), 1);
        assert!(
            matches!(&missed[0], Outbound::Send(out) if out.text == r#"2["done","xy","0"]"#),
            "{missed:?}"
        );
    }

    #[test]
    fn a_socket_closed_without_recovery_drops_what_is_emitted() {
        let socket = SocketRef::new("/".into(), None);
        socket.attach(Arc::new(Route::default()), &Resume::Fresh);
        socket.detach(true);
        assert!(!socket.is_open());
        socket.emit("lost", &1);
        assert!(!socket.can_resume(None));
    }

    #[test]
    fn only_lost_connections_are_recoverable() {
        assert!(DisconnectReason::PingTimeout.is_recoverable());
        assert!(DisconnectReason::TransportClose.is_recoverable());
        assert!(!DisconnectReason::ClientNamespaceDisconnect.is_recoverable());
        assert!(!DisconnectReason::ParseError.is_recoverable());
    }
}
