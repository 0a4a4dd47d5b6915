//! The agent commands as encoding v1 lays them out, frozen: [`EnsureVm`] carries the VM spec,
//! whose `ha` v2 turned from a bool into PVE HA's settings. The leader writes this layout in
//! the [`HeartbeatAck`](super::HeartbeatAck) it answers a v1 agent with, and a v2 agent reads it
//! from a v1 leader.
//!
//! A v1 agent is sent what it acts on ([`VmSpecV1::shown`]): `ha` is whether the guest is
//! fenced with its host (`started` or `stopped`), which is all an agent does with it. Refusing
//! the command instead would fail the whole acknowledgement, and with it the agent's lease.

use serde::{Deserialize, Serialize};

use super::command::{AgentCommand, DeleteVm, EnsureVm, Op, PowerOp, SnapshotOp};
use crate::fleet::NicAddress;
use crate::spec::{VmSpec, VmSpecV1};

/// [`AgentCommand`] in the v1 layout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentCommandV1 {
    /// The command's id.
    pub id: String,
    /// What to do.
    pub op: OpV1,
}

/// [`Op`] in the v1 layout (the same variants in the same order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum OpV1 {
    /// Make the VM exist and match its spec.
    Ensure(Box<EnsureVmV1>),
    /// Stop, destroy and purge the VM.
    Delete(DeleteVm),
    /// A one-shot power action.
    Power(PowerOp),
    /// A snapshot action.
    Snapshot(SnapshotOp),
}

/// [`EnsureVm`] in the v1 layout (see it for the fields).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnsureVmV1 {
    /// The desired VM, in the v1 layout.
    pub spec: VmSpecV1,
    /// The spec's generation.
    pub generation: u64,
    /// The VMID.
    pub vmid: u32,
    /// Pool addresses.
    pub ips: Vec<NicAddress>,
    /// DNS servers of the pools.
    pub pool_dns: Vec<String>,
    /// Seconds to wait for guest-agent addresses.
    pub ip_wait_secs: u32,
}

impl From<AgentCommandV1> for AgentCommand {
    fn from(v1: AgentCommandV1) -> AgentCommand {
        let op = match v1.op {
            OpV1::Ensure(e) => {
                let e = *e;
                Op::Ensure(Box::new(EnsureVm {
                    spec: VmSpec::from(e.spec),
                    generation: e.generation,
                    vmid: e.vmid,
                    ips: e.ips,
                    pool_dns: e.pool_dns,
                    ip_wait_secs: e.ip_wait_secs,
                    take_over: None,
                }))
            }
            OpV1::Delete(d) => Op::Delete(d),
            OpV1::Power(p) => Op::Power(p),
            OpV1::Snapshot(s) => Op::Snapshot(s),
        };
        AgentCommand { id: v1.id, op }
    }
}

impl AgentCommandV1 {
    /// `cmd` in the v1 layout if v1 carries it exactly (an ensure's spec: [`VmSpecV1::exact`]).
    pub fn exact(cmd: &AgentCommand) -> Option<AgentCommandV1> {
        if let Op::Ensure(e) = &cmd.op {
            // `exact` is `shown` whenever it is anything.
            VmSpecV1::exact(&e.spec)?;
            if e.take_over.is_some() {
                return None;
            }
        }
        AgentCommandV1::shown(cmd)
    }

    /// What a v1 agent acts on ([`VmSpecV1::shown`]); `None` for a command v1 does not have
    /// (a move of any kind: a v1 agent is never sent one, and the move waits for its upgrade).
    pub fn shown(cmd: &AgentCommand) -> Option<AgentCommandV1> {
        let op = match &cmd.op {
            Op::Ensure(e) => OpV1::Ensure(Box::new(EnsureVmV1 {
                spec: VmSpecV1::shown(&e.spec),
                generation: e.generation,
                vmid: e.vmid,
                ips: e.ips.clone(),
                pool_dns: e.pool_dns.clone(),
                ip_wait_secs: e.ip_wait_secs,
            })),
            Op::Delete(d) => OpV1::Delete(d.clone()),
            Op::Power(p) => OpV1::Power(p.clone()),
            Op::Snapshot(s) => OpV1::Snapshot(s.clone()),
            Op::Migrate(_)
            | Op::OpenMigrationTarget(_)
            | Op::RemoteMigrate(_)
            | Op::CloseMigrationTarget(_)
            | Op::Vacate(_)
            | Op::Diagnose(_) => return None,
        };
        Some(AgentCommandV1 {
            id: cmd.id.clone(),
            op,
        })
    }
}
