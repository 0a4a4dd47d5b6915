//! Recovering the VMs of fenced hosts, as a pure function of the replicated state: which VM
//! goes where, which waits and why, and which recoveries are over. The leader proposes the
//! answer as [`Command::RecoverVm`] and [`Command::EndRecovery`]; the state machine refuses a
//! recovery from a host that is not fenced, whatever this planner was told.
//!
//! ```text
//!  VM on a fenced host, HA started|stopped ─ recovery = none ─▶ left to the operator
//!      │ relocate: online nodes of the same PVE cluster whose storages hold its disks shared
//!      │ recreate: online hosts outside that PVE cluster (its VMID is still taken there)
//!      ▼
//!  scheduler (every placement constraint, TOPSIS) ─▶ RecoverVm{to}   usage added: the next
//!      │ no eligible host                                           VM sees it (spread)
//!      ▼
//!  RecoverVm{to: None, why} once per reason; tried again every round
//!
//!  recovery entry ─ VM at its desired state on the new host ─▶ EndRecovery ("recovered in N s")
//!                 ─ its old host back before a new one was found ─▶ EndRecovery
//!
//!  failed starts of an HA started VM ─ ≤ max_restart ─▶ retried on its host (the reconciler)
//!      ─ then, fewer than max_relocate moves ─▶ HaRelocate to the best untried host
//!      ─ then ─▶ HaGiveUp (PVE's `error`: no retry until its HA state changes)
//!      ─ running again, or HA state no longer `started` ─▶ HaClearFailures
//! ```
//!
//! Disabled, ignored and non-HA VMs stay with their host (the fence did not stop them either,
//! docs/design/fencing.md). Guests PVE's own HA manager drives never became fleet VMs: the
//! agents refuse them.

mod start_failures;
#[cfg(test)]
mod tests;

use protocol::NodeId;
use protocol::fleet::{HostState, PVE_CLUSTER_LABEL, UnixMillis, VmPhase, VmRecord};
use protocol::spec::{CloneMode, DesiredState, RecoveryMode, VmSpec};

use crate::scheduler::{self, HostView};
use crate::state::{Command, FleetState};
use crate::views::{add_usage, host_views, take_storage};

/// One recovery decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecoveryAction {
    /// Move `vm` off the fenced host `from` onto `to`, or record that it waits (`to` = `None`).
    Recover {
        /// The VM.
        vm: String,
        /// Its fenced host.
        from: NodeId,
        /// Where it goes; `None`: no host is eligible now.
        to: Option<NodeId>,
        /// What was decided, or why it waits.
        message: String,
    },
    /// Close `vm`'s recovery from `from`.
    End {
        /// The VM.
        vm: String,
        /// The fenced host the recovery started from.
        from: NodeId,
        /// What happened.
        message: String,
    },
    /// Move `vm`, whose starts kept failing on `from`, to `to` (`max_relocate`).
    Relocate {
        /// The VM.
        vm: String,
        /// The host its starts failed on.
        from: NodeId,
        /// The best host it has not failed on.
        to: NodeId,
        /// Why.
        message: String,
    },
    /// Give up starting `vm` (PVE HA's `error`).
    GiveUp {
        /// The VM.
        vm: String,
        /// Why, and the way out.
        message: String,
    },
    /// Forget `vm`'s failed starts.
    ClearFailures {
        /// The VM.
        vm: String,
        /// Why.
        message: String,
    },
}

impl RecoveryAction {
    /// The command that records the decision at `now`.
    pub fn command(&self, now: UnixMillis) -> Command {
        match self {
            RecoveryAction::Recover {
                vm,
                from,
                to,
                message,
            } => Command::RecoverVm {
                name: vm.clone(),
                from: *from,
                to: *to,
                message: message.clone(),
                now,
            },
            RecoveryAction::End { vm, from, message } => Command::EndRecovery {
                name: vm.clone(),
                from: *from,
                message: message.clone(),
                now,
            },
            RecoveryAction::Relocate {
                vm,
                from,
                to,
                message,
            } => Command::HaRelocate {
                name: vm.clone(),
                from: *from,
                to: *to,
                message: message.clone(),
                now,
            },
            RecoveryAction::GiveUp { vm, message } => Command::HaGiveUp {
                name: vm.clone(),
                message: message.clone(),
                now,
            },
            RecoveryAction::ClearFailures { vm, message } => Command::HaClearFailures {
                name: vm.clone(),
                message: message.clone(),
                now,
            },
        }
    }

    /// The VM the decision is about.
    pub fn vm(&self) -> &str {
        match self {
            RecoveryAction::Recover { vm, .. }
            | RecoveryAction::End { vm, .. }
            | RecoveryAction::Relocate { vm, .. }
            | RecoveryAction::GiveUp { vm, .. }
            | RecoveryAction::ClearFailures { vm, .. } => vm,
        }
    }
}

/// Every recovery decision due in `state` at `now`: the ends first, then the VMs of fenced
/// hosts in name order, each placed with the hosts' usage including the VMs placed before it.
pub fn plan(state: &FleetState, now: UnixMillis) -> Vec<RecoveryAction> {
    let mut out = ends(state, now);
    let mut views = host_views(state);
    for rec in state.vms().values() {
        let Some(from) = rec.assignment.host else {
            continue;
        };
        let fenced = state
            .hosts()
            .get(&from)
            .is_some_and(|h| h.state == HostState::Fenced);
        let ha = rec.spec.ha;
        if rec.deleting || !fenced || !ha.fences() || ha.recovery == RecoveryMode::None {
            continue;
        }
        let (to, message) = match place(state, rec, from, rec.spec.ha.recovery, &[], &mut views) {
            Ok((to, message)) => (Some(to), message),
            Err(why) => (None, why),
        };
        let known = state
            .recovery(&rec.spec.name)
            .is_some_and(|r| r.from_host == from && r.to_host.is_none() && r.message == message);
        if to.is_none() && known {
            continue;
        }
        out.push(RecoveryAction::Recover {
            vm: rec.spec.name.clone(),
            from,
            to,
            message,
        });
    }
    start_failures::plan(state, &mut views, &mut out);
    out
}

/// The recoveries that are over.
fn ends(state: &FleetState, now: UnixMillis) -> Vec<RecoveryAction> {
    let mut out = Vec::new();
    for (name, r) in state.recoveries() {
        let Some(rec) = state.vm(name) else {
            continue;
        };
        let end = |message: String| RecoveryAction::End {
            vm: name.clone(),
            from: r.from_host,
            message,
        };
        let host_name = |id: NodeId| {
            state
                .hosts()
                .get(&id)
                .map_or_else(|| id.to_string(), |h| h.name.clone())
        };
        match r.to_host {
            Some(to) if rec.assignment.host != Some(to) => out.push(end(format!(
                "recovery from {} over: the VM was moved to {} since",
                r.from_node,
                rec.assignment
                    .host
                    .map_or_else(|| "no host".into(), host_name)
            ))),
            Some(to) if settled_on(rec, to) => out.push(end(format!(
                "recovered from fenced host {} onto {} ({}) in {:.1} s",
                r.from_node,
                host_name(to),
                r.mode,
                now.saturating_sub(r.since) as f64 / 1000.0
            ))),
            Some(_) if state.ha_error(name).is_some() => out.push(end(format!(
                "recovery from {} over: the VM is in HA error",
                r.from_node
            ))),
            Some(_) => {}
            None => {
                let still_fenced = state
                    .hosts()
                    .get(&r.from_host)
                    .is_some_and(|h| h.state == HostState::Fenced);
                if !still_fenced || rec.assignment.host != Some(r.from_host) {
                    out.push(end(format!(
                        "recovery from {} over: its host is {} again before another was found",
                        r.from_node,
                        state
                            .hosts()
                            .get(&r.from_host)
                            .map_or("gone", |h| h.state.as_str())
                    )));
                }
            }
        }
    }
    out
}

/// Whether `rec` reached its desired power state on `host` for its current spec.
fn settled_on(rec: &VmRecord, host: NodeId) -> bool {
    let phase = match rec.spec.state {
        DesiredState::Running => VmPhase::Running,
        DesiredState::Stopped => VmPhase::Stopped,
    };
    rec.status.current_host == Some(host)
        && rec.status.phase == phase
        && rec.status.observed_generation >= rec.generation
}

/// The best host for `rec` off host `from` by `mode`, never one of `exclude`, its usage added
/// to `views`; or why there is none.
fn place(
    state: &FleetState,
    rec: &VmRecord,
    from: NodeId,
    mode: RecoveryMode,
    exclude: &[NodeId],
    views: &mut [HostView],
) -> Result<(NodeId, String), String> {
    let spec = &rec.spec;
    let cluster = state
        .hosts()
        .get(&from)
        .and_then(|h| h.labels.get(PVE_CLUSTER_LABEL))
        .cloned();
    let from_name = state
        .hosts()
        .get(&from)
        .map_or_else(|| from.to_string(), |h| h.name.clone());
    let (placing, candidates) = match mode {
        RecoveryMode::Relocate => {
            let Some(cluster) = &cluster else {
                return Err(format!(
                    "relocate needs another node of the PVE cluster of {from_name}, which is a standalone node (recovery = \"recreate\" rebuilds it on any host)"
                ));
            };
            let storages = disk_storages(spec).ok_or_else(|| {
                "relocate needs every disk on shared storage, and a disk cloned from a template with no storage named lives on the template's storage: name a shared `storage` in the spec".to_string()
            })?;
            let candidates: Vec<HostView> = views
                .iter()
                .filter(|v| v.id != from && !exclude.contains(&v.id))
                .filter(|v| v.labels.get(PVE_CLUSTER_LABEL) == Some(cluster))
                .filter(|v| storages.iter().all(|s| shared_on(state, v.id, s)))
                .cloned()
                .collect();
            if candidates.is_empty() {
                return Err(format!(
                    "no other{} node of PVE cluster {cluster} has {} as shared storage",
                    if exclude.is_empty() { "" } else { " untried" },
                    storages.join(", ")
                ));
            }
            (relocated(spec), candidates)
        }
        RecoveryMode::Recreate | RecoveryMode::None => {
            // Within the fenced node's PVE cluster its configuration still holds the VMID:
            // a copy built beside it would be a second VM of the same identity once the node
            // is back.
            let candidates: Vec<HostView> = views
                .iter()
                .filter(|v| v.id != from)
                .filter(|v| {
                    cluster.is_none() || v.labels.get(PVE_CLUSTER_LABEL) != cluster.as_ref()
                })
                .cloned()
                .collect();
            if candidates.is_empty() {
                return Err(format!(
                    "recreate needs a host outside PVE cluster {}, where the VMID is still taken",
                    cluster.as_deref().unwrap_or("-")
                ));
            }
            (spec.clone(), candidates)
        }
    };
    match scheduler::place(&placing, &candidates, state.settings()) {
        Ok(decision) => {
            if let Some(view) = views.iter_mut().find(|v| v.id == decision.host_id) {
                add_usage(&mut view.usage, spec);
                if mode == RecoveryMode::Recreate {
                    take_storage(view, spec);
                }
            }
            let eligible = decision
                .verdicts
                .iter()
                .filter(|v| v.closeness().is_some())
                .count();
            Ok((
                decision.host_id,
                format!(
                    "best of {eligible} eligible host{}",
                    if eligible == 1 { "" } else { "s" }
                ),
            ))
        }
        Err(refusal) => Err(refusal.to_string()),
    }
}

/// What the scheduler weighs for a relocated VM: its resources and constraints, not its disks
/// or template (they exist already, on shared storage).
fn relocated(spec: &VmSpec) -> VmSpec {
    VmSpec {
        template: None,
        disks: Vec::new(),
        ..spec.clone()
    }
}

/// The storages holding the VM's disks; `None` when one is unknown here (a linked clone, or a
/// full clone with no target storage, sits on the template's storage).
fn disk_storages(spec: &VmSpec) -> Option<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    if let Some(t) = &spec.template {
        match (&t.clone, &t.storage) {
            (CloneMode::Full, Some(s)) => out.push(s.clone()),
            _ => return None,
        }
    }
    for disk in &spec.disks {
        match &disk.storage {
            Some(s) => out.push(s.clone()),
            None if spec.template.is_some() => {}
            None => return None,
        }
    }
    out.sort();
    out.dedup();
    Some(out)
}

/// Whether host `id` reports storage `storage` as shared and active.
fn shared_on(state: &FleetState, id: NodeId, storage: &str) -> bool {
    state
        .hosts()
        .get(&id)
        .and_then(|h| h.facts.as_ref())
        .is_some_and(|f| {
            f.storages
                .iter()
                .any(|s| s.id == storage && s.shared && s.active)
        })
}
