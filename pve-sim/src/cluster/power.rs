//! What starting and stopping does to a VM, shared by start, reboot, resume from disk, create
//! with `start=1` and rollback: `vm_start`'s checks (template, lock, already running), applying
//! `[PENDING]`, the cloud-init snippet, volume and bridge checks, and the process state.

use std::time::Instant;

use super::config::update::apply_all_pending;
use super::drive::{Net, parse_kv};
use super::state::State;
use super::tasks::task::TaskLog;
use super::vm::{check_lock, conf_missing};

/// Give the VM a QEMU process started now.
pub(super) fn mark_running(st: &mut State, node: &str, vmid: u32) {
    let pid = st.alloc_pid(node);
    if let Some(vm) = st.vms.get_mut(&vmid) {
        let now = Instant::now();
        vm.run.running = true;
        vm.run.paused = false;
        vm.run.started = Some(now);
        vm.run.guest_booted = Some(now);
        vm.run.pid = pid;
    }
}

/// The QEMU process is gone.
pub(super) fn mark_stopped(st: &mut State, vmid: u32) {
    if let Some(vm) = st.vms.get_mut(&vmid) {
        vm.run = Default::default();
    }
}

/// `vm_start` up to launching QEMU: checks, pending changes applied, resume state consumed,
/// cloud-init snippets and bridges checked. `skiplock` bypasses the config lock.
pub(super) fn prepare_start(
    st: &mut State,
    node: &str,
    vmid: u32,
    skiplock: bool,
    log: &mut TaskLog,
) -> Result<(), String> {
    let vm = st
        .vm_on(node, vmid)
        .ok_or_else(|| conf_missing(node, vmid))?;
    if vm.conf.is_template() {
        return Err("you can't start a vm if it's a template".into());
    }
    let suspended = vm.conf.lock() == Some("suspended");
    if !skiplock && !suspended {
        check_lock(&vm.conf)?;
    }
    if vm.run.running {
        return Err(format!("VM {vmid} already running"));
    }
    let resume = suspended || vm.conf.get("vmstate").is_some();
    apply_all_pending(st, node, vmid);
    if resume {
        resume_from_state(st, node, vmid, log);
    }
    let vm = st
        .vm_on(node, vmid)
        .ok_or_else(|| conf_missing(node, vmid))?;
    if let Some(cicustom) = vm.conf.get("cicustom") {
        for volid in parse_kv(cicustom, "user").values() {
            if st.storages.find(volid, node).is_none() {
                return Err(format!("volume '{volid}' does not exist"));
            }
        }
    }
    if super::vm::drives(&vm.conf.main)
        .iter()
        .any(|(_, d)| d.is_cloudinit())
    {
        log.line("generating cloud-init ISO");
    }
    activate_volumes(st, node, vmid)?;
    let bridges = st.node(node).map(|n| n.bridges.clone()).unwrap_or_default();
    for (key, value) in &vm.conf.main {
        if super::drive::net_index(key).is_none() {
            continue;
        }
        if let Some(bridge) = Net::parse(value).as_ref().and_then(Net::bridge)
            && !bridges.iter().any(|b| b == bridge)
        {
            return Err(format!("bridge '{bridge}' does not exist"));
        }
    }
    Ok(())
}

/// Volume group of `lvmthin` storages (PVE's default `local-lvm` uses `pve`).
const THIN_VG: &str = "pve";

/// `activate_volumes` of the VM's disks on `node`: the storage must be available there
/// (`storage_check_enabled`) and the volume must exist in the pool `node` sees, which fails for
/// a disk on storage local to another node (a config moved away from a fenced node).
/// CD-ROMs are not simulated as files and a missing cloud-init drive is regenerated, so both
/// are skipped.
fn activate_volumes(st: &State, node: &str, vmid: u32) -> Result<(), String> {
    let Some(vm) = st.vm_on(node, vmid) else {
        return Err(conf_missing(node, vmid));
    };
    for (_, drive) in super::vm::drives(&vm.conf.main) {
        if drive.is_cdrom() || drive.is_cloudinit() {
            continue;
        }
        let Some((storage, volname)) = drive.volid() else {
            continue;
        };
        let scfg = st.storages.check_enabled(storage, node)?;
        if st.storages.find(&drive.file, node).is_none() {
            // LvmThinPlugin's `$activate_lv`; every other plugin has Plugin.pm's text.
            return Err(if scfg.kind == "lvmthin" {
                format!("no such logical volume {THIN_VG}/{volname}")
            } else {
                format!("volume '{}' does not exist", drive.file)
            });
        }
    }
    Ok(())
}

/// Starting from a suspended-to-disk state drops the state volume and the `suspended` lock.
fn resume_from_state(st: &mut State, node: &str, vmid: u32, log: &mut TaskLog) {
    let Some(vm) = st.vms.get_mut(&vmid) else {
        return;
    };
    let state_vol = vm.conf.remove("vmstate");
    for key in ["runningmachine", "runningcpu", "running-nets-host-mtu"] {
        vm.conf.remove(key);
    }
    if vm.conf.lock() == Some("suspended") {
        vm.conf.remove("lock");
    }
    if let Some(volid) = state_vol {
        log.line(format!("resuming VM from state '{volid}'"));
        let _ = st.storages.free(&volid, node);
    }
}
