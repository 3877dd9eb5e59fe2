//! A sign-out from another process may have been lost (a gap in the events between processes,
//! `cluster::Gap::Events`): every member socket here whose session ended is closed, as the lost
//! event would have done, by asking the store which of their sessions still exist.

use std::time::Duration;

use helpnow_actors::member::MemberRegistry;

use crate::store::{self, Db};

/// Sessions asked about in one read.
const SESSIONS_AT_ONCE: usize = 500;

/// A read that failed (the store is away too, say) is tried again this often, this many times
/// in all: a sign-out lost with it would otherwise keep its sockets open.
const TRY_AGAIN_AFTER: Duration = Duration::from_secs(1);
const ATTEMPTS: u32 = 30;

/// Closes the member sockets here whose session no longer exists in the store; how many
/// sessions were found ended.
pub async fn close_ended_sessions(registry: &MemberRegistry, db: &Db) -> usize {
    let members = registry.sessions().await;
    let mut owners = std::collections::HashMap::new();
    for member in members {
        for session in member.sessions {
            owners.insert(session, member.user_id.clone());
        }
    }
    let hashes: Vec<String> = owners.keys().cloned().collect();
    let mut ended = 0;
    for some in hashes.chunks(SESSIONS_AT_ONCE) {
        let mut attempt = 1;
        let found = loop {
            match store::sessions::ended_among(db, some).await {
                Ok(found) => break found,
                Err(error) if attempt < ATTEMPTS => {
                    tracing::warn!(%error, "the sessions could not be checked; trying again");
                    attempt += 1;
                    tokio::time::sleep(TRY_AGAIN_AFTER).await;
                }
                Err(error) => {
                    tracing::error!(%error, "the sessions could not be checked: a lost sign-out may leave sockets open");
                    break Vec::new();
                }
            }
        };
        for session in found {
            if let Some(user_id) = owners.get(&session) {
                registry.signed_out(user_id, Some(session));
                ended += 1;
            }
        }
    }
    ended
}
