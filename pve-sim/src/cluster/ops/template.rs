//! `POST .../{vmid}/template`: sync checks (lock, snapshots, already a template, running), then
//! the `qmtemplate` worker sets `template: 1` and turns the disks into base volumes
//! (`vm-100-disk-0` → `base-100-disk-0`); cloud-init drives and CD-ROMs stay as they are.

use std::sync::Arc;

use crate::cluster::drive::{Drive, split_volid};
use crate::cluster::inner::Inner;
use crate::cluster::request::{node, upid_reply, vmid};
use crate::cluster::state::State;
use crate::cluster::tasks::job::{Job, JobCx, TaskOwner};
use crate::cluster::vm::{check_lock, conf_missing, drives};
use crate::{ApiError, Caller, Params, Reply};

fn load_and_check(st: &State, node: &str, vmid: u32, disk: Option<&str>) -> Result<(), String> {
    let vm = st
        .vm_on(node, vmid)
        .ok_or_else(|| conf_missing(node, vmid))?;
    check_lock(&vm.conf)?;
    if !vm.conf.snapshots.is_empty() {
        return Err("unable to create template, because VM contains snapshots".into());
    }
    if vm.conf.is_template() && disk.is_none() {
        return Err("you can't convert a template to a template".into());
    }
    if vm.run.running {
        return Err("you can't convert a VM to template if VM is running".into());
    }
    Ok(())
}

/// `POST .../template`.
pub(crate) fn template(cx: &Arc<Inner>, p: &Params, caller: &Caller) -> Result<Reply, ApiError> {
    let node = node(p)?;
    let vmid = vmid(p)?;
    let disk = p.get("disk").map(str::to_string);
    let mut st = cx.state();
    load_and_check(&st, node, vmid, disk.as_deref()).map_err(ApiError::internal)?;
    let owner = TaskOwner {
        node: node.to_string(),
        kind: "qmtemplate",
        vmid,
        user: caller.upid_user(),
    };
    let job = TemplateJob {
        node: node.to_string(),
        vmid,
        disk,
    };
    Ok(upid_reply(cx.start_task(&mut st, owner, Box::new(job))))
}

struct TemplateJob {
    node: String,
    vmid: u32,
    disk: Option<String>,
}

impl Job for TemplateJob {
    fn begin(&mut self, cx: &mut JobCx<'_>) -> Result<f64, String> {
        load_and_check(cx.st, &self.node, self.vmid, self.disk.as_deref())?;
        Ok(1.0)
    }

    fn finish(&mut self, cx: &mut JobCx<'_>) -> Result<(), String> {
        load_and_check(cx.st, &self.node, self.vmid, self.disk.as_deref())?;
        let node = self.node.clone();
        let conf = cx.st.load_mut(&node, self.vmid)?.conf.clone();
        let mut conf = conf;
        conf.set("template", "1");
        for (key, drive) in drives(&conf.main.clone()) {
            if self.disk.as_deref().is_some_and(|d| d != key)
                || drive.is_cdrom()
                || drive.is_cloudinit()
            {
                continue;
            }
            let Some((store, name)) = drive.volid() else {
                continue;
            };
            if name.rsplit('/').next().unwrap_or(name).starts_with("base-") {
                continue;
            }
            let kind = cx
                .st
                .storages
                .def(store)
                .map(|s| s.kind.clone())
                .unwrap_or_default();
            let base = cx.st.storages.create_base(&drive.file, &node)?;
            if kind == "lvmthin" || kind == "lvm" {
                let new_name = split_volid(&base).map_or(base.as_str(), |(_, n)| n);
                cx.log.line(format!(
                    "  Renamed \"{name}\" to \"{new_name}\" in volume group \"pve\""
                ));
                cx.log
                    .line(format!("  Logical volume pve/{new_name} changed."));
            }
            let mut d: Drive = drive.clone();
            d.file = base;
            conf.set(&key, d.print());
        }
        if let Some(vm) = cx.st.vms.get_mut(&self.vmid) {
            vm.conf = conf;
        }
        Ok(())
    }
}
