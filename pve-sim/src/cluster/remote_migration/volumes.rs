//! Which volumes a remote migration copies and where to, as `QemuMigrate::scan_local_volumes`
//! decides for a remote target: every volume of the config, shared storages included, goes
//! to the storage the map names (`map_id`, an unnamed storage to itself); attached disks of a
//! running VM are mirrored live, everything else (unused disks, the cloud-init image, disks
//! of a stopped VM) is copied before. What it refuses, with PVE's texts: a `cdrom` pass-through
//! drive, ISO images in CD-ROM drives (`local cdrom image`), host devices (`local file/device`),
//! volumes of another VM, snapshots (`remote migration with snapshots not supported yet`) and
//! linked clones.

use std::collections::{BTreeMap, BTreeSet};

use super::id_map::IdMap;
use crate::cluster::drive::{Drive, Net, is_drive_key, is_unused_key, net_index, split_volid};
use crate::cluster::state::State;
use crate::cluster::vm::conf_missing;

/// One volume to copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct LocalVolume {
    pub(super) volid: String,
    /// The config key referring to it (`scsi0`, `unused0`, `ide0`).
    pub(super) key: String,
    pub(super) size: u64,
    pub(super) format: String,
    /// The storage it goes to on the target.
    pub(super) target_storage: String,
    /// Mirrored while the VM runs (an attached disk of a running VM).
    pub(super) online: bool,
    /// The options of its drive line (none for `unusedN`).
    pub(super) drive: BTreeMap<String, String>,
    /// Its drive is a CD-ROM (the cloud-init image).
    pub(super) cdrom: bool,
}

/// The outcome of a scan: the volumes, and the lines the migration log gets.
#[derive(Debug, Default)]
pub(super) struct Scan {
    pub(super) volumes: Vec<LocalVolume>,
    pub(super) log: Vec<String>,
}

/// Every volume a config refers to, with its key and whether its drive is a CD-ROM.
fn references(main: &BTreeMap<String, String>) -> Vec<(String, String, Option<Drive>)> {
    let mut out = Vec::new();
    for (k, v) in main {
        if is_drive_key(k) {
            if let Some(d) = Drive::parse(v) {
                out.push((k.clone(), d.file.clone(), Some(d)));
            }
        } else if is_unused_key(k) {
            out.push((k.clone(), v.clone(), None));
        }
    }
    out
}

/// The storages on the target the volumes of VM `vmid` need, and the target bridges of its
/// NICs (what `mtunnel` checks first).
pub(super) fn targets(
    st: &State,
    node: &str,
    vmid: u32,
    storages: &IdMap,
    bridges: &IdMap,
) -> (BTreeSet<String>, BTreeSet<String>) {
    let Some(vm) = st.vm_on(node, vmid) else {
        return Default::default();
    };
    let sids = references(&vm.conf.main)
        .into_iter()
        .filter_map(|(_, volid, _)| split_volid(&volid).map(|(s, _)| storages.map(s).to_string()))
        .collect();
    let nics = vm
        .conf
        .main
        .iter()
        .filter(|(k, _)| net_index(k).is_some())
        .filter_map(|(_, v)| Net::parse(v))
        .filter_map(|n| n.bridge().map(|b| bridges.map(b).to_string()))
        .collect();
    (sids, nics)
}

/// `scan_local_volumes` for VM `vmid` on `node`; `Err` carries the log lines and PVE's error.
pub(super) fn scan(
    st: &State,
    node: &str,
    vmid: u32,
    running: bool,
    storages: &IdMap,
) -> Result<Scan, (Vec<String>, String)> {
    let vm = st
        .vm_on(node, vmid)
        .ok_or_else(|| (Vec::new(), conf_missing(node, vmid)))?;
    let mut scan = Scan::default();
    let mut errors: Vec<(String, String)> = Vec::new();
    let mut other_errors: Vec<String> = Vec::new();
    let mut found: Vec<(String, String)> = Vec::new();
    let has_snapshots = !vm.conf.snapshots.is_empty();
    for (key, volid, drive) in references(&vm.conf.main) {
        let cdrom = drive.as_ref().is_some_and(Drive::is_cdrom);
        let cloudinit = drive.as_ref().is_some_and(Drive::is_cloudinit);
        if cdrom && volid == "cdrom" {
            other_errors.push("can't migrate local cdrom drive".into());
            continue;
        }
        if volid == "none" {
            continue;
        }
        if volid.starts_with('/') {
            errors.push((volid, "local file/device".into()));
            continue;
        }
        let Some((sid, _)) = split_volid(&volid) else {
            continue;
        };
        if let Err(e) = st.storages.check_enabled(sid, node) {
            errors.push((volid.clone(), e));
            continue;
        }
        let Some(vol) = st.storages.find(&volid, node) else {
            errors.push((volid.clone(), format!("volume '{volid}' does not exist")));
            continue;
        };
        if cdrom && !cloudinit {
            errors.push((volid, "local cdrom image".into()));
            continue;
        }
        if vol.vmid != Some(vmid) {
            let owner = vol.vmid.map_or_else(String::new, |o| o.to_string());
            errors.push((volid, format!("owned by other VM (owner = VM {owner})")));
            continue;
        }
        if has_snapshots {
            errors.push((
                volid,
                "remote migration with snapshots not supported yet".into(),
            ));
            continue;
        }
        if st.storages.is_base_and_used(&volid, node) {
            errors.push((volid, "referenced by linked clone(s)".into()));
            continue;
        }
        if let Some(base) = &vol.parent {
            return Err((
                scan.log,
                format!(
                    "Problem found while scanning volumes - can't migrate '{volid}' as it's a clone of '{base}'"
                ),
            ));
        }
        let attached = drive.is_some() && !cloudinit;
        let how = if cloudinit {
            format!("found generated disk '{volid}' (in current VM config)")
        } else if attached {
            format!("found local disk '{volid}' (attached)")
        } else {
            format!("found local disk '{volid}' (unused)")
        };
        found.push((volid.clone(), how));
        scan.volumes.push(LocalVolume {
            volid: volid.clone(),
            key,
            size: vol.size,
            format: vol.format.clone(),
            target_storage: storages.map(sid).to_string(),
            online: running && attached,
            drive: drive.map(|d| d.opts).unwrap_or_default(),
            cdrom,
        });
    }
    found.sort();
    scan.log.extend(found.into_iter().map(|(_, line)| line));
    errors.sort();
    for (volid, why) in &errors {
        scan.log
            .push(format!("can't migrate local disk '{volid}': {why}"));
    }
    scan.log.extend(other_errors.iter().cloned());
    if !errors.is_empty() || !other_errors.is_empty() {
        return Err((
            scan.log,
            "Problem found while scanning volumes - can't migrate VM - check log".into(),
        ));
    }
    scan.volumes.sort_by(|a, b| a.volid.cmp(&b.volid));
    Ok(scan)
}
