//! The live actors of one kind in this process, by key: a join finds the live actor or starts
//! one, and an actor that stops takes itself out (unless a newer one already took its place).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, MutexGuard};

use actix::{Actor, Addr};

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

    pub fn is_empty(&self) -> bool {
        self.live().is_empty()
    }
}

impl<K: Eq + Hash + Clone, A: Actor> Default for LiveActors<K, A> {
    fn default() -> Self {
        Self::new()
    }
}
