//! Taking a VM over from another node of the same PVE cluster before it is ensured here (a
//! relocation, docs/design/fencing.md "Recovery"): the VM's configuration moves from that
//! node's directory into this node's, as pve-ha-manager does; same VMID, same disks. The
//! leader sends it only for a node it proved fenced, or for a stopped VM whose starts kept
//! failing there (`max_restart`, then a relocation).
//!
//! ```text
//!  GET /cluster/resources?type=vm ─ VMID on this node ─▶ done (a re-run)
//!       │ on the fenced node           │ elsewhere / nowhere ─▶ permanent failure, nothing touched
//!       ▼
//!  lock? ─ left by work a reset ended (backup, migrate, clone, snapshot...) ─▶ cleared, warned
//!        ─ any other (create, disk...) ─▶ permanent failure: the operator looks first
//!       ▼
//!  move the configuration into this node's directory ─▶ the ensure goes on (start...)
//! ```

use protocol::agent::{CommandFailure, FailureKind};
use protocol::fleet::TakeOver;
use pve::calls::ResourceType;

use super::VmOps;
use super::failure::{AtStep, Subject};

/// Locks that mean nothing once the node that held them was reset: the work they guarded died
/// with it. pve-ha-manager clears the same ones when it recovers a guest.
pub(crate) const CLEARABLE_LOCKS: &[&str] = &[
    "backup",
    "mounted",
    "migrate",
    "clone",
    "rollback",
    "snapshot",
    "snapshot-delete",
    "suspending",
    "suspended",
];

/// What a take-over does about a lock it finds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LockVerdict {
    /// No lock.
    Free,
    /// A leftover of work the reset ended: clear it (with a warning).
    Clear(String),
    /// A lock whose work may have left the VM half-made: stop and let the operator look.
    Refuse(String),
}

/// The verdict on `lock`.
pub(crate) fn lock_verdict(lock: Option<&str>) -> LockVerdict {
    match lock {
        None | Some("") => LockVerdict::Free,
        Some(l) if CLEARABLE_LOCKS.contains(&l) => LockVerdict::Clear(l.to_string()),
        Some(l) => LockVerdict::Refuse(l.to_string()),
    }
}

/// Takes VM `s` over from `t.from_node`; see the module documentation.
pub(super) async fn take_over(
    ops: &VmOps,
    s: &Subject<'_>,
    t: &TakeOver,
) -> Result<(), CommandFailure> {
    const STEP: &str = "take over";
    let resources = ops
        .client
        .cluster_resources(Some(ResourceType::Vm))
        .await
        .at(s, STEP)?;
    let found = resources
        .iter()
        .find(|r| r.is_qemu() && r.vmid == Some(s.vmid));
    let Some(vm) = found else {
        return Err(s.fail(
            FailureKind::Permanent,
            STEP,
            format!(
                "VM {} is nowhere in the PVE cluster: its configuration on the fenced node {} is gone, so there is nothing to relocate; restore it, or set recovery = \"recreate\" to build it anew",
                s.vmid, t.from_node
            ),
        ));
    };
    let node = vm.node.as_deref().unwrap_or_default();
    if node == ops.node {
        return Ok(());
    }
    if node != t.from_node {
        return Err(s.fail(
            FailureKind::Permanent,
            STEP,
            format!(
                "VM {} is on node {node}, not on the fenced node {}: someone moved it since; the fleet does not take it from a node it did not fence",
                s.vmid, t.from_node
            ),
        ));
    }
    match lock_verdict(vm.lock.as_deref()) {
        LockVerdict::Free => {}
        LockVerdict::Clear(lock) => {
            tracing::warn!(
                vm = s.name,
                vmid = s.vmid,
                node = %t.from_node,
                lock = %lock,
                "clearing the leftover lock of a VM recovered from a fenced node: the work it guarded ended with the node"
            );
            ops.cluster_fs
                .clear_lock(s.vmid, &t.from_node)
                .await
                .map_err(|e| s.fail(FailureKind::Transient, STEP, e))?;
        }
        LockVerdict::Refuse(lock) => {
            return Err(s.fail(
                FailureKind::Permanent,
                STEP,
                format!(
                    "VM {} is locked ({lock}) on the fenced node {}: that work may have left it half-made, so it is not recovered; check it, clear the lock (qm unlock {} on a node of the cluster) and the recovery goes on",
                    s.vmid, t.from_node, s.vmid
                ),
            ));
        }
    }
    ops.cluster_fs
        .move_config(s.vmid, &t.from_node, &ops.node)
        .await
        .map_err(|e| s.fail(FailureKind::Transient, STEP, e))?;
    tracing::warn!(
        vm = s.name,
        vmid = s.vmid,
        from = %t.from_node,
        "took the VM's configuration over from another node of the cluster"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leftovers_of_work_a_reset_ended_are_cleared_others_stop_the_recovery() {
        assert_eq!(lock_verdict(None), LockVerdict::Free);
        for lock in [
            "backup",
            "migrate",
            "snapshot",
            "suspended",
            "clone",
            "rollback",
        ] {
            assert_eq!(lock_verdict(Some(lock)), LockVerdict::Clear(lock.into()));
        }
        for lock in ["create", "disk", "fstrim", "copy"] {
            assert_eq!(lock_verdict(Some(lock)), LockVerdict::Refuse(lock.into()));
        }
    }
}
