//! The live member actors of this process, one per signed-in member with a socket open.

use std::sync::Arc;

use actix::{Actor, Addr};

use super::Deps;
use super::actor::{FromPeer, Join, MemberActor, SignedOut};
use crate::live::LiveActors;

/// A join meets an actor that is just stopping at most this often before giving up.
const JOIN_ATTEMPTS: usize = 3;

#[derive(Clone)]
pub struct MemberRegistry {
    shared: Arc<RegistryShared>,
}

pub struct RegistryShared {
    deps: Arc<Deps>,
    live: LiveActors<String, MemberActor>,
}

impl RegistryShared {
    /// Called by a stopping actor.
    pub(super) fn forget(&self, user_id: &String, addr: &Addr<MemberActor>) {
        self.live.forget(user_id, addr);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the member's chat is not available")]
pub struct Unavailable;

impl MemberRegistry {
    pub fn new(deps: Deps) -> Self {
        Self {
            shared: Arc::new(RegistryShared {
                deps: Arc::new(deps),
                live: LiveActors::new(),
            }),
        }
    }

    /// Joins a client to the member's actor, starting it if needed. Must be called on an actix
    /// arbiter (the actor starts there).
    pub async fn join(&self, user_id: &str, join: Join) -> Result<Addr<MemberActor>, Unavailable> {
        for _ in 0..JOIN_ATTEMPTS {
            let addr = self.shared.live.get_or_start(&user_id.to_owned(), || {
                MemberActor::new(
                    self.shared.deps.clone(),
                    user_id.to_owned(),
                    Arc::downgrade(&self.shared),
                )
                .start()
            });
            match addr.send(join.clone()).await {
                Ok(()) => return Ok(addr),
                // The actor stopped between the lookup and the join: start a new one.
                Err(_) => self.shared.forget(&user_id.to_owned(), &addr),
            }
        }
        Err(Unavailable)
    }

    /// The member signed out of `session` (`None`: of every session, as after a password reset):
    /// the sockets that came with it are closed. This process's sockets: the server carries a
    /// sign-out to the other processes of a deployment (src/cluster.rs), and each calls this.
    pub fn signed_out(&self, user_id: &str, session: Option<String>) {
        if let Some(addr) = self.shared.live.get(&user_id.to_owned()) {
            addr.do_send(SignedOut { session });
        }
    }

    /// An event of the member's actor on another process: for this process's sockets of the
    /// member, if any.
    pub fn from_peer(&self, user_id: &str, from_peer: FromPeer) {
        if let Some(addr) = self.shared.live.get(&user_id.to_owned()) {
            addr.do_send(from_peer);
        }
    }

    /// How many members have a live actor in this process.
    pub fn live_count(&self) -> usize {
        self.shared.live.len()
    }
}
