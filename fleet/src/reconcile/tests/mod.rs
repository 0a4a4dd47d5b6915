//! Table tests of the reconciler: a small fleet built through the state machine's own commands,
//! a live view and the reconciler's memory set per case, and the exact actions expected.

mod migrate;
mod plan;
mod remote_move;
mod results;

use std::collections::BTreeMap;
use std::sync::Arc;

use protocol::NodeId;
use protocol::agent::{ObservedVm, StorageInfo, TemplateInfo};
use protocol::fleet::{Capacity, HostFacts, HostState, VmRecord, VmStatus};
use protocol::spec::{CloudInitSpec, IpPoolSpec, NicIp, NicSpec, VmSpec, VmidRangeSpec};

use super::{Clock, Inflight, LiveHost, LiveView, Policy, VmMemory};
use crate::state::{Command, FleetState};

pub(super) const A: NodeId = 5;
pub(super) const B: NodeId = 6;
pub(super) const FOREIGN_VMID: u32 = 100;
pub(super) const TEMPLATE_VMID: u32 = 9000;
const GIB: u64 = 1024 * 1024 * 1024;

pub(super) const POLICY: Policy = Policy {
    lease_ms: 10_000,
    resync_ms: 30_000,
    ip_wait_secs: 60,
};

/// Leading for a long time already; every host beat a second ago.
pub(super) const NOW: Clock = Clock {
    mono_ms: 1_000_000,
    unix_ms: 1_700_000_000_000,
};

/// A fleet of two equal online hosts with facts, a VMID range, an IP pool with DNS servers.
pub(super) struct Fleet {
    pub(super) state: FleetState,
    index: u64,
}

impl Fleet {
    pub(super) fn new() -> Fleet {
        let mut fleet = Fleet {
            state: FleetState::new(),
            index: 0,
        };
        fleet.run(Command::PutVmidRange {
            spec: VmidRangeSpec {
                name: "main".into(),
                start: 100,
                end: 199,
            },
            now: 1,
        });
        fleet.run(Command::PutPool {
            spec: IpPoolSpec {
                name: "lan".into(),
                cidr: "10.0.0.0/24".into(),
                gateway: Some("10.0.0.1".into()),
                range_start: "10.0.0.10".into(),
                range_end: "10.0.0.20".into(),
                dns: vec!["10.0.0.53".into(), "10.0.0.54".into()],
            },
            now: 1,
        });
        for (id, name) in [(A, "pve-a"), (B, "pve-b")] {
            fleet.run(Command::RegisterHost {
                id,
                name: name.into(),
                labels: Default::default(),
                capacity: Capacity {
                    cpus: 8,
                    memory_mib: 34_816,
                },
                now: 1,
            });
            fleet.run(Command::SetHostState {
                id,
                state: HostState::Online,
                now: 1,
            });
            fleet.run(Command::SetHostFacts {
                id,
                facts: Box::new(HostFacts {
                    pve_version: "9.1.1".into(),
                    storages: vec![StorageInfo {
                        id: "local-lvm".into(),
                        kind: "lvmthin".into(),
                        content: ["images".to_string()].into(),
                        active: true,
                        total_bytes: 500 * GIB,
                        available_bytes: 400 * GIB,
                        ..StorageInfo::default()
                    }],
                    bridges: ["vmbr0".to_string()].into(),
                    templates: vec![TemplateInfo {
                        vmid: TEMPLATE_VMID,
                        name: "debian-12".into(),
                    }],
                    foreign_vmids: if id == A { vec![FOREIGN_VMID] } else { vec![] },
                    updated_at: 1,
                }),
            });
        }
        fleet
    }

    /// Applies a command that must be accepted.
    pub(super) fn run(&mut self, cmd: Command) {
        self.index += 1;
        let shown = format!("{cmd:?}");
        if let Err(e) = self.state.apply(self.index, cmd).into_result() {
            panic!("{shown} refused: {e}");
        }
    }

    pub(super) fn put(&mut self, spec: VmSpec) {
        self.run(Command::apply_vm(spec, 2));
    }

    /// Applies `spec`, places it on `host` and allocates its ids.
    pub(super) fn placed(&mut self, spec: VmSpec, host: NodeId) {
        let name = spec.name.clone();
        self.put(spec);
        self.run(Command::ScheduleVm {
            name: name.clone(),
            host: Some(host),
            expected: None,
            now: 3,
        });
        self.run(Command::AllocateVmid {
            vm: name.clone(),
            avoid: vec![FOREIGN_VMID],
            now: 3,
        });
        self.run(Command::AllocateIps { vm: name, now: 3 });
    }

    pub(super) fn status(&mut self, vm: &str, status: VmStatus) {
        self.run(Command::SetVmStatus {
            name: vm.into(),
            status,
            now: 4,
        });
    }

    pub(super) fn delete(&mut self, vm: &str) {
        self.run(Command::DeleteVm {
            name: vm.into(),
            now: 5,
        });
    }

    pub(super) fn vm(&self, name: &str) -> VmRecord {
        self.state.vm(name).cloned().unwrap()
    }
}

/// A 2-core, 2 GiB VM with one NIC drawing from pool `lan`.
pub(super) fn spec(name: &str) -> VmSpec {
    let mut spec = VmSpec::new(name, 2048);
    spec.cores = 2;
    spec.cloud_init = Some(CloudInitSpec::default());
    spec.nics = vec![nic("vmbr0", Some(NicIp::Pool("lan".into())))];
    spec
}

pub(super) fn nic(bridge: &str, ip: Option<NicIp>) -> NicSpec {
    NicSpec {
        model: Default::default(),
        bridge: bridge.into(),
        vlan: None,
        mac: None,
        firewall: false,
        mtu: None,
        ip,
    }
}

/// Both hosts beat a second ago; `vms` is host A's inventory (received a second ago).
pub(super) fn live(vms: &[ObservedVm]) -> LiveView {
    let beat = NOW.mono_ms - 1_000;
    let inventory: BTreeMap<u32, ObservedVm> = vms.iter().map(|v| (v.vmid, v.clone())).collect();
    LiveView {
        leading_since_ms: 0,
        hosts: [
            (
                A,
                LiveHost {
                    last_beat_ms: beat,
                    inventory_ms: Some(beat),
                    vms: Arc::new(inventory),
                },
            ),
            (
                B,
                LiveHost {
                    last_beat_ms: beat,
                    inventory_ms: Some(beat),
                    vms: Arc::default(),
                },
            ),
        ]
        .into(),
    }
}

/// Memory of one VM.
pub(super) fn remember(vm: &str, memory: VmMemory) -> Inflight {
    Inflight {
        commands: BTreeMap::new(),
        memory: [(vm.to_string(), memory)].into(),
    }
}

/// An owned VM as an inventory shows it.
pub(super) fn observed(vmid: u32, name: &str, running: bool) -> ObservedVm {
    ObservedVm {
        vmid,
        name: name.into(),
        tags: vec!["pvefleet".into()],
        owned: true,
        status: if running { "running" } else { "stopped" }.into(),
        lock: None,
        cpus: 2,
        memory_bytes: 2048 * 1024 * 1024,
    }
}
