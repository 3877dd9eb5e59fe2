//! The live member actors of this process, one per signed-in member with a socket open.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use actix::{Actor, Addr};

use super::Deps;
use super::actor::{ClientSessions, MemberActor, PeersMissed, Sessions};
use super::messages::{Drain, FromPeer, Join, SignedOut};
use crate::live::{self, LiveActors};

pub use crate::live::Unavailable;

#[derive(Clone)]
pub struct MemberRegistry {
    deps: Arc<Deps>,
    live: Arc<LiveActors<String, MemberActor>>,
    /// Set by [`Self::drain`]: no member actor is started here any more.
    draining: Arc<AtomicBool>,
}

impl MemberRegistry {
    pub fn new(deps: Deps) -> Self {
        Self {
            deps: Arc::new(deps),
            live: Arc::new(LiveActors::new()),
            draining: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Joins a client to the member's actor, starting it if needed. Must be called on an actix
    /// arbiter (the actor starts there).
    pub async fn join(&self, user_id: &str, join: Join) -> Result<Addr<MemberActor>, Unavailable> {
        if self.is_draining() {
            return Err(Unavailable);
        }
        let key = user_id.to_owned();
        let (addr, ()) = live::join(
            &self.live,
            &key,
            |live| MemberActor::new(self.deps.clone(), key.clone(), live).start(),
            || join.clone(),
        )
        .await?;
        Ok(addr)
    }

    /// The member signed out of `session` (`None`: of every session, as after a password reset):
    /// the sockets that came with it are closed. This process's sockets: the server carries a
    /// sign-out to the other processes of a deployment (src/cluster.rs), and each calls this.
    pub fn signed_out(&self, user_id: &str, session: Option<String>) {
        if let Some(addr) = self.live.get(&user_id.to_owned()) {
            addr.do_send(SignedOut { session });
        }
    }

    /// An event of the member's actor on another process: for this process's sockets of the
    /// member, if any.
    pub fn from_peer(&self, user_id: &str, from_peer: FromPeer) {
        if let Some(addr) = self.live.get(&user_id.to_owned()) {
            addr.do_send(from_peer);
        }
    }

    /// The process is stopping: every live actor lets its replies end, asks its sockets to
    /// connect again and stops (`Drain`), and joins are refused from now on. Waits until no
    /// actor is left, at most `limit`; answers how many were still live then.
    pub async fn drain(&self, limit: Duration) -> usize {
        self.draining.store(true, Ordering::SeqCst);
        live::drain(&self.live, || Drain, limit).await
    }

    /// Whether [`Self::drain`] ran.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// How many members have a live actor in this process.
    pub fn live_count(&self) -> usize {
        self.live.len()
    }

    /// Events of the member's actors on other processes may have been lost: the member's actor
    /// here, if any, stops following their replies and tells its sockets so ([`PeersMissed`]).
    pub fn peers_missed(&self, user_id: &str) {
        if let Some(addr) = self.live.get(&user_id.to_owned()) {
            addr.do_send(PeersMissed);
        }
    }

    /// Every live member here with the sessions their sockets came with, for a check against the
    /// store when a sign-out may have been lost (the ended ones are then passed to
    /// [`Self::signed_out`]).
    pub async fn sessions(&self) -> Vec<ClientSessions> {
        let asked = self.live.all().into_iter().map(|addr| addr.send(Sessions));
        futures_util::future::join_all(asked)
            .await
            .into_iter()
            // An actor that stopped meanwhile has no sockets left to close.
            .filter_map(Result::ok)
            .filter(|member| !member.sessions.is_empty())
            .collect()
    }
}
