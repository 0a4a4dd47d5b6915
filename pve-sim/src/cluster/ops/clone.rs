//! `POST .../{vmid}/clone` (`clone_vm`): linked clones of templates by default, full copies of
//! normal VMs; checks before the fork (source lock, snapshot, linked-clone restrictions, shared
//! storage for another target node, new vmid free) and repeated in the worker, which holds the
//! new VM under `lock: clone` (the `# qmclone temporary file` config) until the disks exist.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::cluster::clock::now_unix;
use crate::cluster::config::text::VmConfig;
use crate::cluster::drive::{
    Drive, Net, format_size, is_drive_key, is_unused_key, net_index, parse_kv,
};
use crate::cluster::ids::{random_mac, random_uuid};
use crate::cluster::inner::Inner;
use crate::cluster::request::{check_quorum, node, upid_reply, vmid, vmid_param};
use crate::cluster::state::State;
use crate::cluster::tasks::job::{Job, JobCx, TaskOwner};
use crate::cluster::vm::{RunState, Vm, check_lock, conf_not_found};
use crate::{ApiError, Caller, Params, Reply};

/// Keys not copied to a clone.
const SKIP: &[&str] = &[
    "parent",
    "snaptime",
    "vmstate",
    "snapstate",
    "runningcpu",
    "runningmachine",
    "running-nets-host-mtu",
    "lock",
    "digest",
];

/// What was requested.
#[derive(Clone)]
struct CloneReq {
    node: String,
    vmid: u32,
    newid: u32,
    name: Option<String>,
    description: Option<String>,
    snapname: Option<String>,
    storage: Option<String>,
    format: Option<String>,
    full: Option<bool>,
    target: Option<String>,
}

/// What the checks decided.
struct ClonePlan {
    source: BTreeMap<String, String>,
    full: bool,
    drives: Vec<(String, Drive)>,
    pending: Vec<String>,
}

/// `$load_and_check`, in order; errors are plain `die`s except the storage param error.
fn load_and_check(st: &State, r: &CloneReq) -> Result<ClonePlan, ApiError> {
    let die = |m: String| ApiError::internal(m);
    let vm = st
        .vm_on(&r.node, r.vmid)
        .ok_or_else(|| die(conf_not_found(&r.node, r.vmid)))?;
    if let Some(t) = &r.target
        && st.node(t).is_none()
    {
        return Err(die(format!("no such cluster node '{t}'")));
    }
    if let Some(s) = &r.storage {
        let scfg = st.storages.check_enabled(s, &r.node).map_err(die)?;
        if !scfg.content.contains("images") {
            return Err(ApiError::param(
                "storage",
                format!("storage '{s}' does not support vm images"),
            ));
        }
        if let Some(t) = &r.target {
            st.storages.check_enabled(s, t).map_err(die)?;
            if !scfg.shared {
                return Err(die(format!("can't clone to non-shared storage '{s}'")));
            }
        }
    }
    check_lock(&vm.conf).map_err(die)?;
    if let Some(snap) = &r.snapname
        && !vm.conf.snapshots.contains_key(snap)
    {
        return Err(die(format!("snapshot '{snap}' does not exist")));
    }
    let full = r.full.unwrap_or(!vm.conf.is_template());
    if r.storage.is_some() && !full {
        return Err(die(
            "parameter 'storage' not allowed for linked clones".into()
        ));
    }
    if r.format.is_some() && !full {
        return Err(die(
            "parameter 'format' not allowed for linked clones".into()
        ));
    }
    let source = match &r.snapname {
        Some(s) => vm.conf.snapshots.get(s).cloned().unwrap_or_default(),
        None => vm.conf.main.clone(),
    };
    let mut shared = true;
    let mut drives = Vec::new();
    for (key, drive) in crate::cluster::vm::drives(&source) {
        let Some((store, _)) = drive.volid() else {
            continue;
        };
        if !st.storages.def(store).is_some_and(|s| s.shared) {
            shared = false;
        }
        if drive.is_cdrom() && !drive.is_cloudinit() {
            continue;
        }
        drives.push((key, drive));
    }
    if let (Some(t), false) = (&r.target, shared) {
        return Err(die(format!(
            "can't clone VM to node '{t}' (VM uses local storage)"
        )));
    }
    if st.vms.contains_key(&r.newid) {
        return Err(die(format!(
            "unable to create VM {}: config file already exists",
            r.newid
        )));
    }
    for (key, drive) in &drives {
        if full || drive.is_cloudinit() || key == "tpmstate0" {
            continue;
        }
        let (store, name) = drive.volid().unwrap_or_default();
        let format = st
            .storages
            .find(&drive.file, &r.node)
            .map(|v| v.format.clone())
            .unwrap_or_default();
        let base = name.rsplit('/').next().unwrap_or(name).starts_with("base-");
        let supported = st.storages.def(store).is_some_and(|s| s.can_link(&format))
            && base
            && r.snapname.is_none();
        if !supported {
            let of = if r.snapname.is_some() {
                " a snapshot of"
            } else {
                ""
            };
            return Err(die(format!(
                "Linked clone feature is not supported for{of} '{}' ({key})",
                drive.file
            )));
        }
    }
    let pending = if r.snapname.is_none() && vm.conf.has_pending() {
        let mut keys: Vec<String> = vm.conf.pending.keys().cloned().collect();
        if !vm.conf.pending_delete.is_empty() {
            keys.push("delete".into());
        }
        keys
    } else {
        Vec::new()
    };
    Ok(ClonePlan {
        source,
        full,
        drives,
        pending,
    })
}

fn parse_req(p: &Params) -> Result<CloneReq, ApiError> {
    let node = node(p)?.to_string();
    let target = p
        .get("target")
        .filter(|t| *t != node && *t != "localhost")
        .map(str::to_string);
    Ok(CloneReq {
        vmid: vmid(p)?,
        newid: vmid_param(p, "newid")?,
        name: p.get("name").map(str::to_string),
        description: p.get("description").map(str::to_string),
        snapname: p.get("snapname").map(str::to_string),
        storage: p.get("storage").map(str::to_string),
        format: p.get("format").map(str::to_string),
        full: p.get("full").map(|v| v == "1"),
        target,
        node,
    })
}

/// `POST .../clone`.
pub(crate) fn clone_vm(cx: &Arc<Inner>, p: &Params, caller: &Caller) -> Result<Reply, ApiError> {
    let req = parse_req(p)?;
    if let Some(pool) = p.get("pool") {
        return Err(ApiError::param(
            "pool",
            format!("pool '{pool}' does not exist"),
        ));
    }
    let mut st = cx.state();
    check_quorum(&st, &cx.faults)?;
    load_and_check(&st, &req)?;
    let owner = TaskOwner {
        node: req.node.clone(),
        kind: "qmclone",
        vmid: req.vmid,
        user: caller.upid_user(),
    };
    Ok(upid_reply(cx.start_task(
        &mut st,
        owner,
        Box::new(CloneJob { req, plan: None }),
    )))
}

struct CloneJob {
    req: CloneReq,
    plan: Option<ClonePlan>,
}

/// `render_bytes`-like, one decimal (`32.0 GiB`).
fn render_bytes(n: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut i = 0;
    while v >= 1024.0 && i < units.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    format!("{v:.1} {}", units[i])
}

impl Job for CloneJob {
    fn begin(&mut self, cx: &mut JobCx<'_>) -> Result<f64, String> {
        let plan = load_and_check(cx.st, &self.req).map_err(|e| super::config::task_text(&e))?;
        let mut temp = VmConfig::default();
        temp.set("description", "qmclone temporary file");
        temp.set("lock", "clone");
        let newid = self.req.newid;
        cx.st.vms.insert(
            newid,
            Vm {
                vmid: newid,
                node: self.req.node.clone(),
                conf: temp,
                run: RunState::default(),
            },
        );
        let secs = if plan.full { 4.0 } else { 1.0 };
        self.plan = Some(plan);
        Ok(secs)
    }

    fn finish(&mut self, cx: &mut JobCx<'_>) -> Result<(), String> {
        let r = self.req.clone();
        let plan = self.plan.take().ok_or("clone failed: internal error")?;
        if cx.st.vm_on(&r.node, r.vmid).is_none() {
            return Err(format!("clone failed: {}", conf_not_found(&r.node, r.vmid)));
        }
        let now = now_unix();
        let mut conf = VmConfig::default();
        let mut created: Vec<String> = Vec::new();
        for (k, v) in &plan.source {
            if SKIP.contains(&k.as_str()) || is_unused_key(k) || is_drive_key(k) {
                continue;
            }
            if net_index(k).is_some()
                && let Some(mut net) = Net::parse(v)
            {
                net.mac = Some(random_mac(&mut cx.st.rng));
                conf.set(k, net.print());
                continue;
            }
            conf.set(k, v.as_str());
        }
        for (k, v) in &plan.source {
            if is_drive_key(k) && Drive::parse(v).is_some_and(|d| d.is_cdrom() && !d.is_cloudinit())
            {
                conf.set(k, v.as_str());
            }
        }
        for (key, drive) in &plan.drives {
            let full = plan.full || drive.is_cloudinit() || key == "tpmstate0";
            let size = cx
                .st
                .storages
                .find(&drive.file, &r.node)
                .map(|v| v.size)
                .or(drive.size())
                .unwrap_or(0);
            let result = if full {
                cx.log
                    .line(format!("create full clone of drive {key} ({})", drive.file));
                let store = r.storage.clone().unwrap_or_else(|| {
                    drive
                        .volid()
                        .map(|(s, _)| s.to_string())
                        .unwrap_or_default()
                });
                let dst_node = r.target.clone().unwrap_or_else(|| r.node.clone());
                cx.st.storages.copy_full(
                    &drive.file,
                    &r.node,
                    &store,
                    &dst_node,
                    r.newid,
                    r.format.as_deref(),
                    now,
                )
            } else {
                cx.log.line(format!(
                    "create linked clone of drive {key} ({})",
                    drive.file
                ));
                cx.st
                    .storages
                    .clone_linked(&drive.file, &r.node, r.newid, now)
            };
            let volid = match result {
                Ok(v) => v,
                Err(e) => {
                    let dst = r.target.clone().unwrap_or_else(|| r.node.clone());
                    for v in &created {
                        let _ = cx.st.storages.free(v, &dst);
                    }
                    return Err(format!("clone failed: {e}"));
                }
            };
            if full && !drive.is_cloudinit() {
                cx.log.line(format!(
                    "transferred 0.0 B of {} (0.00%)",
                    render_bytes(size)
                ));
                cx.log.line(format!(
                    "transferred {} of {} (100.00%)",
                    render_bytes(size),
                    render_bytes(size)
                ));
            }
            created.push(volid.clone());
            let mut nd = drive.clone();
            nd.file = volid;
            if !drive.is_cloudinit() {
                nd.opts.insert("size".into(), format_size(size));
            }
            conf.set(key, nd.print());
        }
        let mut smbios = conf
            .get("smbios1")
            .map(|s| parse_kv(s, "uuid"))
            .unwrap_or_default();
        smbios.insert("uuid".into(), random_uuid(&mut cx.st.rng));
        let smbios_text: Vec<String> = smbios.iter().map(|(k, v)| format!("{k}={v}")).collect();
        conf.set("smbios1", smbios_text.join(","));
        if conf.get("vmgenid").is_some() {
            conf.set("vmgenid", random_uuid(&mut cx.st.rng));
        }
        conf.remove("template");
        let srcname = plan
            .source
            .get("name")
            .cloned()
            .unwrap_or_else(|| r.vmid.to_string());
        conf.set(
            "name",
            r.name
                .clone()
                .unwrap_or_else(|| format!("Copy-of-VM-{srcname}")),
        );
        if let Some(d) = r.description.as_deref().filter(|d| !d.is_empty()) {
            conf.set("description", d);
        }
        if !plan.pending.is_empty() {
            cx.log.line(format!(
                "found pending changes for '{}', discarding for clone",
                plan.pending.join(",")
            ));
        }
        let node = r.target.clone().unwrap_or_else(|| r.node.clone());
        match cx.st.vms.get_mut(&r.newid) {
            Some(vm) if vm.conf.lock() == Some("clone") => {
                vm.conf = conf;
                vm.node = node;
            }
            _ => {
                return Err(format!(
                    "clone failed: unable to find configuration file for VM {}",
                    r.newid
                ));
            }
        }
        Ok(())
    }

    fn abort(&mut self, cx: &mut JobCx<'_>) {
        let newid = self.req.newid;
        if cx
            .st
            .vms
            .get(&newid)
            .is_some_and(|vm| vm.conf.lock() == Some("clone"))
        {
            cx.st.vms.remove(&newid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_render_with_one_decimal() {
        assert_eq!(render_bytes(32 << 30), "32.0 GiB");
        assert_eq!(render_bytes(0), "0.0 B");
        assert_eq!(render_bytes(1536 << 20), "1.5 GiB");
    }
}
