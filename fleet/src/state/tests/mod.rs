//! Tests of the fleet state machine. Every command goes through [`Fleet::run`], which also
//! audits the allocation invariants after it, and refusals are checked to leave the state
//! untouched.

mod admins;
mod alloc_ips;
mod alloc_vmids;
mod cluster;
mod codec;
mod dashboard_logins;
mod fleet_apply;
mod ha;
mod host_admin;
mod leaving;
mod migrations;
mod property;
mod requests;
mod spec_file;
mod tokens;
mod versions;
mod vms;

use protocol::spec::{IpPoolSpec, NicIp, NicSpec, VmSpec, VmidRangeSpec};

use super::{Command, CommandReply, FleetState, StateError};

/// A fleet driven one command at a time, with log indices and a clock that advance.
pub(super) struct Fleet {
    pub(super) state: FleetState,
    index: u64,
    pub(super) now: u64,
}

impl Fleet {
    pub(super) fn new() -> Fleet {
        Fleet {
            state: FleetState::new(),
            index: 0,
            now: 1_700_000_000_000,
        }
    }

    /// Applies a command at the next index and checks the allocation invariants.
    pub(super) fn run(&mut self, cmd: Command) -> CommandReply {
        self.index += 1;
        let reply = self.state.apply(self.index, cmd);
        let problems = self.state.audit();
        assert!(problems.is_empty(), "invariants broken: {problems:#?}");
        reply
    }

    /// Applies a command that must succeed.
    pub(super) fn ok(&mut self, cmd: Command) -> CommandReply {
        let shown = format!("{cmd:?}");
        self.run(cmd)
            .into_result()
            .unwrap_or_else(|e| panic!("{shown} refused: {e}"))
    }

    /// Applies a command that must be refused, and checks that nothing but the applied index
    /// changed.
    pub(super) fn err(&mut self, cmd: Command) -> StateError {
        let mut before = self.state.clone();
        let shown = format!("{cmd:?}");
        let reply = self.run(cmd);
        before.last_applied = self.state.last_applied;
        assert_eq!(before, self.state, "refused {shown} changed the state");
        match reply {
            CommandReply::Refused(e) => e,
            other => panic!("{shown} accepted: {other:?}"),
        }
    }

    pub(super) fn put_vm(&mut self, spec: VmSpec) -> CommandReply {
        let now = self.now;
        self.run(Command::apply_vm(spec, now))
    }

    pub(super) fn range(&mut self, name: &str, start: u32, end: u32) {
        let now = self.now;
        self.ok(Command::PutVmidRange {
            spec: VmidRangeSpec {
                name: name.into(),
                start,
                end,
            },
            now,
        });
    }

    pub(super) fn pool(&mut self, spec: IpPoolSpec) {
        let now = self.now;
        self.ok(Command::PutPool { spec, now });
    }

    pub(super) fn vmid(&mut self, vm: &str) -> Result<u32, StateError> {
        let now = self.now;
        match self.run(Command::AllocateVmid {
            vm: vm.into(),
            avoid: vec![],
            now,
        }) {
            CommandReply::Vmid { vmid, .. } => Ok(vmid),
            CommandReply::Refused(e) => Err(e),
            other => panic!("unexpected {other:?}"),
        }
    }

    pub(super) fn delete_and_release(&mut self, vm: &str) {
        let now = self.now;
        self.ok(Command::DeleteVm {
            name: vm.into(),
            now,
        });
        if self.state.vm(vm).is_some() {
            self.ok(Command::ReleaseVm {
                name: vm.into(),
                now,
            });
        }
        assert!(self.state.vm(vm).is_none());
    }
}

pub(super) fn pool_spec(
    name: &str,
    cidr: &str,
    gateway: Option<&str>,
    start: &str,
    end: &str,
) -> IpPoolSpec {
    IpPoolSpec {
        name: name.into(),
        cidr: cidr.into(),
        gateway: gateway.map(Into::into),
        range_start: start.into(),
        range_end: end.into(),
        dns: vec![],
    }
}

/// A VM with one NIC per pool named, each drawing from that pool (cloud-init enabled).
pub(super) fn vm_with_pools(name: &str, pools: &[&str]) -> VmSpec {
    let mut spec = VmSpec::new(name, 1024);
    spec.cloud_init = Some(Default::default());
    spec.nics = pools
        .iter()
        .map(|p| NicSpec {
            model: Default::default(),
            bridge: "vmbr0".into(),
            vlan: None,
            mac: None,
            firewall: false,
            mtu: None,
            ip: Some(NicIp::Pool((*p).into())),
        })
        .collect();
    spec
}
