//! `DELETE /nodes/{node}/qemu/{vmid}` (`destroy_vm`): protection and running checks before the
//! fork (an HA resource without `purge` is refused; with it the resource goes too); in the
//! `qmdestroy` worker the config lock, the linked-clone guard of base volumes, and
//! the removal of every volume the VM owns.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::cluster::drive::{Drive, is_drive_key, is_unused_key, split_volid};
use crate::cluster::inner::Inner;
use crate::cluster::request::{node, root_only, upid_reply, vmid};
use crate::cluster::state::State;
use crate::cluster::tasks::job::{Job, JobCx, TaskOwner};
use crate::cluster::vm::conf_missing;
use crate::{ApiError, Caller, Params, Reply};

/// The early checks, repeated inside the worker.
fn early_checks(st: &State, node: &str, vmid: u32, purge: bool) -> Result<(), String> {
    let vm = st
        .vm_on(node, vmid)
        .ok_or_else(|| conf_missing(node, vmid))?;
    if vm.conf.get("protection") == Some("1") {
        return Err(format!("can't remove VM {vmid} - protection mode enabled"));
    }
    if vm.run.running {
        return Err(format!("VM {vmid} is running - destroy failed"));
    }
    if !purge && st.ha.contains_key(&format!("vm:{vmid}")) {
        return Err(format!(
            "unable to remove VM {vmid} - used in HA resources and purge parameter not set."
        ));
    }
    Ok(())
}

/// `DELETE /nodes/{node}/qemu/{vmid}`.
pub(crate) fn destroy(cx: &Arc<Inner>, p: &Params, caller: &Caller) -> Result<Reply, ApiError> {
    let node = node(p)?;
    let vmid = vmid(p)?;
    root_only(p, caller, &["skiplock"])?;
    let mut st = cx.state();
    early_checks(&st, node, vmid, p.flag("purge", false)).map_err(ApiError::internal)?;
    let job = DestroyJob {
        node: node.to_string(),
        vmid,
        skiplock: p.flag("skiplock", false),
        purge: p.flag("purge", false),
        unreferenced: p.flag("destroy-unreferenced-disks", false),
    };
    let owner = TaskOwner {
        node: node.to_string(),
        kind: "qmdestroy",
        vmid,
        user: caller.upid_user(),
    };
    Ok(upid_reply(cx.start_task(&mut st, owner, Box::new(job))))
}

struct DestroyJob {
    node: String,
    vmid: u32,
    skiplock: bool,
    purge: bool,
    unreferenced: bool,
}

impl DestroyJob {
    /// Worker checks: early checks, config lock (`suspended` allowed), base volumes in use.
    fn check(&self, st: &State) -> Result<(), String> {
        early_checks(st, &self.node, self.vmid, self.purge)?;
        let vm = st
            .vm_on(&self.node, self.vmid)
            .ok_or_else(|| conf_missing(&self.node, self.vmid))?;
        if let (false, Some(lock)) = (self.skiplock, vm.conf.lock())
            && lock != "suspended"
        {
            return Err(format!("VM is locked ({lock})"));
        }
        if vm.conf.is_template() {
            for volid in volumes(&vm.conf.main) {
                if st.storages.is_base_and_used(&volid, &self.node) {
                    return Err(format!(
                        "base volume '{volid}' is still in use by linked cloned"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Managed, non-CD volumes a config section refers to (drives, `unusedN`, `vmstate`).
pub(crate) fn volumes(section: &std::collections::BTreeMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in section {
        if is_drive_key(k) {
            if let Some(d) = Drive::parse(v).filter(|d| !d.is_cdrom() || d.is_cloudinit())
                && d.volid().is_some()
            {
                out.push(d.file);
            }
        } else if (is_unused_key(k) || k == "vmstate") && split_volid(v).is_some() {
            out.push(v.clone());
        }
    }
    out
}

impl Job for DestroyJob {
    fn begin(&mut self, cx: &mut JobCx<'_>) -> Result<f64, String> {
        self.check(cx.st)?;
        Ok(1.0)
    }

    fn finish(&mut self, cx: &mut JobCx<'_>) -> Result<(), String> {
        self.check(cx.st)?;
        let (node, vmid) = (self.node.clone(), self.vmid);
        let Some(vm) = cx.st.vms.get(&vmid) else {
            return Err(conf_missing(&node, vmid));
        };
        let mut vols: BTreeSet<String> = volumes(&vm.conf.main).into_iter().collect();
        for snap in vm.conf.snapshots.values() {
            vols.extend(volumes(snap));
        }
        if self.unreferenced {
            vols.extend(cx.st.storages.owned_by(vmid, &node));
        }
        for volid in vols {
            let Some(vol) = cx.st.storages.find(&volid, &node) else {
                continue;
            };
            if vol.vmid != Some(vmid) {
                continue;
            }
            let kind = split_volid(&volid)
                .and_then(|(s, _)| cx.st.storages.def(s))
                .map(|s| s.kind.clone())
                .unwrap_or_default();
            match cx.st.storages.free(&volid, &node) {
                Ok(()) => {
                    let name = split_volid(&volid).map_or(volid.as_str(), |(_, n)| n);
                    match kind.as_str() {
                        "lvmthin" | "lvm" => {
                            cx.log
                                .line(format!("  Logical volume \"{name}\" successfully removed."));
                        }
                        "rbd" => cx.log.line("Removing image: 100% complete...done."),
                        _ => {}
                    }
                }
                Err(e) => cx.log.line(format!(
                    "Could not remove disk '{volid}', check manually: {e}"
                )),
            }
        }
        if self.purge {
            cx.log
                .line(format!("purging VM {vmid} from related configurations.."));
            if cx.st.ha.remove(&format!("vm:{vmid}")).is_some() {
                cx.log.line(format!(
                    "NOTE: removed VM {vmid} from HA resource configuration."
                ));
            }
        }
        cx.st.vms.remove(&vmid);
        Ok(())
    }
}
