//! The fleet state as the Raft store's replicated machine: commands and replies cross as bytes.
//! [`FleetMachine`] is the runtime's wrapper around the pure [`FleetState`] of the `fleet`
//! crate, which knows nothing of Raft.

use fleet::state::{
    CommandReply, FleetState, StateError, decode_command, decode_snapshot, encode_reply,
    encode_snapshot,
};

/// The replicated machine: the fleet state, applied in Raft log order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FleetMachine(pub(crate) FleetState);

impl raft::Machine for FleetMachine {
    fn apply(&mut self, index: u64, command: &[u8]) -> Vec<u8> {
        let reply = match decode_command(command) {
            Ok(cmd) => self.0.apply(index, cmd),
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
        encode_snapshot(&self.0).unwrap_or_else(|e| {
            tracing::error!(error = %e, "cannot encode a fleet snapshot");
            Vec::new()
        })
    }

    fn restore(&mut self, snapshot: &[u8]) -> Result<(), String> {
        self.0 = decode_snapshot(snapshot).map_err(|e| e.to_string())?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use fleet::state::{Command, decode_reply, encode_command};
    use protocol::spec::{VmSpec, VmidRangeSpec};
    use raft::Machine;

    use super::*;

    fn range(name: &str) -> Command {
        Command::PutVmidRange {
            spec: VmidRangeSpec {
                name: name.into(),
                start: 100,
                end: 200,
            },
            now: 1,
        }
    }

    fn apply(m: &mut FleetMachine, index: u64, cmd: &Command) -> CommandReply {
        decode_reply(&Machine::apply(m, index, &encode_command(cmd).unwrap())).unwrap()
    }

    #[test]
    fn commands_and_replies_cross_the_raft_machine_as_bytes() {
        let mut m = FleetMachine::default();
        let reply = apply(&mut m, 1, &range("r"));
        assert!(matches!(reply, CommandReply::Applied { .. }), "{reply:?}");
        assert!(m.0.vmid_ranges().contains_key("r"));
        // A replayed index changes nothing.
        assert_eq!(
            apply(&mut m, 1, &range("r")),
            CommandReply::Refused(StateError::AlreadyApplied {
                index: 1,
                last_applied: 1
            })
        );
        // Undecodable bytes are answered, deterministically, with a refusal.
        let garbage = decode_reply(&Machine::apply(&mut m, 2, b"\x01garbage")).unwrap();
        assert!(
            matches!(garbage, CommandReply::Refused(StateError::Undecodable(_))),
            "{garbage:?}"
        );
    }

    #[test]
    fn restoring_a_snapshot_replaces_everything_and_corrupt_ones_are_refused() {
        let mut source = FleetMachine::default();
        apply(&mut source, 1, &range("kept"));
        let mut other = FleetMachine::default();
        apply(&mut other, 1, &range("gone"));
        apply(
            &mut other,
            2,
            &Command::PutVm {
                spec: Box::new(VmSpec::new("extra", 512)),
                now: 2,
            },
        );
        let snapshot = Machine::snapshot(&source);
        Machine::restore(&mut other, &snapshot).unwrap();
        assert_eq!(other, source);
        assert!(other.0.vm("extra").is_none());

        let mut wrong_format = snapshot.clone();
        wrong_format[0] = 9;
        let mut trailing = snapshot.clone();
        trailing.push(0);
        for (what, bytes) in [
            ("empty", &[][..]),
            ("format", &wrong_format[..]),
            ("truncated", &snapshot[..snapshot.len() / 2]),
            ("trailing", &trailing[..]),
        ] {
            let mut m = source.clone();
            assert!(Machine::restore(&mut m, bytes).is_err(), "{what}");
            assert_eq!(m, source, "{what}: a refused snapshot changes nothing");
        }
    }
}
