//! What a caller other than `root@pam` needs to write a config, as qemu-server's
//! `update_vm_api` checks it (`$check_vm_modify_config_perm`, `check_bridge_access`,
//! `$check_storage_access` for volumes that exist): the `VM.Config.*` privilege of each key's
//! group on `/vms/<vmid>`, `SDN.Use` on `/sdn/zones/localnetwork/<bridge>` (or `/<bridge>/<tag>`
//! for a tagged NIC; trunks are not checked) for each NIC, and on the storage of a volume the
//! VM does not own `Datastore.Allocate` (an ISO image: `Datastore.AllocateSpace` or
//! `Datastore.Audit`). The tunnel's `config` command of a remote migration runs these checks with the
//! privileges of the token that opened the tunnel.

use crate::ApiError;
use crate::access::Grants;
use crate::cluster::drive::{Drive, Net, is_drive_key, is_unused_key, net_index, split_volid};

const CPU: &[&str] = &[
    "cores",
    "cpu",
    "runningcpu",
    "cpulimit",
    "cpuunits",
    "numa",
    "smp",
    "sockets",
    "vcpus",
];
const MEMORY: &[&str] = &["memory", "balloon", "shares", "allow-ksm"];
const HWTYPE: &[&str] = &[
    "acpi",
    "hotplug",
    "kvm",
    "machine",
    "runningmachine",
    "scsihw",
    "smbios1",
    "tablet",
    "vga",
    "watchdog",
    "audio0",
    "rng0",
];
const GENERAL: &[&str] = &[
    "agent",
    "autostart",
    "bios",
    "description",
    "keyboard",
    "localtime",
    "migrate_downtime",
    "migrate_speed",
    "name",
    "onboot",
    "ostype",
    "protection",
    "reboot",
    "startdate",
    "startup",
    "tdf",
    "template",
];
const DISK: &[&str] = &["boot", "bootdisk", "vmstatestorage"];
const CLOUDINIT: &[&str] = &[
    "cicustom",
    "cipassword",
    "citype",
    "ciuser",
    "ciupgrade",
    "nameserver",
    "searchdomain",
    "sshkeys",
];

/// Whether `key` is `<prefix><digits>`.
fn indexed(key: &str, prefix: &str) -> bool {
    key.strip_prefix(prefix)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// `$check_vm_modify_config_perm` for one key.
fn check_key(grants: &Grants, vmpath: &str, key: &str) -> Result<(), ApiError> {
    let skipped = is_drive_key(key)
        || key == "cdrom"
        || key == "tags"
        || ["unused", "serial", "usb", "hostpci", "virtiofs"]
            .iter()
            .any(|p| indexed(key, p));
    if skipped {
        return Ok(());
    }
    if CPU.contains(&key) || indexed(key, "numa") {
        grants.check(vmpath, &["VM.Config.CPU"])
    } else if MEMORY.contains(&key) {
        grants.check(vmpath, &["VM.Config.Memory"])
    } else if HWTYPE.contains(&key) {
        grants.check(vmpath, &["VM.Config.HWType"])
    } else if GENERAL.contains(&key) {
        grants.check(vmpath, &["VM.Config.Options"])?;
        if key == "startup" {
            grants.check("/", &["Sys.Modify"])?;
        }
        Ok(())
    } else if key == "freeze" {
        grants.check(vmpath, &["VM.PowerMgmt"])
    } else if DISK.contains(&key) {
        grants.check(vmpath, &["VM.Config.Disk"])
    } else if indexed(key, "net") || key == "running-nets-host-mtu" {
        grants.check(vmpath, &["VM.Config.Network"])
    } else if CLOUDINIT.contains(&key) || indexed(key, "ipconfig") {
        grants.check_any(vmpath, &["VM.Config.Cloudinit", "VM.Config.Network"])
    } else if key == "vmstate" {
        grants.check(vmpath, &["VM.Config.Disk", "VM.PowerMgmt"])
    } else {
        Err(ApiError::internal(format!(
            "only root can set '{key}' config"
        )))
    }
}

/// The owner VMID in a volume name (`vm-100-disk-0`, `100/vm-100-disk-0.qcow2`).
fn owner(name: &str) -> Option<u32> {
    let last = name.rsplit('/').next().unwrap_or(name);
    let rest = last
        .strip_prefix("vm-")
        .or_else(|| last.strip_prefix("base-"))?;
    rest.split('-').next()?.parse().ok()
}

/// Every check `update_vm_api` makes for writing `keys` (with their values) into VM `vmid`'s
/// config, in key order.
pub(crate) fn check_config_write<'a>(
    grants: &Grants,
    vmid: u32,
    keys: impl Iterator<Item = (&'a String, &'a String)>,
) -> Result<(), ApiError> {
    if grants.authuser() == "root@pam" {
        return Ok(());
    }
    let vmpath = format!("/vms/{vmid}");
    let entries: Vec<(&String, &String)> = keys.collect();
    for (key, _) in &entries {
        check_key(grants, &vmpath, key)?;
    }
    for (key, value) in &entries {
        let volid = if is_drive_key(key) {
            Drive::parse(value).map(|d| d.file)
        } else if is_unused_key(key) {
            Some(value.to_string())
        } else {
            None
        };
        let Some((storage, name)) = volid.as_deref().and_then(split_volid) else {
            continue;
        };
        let path = format!("/storage/{storage}");
        if name.starts_with("iso/") {
            grants.check_any(&path, &["Datastore.AllocateSpace", "Datastore.Audit"])?;
        } else if owner(name) != Some(vmid) {
            grants.check(&path, &["Datastore.Allocate"])?;
        }
    }
    for (key, value) in &entries {
        let Some(net) = net_index(key).and_then(|_| Net::parse(value)) else {
            continue;
        };
        let Some(bridge) = net.bridge() else {
            continue;
        };
        let zone = format!("/sdn/zones/localnetwork/{bridge}");
        match net.opts.get("tag") {
            Some(tag) => grants.check(&format!("{zone}/{tag}"), &["SDN.Use"])?,
            None => grants.check(&zone, &["SDN.Use"])?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volume_owners_are_read_from_their_names() {
        assert_eq!(owner("vm-100-disk-0"), Some(100));
        assert_eq!(owner("100/vm-100-disk-1.qcow2"), Some(100));
        assert_eq!(owner("base-9000-disk-0/vm-101-disk-0"), Some(101));
        assert_eq!(owner("iso/debian.iso"), None);
    }
}
