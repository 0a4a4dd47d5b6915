//! Moving a VM's config to another node's directory in the cluster filesystem, as
//! pve-ha-manager does for a guest of a fenced node (it renames
//! `/etc/pve/nodes/<dead>/qemu-server/<vmid>.conf`; there is no API call for it).
//!
//! The volumes stay where they are: on shared storage they are usable from the new node; a
//! volume on storage local to the old node is missing there, and a start on the new node fails
//! the way PVE's volume activation fails.

use crate::ApiError;
use crate::cluster::inner::Inner;
use crate::cluster::vm::conf_missing;

/// Move VM `vmid`'s config from `from` to `to`. Refused (with the status a control endpoint
/// answers) for an unknown node (404), a config not on `from` (404, PVE's missing-config
/// text) and a running VM (409: a running VM's config is never stolen).
pub(crate) fn move_config(cx: &Inner, vmid: u32, from: &str, to: &str) -> Result<(), ApiError> {
    let mut st = cx.state();
    for node in [from, to] {
        if st.node(node).is_none() {
            return Err(ApiError::status(
                404,
                format!("no such cluster node '{node}'"),
            ));
        }
    }
    let vm = st
        .vm_on_mut(from, vmid)
        .ok_or_else(|| ApiError::status(404, conf_missing(from, vmid)))?;
    if vm.run.running {
        return Err(ApiError::status(
            409,
            format!("VM {vmid} is running on node '{from}' - its config cannot be moved"),
        ));
    }
    vm.node = to.to_string();
    Ok(())
}
