//! Copies left behind by a recovery: a VM recreated elsewhere after its host was fenced still
//! has its old copy on that host (same name, same VMID, stopped by the fence or the reset).
//! When the host reports again, the old copy is deleted, so that nothing, not an operator's
//! `qm start` nor an `onboot`, can ever run the VM twice. A relocated VM leaves no copy: its
//! configuration moved with it.
//!
//! Only a stopped, fleet-owned copy of a VM that is now placed on another host and recovers
//! by `recreate` is deleted; a running one is left alone (it cannot come from a recovery: the
//! fence stopped it), as is anything the fleet does not own.

use protocol::agent::{DeleteVm, Op};
use protocol::spec::RecoveryMode;

use super::{Action, Clock, Inflight, LiveView, Policy};
use crate::state::FleetState;

/// Deletes (or warns about) the stale copies the reporting hosts show.
pub(super) fn plan_stale_copies(
    state: &FleetState,
    live: &LiveView,
    inflight: &Inflight,
    policy: &Policy,
    now: Clock,
    out: &mut Vec<Action>,
) {
    for (&host, seen) in &live.hosts {
        if !live.is_reporting(host, policy, now) {
            continue;
        }
        for vm in seen.vms.values() {
            if !vm.owned {
                continue;
            }
            let Some(rec) = state.vm(&vm.name) else {
                continue;
            };
            let elsewhere = rec.assignment.host.is_some_and(|h| h != host);
            if !elsewhere
                || rec.deleting
                || state.ha_policy(rec).recovery != RecoveryMode::Recreate
                || inflight.commands.contains_key(&vm.name)
            {
                continue;
            }
            // A running copy cannot come from a recovery (the fence stopped it): someone
            // started it by hand, and deleting a running VM is not the fleet's to decide.
            if vm.status == "running" || out.iter().any(|a| a.vm() == vm.name) {
                continue;
            }
            out.push(Action::Send {
                host,
                generation: rec.generation,
                op: Op::Delete(DeleteVm {
                    name: vm.name.clone(),
                    vmid: vm.vmid,
                }),
            });
        }
    }
}
