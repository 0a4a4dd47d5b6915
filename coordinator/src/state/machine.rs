//! The fleet state as the Raft store's replicated machine: commands and replies cross as bytes.

use super::{
    CommandReply, FleetState, StateError, decode_command, decode_snapshot, encode_reply,
    encode_snapshot,
};

impl raft::Machine for FleetState {
    fn apply(&mut self, index: u64, command: &[u8]) -> Vec<u8> {
        let reply = match decode_command(command) {
            Ok(cmd) => FleetState::apply(self, index, cmd),
            Err(e) => {
                // A command no member can decode changes nothing anywhere: still deterministic.
                CommandReply::Refused(StateError::Undecodable(e.to_string()))
            }
        };
        // Replies are plain data and always encode; an empty reply is refused by
        // `decode_reply` on the proposer's side rather than misread.
        encode_reply(&reply).unwrap_or_else(|e| {
            tracing::error!(error = %e, index, "cannot encode a state machine reply");
            Vec::new()
        })
    }

    fn snapshot(&self) -> Vec<u8> {
        // An empty snapshot is refused by `restore`, so a failure here cannot erase a state.
        encode_snapshot(self).unwrap_or_else(|e| {
            tracing::error!(error = %e, "cannot encode a fleet snapshot");
            Vec::new()
        })
    }

    fn restore(&mut self, snapshot: &[u8]) -> Result<(), String> {
        *self = decode_snapshot(snapshot).map_err(|e| e.to_string())?;
        Ok(())
    }
}
