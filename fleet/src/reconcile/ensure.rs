//! Driving a placed VM: first its ids (VMID, pool addresses), then an Ensure whenever the VM may
//! differ from its spec: a generation its host has not confirmed, a failed attempt whose
//! back-off passed, an inventory that contradicts the spec (drift behind the fleet's back), or
//! simply a resync period without an Ensure. Never while a command for the VM is in flight,
//! never to a host that is not reporting.

use std::collections::BTreeSet;

use protocol::agent::{EnsureVm, Op};
use protocol::fleet::{ConditionKind, HostState, TakeOver, VmPhase, VmRecord, VmStatus};
use protocol::spec::{DesiredState, RecoveryMode};

use super::planner::{Inputs, Planner};
use super::{Action, Clock, LiveHost, Policy, VmMemory};
use crate::state::FleetState;

const MIB: u64 = 1024 * 1024;

/// Why an Ensure is sent (for logs and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EnsureReason {
    /// The host has not confirmed the current generation.
    Generation,
    /// The last attempt failed and its back-off passed.
    Retry,
    /// The host's inventory contradicts the spec.
    Drift,
    /// No Ensure for a resync period (or none since this member leads).
    Resync,
}

/// VMIDs no fleet VM may get: foreign VMs and templates on any host.
pub(super) fn avoid_vmids(state: &FleetState) -> Vec<u32> {
    let mut avoid = BTreeSet::new();
    for host in state.hosts().values() {
        if host.state == HostState::Removed {
            continue;
        }
        if let Some(facts) = &host.facts {
            avoid.extend(facts.foreign_vmids.iter().copied());
            avoid.extend(facts.templates.iter().map(|t| t.vmid));
        }
    }
    avoid.into_iter().collect()
}

/// Whether the spec wants a pool address its record does not hold.
fn missing_ips(rec: &VmRecord) -> bool {
    rec.spec.pool_nics().any(|(i, _)| {
        !rec.assignment
            .ips
            .iter()
            .any(|a| usize::try_from(a.nic).is_ok_and(|n| n == i) && a.is_current(&rec.spec))
    })
}

/// Allocates what the VM still lacks; `true` when it lacks something (no Ensure yet).
pub(super) fn plan_allocations(
    rec: &VmRecord,
    memory: &VmMemory,
    avoid: &[u32],
    now: Clock,
    out: &mut Vec<Action>,
) -> bool {
    let need_vmid = rec.assignment.vmid.is_none();
    let need_ips = missing_ips(rec);
    if !need_vmid && !need_ips {
        return false;
    }
    if memory
        .backoff
        .is_some_and(|b| b.holds(rec.generation, now.mono_ms))
    {
        return true;
    }
    let vm = rec.spec.name.clone();
    if need_vmid {
        out.push(Action::AllocateVmid {
            vm: vm.clone(),
            avoid: avoid.to_vec(),
        });
    }
    if need_ips {
        out.push(Action::AllocateIps { vm });
    }
    true
}

impl Planner<'_> {
    /// Sends an Ensure to the VM's host when one is due.
    pub(super) fn ensure(&mut self, rec: &VmRecord, memory: &VmMemory) {
        let Inputs {
            state,
            live,
            inflight,
            policy,
            now,
        } = self.inputs;
        let out = &mut *self.out;
        let (Some(host), Some(vmid)) = (rec.assignment.host, rec.assignment.vmid) else {
            return;
        };
        let name = &rec.spec.name;
        if !live.is_reporting(host, policy, now)
            || inflight.commands.contains_key(name)
            || memory.not_owned_generation == Some(rec.generation)
            || memory
                .backoff
                .is_some_and(|b| b.holds(rec.generation, now.mono_ms))
        {
            return;
        }
        let Some(_reason) = ensure_reason(rec, vmid, live.hosts.get(&host), memory, policy, now)
        else {
            return;
        };
        let created = condition(&rec.status, ConditionKind::Created) == Some(true);
        if !created && matches!(rec.status.phase, VmPhase::Pending | VmPhase::Scheduled) {
            let host_name = state
                .hosts()
                .get(&host)
                .map_or_else(|| host.to_string(), |h| h.name.clone());
            out.push(Action::SetStatus {
                vm: name.clone(),
                status: VmStatus {
                    phase: VmPhase::Provisioning,
                    message: format!("creating on host {host_name} with VMID {vmid}"),
                    updated_at: now.unix_ms,
                    ..rec.status.clone()
                },
            });
        }
        out.push(Action::Send {
            host,
            generation: rec.generation,
            op: ensure_op(state, rec, vmid, policy),
        });
    }
}

/// Why an Ensure is due now, if it is.
pub(crate) fn ensure_reason(
    rec: &VmRecord,
    vmid: u32,
    live: Option<&LiveHost>,
    memory: &VmMemory,
    policy: &Policy,
    now: Clock,
) -> Option<EnsureReason> {
    if rec.status.observed_generation < rec.generation {
        return Some(EnsureReason::Generation);
    }
    if memory
        .backoff
        .is_some_and(|b| b.generation == rec.generation)
    {
        return Some(EnsureReason::Retry);
    }
    if live.is_some_and(|h| drifted(rec, vmid, h, memory)) {
        return Some(EnsureReason::Drift);
    }
    match memory.last_ensure_ms {
        Some(at) if now.mono_ms.saturating_sub(at) < policy.resync_ms => None,
        _ => Some(EnsureReason::Resync),
    }
}

/// Whether the host's inventory contradicts the spec. An inventory older than the last result
/// may predate what that command did, so it proves nothing.
fn drifted(rec: &VmRecord, vmid: u32, live: &LiveHost, memory: &VmMemory) -> bool {
    let Some(inventory_ms) = live.inventory_ms else {
        return false;
    };
    if memory.last_result_ms.is_some_and(|r| inventory_ms <= r) {
        return false;
    }
    let created = condition(&rec.status, ConditionKind::Created) == Some(true);
    let Some(vm) = live.vms.get(&vmid) else {
        return created;
    };
    if !vm.owned || vm.name != rec.spec.name || vm.lock.is_some() {
        // Not ours (an Ensure would be refused) or busy in PVE: nothing to repair now.
        return false;
    }
    let want_running = rec.spec.state == DesiredState::Running;
    if vm.is_running() != want_running {
        return true;
    }
    // A change PVE keeps pending until a restart shows as a difference that an Ensure cannot
    // repair: only compare the sizes when the last Ensure applied everything.
    if condition(&rec.status, ConditionKind::Configured) != Some(true) {
        return false;
    }
    let vcpus = u64::from(rec.spec.cores) * u64::from(rec.spec.sockets);
    let cpus_differ = vm.cpus != 0 && u64::from(vm.cpus) != vcpus;
    let memory_differs = vm.memory_bytes != 0 && vm.memory_bytes != rec.spec.memory_mib * MIB;
    cpus_differ || memory_differs
}

/// The Ensure command for `rec`.
pub(super) fn ensure_op(state: &FleetState, rec: &VmRecord, vmid: u32, policy: &Policy) -> Op {
    let mut pool_dns: Vec<String> = Vec::new();
    for (_, pool) in rec.spec.pool_nics() {
        if let Some(p) = state.ip_pools().get(pool) {
            for dns in &p.spec.dns {
                if !pool_dns.contains(dns) {
                    pool_dns.push(dns.clone());
                }
            }
        }
    }
    Op::Ensure(Box::new(EnsureVm {
        spec: rec.spec.clone(),
        generation: rec.generation,
        vmid,
        ips: rec
            .assignment
            .ips
            .iter()
            .filter(|a| a.is_current(&rec.spec))
            .cloned()
            .collect(),
        pool_dns,
        ip_wait_secs: policy.ip_wait_secs,
        take_over: take_over(state, rec),
    }))
}

/// What an agent takes over before it ensures `rec`: the configuration in the fenced node's
/// directory, while a relocation onto the VM's current host is under way.
fn take_over(state: &FleetState, rec: &VmRecord) -> Option<TakeOver> {
    let recovery = state.recovery(&rec.spec.name)?;
    let relocating = recovery.mode == RecoveryMode::Relocate
        && recovery.to_host.is_some()
        && recovery.to_host == rec.assignment.host;
    relocating.then(|| TakeOver {
        from_node: recovery.from_node.clone(),
    })
}

/// The status of condition `kind`, if recorded.
pub(crate) fn condition(status: &VmStatus, kind: ConditionKind) -> Option<bool> {
    status
        .conditions
        .iter()
        .find(|c| c.kind == kind)
        .map(|c| c.status)
}
