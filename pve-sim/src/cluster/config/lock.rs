//! Setting and clearing a VM's `lock:` line behind the API: what a backup, clone or migration
//! that was running when its node died leaves in the config, and what root does about it by
//! editing the file in `/etc/pve` on a live node of the cluster (there is no API call that
//! clears a lock other than `qm unlock` on the node itself, which is gone).
//!
//! Both work whatever the power state of the node holding the config: pmxcfs replicates
//! `/etc/pve` to every node, so the file of a powered-off node is still there to edit.

use crate::ApiError;
use crate::cluster::inner::Inner;
use crate::cluster::vm::conf_missing;

/// The `lock` values PVE knows (qemu-server's and pve-container's `lock` enums together).
pub(super) const LOCK_VALUES: &[&str] = &[
    "backup",
    "clone",
    "create",
    "migrate",
    "rollback",
    "snapshot",
    "snapshot-delete",
    "suspending",
    "suspended",
    "copy",
    "disk",
    "fstrim",
    "mounted",
];

/// PVE's schema text for a value outside the enumeration.
fn unknown_lock(value: &str) -> ApiError {
    ApiError::status(
        400,
        format!(
            "lock: value '{value}' does not have a value in the enumeration '{}'",
            LOCK_VALUES.join(", ")
        ),
    )
}

/// Set (`Some`) or clear (`None`) the `lock:` line of VM `vmid`, wherever its config lives.
/// 404 `VM <vmid> does not exist` for an unknown VMID; 400 for a value PVE does not know
/// (nothing changes).
pub(crate) fn set_lock(cx: &Inner, vmid: u32, lock: Option<&str>) -> Result<(), ApiError> {
    if let Some(value) = lock
        && !LOCK_VALUES.contains(&value)
    {
        return Err(unknown_lock(value));
    }
    let mut st = cx.state();
    let vm = st
        .vms
        .get_mut(&vmid)
        .ok_or_else(|| ApiError::status(404, format!("VM {vmid} does not exist")))?;
    match lock {
        Some(value) => vm.conf.set("lock", value),
        None => {
            vm.conf.remove("lock");
        }
    }
    Ok(())
}

/// Remove the `lock:` line of the config of VM `vmid` in node `node`'s directory; the value it
/// had. 404 for an unknown node (`no such cluster node`) or a config not in that directory
/// (PVE's missing-config text).
pub(crate) fn clear_lock(cx: &Inner, vmid: u32, node: &str) -> Result<Option<String>, ApiError> {
    let mut st = cx.state();
    if st.node(node).is_none() {
        return Err(ApiError::status(
            404,
            format!("no such cluster node '{node}'"),
        ));
    }
    let vm = st
        .vm_on_mut(node, vmid)
        .ok_or_else(|| ApiError::status(404, conf_missing(node, vmid)))?;
    Ok(vm.conf.remove("lock"))
}
