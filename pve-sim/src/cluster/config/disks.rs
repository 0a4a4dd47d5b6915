//! Drive parameters of create and config updates: the early checks (`check_drive_param`,
//! `check_storage_access`), the allocation of new volumes (`create_disks`: `STORAGE:SIZE`,
//! `STORAGE:0,import-from=`, `STORAGE:cloudinit`), and what happens to a volume when its
//! drive is replaced or removed (`unusedN`, freed).

use std::collections::BTreeMap;

use super::text::VmConfig;
use crate::ApiError;
use crate::cluster::clock::now_unix;
use crate::cluster::drive::{
    Drive, Net, gib_to_bytes, is_drive_key, is_unused_key, net_index, parse_new_disk, split_volid,
};
use crate::cluster::ids::random_mac;
use crate::cluster::state::State;
use crate::cluster::tasks::task::TaskLog;

/// Size of a cloud-init drive (`CLOUDINIT_DISK_SIZE`).
const CLOUDINIT_SIZE: u64 = 4 << 20;
/// EFI vars and TPM state volumes.
const SMALL_DISK_SIZE: u64 = 4 << 20;

/// Content type of a volume name (`iso/x.iso` → `iso`, `vm-100-disk-0` → `images`).
fn vtype(volname: &str) -> &str {
    match volname.split_once('/') {
        Some(("iso", _)) => "iso",
        Some(("snippets", _)) => "snippets",
        Some(("template", _)) => "vztmpl",
        Some(("dump", _)) => "backup",
        Some(("import", _)) => "import",
        _ => "images",
    }
}

fn is_cloudinit_request(file: &str) -> bool {
    file == "cloudinit" || split_volid(file).is_some_and(|(_, v)| v == "cloudinit")
}

/// Early checks of every drive parameter; normalizes the values (`print_drive`).
pub(crate) fn precheck(
    st: &State,
    params: &mut BTreeMap<String, String>,
    default_storage: Option<&str>,
) -> Result<(), ApiError> {
    let keys: Vec<String> = params.keys().filter(|k| is_drive_key(k)).cloned().collect();
    for key in keys {
        let value = params.get(&key).cloned().unwrap_or_default();
        let drive = Drive::parse(&value)
            .ok_or_else(|| ApiError::param(&key, "unable to parse drive options"))?;
        let new_disk = parse_new_disk(&drive.file);
        if drive.opts.contains_key("import-from") && !new_disk.is_some_and(|(_, s)| s == 0.0) {
            return Err(ApiError::param(
                &key,
                "'import-from' requires special syntax - use <storage ID>:0,import-from=<source>",
            ));
        }
        if let Some((_, volname)) = drive.volid()
            && new_disk.is_none()
            && volname != "cloudinit"
            && vtype(volname) == "iso"
            && !drive.is_cdrom()
        {
            return Err(ApiError::param(
                &key,
                "explicit 'media=cdrom' is required for iso images",
            ));
        }
        if drive.file == "none" || drive.file == "cdrom" || is_cloudinit_request(&drive.file) {
            // nothing to check
        } else if let (false, Some((store, _))) = (drive.is_cdrom(), new_disk) {
            let store = store.or(default_storage).ok_or_else(|| {
                ApiError::internal("no storage ID specified (and no default storage)")
            })?;
            let scfg = st.storages.config(store).map_err(ApiError::internal)?;
            if !scfg.content.contains("images") {
                return Err(ApiError::param(
                    "storage",
                    format!("storage '{store}' does not support vm images"),
                ));
            }
        } else if let Some((store, volname)) = drive.volid() {
            st.storages.config(store).map_err(ApiError::internal)?;
            let t = vtype(volname);
            if t != "images" && t != "iso" {
                return Err(ApiError::param(
                    &key,
                    "content type needs to be 'images' or 'iso'",
                ));
            }
        }
        if let Some(src) = drive.opts.get("import-from")
            && let Some((store, volname)) = split_volid(src)
        {
            st.storages.config(store).map_err(ApiError::internal)?;
            let t = vtype(volname);
            if t != "images" && t != "import" {
                return Err(ApiError::param(
                    &key,
                    format!("{src} has wrong type '{t}' - needs to be 'images' or 'import'"),
                ));
            }
        }
        params.insert(key, drive.print());
    }
    Ok(())
}

/// Give every network device without a MAC a fresh one, printed canonically.
pub(crate) fn add_random_macs(
    st: &mut State,
    params: &mut BTreeMap<String, String>,
) -> Result<(), ApiError> {
    let keys: Vec<String> = params
        .keys()
        .filter(|k| net_index(k).is_some())
        .cloned()
        .collect();
    for key in keys {
        let value = params.get(&key).cloned().unwrap_or_default();
        let mut net = Net::parse(&value)
            .ok_or_else(|| ApiError::param(&key, "unable to parse network options"))?;
        if net.mac.is_none() {
            net.mac = Some(random_mac(&mut st.rng));
        }
        params.insert(key, net.print());
    }
    Ok(())
}

/// Where a cloud-init drive is attached in `section`, other than `key`.
fn cloudinit_at(section: &BTreeMap<String, String>, key: &str) -> Option<String> {
    section
        .iter()
        .filter(|(k, _)| k.as_str() != key && is_drive_key(k))
        .find(|(_, v)| Drive::parse(v).is_some_and(|d| d.is_cloudinit()))
        .map(|(k, _)| k.clone())
}

/// `create_disks` for one drive: allocate what the value asks for and return the value to store.
/// Allocated volids are pushed to `created` so a caller can free them on a later failure.
#[allow(clippy::too_many_arguments)]
pub(crate) fn create_disk(
    st: &mut State,
    node: &str,
    vmid: u32,
    conf: &VmConfig,
    key: &str,
    value: &str,
    default_storage: Option<&str>,
    created: &mut Vec<String>,
    log: &mut TaskLog,
) -> Result<String, String> {
    let mut drive =
        Drive::parse(value).ok_or_else(|| format!("unable to parse drive options for '{key}'"))?;
    let now = now_unix();
    let template = conf.is_template();
    if drive.file == "none" || drive.file == "cdrom" || drive.file.starts_with('/') {
        drive.opts.remove("size");
        return Ok(drive.print());
    }
    if is_cloudinit_request(&drive.file) {
        let store = split_volid(&drive.file).map(|(s, _)| s).or(default_storage);
        let store = store
            .ok_or("no storage ID specified (and no default storage)")?
            .to_string();
        if let Some(at) = cloudinit_at(&conf.main, key).or_else(|| cloudinit_at(&conf.pending, key))
        {
            return Err(format!(
                "{key} - cloud-init drive is already attached at '{at}'"
            ));
        }
        let scfg = st.storages.config(&store)?.clone();
        let fmt = drive.opts.remove("format").unwrap_or_else(|| {
            if scfg.path_based() {
                "qcow2".into()
            } else {
                "raw".into()
            }
        });
        let name = format!("vm-{vmid}-cloudinit");
        let volid = st.storages.alloc(
            &store,
            node,
            vmid,
            Some(&name),
            Some(&fmt),
            CLOUDINIT_SIZE,
            now,
        )?;
        lvm_created(log, &scfg.kind, &volid);
        created.push(volid.clone());
        drive.file = volid;
        drive.opts.insert("media".into(), "cdrom".into());
        let printed = drive.print();
        log.line(format!("{key}: successfully created disk '{printed}'"));
        return Ok(printed);
    }
    if let Some((store, gib)) = parse_new_disk(&drive.file) {
        let store = store
            .or(default_storage)
            .ok_or("no storage ID specified (and no default storage)")?
            .to_string();
        let mut size = gib_to_bytes(gib);
        if let Some(src) = drive.opts.remove("import-from") {
            let source = st.storages.find(&src, node).map(|v| v.size);
            size = source.ok_or_else(|| {
                format!("cannot import from '{src}' - could not get size of {src}")
            })?;
        }
        if key == "efidisk0" || key == "tpmstate0" {
            size = SMALL_DISK_SIZE;
        }
        let fmt = drive.opts.remove("format");
        let kind = st.storages.config(&store)?.kind.clone();
        let mut volid = st
            .storages
            .alloc(&store, node, vmid, None, fmt.as_deref(), size, now)?;
        lvm_created(log, &kind, &volid);
        if template {
            volid = st.storages.create_base(&volid, node)?;
        }
        created.push(volid.clone());
        drive.file = volid;
        drive.set_size(size);
        let printed = drive.print();
        log.line(format!("{key}: successfully created disk '{printed}'"));
        return Ok(printed);
    }
    if let Some((_, volname)) = drive.volid() {
        let t = vtype(volname);
        if t != "images" && t != "iso" {
            return Err(format!(
                "cannot use volume {} - content type needs to be 'images' or 'iso'",
                drive.file
            ));
        }
        if drive.is_cloudinit()
            && let Some(at) =
                cloudinit_at(&conf.main, key).or_else(|| cloudinit_at(&conf.pending, key))
        {
            return Err(format!(
                "{key} - cloud-init drive is already attached at '{at}'"
            ));
        }
    }
    let size = st.storages.find(&drive.file, node).map(|v| v.size);
    let size = size.ok_or_else(|| format!("volume {} does not exist", drive.file))?;
    drive.set_size(size);
    Ok(drive.print())
}

fn lvm_created(log: &mut TaskLog, kind: &str, volid: &str) {
    if kind == "lvmthin" || kind == "lvm" {
        let name = split_volid(volid).map_or(volid, |(_, n)| n);
        log.line(format!("  Logical volume \"{name}\" created."));
    }
}

/// Whether `volid` is used by a drive or `unusedN` of `section`.
fn referenced(section: &BTreeMap<String, String>, volid: &str) -> bool {
    section.iter().any(|(k, v)| {
        (is_drive_key(k) && Drive::parse(v).is_some_and(|d| d.file == volid))
            || (is_unused_key(k) && v == volid)
    })
}

/// Whether any snapshot still references `volid`.
fn in_snapshots(conf: &VmConfig, volid: &str) -> bool {
    conf.snapshots.values().any(|s| referenced(s, volid))
}

/// `add_unused_volume`: record `volid` as the lowest free `unusedN`.
pub(super) fn add_unused(conf: &mut VmConfig, volid: &str) {
    if conf
        .main
        .iter()
        .any(|(k, v)| is_unused_key(k) && v == volid)
    {
        return;
    }
    let n = (0..)
        .find(|n| !conf.main.contains_key(&format!("unused{n}")))
        .unwrap_or(0);
    conf.set(&format!("unused{n}"), volid);
}

/// `vmconfig_register_unused_drive`: a replaced drive's volume becomes `unusedN` (cloud-init
/// drives are freed, CD-ROMs forgotten).
pub(super) fn register_unused(st: &mut State, node: &str, conf: &mut VmConfig, drive: &Drive) {
    if drive.is_cloudinit() {
        if !referenced(&conf.main, &drive.file) {
            let _ = st.storages.free(&drive.file, node);
        }
    } else if !drive.is_cdrom() && drive.volid().is_some() && !referenced(&conf.main, &drive.file) {
        add_unused(conf, &drive.file);
    }
}

/// `vmconfig_delete_or_detach_drive`: remove drive `key`; its volume becomes `unusedN`, or is
/// freed with `force` (unless a snapshot still uses it).
pub(super) fn delete_or_detach(
    st: &mut State,
    node: &str,
    conf: &mut VmConfig,
    key: &str,
    force: bool,
) {
    let Some(drive) = conf.remove(key).as_deref().and_then(Drive::parse) else {
        return;
    };
    if force && drive.volid().is_some() && !drive.is_cdrom() {
        if !in_snapshots(conf, &drive.file) && !referenced(&conf.main, &drive.file) {
            let _ = st.storages.free(&drive.file, node);
        }
    } else {
        register_unused(st, node, conf, &drive);
    }
}

/// Free `unusedN`'s volume and drop the key (deleting an unused disk is immediate).
pub(super) fn free_unused(
    st: &mut State,
    node: &str,
    conf: &mut VmConfig,
    key: &str,
) -> Result<(), String> {
    let Some(volid) = conf.get(key).map(str::to_string) else {
        return Ok(());
    };
    if !in_snapshots(conf, &volid) {
        st.storages.free(&volid, node)?;
    }
    conf.remove(key);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vtypes_from_volume_names() {
        assert_eq!(vtype("iso/debian.iso"), "iso");
        assert_eq!(vtype("vm-100-disk-0"), "images");
        assert_eq!(vtype("100/vm-100-disk-0.qcow2"), "images");
        assert_eq!(vtype("snippets/u.yaml"), "snippets");
        assert!(is_cloudinit_request("local-lvm:cloudinit"));
        assert!(!is_cloudinit_request("local-lvm:vm-1-cloudinit"));
    }

    #[test]
    fn unused_slots_fill_from_zero() {
        let mut c = VmConfig::default();
        add_unused(&mut c, "local-lvm:vm-1-disk-0");
        add_unused(&mut c, "local-lvm:vm-1-disk-1");
        add_unused(&mut c, "local-lvm:vm-1-disk-0");
        assert_eq!(c.get("unused0"), Some("local-lvm:vm-1-disk-0"));
        assert_eq!(c.get("unused1"), Some("local-lvm:vm-1-disk-1"));
        assert_eq!(c.get("unused2"), None);
    }
}
