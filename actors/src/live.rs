//! The live actors of one kind in this process, by key: a join finds the live actor or starts
//! one, and an actor that stops takes itself out (unless a newer one already took its place).
//! Both kinds of actor keep their registry here (actix chat's registry of addresses); an actor
//! holds a `Weak` of its registry, so the registries import the actors and not the other way.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use actix::dev::ToEnvelope;
use actix::{Actor, Addr, Handler, Message};

/// A join meets an actor that is just stopping at most this often before giving up.
const JOIN_ATTEMPTS: usize = 3;

/// No live actor took the join (each one found was stopping).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("no live actor took the join")]
pub struct Unavailable;

pub struct LiveActors<K, A: Actor> {
    live: Mutex<HashMap<K, Addr<A>>>,
}

impl<K: Eq + Hash + Clone, A: Actor> LiveActors<K, A> {
    pub fn new() -> Self {
        Self {
            live: Mutex::new(HashMap::new()),
        }
    }

    fn live(&self) -> MutexGuard<'_, HashMap<K, Addr<A>>> {
        // A panic elsewhere while holding the lock leaves the map itself intact.
        self.live
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The live actor of `key`, or the one `start` starts (under the lock, so two joins at once
    /// get the same actor).
    pub fn get_or_start(&self, key: &K, start: impl FnOnce() -> Addr<A>) -> Addr<A> {
        let mut live = self.live();
        if let Some(addr) = live.get(key).filter(|addr| addr.connected()) {
            return addr.clone();
        }
        let addr = start();
        live.insert(key.clone(), addr.clone());
        addr
    }

    /// The live actor of `key`, if there is one.
    pub fn get(&self, key: &K) -> Option<Addr<A>> {
        self.live()
            .get(key)
            .filter(|addr| addr.connected())
            .cloned()
    }

    /// Called by a stopping actor: removes it unless a newer actor already took its place.
    pub fn forget(&self, key: &K, addr: &Addr<A>) {
        let mut live = self.live();
        if live.get(key).is_some_and(|current| current == addr) {
            live.remove(key);
        }
    }

    pub fn len(&self) -> usize {
        self.live().len()
    }

    /// Every live actor's address.
    pub fn all(&self) -> Vec<Addr<A>> {
        self.live().values().cloned().collect()
    }

    pub fn is_empty(&self) -> bool {
        self.live().is_empty()
    }
}

impl<K: Eq + Hash + Clone, A: Actor> Default for LiveActors<K, A> {
    fn default() -> Self {
        Self::new()
    }
}

/// The process is stopping: sends `drain()` to every live actor of `live` and waits until none
/// is left (each takes itself out as it stops), at most `limit`. Answers how many were still
/// live then.
pub async fn drain<K, A, M>(
    live: &LiveActors<K, A>,
    drain: impl Fn() -> M,
    limit: std::time::Duration,
) -> usize
where
    K: Eq + Hash + Clone,
    A: Actor + Handler<M>,
    A::Context: ToEnvelope<A, M>,
    M: Message + Send + 'static,
    M::Result: Send,
{
    for actor in live.all() {
        actor.do_send(drain());
    }
    let deadline = tokio::time::Instant::now() + limit;
    while !live.is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    live.len()
}

/// Sends `join()` to the live actor of `key` (started by `start`, which is given the registry's
/// `Weak` for the actor to take itself out with): its answer and the actor's address. An actor
/// that stopped between the lookup and the join is forgotten and a new one started. Must be
/// called on an actix arbiter (the actor starts there).
pub async fn join<K, A, M>(
    live: &Arc<LiveActors<K, A>>,
    key: &K,
    start: impl Fn(Weak<LiveActors<K, A>>) -> Addr<A>,
    join: impl Fn() -> M,
) -> Result<(Addr<A>, M::Result), Unavailable>
where
    K: Eq + Hash + Clone,
    A: Actor + Handler<M>,
    A::Context: ToEnvelope<A, M>,
    M: Message + Send + 'static,
    M::Result: Send,
{
    for _ in 0..JOIN_ATTEMPTS {
        let addr = live.get_or_start(key, || start(Arc::downgrade(live)));
        match addr.send(join()).await {
            Ok(answer) => return Ok((addr, answer)),
            // The actor stopped between the lookup and the join: start a new one.
            Err(_) => live.forget(key, &addr),
        }
    }
    Err(Unavailable)
}
