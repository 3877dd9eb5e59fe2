//! The live funnel actors of this process, one per conversation. A join finds the live actor or
//! starts one; an actor that stops (idle) takes itself out.

use std::sync::Arc;

use actix::{Actor, Addr};

use super::Deps;
use super::actor::FunnelActor;
use super::messages::{Join, JoinError, NewConversation};
use super::model::ConversationKey;
use crate::live::{self, LiveActors};
use crate::ports::ActorClient;

#[derive(Clone)]
pub struct FunnelRegistry {
    deps: Arc<Deps>,
    live: Arc<LiveActors<ConversationKey, FunnelActor>>,
}

impl FunnelRegistry {
    pub fn new(deps: Deps) -> Self {
        Self {
            deps: Arc::new(deps),
            live: Arc::new(LiveActors::new()),
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

    /// How many conversations are live in this process.
    pub fn live_count(&self) -> usize {
        self.live.len()
    }
}
