//! The fleet state as the Raft store's replicated machine: commands and replies cross as bytes.
//! [`FleetMachine`] is the runtime's wrapper around the pure [`FleetState`] of the `fleet`
//! crate, which knows nothing of Raft.
//!
//! A committed command this build cannot decode (written at an encoding it does not read, or
//! corrupt) is an error, not a refusal: every other member may have applied it, so skipping it
//! here would make this member's state silently differ. The store turns the error into a
//! storage error and the member stops, saying which entry and why.

use fleet::state::{FleetState, decode_command, decode_snapshot, encode_reply, encode_snapshot};

/// The replicated machine: the fleet state, applied in Raft log order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FleetMachine(pub(crate) FleetState);

impl raft::Machine for FleetMachine {
    fn apply(&mut self, index: u64, command: &[u8]) -> Result<Vec<u8>, String> {
        let cmd = decode_command(command).map_err(|e| e.to_string())?;
        let reply = self.0.apply(index, cmd);
        // The reply goes to the proposer on this member (this build): an encoding failure is
        // a bug, reported as one rather than as a state change that did not happen.
        encode_reply(&reply).map_err(|e| format!("the reply to entry {index}: {e}"))
    }

    fn snapshot(&self) -> Result<Vec<u8>, String> {
        // At the cluster version, so that every member (the oldest included) can install it.
        encode_snapshot(&self.0, self.0.cluster_version()).map_err(|e| e.to_string())
    }

    fn restore(&mut self, snapshot: &[u8]) -> Result<(), String> {
        self.0 = decode_snapshot(snapshot).map_err(|e| e.to_string())?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use fleet::state::{Command, CommandReply, StateError, decode_reply, encode_command};
    use protocol::spec::{VmSpec, VmidRangeSpec};
    use protocol::version::{CURRENT, Version};
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
        let bytes = encode_command(cmd, m.0.cluster_version()).unwrap();
        decode_reply(&Machine::apply(m, index, &bytes).unwrap()).unwrap()
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
        // Bytes this build cannot read stop the member (an error), whatever the reason.
        let newer = Version(CURRENT.0 + 1).0.to_be_bytes();
        for (what, bytes) in [
            ("garbage", &b"\x00\x01garbage"[..]),
            ("a newer encoding", &[newer[0], newer[1], 0][..]),
            ("empty", &[][..]),
        ] {
            let why = Machine::apply(&mut m, 2, bytes).expect_err(what);
            assert!(why.contains("command"), "{what}: {why}");
        }
        assert_eq!(m.0.last_applied(), Some(1), "nothing was applied");
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
            &Command::apply_vm(VmSpec::new("extra", 512), 2),
        );
        let snapshot = Machine::snapshot(&source).unwrap();
        Machine::restore(&mut other, &snapshot).unwrap();
        assert_eq!(other, source);
        assert!(other.0.vm("extra").is_none());

        let mut wrong_format = snapshot.clone();
        wrong_format[..2].copy_from_slice(&Version(CURRENT.0 + 1).0.to_be_bytes());
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
