//! What a polling session is sent: by the HTTP endpoint (a GET, a POST's packets, a failure) and
//! by a WebSocket taking the session over (the probe answered, given up, the hand-over). The
//! session table keeps each session as the [`PollingHandle`] of these, not as its actor's type.

use actix::dev::ToEnvelope;
use actix::{Actor, Addr, Handler, Message, Recipient};
use tokio::sync::oneshot;

use super::connection::Connection;
use super::engineio::Packet;
use super::errors::EngineError;
use super::payload::DisconnectReason;
use super::socket::Outbound;

/// A GET: resolves with the next payload.
#[derive(Message)]
#[rtype(result = "Result<oneshot::Receiver<String>, EngineError>")]
pub(crate) struct Poll;

/// A POST's packets.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct Deliver(pub Vec<Packet>);

/// The client sent something the session cannot take.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct Fail(pub DisconnectReason);

/// A WebSocket answered the probe: stop holding GETs.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct Discard;

/// The upgrade failed: poll as before.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct Undiscard;

/// A WebSocket started probing the session: it is told if the session ends meanwhile.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct Probing(pub Recipient<SessionEnded>);

/// The polling session a WebSocket was probing ended (the client closed it, or it timed out): as
/// in the reference, the probe is closed too.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct SessionEnded;

/// The upgrade is complete: the connection and its unsent packets move to the WebSocket.
#[derive(Message)]
#[rtype(result = "Option<HandedOver>")]
pub(crate) struct HandOver {
    pub to: Recipient<Outbound>,
}

pub(crate) struct HandedOver {
    pub conn: Connection,
    pub unsent: Vec<Packet>,
}

/// A polling session as the table keeps it: where each of its messages goes.
#[derive(Clone)]
pub(crate) struct PollingHandle {
    pub poll: Recipient<Poll>,
    pub deliver: Recipient<Deliver>,
    pub fail: Recipient<Fail>,
    pub discard: Recipient<Discard>,
    pub undiscard: Recipient<Undiscard>,
    pub probing: Recipient<Probing>,
    pub hand_over: Recipient<HandOver>,
}

impl PollingHandle {
    pub(crate) fn of<A>(addr: &Addr<A>) -> Self
    where
        A: Actor
            + Handler<Poll>
            + Handler<Deliver>
            + Handler<Fail>
            + Handler<Discard>
            + Handler<Undiscard>
            + Handler<Probing>
            + Handler<HandOver>,
        A::Context: ToEnvelope<A, Poll>
            + ToEnvelope<A, Deliver>
            + ToEnvelope<A, Fail>
            + ToEnvelope<A, Discard>
            + ToEnvelope<A, Undiscard>
            + ToEnvelope<A, Probing>
            + ToEnvelope<A, HandOver>,
    {
        Self {
            poll: addr.clone().recipient(),
            deliver: addr.clone().recipient(),
            fail: addr.clone().recipient(),
            discard: addr.clone().recipient(),
            undiscard: addr.clone().recipient(),
            probing: addr.clone().recipient(),
            hand_over: addr.clone().recipient(),
        }
    }
}
