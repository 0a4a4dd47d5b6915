//! The bounded event log: the newest [`EVENT_LOG_CAPACITY`] events are kept; sequence numbers
//! keep growing past the dropped ones, so followers can tell what they missed.

use std::collections::VecDeque;

use protocol::fleet::{Event, EventKind, EventLevel, UnixMillis};
use serde::{Deserialize, Serialize};

/// How many events the replicated state keeps.
pub const EVENT_LOG_CAPACITY: usize = 1000;

/// The newest events, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct EventLog {
    entries: VecDeque<Event>,
    /// The sequence number of the next event (the first is 1).
    next_seq: u64,
}

impl Default for EventLog {
    fn default() -> EventLog {
        EventLog {
            entries: VecDeque::new(),
            next_seq: 1,
        }
    }
}

impl EventLog {
    pub(crate) fn push(
        &mut self,
        at: UnixMillis,
        level: EventLevel,
        kind: EventKind,
        subject: impl Into<String>,
        message: impl Into<String>,
    ) {
        self.entries.push_back(Event {
            seq: self.next_seq,
            at,
            level,
            kind,
            subject: subject.into(),
            message: message.into(),
        });
        self.next_seq += 1;
        while self.entries.len() > EVENT_LOG_CAPACITY {
            self.entries.pop_front();
        }
    }

    /// Events with `seq > since`, oldest first, at most `limit`.
    pub(crate) fn after(&self, since: u64, limit: Option<usize>) -> Vec<Event> {
        // Sequence numbers are consecutive, so the first wanted entry's position is computed.
        let first = self.first_seq();
        let skip =
            usize::try_from(since.saturating_sub(first.saturating_sub(1))).unwrap_or(usize::MAX);
        self.entries
            .iter()
            .skip(skip)
            .take(limit.unwrap_or(usize::MAX))
            .cloned()
            .collect()
    }

    /// The oldest kept sequence number (0 when empty).
    pub(crate) fn first_seq(&self) -> u64 {
        self.entries.front().map_or(0, |e| e.seq)
    }

    /// The newest sequence number (0 before the first event).
    pub(crate) fn last_seq(&self) -> u64 {
        self.next_seq.saturating_sub(1)
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}
