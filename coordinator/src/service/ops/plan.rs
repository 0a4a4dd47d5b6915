//! The decisions behind the VM operations, as pure functions of the fleet state: which host a
//! one-shot command goes to, whether a power request changes the desired state, the scheduler's
//! explanation, committed usage per host, PVE's snapshot-name rule, and how an agent's failure
//! reads to an operator.

use protocol::NodeId;
use protocol::admin::{HostStatusEntry, PlacementScores, PlacementVerdict, VmExplainReply};
use protocol::agent::{CommandFailure, FailureKind, SnapshotAction};
use protocol::fleet::{HostState, UnixMillis, VmRecord};
use protocol::spec::{DesiredState, HaState, VmSpec};
use transport::{RemoteCode, RemoteError};

use fleet::scheduler::{self, HostVerdict, HostView, Verdict};
use fleet::state::{Command, FleetState};

/// Longest snapshot name PVE accepts.
const SNAPSHOT_NAME_MAX: usize = 40;

/// A placed VM a one-shot command can reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Placed {
    /// Its host's node id.
    pub(crate) host: NodeId,
    /// Its host's name (`host <id>` if the host record is missing).
    pub(crate) host_name: String,
    /// Its VMID.
    pub(crate) vmid: u32,
    /// Its spec generation.
    pub(crate) generation: u64,
}

/// The refusal for a VM name the fleet does not know.
pub(crate) fn vm_not_found(name: &str) -> RemoteError {
    RemoteError::not_found(format!(
        "vm {name:?} not found (`pvefleet vm ls` lists the VMs)"
    ))
}

fn host_name(state: &FleetState, id: NodeId) -> String {
    state
        .hosts()
        .get(&id)
        .map_or_else(|| format!("host {id}"), |h| h.name.clone())
}

fn vcpus(spec: &VmSpec) -> u64 {
    u64::from(spec.cores) * u64::from(spec.sockets)
}

/// Where `vm` runs, for a command that `verb`s it; refused while it is being deleted, not yet
/// placed, or without a VMID.
pub(crate) fn placed(state: &FleetState, vm: &str, verb: &str) -> Result<Placed, RemoteError> {
    let rec = state.vm(vm).ok_or_else(|| vm_not_found(vm))?;
    if rec.deleting {
        return Err(RemoteError::conflict(format!(
            "vm {vm} is being deleted: it cannot {verb}"
        )));
    }
    let Some(host) = rec.assignment.host else {
        return Err(RemoteError::conflict(format!(
            "vm {vm} is not placed on a host yet (phase {}): nothing to {verb}; `pvefleet vm \
             explain {vm}` shows which hosts can take it",
            rec.status.phase
        )));
    };
    let host_name = host_name(state, host);
    let Some(vmid) = rec.assignment.vmid else {
        return Err(RemoteError::conflict(format!(
            "vm {vm} has no VMID yet, so it does not exist on {host_name}: nothing to {verb}; \
             retry once `pvefleet vm show {vm}` shows a VMID"
        )));
    };
    Ok(Placed {
        host,
        host_name,
        vmid,
        generation: rec.generation,
    })
}

/// What a start or stop request does: nothing when the VM is already desired so, else the
/// `SetVmState` with the new desired state (whose apply moves an HA request of `started` or
/// `stopped` along, as `ha-manager` does for `qm start|stop`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PowerPlan {
    /// Already desired `state`, at this generation.
    Unchanged {
        /// The spec's generation.
        generation: u64,
    },
    /// Propose this command.
    Propose(Command),
}

/// The plan for keeping `vm` in `state`, proposed at `now`.
pub(crate) fn power_plan(
    s: &FleetState,
    vm: &str,
    state: DesiredState,
    now: UnixMillis,
) -> Result<PowerPlan, RemoteError> {
    let rec = s.vm(vm).ok_or_else(|| vm_not_found(vm))?;
    if rec.deleting {
        return Err(RemoteError::conflict(format!(
            "vm {vm} is being deleted: its power state can no longer be changed"
        )));
    }
    if rec.spec.state == state {
        return Ok(PowerPlan::Unchanged {
            generation: rec.generation,
        });
    }
    if state == DesiredState::Running && rec.spec.ha.state == Some(HaState::Disabled) {
        return Err(RemoteError::conflict(format!(
            "vm {vm} has ha.state = \"disabled\": HA keeps it stopped and does not recover it; \
             to start it, apply it with ha.state = \"started\" and state = \"running\" \
             (ha.state accepts started, stopped, disabled, ignored)"
        )));
    }
    Ok(PowerPlan::Propose(Command::SetVmState {
        name: vm.to_string(),
        state,
        now,
    }))
}

/// What a start or stop did, for the operator.
pub(crate) fn power_message(
    vm: &str,
    state: DesiredState,
    changed: bool,
    generation: u64,
    host: Option<&str>,
) -> String {
    if !changed {
        return format!(
            "vm {vm} is already kept {state} (generation {generation}): nothing changed"
        );
    }
    let (doing, verb) = match state {
        DesiredState::Running => ("starts", "running"),
        DesiredState::Stopped => ("shuts down", "stopped"),
    };
    match host {
        Some(host) => format!(
            "vm {vm} is now kept {verb} (generation {generation}): its agent on {host} {doing} \
             it; follow with `pvefleet vm show {vm}`"
        ),
        None => format!(
            "vm {vm} is now kept {verb} (generation {generation}); it is not placed yet, and is \
             created that way once it is"
        ),
    }
}

/// Refuses a snapshot name PVE would refuse (`pve-configid`: a letter, then letters, digits,
/// `-` or `_`; 2 to 40 characters; `current` and `pending` are reserved).
pub(crate) fn check_snapshot_name(name: &str) -> Result<(), RemoteError> {
    let mut chars = name.chars();
    let shaped = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && (2..=SNAPSHOT_NAME_MAX).contains(&name.len());
    if !shaped {
        return Err(RemoteError::bad_request(format!(
            "snapshot = {name:?} is not allowed: expected a letter, then letters, digits, '-' or \
             '_' (2 to {SNAPSHOT_NAME_MAX} characters), as PVE requires"
        )));
    }
    if name.eq_ignore_ascii_case("current") || name.eq_ignore_ascii_case("pending") {
        return Err(RemoteError::bad_request(format!(
            "snapshot = {name:?} is not allowed: PVE reserves \"current\" and \"pending\"; \
             choose another name"
        )));
    }
    Ok(())
}

/// Refuses the snapshot name of `action` if PVE would (a listing names none).
pub(crate) fn check_snapshot_action(action: &SnapshotAction) -> Result<(), RemoteError> {
    match action {
        SnapshotAction::List => Ok(()),
        SnapshotAction::Create { snapshot, .. }
        | SnapshotAction::Rollback { snapshot, .. }
        | SnapshotAction::Delete { snapshot } => check_snapshot_name(snapshot),
    }
}

/// How a snapshot action is named in messages (`snapshot create pre-upgrade`).
pub(crate) fn snapshot_verb(action: &SnapshotAction) -> String {
    match action {
        SnapshotAction::Create { snapshot, .. } => format!("snapshot create {snapshot}"),
        SnapshotAction::List => "snapshot ls".to_string(),
        SnapshotAction::Rollback { snapshot, .. } => format!("snapshot rollback {snapshot}"),
        SnapshotAction::Delete { snapshot } => format!("snapshot delete {snapshot}"),
    }
}

/// The agent's failure of `verb` on `vm`, naming the VM, the host and PVE's text, with what to
/// do for its kind.
pub(crate) fn failure_error(
    verb: &str,
    vm: &str,
    target: &Placed,
    failure: &CommandFailure,
) -> RemoteError {
    let what = format!(
        "{verb} of vm {vm} (vmid {}) on host {} failed at step {}: {}",
        target.vmid, target.host_name, failure.step, failure.message
    );
    match failure.kind {
        FailureKind::NotFound => RemoteError::not_found(format!(
            "{what}; the VM does not exist on its host: the fleet creates it again, watch \
             `pvefleet vm show {vm}`"
        )),
        FailureKind::NotOwned => RemoteError::conflict(format!(
            "{what}; VMID {} on {} holds a VM the fleet does not own (no `{}` tag), which it \
             never touches: check that VM on the host",
            target.vmid,
            target.host_name,
            protocol::agent::OWNERSHIP_TAG
        )),
        FailureKind::Transient => RemoteError::conflict(format!(
            "{what}; PVE was busy or unreachable: retry shortly"
        )),
        FailureKind::Permanent => {
            RemoteError::conflict(format!("{what}; fix what PVE names, then retry"))
        }
        FailureKind::InDoubt => RemoteError::conflict(format!(
            "{what}; the agent stopped while running it, so it may or may not have taken \
             effect: check `pvefleet vm show {vm}` before retrying"
        )),
    }
}

/// No result came back for `verb` on `vm`. A refusal for not leading passes through (the call
/// is re-routed, nothing was sent); anything else is final, because the command may have run
/// (the control plane's message says whether it was sent).
pub(crate) fn no_result_error(
    verb: &str,
    vm: &str,
    target: &Placed,
    e: RemoteError,
) -> RemoteError {
    if matches!(e.code, RemoteCode::NotLeader { .. }) {
        return e;
    }
    RemoteError::conflict(format!(
        "no result for the {verb} of vm {vm} from host {}: {} (check `pvefleet vm show {vm}` \
         and `pvefleet events` before retrying)",
        target.host_name, e.message
    ))
}

/// The scheduler's verdict on every host for `name`, with `views` as the control plane sees
/// the hosts. A placed VM's own share is taken off its host first, so its host is judged as if
/// the VM were placed anew rather than counted twice.
pub(crate) fn explain_vm(
    s: &FleetState,
    mut views: Vec<HostView>,
    name: &str,
) -> Result<VmExplainReply, RemoteError> {
    let rec = s.vm(name).ok_or_else(|| vm_not_found(name))?;
    if let Some(host) = rec.assignment.host
        && let Some(view) = views.iter_mut().find(|v| v.id == host)
    {
        view.usage.vcpus = view.usage.vcpus.saturating_sub(vcpus(&rec.spec));
        view.usage.memory_mib = view.usage.memory_mib.saturating_sub(rec.spec.memory_mib);
        view.usage.vm_count = view.usage.vm_count.saturating_sub(1);
    }
    let verdicts = scheduler::explain(&rec.spec, &views, s.settings())
        .into_iter()
        .map(placement_verdict)
        .collect();
    Ok(VmExplainReply {
        vm: name.to_string(),
        placed_on: rec.assignment.host.map(|id| host_name(s, id)),
        verdicts,
    })
}

pub(crate) fn placement_verdict(v: HostVerdict) -> PlacementVerdict {
    let (filter, detail, scores) = match v.verdict {
        Verdict::Excluded { filter, detail } => (Some(filter.as_str().to_string()), detail, None),
        Verdict::Scored {
            avg_cpu,
            max_cpu,
            avg_mem,
            max_mem,
            closeness,
        } => (
            None,
            String::new(),
            Some(PlacementScores {
                avg_cpu,
                max_cpu,
                avg_mem,
                max_mem,
                closeness,
            }),
        ),
    };
    PlacementVerdict {
        host_id: v.host_id,
        host_name: v.host_name,
        filter,
        detail,
        scores,
    }
}

/// Every host with what the VMs assigned to it commit (configured sizes, as the scheduler
/// counts them; VMs being deleted still hold theirs). The live part is left empty.
pub(crate) fn host_entries(s: &FleetState) -> Vec<HostStatusEntry> {
    s.hosts()
        .values()
        .map(|host| {
            let mut entry = HostStatusEntry {
                host: host.clone(),
                vm_count: 0,
                vcpus: 0,
                memory_mib: 0,
                last_seen_ms: None,
                resources: None,
            };
            for vm in s.vms().values().filter(|v| on_host(v, host.id)) {
                entry.vm_count = entry.vm_count.saturating_add(1);
                entry.vcpus = entry.vcpus.saturating_add(vcpus(&vm.spec));
                entry.memory_mib = entry.memory_mib.saturating_add(vm.spec.memory_mib);
            }
            entry
        })
        .collect()
}

/// A host silent for longer than its lease is never shown online, even before the host watch
/// committed it unreachable (it waits for a quorum): the entry says what the leader sees.
pub(crate) fn never_online_when_silent(entry: &mut HostStatusEntry, lease_ms: u64) {
    if let Some(silent) = entry.last_seen_ms.filter(|&ms| ms > lease_ms)
        && matches!(entry.host.state, HostState::Online | HostState::Joining)
    {
        entry.host.state = HostState::Unreachable;
        entry.host.state_reason = format!(
            "no heartbeat for {} s, longer than its lease (not recorded yet)",
            silent / 1000
        );
    }
}

fn on_host(vm: &VmRecord, host: NodeId) -> bool {
    vm.assignment.host == Some(host)
}
