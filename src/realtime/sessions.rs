//! The polling sessions by sid: where a GET or POST finds its session, and where a WebSocket
//! claims one to take it over (one upgrade at a time).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::errors::EngineError;
use super::session_messages::PollingHandle;
use crate::sync::lock;

struct PollingEntry {
    /// Shared: a GET, a POST or an upgrade takes a reference, not a copy of each recipient.
    handle: Arc<PollingHandle>,
    upgrading: bool,
}

#[derive(Clone, Default)]
pub(crate) struct PollingSessions(Arc<Mutex<HashMap<Arc<str>, PollingEntry>>>);

impl PollingSessions {
    pub(crate) fn register(&self, sid: Arc<str>, handle: PollingHandle) {
        lock(&self.0).insert(
            sid,
            PollingEntry {
                handle: Arc::new(handle),
                upgrading: false,
            },
        );
    }

    pub(crate) fn get(&self, sid: &str) -> Option<Arc<PollingHandle>> {
        lock(&self.0).get(sid).map(|entry| entry.handle.clone())
    }

    pub(crate) fn remove(&self, sid: &str) {
        lock(&self.0).remove(sid);
    }

    /// Claims a polling session for a WebSocket upgrade; only one may try at a time.
    pub(crate) fn begin_upgrade(&self, sid: &str) -> Result<Arc<PollingHandle>, EngineError> {
        let mut sessions = lock(&self.0);
        let entry = sessions.get_mut(sid).ok_or(EngineError::UnknownSid)?;
        if entry.upgrading {
            return Err(EngineError::BadRequest);
        }
        entry.upgrading = true;
        Ok(entry.handle.clone())
    }

    /// An upgrade attempt failed: the session may try again.
    pub(crate) fn abandon_upgrade(&self, sid: &str) {
        if let Some(entry) = lock(&self.0).get_mut(sid) {
            entry.upgrading = false;
        }
    }
}
