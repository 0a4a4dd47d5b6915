//! Migration: `GET .../migrate` (preconditions: allowed nodes, local disks) and
//! `POST .../migrate` (`qmigrate`): sync checks (`target: target is local node.`, unknown node,
//! lock, running without `online`, storages on the target), then a worker holding
//! `lock: migrate` that moves the config (and local disks) to the target node.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::cluster::clock::{hms, now_unix};
use crate::cluster::drive::{Drive, Net, is_drive_key, is_unused_key, net_index, split_volid};
use crate::cluster::inner::Inner;
use crate::cluster::power::mark_running;
use crate::cluster::request::{check_quorum, node, root_only, upid_reply, vmid};
use crate::cluster::state::State;
use crate::cluster::tasks::job::{Job, JobCx, TaskOwner};
use crate::cluster::vm::check_lock;
use crate::{ApiError, Caller, Params, Reply};

/// Volumes of the current config: (volid, drive key or `unusedN`, is CD-ROM).
fn config_volumes(st: &State, node: &str, vmid: u32) -> Vec<(String, String, bool)> {
    let Some(vm) = st.vm_on(node, vmid) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (k, v) in &vm.conf.main {
        if is_drive_key(k) {
            if let Some(d) = Drive::parse(v).filter(|d| d.volid().is_some()) {
                out.push((d.file.clone(), k.clone(), d.is_cdrom() && !d.is_cloudinit()));
            }
        } else if is_unused_key(k) && split_volid(v).is_some() {
            out.push((v.clone(), k.clone(), false));
        }
    }
    out
}

/// Storages of the VM's volumes missing on `target`.
fn unavailable_storages(st: &State, node: &str, vmid: u32, target: &str) -> Vec<String> {
    let mut out: Vec<String> = config_volumes(st, node, vmid)
        .iter()
        .filter_map(|(volid, _, _)| split_volid(volid).map(|(s, _)| s.to_string()))
        .filter(|s| !st.storages.def(s).is_some_and(|d| d.on_node(target)))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Volumes on storages that are not shared.
fn local_volumes(st: &State, node: &str, vmid: u32) -> Vec<(String, String, bool)> {
    config_volumes(st, node, vmid)
        .into_iter()
        .filter(|(volid, _, _)| {
            split_volid(volid)
                .and_then(|(s, _)| st.storages.def(s))
                .is_some_and(|d| !d.shared)
        })
        .collect()
}

/// `GET .../migrate`.
pub(crate) fn precondition(cx: &Arc<Inner>, p: &Params) -> Result<Reply, ApiError> {
    let (node, vmid) = (node(p)?, vmid(p)?);
    let st = cx.state();
    check_quorum(&st, &cx.faults)?;
    let vm = st.load(node, vmid)?;
    check_lock(&vm.conf).map_err(ApiError::internal)?;
    let mut allowed = Vec::new();
    let mut not_allowed = Map::new();
    for n in &st.nodes {
        if n.name == node {
            continue;
        }
        let missing = unavailable_storages(&st, node, vmid, &n.name);
        if missing.is_empty() {
            allowed.push(Value::from(n.name.as_str()));
        } else {
            not_allowed.insert(n.name.clone(), json!({ "unavailable_storages": missing }));
        }
    }
    let local_disks: Vec<Value> = local_volumes(&st, node, vmid)
        .into_iter()
        .map(|(volid, key, cdrom)| {
            let size = st.storages.find(&volid, node).map_or(0, |v| v.size);
            json!({
                "volid": volid,
                "size": size,
                "cdrom": u8::from(cdrom),
                "is_unused": u8::from(is_unused_key(&key)),
                "drivename": key,
            })
        })
        .collect();
    Ok(Reply::data(json!({
        "running": u8::from(vm.run.running),
        "allowed_nodes": allowed,
        "not_allowed_nodes": not_allowed,
        "local_disks": local_disks,
        "local_resources": [],
        "mapped-resources": [],
        "mapped-resource-info": {},
        "has-dbus-vmstate": 1,
    })))
}

/// `POST .../migrate`.
pub(crate) fn migrate(cx: &Arc<Inner>, p: &Params, caller: &Caller) -> Result<Reply, ApiError> {
    let node = node(p)?;
    let target = p.req("target")?.to_string();
    if target == node {
        return Err(ApiError::param("target", "target is local node."));
    }
    let mut st = cx.state();
    check_quorum(&st, &cx.faults)?;
    if st.node(&target).is_none() {
        return Err(ApiError::internal(format!(
            "no such cluster node '{target}'"
        )));
    }
    let vmid = vmid(p)?;
    root_only(p, caller, &["force", "migration_type", "migration_network"])?;
    let vm = st.load(node, vmid)?;
    check_lock(&vm.conf).map_err(ApiError::internal)?;
    let running = vm.run.running;
    if running && !p.flag("online", false) {
        return Err(ApiError::internal(
            "can't migrate running VM without --online",
        ));
    }
    let mut target_storage = None;
    match p.get("targetstorage").filter(|t| *t != "1") {
        Some(map) if map.contains(':') || map.contains(',') => {
            return Err(ApiError::param(
                "targetstorage",
                "failed to parse storage map: storage mappings are not simulated, use a single storage id",
            ));
        }
        Some(sid) => {
            let scfg = st
                .storages
                .check_enabled(sid, &target)
                .map_err(ApiError::internal)?;
            if !scfg.content.contains("images") {
                return Err(ApiError::internal(format!(
                    "storage '{sid}' does not support vm images"
                )));
            }
            target_storage = Some(sid.to_string());
        }
        None => {
            if let Some(s) = unavailable_storages(&st, node, vmid, &target).first() {
                return Err(ApiError::internal(format!(
                    "storage '{s}' is not available on node '{target}'"
                )));
            }
        }
    }
    let job = MigrateJob {
        node: node.to_string(),
        vmid,
        target,
        online: running && p.flag("online", false),
        with_local_disks: p.flag("with-local-disks", false),
        target_storage,
        started: 0,
    };
    let owner = TaskOwner {
        node: node.to_string(),
        kind: "qmigrate",
        vmid,
        user: caller.upid_user(),
    };
    Ok(upid_reply(cx.start_task(&mut st, owner, Box::new(job))))
}

struct MigrateJob {
    node: String,
    vmid: u32,
    target: String,
    online: bool,
    with_local_disks: bool,
    target_storage: Option<String>,
    started: i64,
}

impl MigrateJob {
    fn aborted(&self, cx: &mut JobCx<'_>, err: &str) -> String {
        let now = now_unix();
        cx.log.stamped(
            now,
            format!(
                "ERROR: migration aborted (duration {}): {err}",
                hms(now - self.started)
            ),
        );
        "migration aborted".into()
    }
}

impl Job for MigrateJob {
    fn begin(&mut self, cx: &mut JobCx<'_>) -> Result<f64, String> {
        self.started = now_unix();
        let (node, vmid) = (self.node.clone(), self.vmid);
        let ip = cx
            .st
            .node(&self.target)
            .map(|n| n.ip.clone())
            .unwrap_or_default();
        let vm = cx.st.load_mut(&node, vmid)?;
        check_lock(&vm.conf)?;
        if vm.run.running != self.online {
            return Err(if vm.run.running {
                "can't migrate running VM without --online".to_string()
            } else {
                format!("VM {vmid} not running")
            });
        }
        cx.log.stamped(
            self.started,
            format!(
                "starting migration of VM {vmid} to node '{}' ({ip})",
                self.target
            ),
        );
        let local = local_volumes(cx.st, &node, vmid);
        for (volid, key, _) in &local {
            let how = if is_unused_key(key) {
                "unused"
            } else {
                "attached"
            };
            cx.log
                .stamped(self.started, format!("found local disk '{volid}' ({how})"));
        }
        if cx.faults.node_down(&self.target) {
            return Err(self.aborted(cx, "Can't connect to destination address using public key"));
        }
        if self.online && !local.is_empty() && !self.with_local_disks {
            return Err(self.aborted(
                cx,
                "can't live migrate attached local disks without with-local-disks option",
            ));
        }
        if self.online {
            let bridges = cx
                .st
                .node(&self.target)
                .map(|n| n.bridges.clone())
                .unwrap_or_default();
            let conf = cx
                .st
                .vm_on(&node, vmid)
                .map(|vm| vm.conf.clone())
                .unwrap_or_default();
            for (k, v) in &conf.main {
                let Some(bridge) = net_index(k)
                    .and_then(|_| Net::parse(v))
                    .and_then(|n| n.bridge().map(str::to_string))
                else {
                    continue;
                };
                if !bridges.contains(&bridge) {
                    return Err(self.aborted(cx, &format!("error - tunnel command '{{\"cmd\":\"start\"}}' failed - failed to handle 'start' command - start failed: bridge '{bridge}' does not exist")));
                }
            }
        }
        if let Some(vm) = cx.st.vms.get_mut(&vmid) {
            vm.conf.set("lock", "migrate");
        }
        Ok(if self.online { 8.0 } else { 4.0 })
    }

    fn finish(&mut self, cx: &mut JobCx<'_>) -> Result<(), String> {
        let (node, vmid, target) = (self.node.clone(), self.vmid, self.target.clone());
        let now = now_unix();
        if cx
            .st
            .vm_on(&node, vmid)
            .is_none_or(|vm| vm.conf.lock() != Some("migrate"))
        {
            return Err(self.aborted(cx, "VM config changed during migration"));
        }
        let local = local_volumes(cx.st, &node, vmid);
        if !local.is_empty() {
            cx.log.stamped(now, "copying local disk images");
        }
        let mut conf = cx
            .st
            .vms
            .get(&vmid)
            .map(|vm| vm.conf.clone())
            .unwrap_or_default();
        for (volid, key, cdrom) in &local {
            if *cdrom {
                continue;
            }
            match &self.target_storage {
                Some(sid) if split_volid(volid).is_some_and(|(s, _)| s != sid) => {
                    let fmt = cx.st.storages.find(volid, &node).map(|v| v.format.clone());
                    let new = cx.st.storages.copy_full(
                        volid,
                        &node,
                        sid,
                        &target,
                        vmid,
                        fmt.as_deref(),
                        now,
                    )?;
                    let _ = cx.st.storages.free(volid, &node);
                    if is_unused_key(key) {
                        conf.set(key, new.as_str());
                    } else if let Some(mut d) = conf.get(key).and_then(Drive::parse) {
                        d.file = new.clone();
                        conf.set(key, d.print());
                    }
                    cx.log
                        .stamped(now, format!("volume '{volid}' is '{new}' on the target"));
                }
                _ => cx.st.storages.move_local(volid, &node, &target)?,
            }
        }
        if self.online {
            cx.log
                .stamped(now, format!("starting VM {vmid} on remote node '{target}'"));
            cx.log.stamped(now, "start remote tunnel");
            cx.log.stamped(
                now,
                format!("starting online/live migration on unix:/run/qemu-server/{vmid}.migrate"),
            );
            cx.log.stamped(now, "migration status: completed");
        }
        conf.remove("lock");
        let run = cx
            .st
            .vms
            .get(&vmid)
            .map(|vm| vm.run.clone())
            .unwrap_or_default();
        if let Some(vm) = cx.st.vms.get_mut(&vmid) {
            vm.conf = conf;
            vm.node = target.clone();
        }
        if run.running {
            // A new QEMU process on the target; the guest itself keeps running.
            mark_running(cx.st, &target, vmid);
            if let Some(vm) = cx.st.vms.get_mut(&vmid) {
                vm.run.guest_booted = run.guest_booted;
                vm.run.paused = run.paused;
            }
        }
        cx.log.stamped(
            now,
            format!(
                "migration finished successfully (duration {})",
                hms(now - self.started)
            ),
        );
        Ok(())
    }

    fn abort(&mut self, cx: &mut JobCx<'_>) {
        if let Some(vm) = cx.st.vm_on_mut(&self.node, self.vmid)
            && vm.conf.lock() == Some("migrate")
        {
            vm.conf.remove("lock");
        }
    }
}
