//! The replies the state machine remembers for clients' requests (`Command::Once`): by
//! (request id, number), oldest first, forgotten by proposal time and by count.

use std::collections::{BTreeMap, VecDeque};

use protocol::RequestId;
use protocol::fleet::UnixMillis;
use serde::{Deserialize, Serialize};

use super::command::CommandReply;

/// How long a reply is remembered after its proposal (ms).
pub const REQUEST_MEMORY_MS: u64 = 600_000;
/// At most this many replies are remembered.
pub const REQUEST_MEMORY_MAX: usize = 100_000;

/// A request's proposal: the client's id and its number within the call.
pub(super) type Key = (RequestId, u32);

/// The replies remembered, by key, and the keys oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Requests {
    replies: BTreeMap<Key, (UnixMillis, CommandReply)>,
    order: VecDeque<Key>,
}

impl Requests {
    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.replies.is_empty()
    }

    /// How many replies are remembered.
    pub fn len(&self) -> usize {
        self.replies.len()
    }

    /// The reply remembered for `key`.
    pub(super) fn reply(&self, key: &Key) -> Option<&CommandReply> {
        self.replies.get(key).map(|(_, reply)| reply)
    }

    /// Remembers `reply` to `key`, proposed at `now`, and forgets what is due.
    pub(super) fn remember(&mut self, key: Key, now: UnixMillis, reply: CommandReply) {
        self.replies.insert(key, (now, reply));
        self.order.push_back(key);
        self.forget_before(now);
    }

    /// Forgets the replies proposed before `now - REQUEST_MEMORY_MS`, and the oldest past
    /// `REQUEST_MEMORY_MAX`.
    pub(super) fn forget_before(&mut self, now: UnixMillis) {
        let horizon = now.saturating_sub(REQUEST_MEMORY_MS);
        while let Some(key) = self.order.front().copied() {
            let old = self.replies.get(&key).is_none_or(|(at, _)| *at < horizon);
            if !old && self.order.len() <= REQUEST_MEMORY_MAX {
                break;
            }
            self.order.pop_front();
            self.replies.remove(&key);
        }
    }
}
