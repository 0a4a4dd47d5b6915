//! Snapshots (`PVE::AbstractConfig` snapshot state machine): list with the final `current`
//! entry, create (`lock: snapshot`, `snapstate: prepare` until commit, RAM state with
//! `vmstate=1` on a running VM), delete (`snapshot-delete`), rollback (`rollback`; stops the VM,
//! restores the config, starts again from RAM state or with `start=1`).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::start_job::StartJob;
use crate::cluster::clock::now_unix;
use crate::cluster::drive::is_unused_key;
use crate::cluster::inner::Inner;
use crate::cluster::power::{mark_running, mark_stopped};
use crate::cluster::request::{node, upid_reply, vmid};
use crate::cluster::state::State;
use crate::cluster::tasks::job::{Job, JobCx, TaskOwner};
use crate::cluster::vm::{check_lock, conf_missing, drives, memory_mib};
use crate::{ApiError, Caller, Params, Reply};

/// `GET .../snapshot`.
pub(crate) fn list(cx: &Arc<Inner>, p: &Params) -> Result<Reply, ApiError> {
    let (node, vmid) = (node(p)?, vmid(p)?);
    let st = cx.state();
    let vm = st.load(node, vmid)?;
    let mut out = Vec::new();
    for (name, snap) in &vm.conf.snapshots {
        let mut item = Map::new();
        item.insert("name".into(), Value::from(name.as_str()));
        let snaptime = snap
            .get("snaptime")
            .and_then(|t| t.parse::<i64>().ok())
            .unwrap_or(0);
        item.insert("snaptime".into(), Value::from(snaptime));
        item.insert(
            "vmstate".into(),
            Value::from(u8::from(snap.contains_key("vmstate"))),
        );
        item.insert(
            "description".into(),
            Value::from(snap.get("description").cloned().unwrap_or_default()),
        );
        if let Some(parent) = snap.get("parent") {
            item.insert("parent".into(), Value::from(parent.as_str()));
        }
        if let Some(state) = snap.get("snapstate") {
            item.insert("snapstate".into(), Value::from(state.as_str()));
        }
        out.push(Value::Object(item));
    }
    let mut current = Map::new();
    current.insert("name".into(), Value::from("current"));
    current.insert("digest".into(), Value::from(vm.conf.digest()));
    current.insert("running".into(), Value::from(u8::from(vm.run.running)));
    current.insert("description".into(), Value::from("You are here!"));
    if let Some(parent) = vm.conf.get("parent") {
        current.insert("parent".into(), Value::from(parent));
    }
    out.push(Value::Object(current));
    Ok(Reply::data(Value::Array(out)))
}

/// `find_vmstate_storage`: `vmstatestorage`, else the first shared disk storage, else the
/// first disk's storage, else `local`.
pub(super) fn vmstate_storage(st: &State, node: &str, vmid: u32) -> String {
    let Some(vm) = st.vm_on(node, vmid) else {
        return "local".into();
    };
    if let Some(s) = vm.conf.get("vmstatestorage") {
        return s.to_string();
    }
    let stores: Vec<String> = drives(&vm.conf.main)
        .iter()
        .filter(|(_, d)| !d.is_cdrom())
        .filter_map(|(_, d)| d.volid().map(|(s, _)| s.to_string()))
        .collect();
    stores
        .iter()
        .find(|s| st.storages.def(s).is_some_and(|d| d.shared))
        .or(stores.first())
        .cloned()
        .unwrap_or_else(|| "local".into())
}

fn owner(node: &str, kind: &'static str, vmid: u32, caller: &Caller) -> TaskOwner {
    TaskOwner {
        node: node.to_string(),
        kind,
        vmid,
        user: caller.upid_user(),
    }
}

/// `POST .../snapshot`.
pub(crate) fn create(cx: &Arc<Inner>, p: &Params, caller: &Caller) -> Result<Reply, ApiError> {
    let (node, vmid) = (node(p)?, vmid(p)?);
    let snapname = p.req("snapname")?.to_string();
    if snapname == "current" {
        return Err(ApiError::internal(
            "unable to use snapshot name 'current' (reserved name)",
        ));
    }
    if snapname.eq_ignore_ascii_case("pending") {
        return Err(ApiError::internal(
            "unable to use snapshot name 'pending' (reserved name)",
        ));
    }
    let mut st = cx.state();
    st.load(node, vmid)?;
    let job = SnapshotJob {
        node: node.to_string(),
        vmid,
        name: snapname,
        vmstate: p.flag("vmstate", false),
        description: p.get("description").map(str::to_string),
    };
    Ok(upid_reply(cx.start_task(
        &mut st,
        owner(node, "qmsnapshot", vmid, caller),
        Box::new(job),
    )))
}

struct SnapshotJob {
    node: String,
    vmid: u32,
    name: String,
    vmstate: bool,
    description: Option<String>,
}

impl Job for SnapshotJob {
    fn begin(&mut self, cx: &mut JobCx<'_>) -> Result<f64, String> {
        let (node, vmid) = (self.node.clone(), self.vmid);
        let vm = cx
            .st
            .vm_on(&node, vmid)
            .ok_or_else(|| conf_missing(&node, vmid))?;
        if vm.conf.is_template() {
            return Err("you can't take a snapshot if it's a template".into());
        }
        check_lock(&vm.conf)?;
        if vm.conf.snapshots.contains_key(&self.name) {
            return Err(format!("snapshot name '{}' already used", self.name));
        }
        for (_, d) in drives(&vm.conf.main) {
            if d.is_cdrom() {
                continue;
            }
            let Some((store, _)) = d.volid() else {
                return Err("snapshot feature is not available".into());
            };
            let format = cx
                .st
                .storages
                .find(&d.file, &node)
                .map(|v| v.format.clone())
                .unwrap_or_default();
            if !cx
                .st
                .storages
                .def(store)
                .is_some_and(|s| s.can_snapshot(&format))
            {
                return Err("snapshot feature is not available".into());
            }
        }
        let running = vm.run.running;
        let mem = memory_mib(&vm.conf) << 20;
        let mut snap: BTreeMap<String, String> = vm
            .conf
            .main
            .iter()
            .filter(|(k, _)| {
                ![
                    "snapstate",
                    "snaptime",
                    "vmstate",
                    "lock",
                    "digest",
                    "description",
                ]
                .contains(&k.as_str())
                    && !is_unused_key(k)
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let with_state = self.vmstate && running;
        if with_state {
            let store = vmstate_storage(cx.st, &node, vmid);
            let name = format!("vm-{vmid}-state-{}", self.name);
            let volid = cx.st.storages.alloc(
                &store,
                &node,
                vmid,
                Some(&name),
                Some("raw"),
                mem,
                now_unix(),
            )?;
            cx.log
                .line(format!("saving VM state and RAM using storage '{store}'"));
            snap.insert("vmstate".into(), volid);
            snap.insert("runningmachine".into(), "pc-i440fx-9.2+pve1".into());
            snap.insert(
                "runningcpu".into(),
                "x86-64-v2-AES,enforce,+kvm_pv_eoi,+kvm_pv_unhalt".into(),
            );
        }
        snap.insert("snapstate".into(), "prepare".into());
        snap.insert("snaptime".into(), now_unix().to_string());
        if let Some(d) = self.description.as_deref().filter(|d| !d.is_empty()) {
            snap.insert("description".into(), d.to_string());
        }
        let vm = cx.st.load_mut(&node, vmid)?;
        vm.conf.set("lock", "snapshot");
        vm.conf.snapshots.insert(self.name.clone(), snap);
        Ok(if with_state { 4.0 } else { 1.0 })
    }

    fn finish(&mut self, cx: &mut JobCx<'_>) -> Result<(), String> {
        let vm = cx.st.load_mut(&self.node, self.vmid)?;
        if vm.conf.lock() != Some("snapshot") {
            return Err("missing snapshot lock".into());
        }
        let disks: Vec<String> = drives(&vm.conf.main)
            .into_iter()
            .filter(|(_, d)| !d.is_cdrom() && d.volid().is_some())
            .map(|(k, d)| format!("snapshotting 'drive-{k}' ({})", d.file))
            .collect();
        let snap = vm
            .conf
            .snapshots
            .get_mut(&self.name)
            .ok_or_else(|| format!("snapshot '{}' does not exist", self.name))?;
        snap.remove("snapstate");
        vm.conf.set("parent", self.name.as_str());
        vm.conf.remove("lock");
        for line in disks {
            cx.log.line(line);
        }
        Ok(())
    }

    fn abort(&mut self, cx: &mut JobCx<'_>) {
        let Some(vm) = cx.st.vm_on_mut(&self.node, self.vmid) else {
            return;
        };
        if vm.conf.lock() != Some("snapshot") {
            return;
        }
        vm.conf.remove("lock");
        let state = vm
            .conf
            .snapshots
            .remove(&self.name)
            .and_then(|mut s| s.remove("vmstate"));
        if let Some(volid) = state {
            let _ = cx.st.storages.free(&volid, &self.node);
        }
    }
}

/// `DELETE .../snapshot/{snapname}`.
pub(crate) fn delete(cx: &Arc<Inner>, p: &Params, caller: &Caller) -> Result<Reply, ApiError> {
    let (node, vmid) = (node(p)?, vmid(p)?);
    let job = DeleteJob {
        node: node.to_string(),
        vmid,
        name: p.req("snapname")?.to_string(),
    };
    let mut st = cx.state();
    Ok(upid_reply(cx.start_task(
        &mut st,
        owner(node, "qmdelsnapshot", vmid, caller),
        Box::new(job),
    )))
}

struct DeleteJob {
    node: String,
    vmid: u32,
    name: String,
}

impl Job for DeleteJob {
    fn begin(&mut self, cx: &mut JobCx<'_>) -> Result<f64, String> {
        let vm = cx.st.load_mut(&self.node, self.vmid)?;
        check_lock(&vm.conf)?;
        if vm.conf.is_template() {
            return Err("you can't delete a snapshot if vm is a template".into());
        }
        let snap = vm
            .conf
            .snapshots
            .get_mut(&self.name)
            .ok_or_else(|| format!("snapshot '{}' does not exist", self.name))?;
        snap.insert("snapstate".into(), "delete".into());
        vm.conf.set("lock", "snapshot-delete");
        Ok(1.0)
    }

    fn finish(&mut self, cx: &mut JobCx<'_>) -> Result<(), String> {
        let node = self.node.clone();
        let vm = cx.st.load_mut(&node, self.vmid)?;
        let snap = vm
            .conf
            .snapshots
            .remove(&self.name)
            .ok_or_else(|| format!("snapshot '{}' does not exist", self.name))?;
        let parent = snap.get("parent").cloned();
        for other in vm.conf.snapshots.values_mut() {
            if other.get("parent") == Some(&self.name) {
                match &parent {
                    Some(p) => other.insert("parent".into(), p.clone()),
                    None => other.remove("parent"),
                };
            }
        }
        if vm.conf.get("parent") == Some(self.name.as_str()) {
            match &parent {
                Some(p) => vm.conf.set("parent", p.as_str()),
                None => {
                    vm.conf.remove("parent");
                }
            }
        }
        vm.conf.remove("lock");
        if let Some(volid) = snap.get("vmstate") {
            let _ = cx.st.storages.free(volid, &node);
        }
        Ok(())
    }

    fn abort(&mut self, cx: &mut JobCx<'_>) {
        let Some(vm) = cx.st.vm_on_mut(&self.node, self.vmid) else {
            return;
        };
        if vm.conf.lock() == Some("snapshot-delete") {
            vm.conf.remove("lock");
        }
        if let Some(s) = vm.conf.snapshots.get_mut(&self.name) {
            s.remove("snapstate");
        }
    }
}

/// `POST .../snapshot/{snapname}/rollback`.
pub(crate) fn rollback(cx: &Arc<Inner>, p: &Params, caller: &Caller) -> Result<Reply, ApiError> {
    let (node, vmid) = (node(p)?, vmid(p)?);
    let job = RollbackJob {
        node: node.to_string(),
        vmid,
        name: p.req("snapname")?.to_string(),
        start: p.flag("start", false),
        user: caller.upid_user(),
    };
    let mut st = cx.state();
    Ok(upid_reply(cx.start_task(
        &mut st,
        owner(node, "qmrollback", vmid, caller),
        Box::new(job),
    )))
}

struct RollbackJob {
    node: String,
    vmid: u32,
    name: String,
    start: bool,
    user: String,
}

impl Job for RollbackJob {
    fn begin(&mut self, cx: &mut JobCx<'_>) -> Result<f64, String> {
        let vm = cx.st.load_mut(&self.node, self.vmid)?;
        let snap = vm
            .conf
            .snapshots
            .get(&self.name)
            .ok_or_else(|| format!("snapshot '{}' does not exist", self.name))?;
        if let Some(state) = snap.get("snapstate") {
            return Err(format!(
                "unable to rollback to incomplete snapshot (snapstate = {state})"
            ));
        }
        check_lock(&vm.conf)?;
        let was_running = vm.run.running;
        vm.conf.set("lock", "rollback");
        if was_running {
            mark_stopped(cx.st, self.vmid);
        }
        Ok(2.0)
    }

    fn finish(&mut self, cx: &mut JobCx<'_>) -> Result<(), String> {
        let (node, vmid) = (self.node.clone(), self.vmid);
        let vm = cx.st.load_mut(&node, vmid)?;
        if vm.conf.lock() != Some("rollback") {
            return Err("got wrong lock".into());
        }
        let snap = vm
            .conf
            .snapshots
            .get(&self.name)
            .cloned()
            .ok_or_else(|| format!("snapshot '{}' does not exist", self.name))?;
        let mut main: BTreeMap<String, String> = vm
            .conf
            .main
            .iter()
            .filter(|(k, _)| is_unused_key(k) || k.as_str() == "description")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (k, v) in &snap {
            let skip = [
                "snapstate",
                "snaptime",
                "vmstate",
                "lock",
                "digest",
                "description",
                "runningmachine",
                "runningcpu",
            ];
            if !skip.contains(&k.as_str()) && !is_unused_key(k) {
                main.insert(k.clone(), v.clone());
            }
        }
        main.insert("parent".into(), self.name.clone());
        vm.conf.main = main;
        vm.conf.pending.clear();
        vm.conf.pending_delete.clear();
        for (_, d) in drives(&vm.conf.main.clone()) {
            if let Some(size) = d.size() {
                cx.st.storages.set_size(&d.file, &node, size);
            }
        }
        if snap.contains_key("vmstate") {
            cx.log.line(format!(
                "resuming VM from snapshot '{}' RAM state",
                self.name
            ));
            mark_running(cx.st, &node, vmid);
        } else if self.start {
            let owner = TaskOwner {
                node: node.clone(),
                kind: "qmstart",
                vmid,
                user: self.user.clone(),
            };
            cx.followups.push((
                owner,
                Box::new(StartJob {
                    node: node.clone(),
                    vmid,
                    skiplock: false,
                }),
            ));
        }
        Ok(())
    }

    fn abort(&mut self, cx: &mut JobCx<'_>) {
        if let Some(vm) = cx.st.vm_on_mut(&self.node, self.vmid)
            && vm.conf.lock() == Some("rollback")
        {
            vm.conf.remove("lock");
        }
    }
}
