//! The live funnel actors of this process, one per conversation. A join finds the live actor or
//! starts one; an actor that stops (idle) takes itself out.

use std::sync::Arc;

use actix::{Actor, Addr};

use super::Deps;
use super::actor::{FunnelActor, Join, JoinError, NewConversation};
use super::model::ConversationKey;
use crate::live::LiveActors;
use crate::ports::FunnelClient;

/// A join meets an actor that is just stopping at most this often before giving up.
const JOIN_ATTEMPTS: usize = 3;

#[derive(Clone)]
pub struct FunnelRegistry {
    shared: Arc<RegistryShared>,
}

pub struct RegistryShared {
    deps: Arc<Deps>,
    live: LiveActors<ConversationKey, FunnelActor>,
}

impl RegistryShared {
    /// Called by a stopping actor.
    pub(super) fn forget(&self, key: &ConversationKey, addr: &Addr<FunnelActor>) {
        self.live.forget(key, addr);
    }
}

impl FunnelRegistry {
    pub fn new(deps: Deps) -> Self {
        Self {
            shared: Arc::new(RegistryShared {
                deps: Arc::new(deps),
                live: LiveActors::new(),
            }),
        }
    }

    /// Joins `client` to the conversation of `key`, loading or starting it. Must be called on an
    /// actix arbiter (the actor starts there).
    pub async fn join(
        &self,
        key: ConversationKey,
        start: NewConversation,
        client: Arc<dyn FunnelClient>,
    ) -> Result<Addr<FunnelActor>, JoinError> {
        for _ in 0..JOIN_ATTEMPTS {
            let addr = self.live_actor(&key);
            let join = Join {
                client: client.clone(),
                start: start.clone(),
            };
            match addr.send(join).await {
                Ok(result) => return result.map(|()| addr),
                // The actor stopped between the lookup and the join: start a new one.
                Err(_) => self.shared.forget(&key, &addr),
            }
        }
        Err(JoinError::Unavailable)
    }

    fn live_actor(&self, key: &ConversationKey) -> Addr<FunnelActor> {
        self.shared.live.get_or_start(key, || {
            FunnelActor::new(
                self.shared.deps.clone(),
                key.clone(),
                Arc::downgrade(&self.shared),
            )
            .start()
        })
    }

    /// How many conversations are live in this process.
    pub fn live_count(&self) -> usize {
        self.shared.live.len()
    }
}
