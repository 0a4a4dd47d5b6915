//! At-most-once writes (encoding v2): [`Command::Once`] applies the write it wraps once per
//! (request id, number) and remembers the reply; the same key again, a client's retry whose
//! first attempt was applied before the leader could answer, gets that reply and changes
//! nothing. The memory is replicated (every member answers a retry alike, whoever leads next),
//! part of the snapshot, and bounded: a reply is forgotten [`REQUEST_MEMORY_MS`] after it was
//! proposed (a client's whole call, retries included, lasts far less) or when more than
//! [`REQUEST_MEMORY_MAX`] are held, oldest first. Forgetting goes by the proposal times in the
//! log, so every member forgets the same replies at the same index.
//!
//! The argument is safety rule 9 in docs/design/coordinator.md.
//!
//! [`Command::Once`]: super::Command::Once

use protocol::RequestId;
use protocol::fleet::UnixMillis;

use super::request_memory::Requests;
use super::{Command, CommandReply, FleetState, StateError};

impl FleetState {
    /// The replies to requests remembered.
    pub fn requests(&self) -> &Requests {
        &self.requests
    }

    /// Applies `command` as proposal `seq` of `request`, or answers its first reply.
    pub(super) fn once(
        &mut self,
        request: RequestId,
        seq: u32,
        now: UnixMillis,
        command: Command,
    ) -> Result<CommandReply, StateError> {
        if matches!(command, Command::Once { .. }) {
            return Err(StateError::Conflict(
                "a request's write cannot wrap another request's".into(),
            ));
        }
        self.requests.forget_before(now);
        let key = (request, seq);
        if let Some(reply) = self.requests.reply(&key) {
            return Ok(reply.clone());
        }
        // Refused is a reply too: the retry is refused alike, nothing applied either time.
        let reply = self.dispatch(command).unwrap_or_else(CommandReply::Refused);
        self.requests.remember(key, now, reply.clone());
        Ok(reply)
    }
}
