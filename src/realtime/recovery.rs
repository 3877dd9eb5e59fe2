//! Connection state recovery's log: the recent events of one socket with their offsets, so that
//! a client that comes back within the recovery window gets exactly the ones it missed.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::payload::Outgoing;

/// Events kept for a disconnected socket at most, whatever their age.
const RECOVERY_LOG_LIMIT: usize = 1024;

#[derive(Debug, Default)]
pub(crate) struct RecoveryLog {
    next_offset: u64,
    /// Recent events and their offsets, oldest first.
    entries: VecDeque<Logged>,
    /// Events dropped from the front of the log, so a client that got none cannot be served.
    pruned: bool,
}

#[derive(Debug)]
struct Logged {
    offset: u64,
    at: Instant,
    packet: Outgoing,
}

impl RecoveryLog {
    /// The offset the next logged event gets.
    pub fn take_offset(&mut self) -> u64 {
        let offset = self.next_offset;
        self.next_offset += 1;
        offset
    }

    /// Logs `packet` under `offset`, dropping what is older than `window` or past the limit.
    pub fn record(&mut self, offset: u64, packet: Outgoing, window: Duration) {
        let now = Instant::now();
        if self.entries.capacity() == 0 {
            // Most sockets log an event or two: room for four would be mostly empty.
            self.entries.reserve_exact(1);
        }
        self.entries.push_back(Logged {
            offset,
            at: now,
            packet,
        });
        while self.entries.len() > RECOVERY_LOG_LIMIT
            || self
                .entries
                .front()
                .is_some_and(|oldest| now.duration_since(oldest.at) > window)
        {
            self.entries.pop_front();
            self.pruned = true;
        }
    }

    /// The events logged after `offset` (all of them when the client had received nothing).
    pub fn after(&self, offset: Option<&str>) -> impl Iterator<Item = &Outgoing> {
        let after = offset.and_then(|o| o.parse::<u64>().ok());
        self.entries
            .iter()
            .filter(move |logged| after.is_none_or(|after| logged.offset > after))
            .map(|logged| &logged.packet)
    }

    /// Whether a client that last got event `offset` can be given everything it missed.
    pub fn can_resume(&self, offset: Option<&str>) -> bool {
        match offset {
            // Nothing received yet: everything must still be in the log.
            None => !self.pruned,
            Some(offset) => match offset.parse::<u64>() {
                Ok(offset) => {
                    self.entries.iter().any(|logged| logged.offset == offset)
                        || (offset + 1 == self.next_offset
                            && self.entries.is_empty()
                            && !self.pruned)
                }
                Err(_) => false,
            },
        }
    }

    /// Forgets every event and frees their memory (the socket closed for good).
    pub fn discard(&mut self) {
        self.entries = VecDeque::new();
    }
}
