//! Which config changes a running VM takes at once, after qemu-server's
//! `vmconfig_hotplug_pending`: the rest stays in `[PENDING]` until the VM is restarted. Used to
//! predict a plan's effect; what PVE actually left pending is read back after the update.

/// Keys PVE changes on a running VM without touching the guest (`$fast_plug_option`).
const FAST_PLUG: &[&str] = &[
    "description",
    "hookscript",
    "lock",
    "migrate_downtime",
    "migrate_speed",
    "name",
    "onboot",
    "protection",
    "shares",
    "startup",
    "tags",
    "vmstatestorage",
];

/// Cloud-init keys: written at once, they take effect when the cloud-init image is rebuilt.
const CLOUD_INIT: &[&str] = &[
    "cicustom",
    "cipassword",
    "citype",
    "ciupgrade",
    "ciuser",
    "nameserver",
    "searchdomain",
    "sshkeys",
];

/// Keys the QEMU monitor changes live whatever `hotplug` says.
const ALWAYS_LIVE: &[&str] = &["balloon", "cpulimit", "cpuunits"];

fn indexed(key: &str, family: &str) -> bool {
    key.strip_prefix(family)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether a running VM with `hotplug` (the config value; absent = PVE's default
/// `network,disk,usb`) takes a change of `key` at once.
pub fn applies_live(key: &str, hotplug: Option<&str>) -> bool {
    let features = match hotplug {
        None | Some("1") => "network,disk,usb",
        Some("0") => "",
        Some(v) => v,
    };
    let has = |f: &str| features.split(',').any(|x| x.trim() == f);
    if FAST_PLUG.contains(&key)
        || CLOUD_INIT.contains(&key)
        || ALWAYS_LIVE.contains(&key)
        || indexed(key, "ipconfig")
    {
        return true;
    }
    if indexed(key, "net") {
        return has("network");
    }
    if indexed(key, "scsi") || indexed(key, "virtio") {
        return has("disk");
    }
    if key == "tablet" || indexed(key, "usb") {
        return has("usb");
    }
    match key {
        "memory" => has("memory"),
        "vcpus" => has("cpu"),
        // cores, sockets, cpu, machine, bios, scsihw, ostype, agent, efidisk0, ide/sata
        // drives (a new cloud-init drive included) and the rest need a restart.
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_hotplug_takes_nics_disks_and_metadata_live() {
        for key in [
            "name",
            "tags",
            "description",
            "onboot",
            "protection",
            "ciuser",
            "sshkeys",
            "ipconfig0",
            "nameserver",
            "cicustom",
            "balloon",
            "net0",
            "net7",
            "scsi1",
            "virtio0",
        ] {
            assert!(applies_live(key, None), "{key} should be live");
        }
        for key in [
            "cores", "sockets", "memory", "cpu", "machine", "bios", "scsihw", "ostype", "agent",
            "efidisk0", "ide2", "sata0", "vcpus",
        ] {
            assert!(!applies_live(key, None), "{key} should need a restart");
        }
    }

    #[test]
    fn hotplug_setting_changes_the_answer() {
        assert!(applies_live("memory", Some("network,disk,memory")));
        assert!(applies_live("vcpus", Some("cpu")));
        assert!(!applies_live("net0", Some("0")));
        assert!(!applies_live("scsi0", Some("network")));
        assert!(applies_live("net0", Some("1")));
        assert!(applies_live("name", Some("0")));
    }
}
