//! The config update of `update_vm_api` (PUT and the POST worker): deletions and new values
//! first land in `[PENDING]`; unchanged entries are dropped; then a stopped VM takes all of
//! them (`vmconfig_apply_pending`) while a running VM takes only what can change live
//! (`vmconfig_hotplug_pending`) and keeps the rest pending until its next start.

use std::collections::{BTreeMap, BTreeSet};

use super::disks::{create_disk, delete_or_detach, free_unused, register_unused};
use super::keys::Hotplug;
use super::text::VmConfig;
use crate::ApiError;
use crate::cluster::drive::{Drive, Net, is_drive_key, is_unused_key, net_index, parse_kv};
use crate::cluster::ids::hash_password;
use crate::cluster::state::State;
use crate::cluster::tasks::task::TaskLog;
use crate::cluster::vm::{conf_missing, memory_mib};

/// A validated update request.
#[derive(Debug, Clone, Default)]
pub(crate) struct UpdateReq {
    /// Keys to set (nets already carry a MAC, drives are printed canonically).
    pub(crate) set: BTreeMap<String, String>,
    pub(crate) delete: Vec<String>,
    pub(crate) revert: Vec<String>,
    pub(crate) force: bool,
    pub(crate) digest: Option<String>,
    pub(crate) skiplock: bool,
    /// `-key value ...` for the `update VM <vmid>: ...` log line.
    pub(crate) log_args: String,
}

/// `load_and_check_config`: config exists, digest, lock, balloon.
pub(crate) fn early_checks(
    st: &State,
    node: &str,
    vmid: u32,
    req: &UpdateReq,
) -> Result<(), ApiError> {
    let vm = st.load(node, vmid)?;
    if let Some(d) = req.digest.as_deref().filter(|d| !d.is_empty())
        && d != vm.conf.digest()
    {
        return Err(ApiError::internal(
            "checksum mismatch (file change by other user?)",
        ));
    }
    let mut lock = vm.conf.lock();
    if lock == Some("suspended") && req.delete.iter().any(|d| d == "vmstate") {
        lock = None;
    }
    if let (false, Some(lock)) = (req.skiplock, lock) {
        return Err(ApiError::internal(format!("VM is locked ({lock})")));
    }
    if req.set.contains_key("memory") || req.set.contains_key("balloon") {
        let mut c = VmConfig::default();
        let memory = req
            .set
            .get("memory")
            .or(vm.conf.pending.get("memory"))
            .or(vm.conf.main.get("memory"));
        if let Some(m) = memory {
            c.set("memory", m.as_str());
        }
        let balloon = req
            .set
            .get("balloon")
            .or(vm.conf.pending.get("balloon"))
            .or(vm.conf.main.get("balloon"));
        if balloon
            .and_then(|b| b.parse::<u64>().ok())
            .is_some_and(|b| b > memory_mib(&c))
        {
            return Err(ApiError::internal(
                "balloon value too large (must be smaller than assigned memory)",
            ));
        }
    }
    Ok(())
}

/// The whole update, as the locked `$updatefn` does it. Partial effects stay written when a
/// later step fails, as in PVE (each step writes the config).
pub(crate) fn run_update(
    st: &mut State,
    node: &str,
    vmid: u32,
    req: &UpdateReq,
    log: &mut TaskLog,
) -> Result<(), ApiError> {
    early_checks(st, node, vmid, req)?;
    log.line(format!("update VM {vmid}: {}", req.log_args));
    let Some(vm) = st.vms.get(&vmid) else {
        return Err(ApiError::internal(conf_missing(node, vmid)));
    };
    let running = vm.run.running;
    let mut conf = vm.conf.clone();
    let mut delete = req.delete.clone();
    if delete.iter().any(|d| d == "vmstate") && conf.lock() == Some("suspended") {
        delete.push("lock".into());
        for key in ["runningmachine", "runningcpu", "running-nets-host-mtu"] {
            if conf.get(key).is_some() {
                delete.push(key.into());
            }
        }
    }
    let mut set = req.set.clone();
    for opt in &req.revert {
        if let Some(v) = conf.get(opt) {
            set.insert(opt.clone(), v.to_string());
        } else if conf.pending.contains_key(opt) {
            delete.push(opt.clone());
        }
    }
    let result = update_conf(
        st, node, vmid, &mut conf, &set, &delete, req.force, running, log,
    );
    if let Some(vm) = st.vms.get_mut(&vmid) {
        vm.conf = conf;
    }
    result
}

fn boot_order(conf: &VmConfig) -> Vec<String> {
    conf.get("boot")
        .map(|b| parse_kv(b, "legacy"))
        .and_then(|kv| kv.get("order").cloned())
        .map(|o| {
            o.split(';')
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn print_boot_order(devs: &[String]) -> String {
    if devs.is_empty() {
        String::new()
    } else {
        format!("order={}", devs.join(";"))
    }
}

/// `get_unique_tags`: split on `;`, `,` and spaces, drop duplicates, sort.
pub(crate) fn unique_tags(tags: &str) -> String {
    let set: BTreeSet<&str> = tags
        .split([';', ',', ' '])
        .filter(|t| !t.is_empty())
        .collect();
    set.into_iter().collect::<Vec<_>>().join(";")
}

fn protected(conf: &VmConfig, what: String) -> Result<(), ApiError> {
    if conf.get("protection") == Some("1") {
        return Err(ApiError::internal(format!(
            "{what} - protection mode enabled"
        )));
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn update_conf(
    st: &mut State,
    node: &str,
    vmid: u32,
    conf: &mut VmConfig,
    set: &BTreeMap<String, String>,
    delete: &[String],
    force: bool,
    running: bool,
    log: &mut TaskLog,
) -> Result<(), ApiError> {
    let mut order = boot_order(conf);
    for opt in delete {
        let Some(val) = conf
            .get(opt)
            .or(conf.pending.get(opt).map(String::as_str))
            .map(str::to_string)
        else {
            log.line(format!(
                "cannot delete '{opt}' - not set in current configuration!"
            ));
            continue;
        };
        let pending_val = conf.pending.remove(opt);
        if order.contains(opt) {
            order.retain(|d| d != opt);
            conf.pending.insert("boot".into(), print_boot_order(&order));
        }
        if is_unused_key(opt) {
            protected(conf, format!("can't remove unused disk '{val}'"))?;
            free_unused(st, node, conf, opt).map_err(ApiError::internal)?;
        } else if opt == "vmstate" {
            protected(conf, format!("can't remove vmstate '{val}'"))?;
            let _ = st.storages.free(&val, node);
            conf.remove(opt);
        } else if is_drive_key(opt) {
            protected(conf, format!("can't remove drive '{opt}'"))?;
            if let Some(d) = pending_val.as_deref().and_then(Drive::parse) {
                register_unused(st, node, conf, &d);
            }
            conf.pending_delete.insert(opt.clone(), force);
        } else if opt == "tags" {
            conf.remove(opt);
        } else {
            conf.pending_delete.insert(opt.clone(), force);
        }
    }
    for (opt, value) in set {
        if conf.pending.get(opt) == Some(value) {
            continue;
        }
        if is_drive_key(opt) {
            if let Some(old) = conf.pending.get(opt).and_then(|v| Drive::parse(v)) {
                register_unused(st, node, conf, &old);
            }
            let mut created = Vec::new();
            let printed = create_disk(st, node, vmid, conf, opt, value, None, &mut created, log)
                .map_err(ApiError::internal)?;
            let is_cd = Drive::parse(&printed).is_some_and(|d| d.is_cdrom());
            conf.pending.insert(opt.clone(), printed);
            if !order.is_empty() && is_cd && !order.contains(opt) {
                order.push(opt.clone());
                conf.pending.insert("boot".into(), print_boot_order(&order));
            }
        } else if opt == "tags" {
            conf.pending.insert(opt.clone(), unique_tags(value));
        } else if opt == "cipassword" {
            let hashed = hash_password(&mut st.rng, value);
            conf.set("cipassword", hashed);
        } else if opt == "boot" {
            let kv = parse_kv(value, "legacy");
            if let Some(o) = kv.get("order") {
                let devs: Vec<String> = o
                    .split(';')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect();
                for dev in &devs {
                    let exists = conf.get(dev).is_some()
                        || conf.pending.contains_key(dev)
                        || set.contains_key(dev);
                    if !exists || delete.contains(dev) {
                        return Err(ApiError::internal(format!(
                            "invalid bootorder: device '{dev}' does not exist'"
                        )));
                    }
                }
                conf.pending.insert(opt.clone(), print_boot_order(&devs));
                if conf.get("bootdisk").is_some() {
                    conf.pending_delete.insert("bootdisk".into(), false);
                }
                order = devs;
            } else {
                conf.pending.insert(opt.clone(), value.clone());
            }
        } else {
            conf.pending.insert(opt.clone(), value.clone());
        }
        conf.pending_delete.remove(opt);
    }
    cleanup_pending(conf);
    if !conf.has_pending() {
        return Ok(());
    }
    if running {
        hotplug_pending(st, node, conf);
    } else {
        apply_pending(st, node, conf);
    }
    Ok(())
}

/// Drop pending values equal to the current ones and deletions of absent keys.
fn cleanup_pending(conf: &mut VmConfig) {
    let main = conf.main.clone();
    conf.pending.retain(|k, v| main.get(k) != Some(v));
    conf.pending_delete.retain(|k, _| main.contains_key(k));
}

/// `vmconfig_apply_pending`: a stopped VM takes every pending change.
pub(super) fn apply_pending(st: &mut State, node: &str, conf: &mut VmConfig) {
    for (opt, force) in std::mem::take(&mut conf.pending_delete) {
        if is_drive_key(&opt) {
            delete_or_detach(st, node, conf, &opt, force);
        } else {
            conf.remove(&opt);
        }
    }
    for (opt, value) in std::mem::take(&mut conf.pending) {
        replace_value(st, node, conf, &opt, value);
    }
}

/// [`apply_pending`] on the stored config of `vmid`.
pub(crate) fn apply_all_pending(st: &mut State, node: &str, vmid: u32) {
    let Some(mut conf) = st.vms.get(&vmid).map(|vm| vm.conf.clone()) else {
        return;
    };
    apply_pending(st, node, &mut conf);
    if let Some(vm) = st.vms.get_mut(&vmid) {
        vm.conf = conf;
    }
}

fn replace_value(st: &mut State, node: &str, conf: &mut VmConfig, opt: &str, value: String) {
    if is_drive_key(opt) {
        let old = conf.get(opt).and_then(Drive::parse);
        let new_file = Drive::parse(&value).map(|d| d.file);
        conf.set(opt, value);
        if let Some(old) = old.filter(|o| Some(&o.file) != new_file.as_ref()) {
            register_unused(st, node, conf, &old);
        }
    } else {
        conf.set(opt, value);
    }
}

/// A net change that keeps model, MAC, queues and MTU is applied live even without hotplug.
fn net_live_update(old: Option<&str>, new: &str) -> bool {
    let (Some(old), Some(new)) = (old.and_then(Net::parse), Net::parse(new)) else {
        return false;
    };
    old.model == new.model
        && old.mac == new.mac
        && old.opts.get("queues") == new.opts.get("queues")
        && old.opts.get("mtu") == new.opts.get("mtu")
}

/// `vmconfig_hotplug_pending`: a running VM takes what can change live.
fn hotplug_pending(st: &mut State, node: &str, conf: &mut VmConfig) {
    let hotplug = Hotplug::parse(conf.get("hotplug"));
    for (opt, force) in conf.pending_delete.clone() {
        if hotplug.applies_live(&opt, None, false) {
            if is_drive_key(&opt) {
                delete_or_detach(st, node, conf, &opt, force);
            } else {
                conf.remove(&opt);
            }
            conf.pending_delete.remove(&opt);
        }
    }
    for (opt, value) in conf.pending.clone() {
        let old = conf.get(&opt).map(str::to_string);
        let cdrom_swap = is_drive_key(&opt)
            && old
                .as_deref()
                .and_then(Drive::parse)
                .is_some_and(|d| d.is_cdrom() && !d.is_cloudinit())
            && Drive::parse(&value).is_some_and(|d| d.is_cdrom() && !d.is_cloudinit());
        let live = hotplug.applies_live(&opt, Some(&value), cdrom_swap)
            || (net_index(&opt).is_some() && net_live_update(old.as_deref(), &value));
        if live {
            conf.pending.remove(&opt);
            replace_value(st, node, conf, &opt, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_sorted_and_unique() {
        assert_eq!(unique_tags("web;db,web prod"), "db;prod;web");
        assert_eq!(unique_tags(""), "");
    }

    #[test]
    fn net_bridge_change_is_live_but_model_change_is_not() {
        let old = "virtio=BC:24:11:00:00:01,bridge=vmbr0";
        assert!(net_live_update(
            Some(old),
            "virtio=BC:24:11:00:00:01,bridge=vmbr1,tag=4"
        ));
        assert!(!net_live_update(
            Some(old),
            "e1000=BC:24:11:00:00:01,bridge=vmbr0"
        ));
        assert!(!net_live_update(None, old));
    }
}
