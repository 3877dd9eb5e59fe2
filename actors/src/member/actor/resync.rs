//! What the member actor is asked after events between processes were lost (docs/operations.md,
//! "Events between processes"): a gap in its peers' events, and the check of its clients'
//! sessions against the store when a sign-out may have been lost. Kept apart from the actor's
//! own work: neither touches its chats.

use actix::prelude::*;

use super::MemberActor;

/// Events of the member's actors on other processes may have been lost (a gap in their numbers,
/// or this process's subscription to the member's channel was lost and taken again): a reply's
/// end among them would leave it followed here for ever. The replies followed are dropped, and
/// the sockets here get `chat:ready` again; its `writing` no longer lists them, so a page that
/// waits for one reloads that chat from the store, where a reply that ended is. A reply still
/// being written goes on arriving (and its `chat:done` replaces what the page shows).
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct PeersMissed;

/// The member, and the sessions (their hashes) the actor's clients came with, for a check
/// against the store.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "ClientSessions")]
pub struct Sessions;

#[derive(Debug, Clone, MessageResponse)]
pub struct ClientSessions {
    pub user_id: String,
    pub sessions: Vec<String>,
}

impl Handler<PeersMissed> for MemberActor {
    type Result = ();

    fn handle(&mut self, _: PeersMissed, _ctx: &mut Self::Context) {
        self.peer_writing.clear();
        let ready = self.ready();
        self.emit_here("chat:ready", &ready);
    }
}

impl Handler<Sessions> for MemberActor {
    type Result = ClientSessions;

    fn handle(&mut self, _: Sessions, _ctx: &mut Self::Context) -> ClientSessions {
        let mut sessions: Vec<String> = self
            .clients
            .iter()
            .filter_map(|client| client.session.clone())
            .collect();
        sessions.sort();
        sessions.dedup();
        ClientSessions {
            user_id: self.user_id.clone(),
            sessions,
        }
    }
}
