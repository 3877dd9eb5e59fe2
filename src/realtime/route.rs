//! The current transport actor of one Engine.IO connection. It changes when a connection upgrades
//! from polling to WebSocket; every socket of the connection follows through its [`Route`].

use std::sync::Mutex;

use actix::{Message, Recipient};

use crate::sync::lock;

/// Where a connection's messages go now: to its transport actor, held back mid-upgrade, or
/// nowhere once the connection closed.
#[derive(Debug)]
pub(crate) struct Route<M: Message<Result = ()> + Send>(Mutex<RouteState<M>>);

#[derive(Debug)]
enum RouteState<M: Message<Result = ()> + Send> {
    Closed,
    To(Recipient<M>),
    /// Mid-upgrade: held back until the old transport has passed on what it still had.
    Holding(Vec<M>),
}

impl<M: Message<Result = ()> + Send> Default for Route<M> {
    fn default() -> Self {
        Self(Mutex::new(RouteState::Closed))
    }
}

impl<M: Message<Result = ()> + Send> Route<M> {
    pub fn set(&self, target: Option<Recipient<M>>) {
        *lock(&self.0) = match target {
            Some(target) => RouteState::To(target),
            None => RouteState::Closed,
        };
    }

    /// Starts holding messages back (the upgrade handover began).
    pub fn hold(&self) {
        *lock(&self.0) = RouteState::Holding(Vec::new());
    }

    /// Sends what was held back to `target`, in order, and routes there from now on.
    pub fn release_to(&self, target: Recipient<M>) {
        let mut state = lock(&self.0);
        if let RouteState::Holding(held) =
            std::mem::replace(&mut *state, RouteState::To(target.clone()))
        {
            for message in held {
                target.do_send(message);
            }
        }
    }

    /// Queues the message for the current transport; without one it is dropped (what recovery
    /// needs is in the socket's log).
    pub fn send(&self, message: M) {
        let _ = self.deliver(message);
    }

    /// Like [`Route::send`], but gives the message back when there is no transport.
    pub fn deliver(&self, message: M) -> Result<(), M> {
        match &mut *lock(&self.0) {
            RouteState::To(target) => {
                target.do_send(message);
                Ok(())
            }
            RouteState::Holding(held) => {
                held.push(message);
                Ok(())
            }
            RouteState::Closed => Err(message),
        }
    }
}
