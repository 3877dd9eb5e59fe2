//! The live funnel actors of this process, one per conversation. A join finds the live actor or
//! starts one; an actor that stops (idle) takes itself out.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use actix::{Actor, Addr};

use super::Deps;
use super::actor::FunnelActor;
use super::messages::{Drain, Join, JoinError, NewConversation};
use super::model::ConversationKey;
use crate::live::{self, LiveActors};
use crate::ports::ActorClient;

#[derive(Clone)]
pub struct FunnelRegistry {
    deps: Arc<Deps>,
    live: Arc<LiveActors<ConversationKey, FunnelActor>>,
    /// Set by [`Self::drain`]: no conversation is started or loaded here any more.
    draining: Arc<AtomicBool>,
}

impl FunnelRegistry {
    pub fn new(deps: Deps) -> Self {
        Self {
            deps: Arc::new(deps),
            live: Arc::new(LiveActors::new()),
            draining: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Joins `client` to the conversation of `key`, loading or starting it. Must be called on an
    /// actix arbiter (the actor starts there).
    pub async fn join(
        &self,
        key: ConversationKey,
        start: NewConversation,
        client: Arc<dyn ActorClient>,
    ) -> Result<Addr<FunnelActor>, JoinError> {
        if self.draining.load(Ordering::SeqCst) {
            return Err(JoinError::Stopping);
        }
        let joined = live::join(
            &self.live,
            &key,
            |live| FunnelActor::new(self.deps.clone(), key.clone(), live).start(),
            || Join {
                client: client.clone(),
                start: start.clone(),
            },
        )
        .await;
        match joined {
            Ok((addr, answer)) => answer.map(|()| addr),
            Err(live::Unavailable) => Err(JoinError::Unavailable),
        }
    }

    /// The process is stopping: every live actor finishes its saves, asks its clients to
    /// connect again and gives up its conversation (`Drain`), and joins are refused from now on
    /// (`JoinError::Stopping`). Waits until no actor is left, at most `limit`; answers how many
    /// were still live then.
    pub async fn drain(&self, limit: Duration) -> usize {
        self.draining.store(true, Ordering::SeqCst);
        live::drain(&self.live, || Drain, limit).await
    }

    /// How many conversations are live in this process.
    pub fn live_count(&self) -> usize {
        self.live.len()
    }
}
