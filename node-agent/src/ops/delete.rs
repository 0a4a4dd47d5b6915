//! Delete: a fleet VM is stopped hard (it is being destroyed), its protection cleared (the
//! fleet set it), destroyed with `purge` and `destroy-unreferenced-disks`, and its user-data
//! snippet removed. Idempotent: a VM already gone is success; someone else's VM is refused.

use protocol::agent::{CommandFailure, DeleteVm};
use pve::calls::{ConfigChanges, DestroyOptions};

use super::VmOps;
use super::failure::{AtStep, Subject};

/// Deletes the VM; `Ok(false)` when it did not exist.
pub(super) async fn delete(ops: &VmOps, cmd: &DeleteVm) -> Result<bool, CommandFailure> {
    let s = Subject {
        name: &cmd.name,
        vmid: cmd.vmid,
    };
    let Some(cfg) = ops.find_owned(&s).await? else {
        return Ok(false);
    };
    ops.stop_if_running(&s, true).await?;
    if cfg.protection() {
        let clear = ConfigChanges::new().protection(false);
        ops.client
            .update_vm(&ops.node, cmd.vmid, &clear)
            .await
            .at(&s, "unprotect")?;
    }
    let opts = DestroyOptions {
        purge: Some(true),
        destroy_unreferenced_disks: Some(true),
        ..DestroyOptions::default()
    };
    tracing::info!(vm = s.name, vmid = s.vmid, "destroying VM");
    let upid = ops
        .client
        .destroy_vm(&ops.node, cmd.vmid, &opts)
        .await
        .at(&s, "destroy")?;
    ops.wait(&upid).await.at(&s, "destroy")?;
    ops.remove_user_data(&cmd.name, cfg.get_str("cicustom").as_deref())
        .await;
    Ok(true)
}
