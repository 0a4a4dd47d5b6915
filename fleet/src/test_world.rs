//! A fleet state built one command at a time for the planners' tests (maintenance, failback):
//! nodes of PVE cluster `alpha` with a storage, and VMs placed with a VMID.

use protocol::NodeId;
use protocol::agent::StorageInfo;
use protocol::fleet::{Capacity, HostFacts, HostState, MigrationPurpose, PVE_CLUSTER_LABEL};
use protocol::spec::VmSpec;

use crate::state::{Command, CommandReply, FleetState, StateError};
use crate::views::host_views;

/// The state and its log index.
pub(crate) struct World {
    /// The state.
    pub(crate) state: FleetState,
    index: u64,
}

impl World {
    /// Applies a command that must be accepted.
    pub(crate) fn ok(&mut self, cmd: Command) {
        self.index += 1;
        let shown = format!("{cmd:?}");
        let reply = self.state.apply(self.index, cmd);
        assert!(
            !matches!(reply, CommandReply::Refused(_)),
            "{shown}: {reply:?}"
        );
    }

    /// Applies a command that must be refused; the refusal.
    pub(crate) fn err(&mut self, cmd: Command) -> StateError {
        self.index += 1;
        match self.state.apply(self.index, cmd) {
            CommandReply::Refused(e) => e,
            other => panic!("accepted: {other:?}"),
        }
    }

    /// Online node `id` of PVE cluster alpha, with a big `local-lvm`.
    pub(crate) fn host(&mut self, id: NodeId, name: &str) {
        self.ok(Command::RegisterHost {
            id,
            name: name.into(),
            labels: [(PVE_CLUSTER_LABEL.to_string(), "alpha".to_string())].into(),
            capacity: Capacity {
                cpus: 32,
                memory_mib: 131_072,
            },
            now: 1,
        });
        self.ok(Command::SetHostFacts {
            id,
            facts: Box::new(HostFacts {
                pve_version: "9.1.1".into(),
                storages: vec![StorageInfo {
                    id: "local-lvm".into(),
                    kind: "lvmthin".into(),
                    content: ["images".to_string()].into(),
                    active: true,
                    total_bytes: 1 << 42,
                    available_bytes: 1 << 42,
                    ..StorageInfo::default()
                }],
                ..HostFacts::default()
            }),
        });
        self.ok(Command::SetHostState {
            id,
            state: HostState::Online,
            now: 1,
        });
    }

    /// VM `name` (1 GiB) placed on `host` with a VMID.
    pub(crate) fn vm(&mut self, name: &str, host: NodeId) {
        self.spec_on(VmSpec::new(name, 1024), host);
    }

    /// `spec` placed on `host` with a VMID.
    pub(crate) fn spec_on(&mut self, spec: VmSpec, host: NodeId) {
        let name = spec.name.clone();
        let name = name.as_str();
        self.ok(Command::apply_vm(spec, 2));
        self.ok(Command::ScheduleVm {
            name: name.into(),
            host: Some(host),
            expected: None,
            now: 2,
        });
        self.ok(Command::AllocateVmid {
            vm: name.into(),
            avoid: vec![],
            now: 2,
        });
    }

    /// Applies the maintenance plan at `now`; the migrations it started.
    pub(crate) fn step(&mut self, now: u64) -> Vec<(String, NodeId, MigrationPurpose)> {
        let cmds = crate::maintenance::plan(&self.state, host_views(&self.state), now);
        let mut out = Vec::new();
        for cmd in cmds {
            if let Command::StartMigration {
                name, to, purpose, ..
            } = &cmd
            {
                out.push((name.clone(), *to, *purpose));
            }
            self.ok(cmd);
        }
        out
    }

    /// Ends VM `name`'s migration as its agent reported (`node`: where it is).
    pub(crate) fn end(&mut self, name: &str, node: Option<&str>, now: u64) {
        self.ok(Command::EndMigration {
            name: name.into(),
            node: node.map(str::to_string),
            message: "test".into(),
            now,
        });
    }
}

/// Nodes 1 (pve-a), 2 (pve-b), 3 (pve-c) of PVE cluster alpha and a VMID range; no VMs.
pub(crate) fn alpha() -> World {
    let mut w = World {
        state: FleetState::new(),
        index: 0,
    };
    w.ok(Command::PutVmidRange {
        spec: protocol::spec::VmidRangeSpec {
            name: "main".into(),
            start: 100,
            end: 199,
        },
        now: 1,
    });
    for (id, name) in [(1, "pve-a"), (2, "pve-b"), (3, "pve-c")] {
        w.host(id, name);
    }
    w
}
