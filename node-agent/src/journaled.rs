//! What the journal fingerprints of an agent command: the command in the oldest encoding that
//! carries it exactly. The journal keys a command id to the SHA-256 of the command's bincode
//! bytes, and a repeated id with other bytes is refused as a reused id. An agent upgraded while
//! a command is in flight is sent the same command again (the leader re-sends what it has no
//! result for); fingerprinting the v1 layout whenever v1 carries the command keeps that
//! fingerprint what the v1 build recorded, so the journal answers the repeat instead of
//! refusing it. A command only v2 carries (an ensure with PVE HA's settings) was never seen by
//! a v1 build and is fingerprinted in the current layout.

use protocol::agent::{AgentCommand, AgentCommandV1};
use serde::{Serialize, Serializer};

/// A command as the journal fingerprints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Journaled {
    /// v1 carries it exactly: its v1 bytes.
    V1(AgentCommandV1),
    /// Only a later layout carries it.
    Current(AgentCommand),
}

impl Journaled {
    /// `cmd` in the oldest layout that carries it exactly.
    pub fn of(cmd: &AgentCommand) -> Journaled {
        match AgentCommandV1::exact(cmd) {
            Some(v1) => Journaled::V1(v1),
            None => Journaled::Current(cmd.clone()),
        }
    }
}

impl Serialize for Journaled {
    /// The bytes of the layout, without a tag of its own.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Journaled::V1(v1) => v1.serialize(serializer),
            Journaled::Current(cmd) => cmd.serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    use protocol::agent::{EnsureVm, Op};
    use protocol::spec::{HaSpec, VmSpec};

    use super::*;
    use crate::typed::TypedJournal;

    fn ensure(ha: HaSpec) -> AgentCommand {
        let mut spec = VmSpec::new("web", 512);
        spec.ha = ha;
        AgentCommand {
            id: "web/ensure/g1/t1/1".into(),
            op: Op::Ensure(Box::new(EnsureVm {
                spec,
                generation: 1,
                vmid: 100,
                ips: vec![],
                pool_dns: vec![],
                ip_wait_secs: 0,
                take_over: None,
            })),
        }
    }

    type Fp = TypedJournal<Journaled, ()>;

    #[test]
    fn a_command_v1_carries_keeps_the_fingerprint_a_v1_agent_recorded() {
        for ha in [HaSpec::none(), HaSpec::started()] {
            let cmd = ensure(ha);
            let v1 = AgentCommandV1::exact(&cmd).unwrap();
            // A v1 build fingerprinted its own `AgentCommand`, laid out as `AgentCommandV1`.
            let v1_build = TypedJournal::<AgentCommandV1, ()>::fingerprint(&v1).unwrap();
            assert_eq!(Fp::fingerprint(&Journaled::of(&cmd)).unwrap(), v1_build);
        }
        // Settings v1 cannot carry: the current layout, so they are not confused with the
        // command a v1 agent would act on.
        let tuned = ensure(HaSpec {
            max_restart: Some(5),
            ..HaSpec::started()
        });
        assert!(matches!(Journaled::of(&tuned), Journaled::Current(_)));
        assert_ne!(
            Fp::fingerprint(&Journaled::of(&tuned)).unwrap(),
            Fp::fingerprint(&Journaled::of(&ensure(HaSpec::started()))).unwrap()
        );
    }
}
