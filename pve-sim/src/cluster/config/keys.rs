//! What PVE knows about VM config keys: which exist (`delete: unknown option 'x'`), their JSON
//! type in GET config (ints, 0/1 flags, numbers; `memory` is a string since qemu-server 8), and
//! which changes a running VM takes live (`vmconfig_hotplug_pending`) instead of `[PENDING]`.

use serde_json::Value;

use crate::cluster::drive::{Drive, is_drive_key};

/// Keys of the VM config schema that are not indexed.
const PLAIN_KEYS: &[&str] = &[
    "acpi",
    "affinity",
    "agent",
    "allow-ksm",
    "amd-sev",
    "arch",
    "args",
    "audio0",
    "autostart",
    "balloon",
    "bios",
    "boot",
    "bootdisk",
    "cdrom",
    "cicustom",
    "cipassword",
    "citype",
    "ciupgrade",
    "ciuser",
    "cores",
    "cpu",
    "cpulimit",
    "cpuunits",
    "description",
    "efidisk0",
    "freeze",
    "hookscript",
    "hotplug",
    "hugepages",
    "intel-tdx",
    "ivshmem",
    "keephugepages",
    "keyboard",
    "kvm",
    "localtime",
    "lock",
    "machine",
    "memory",
    "meta",
    "migrate_downtime",
    "migrate_speed",
    "name",
    "nameserver",
    "numa",
    "onboot",
    "ostype",
    "parent",
    "protection",
    "reboot",
    "rng0",
    "runningcpu",
    "runningmachine",
    "running-nets-host-mtu",
    "scsihw",
    "searchdomain",
    "shares",
    "smbios1",
    "smp",
    "snaptime",
    "sockets",
    "spice_enhancements",
    "sshkeys",
    "startdate",
    "startup",
    "tablet",
    "tags",
    "tdf",
    "template",
    "tpmstate0",
    "vcpus",
    "vga",
    "vmgenid",
    "vmstate",
    "vmstatestorage",
    "watchdog",
];

/// Indexed key families and their highest index.
const INDEXED: &[(&str, u32)] = &[
    ("hostpci", 15),
    ("ide", 3),
    ("ipconfig", 31),
    ("net", 31),
    ("numa", 7),
    ("parallel", 2),
    ("sata", 5),
    ("scsi", 30),
    ("serial", 3),
    ("unused", 255),
    ("usb", 29),
    ("virtio", 15),
    ("virtiofs", 9),
];

const BOOL_KEYS: &[&str] = &[
    "acpi",
    "allow-ksm",
    "autostart",
    "ciupgrade",
    "freeze",
    "keephugepages",
    "kvm",
    "localtime",
    "numa",
    "onboot",
    "protection",
    "reboot",
    "tablet",
    "tdf",
    "template",
];
const INT_KEYS: &[&str] = &[
    "balloon",
    "cores",
    "cpuunits",
    "migrate_speed",
    "shares",
    "smp",
    "snaptime",
    "sockets",
    "vcpus",
];
const NUMBER_KEYS: &[&str] = &["cpulimit", "migrate_downtime"];

/// Cloud-init keys: applied to a running VM at once (they only matter for the next image).
const CLOUDINIT_KEYS: &[&str] = &[
    "cicustom",
    "cipassword",
    "citype",
    "ciuser",
    "ciupgrade",
    "nameserver",
    "searchdomain",
    "sshkeys",
];

/// `$fast_plug_option`: changed on a running VM without any device action.
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

fn indexed_family(key: &str) -> Option<(&'static str, u32)> {
    INDEXED.iter().find_map(|(family, max)| {
        let n = key.strip_prefix(family)?;
        if n.is_empty() || (n.len() > 1 && n.starts_with('0')) {
            return None;
        }
        let idx: u32 = n.parse().ok()?;
        (idx <= *max).then_some((*family, idx))
    })
}

/// `PVE::QemuServer::option_exists`: a key of the config schema (`cdrom` included).
pub(crate) fn option_exists(key: &str) -> bool {
    PLAIN_KEYS.contains(&key) || indexed_family(key).is_some()
}

/// The value of `key` typed as GET config returns it.
pub(super) fn typed(key: &str, value: &str) -> Value {
    if BOOL_KEYS.contains(&key) || INT_KEYS.contains(&key) {
        if let Ok(i) = value.parse::<i64>() {
            return Value::from(i);
        }
    } else if NUMBER_KEYS.contains(&key) {
        if let Ok(i) = value.parse::<i64>() {
            return Value::from(i);
        }
        if let Ok(f) = value.parse::<f64>() {
            return Value::from(f);
        }
    }
    Value::from(value)
}

/// The `hotplug` features of a config (`network,disk,usb` by default, `1` = default, `0` = none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Hotplug {
    network: bool,
    disk: bool,
    usb: bool,
    cpu: bool,
    memory: bool,
}

impl Hotplug {
    /// Parse the `hotplug` value (absent = default).
    pub(super) fn parse(value: Option<&str>) -> Self {
        let value = match value {
            None | Some("1") => "network,disk,usb",
            Some(v) => v,
        };
        let has = |f: &str| value.split(',').any(|x| x.trim() == f);
        Self {
            network: has("network"),
            disk: has("disk"),
            usb: has("usb"),
            cpu: has("cpu"),
            memory: has("memory"),
        }
    }

    /// Whether setting or deleting `key` on a running VM takes effect at once (else the change
    /// stays in `[PENDING]` until the next start). `new` is the new value (`None` = delete);
    /// `is_cdrom_swap` marks a media change of an existing CD-ROM drive.
    pub(super) fn applies_live(&self, key: &str, new: Option<&str>, is_cdrom_swap: bool) -> bool {
        if FAST_PLUG.contains(&key) || CLOUDINIT_KEYS.contains(&key) || key.starts_with("ipconfig")
        {
            return true;
        }
        if key == "cpulimit" || key == "cpuunits" || key == "balloon" {
            return true;
        }
        if key == "tablet" || key.starts_with("usb") {
            return self.usb;
        }
        if key == "vcpus" {
            return self.cpu;
        }
        if key == "memory" {
            return self.memory;
        }
        if net_family(key) {
            return self.network;
        }
        if is_drive_key(key) {
            if key == "efidisk0" || key == "tpmstate0" {
                return false;
            }
            if is_cdrom_swap {
                return true;
            }
            let cloudinit = new.and_then(Drive::parse).is_some_and(|d| d.is_cloudinit());
            return self.disk && !cloudinit && !key.starts_with("ide") && !key.starts_with("sata");
        }
        false
    }
}

fn net_family(key: &str) -> bool {
    indexed_family(key).is_some_and(|(f, _)| f == "net")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_exists_knows_schema_keys() {
        for key in [
            "cores",
            "net31",
            "scsi0",
            "unused255",
            "description",
            "cdrom",
            "ipconfig0",
        ] {
            assert!(option_exists(key), "{key}");
        }
        for key in ["x", "net32", "scsi31", "digest", "net01"] {
            assert!(!option_exists(key), "{key}");
        }
    }

    #[test]
    fn typed_values_follow_the_schema() {
        assert_eq!(typed("cores", "2"), Value::from(2));
        assert_eq!(typed("onboot", "1"), Value::from(1));
        assert_eq!(typed("memory", "2048"), Value::from("2048"));
        assert_eq!(typed("cpulimit", "0.5"), Value::from(0.5));
        assert_eq!(typed("name", "web1"), Value::from("web1"));
    }

    #[test]
    fn default_hotplug_takes_nets_and_scsi_disks_but_not_cores() {
        let h = Hotplug::parse(None);
        assert!(h.applies_live("net0", Some("virtio,bridge=vmbr0"), false));
        assert!(h.applies_live("scsi1", Some("local-lvm:vm-1-disk-1"), false));
        assert!(!h.applies_live("ide1", Some("local-lvm:vm-1-disk-1"), false));
        assert!(h.applies_live("ide2", Some("none,media=cdrom"), true));
        assert!(!h.applies_live("cores", Some("4"), false));
        assert!(!h.applies_live("memory", Some("4096"), false));
        assert!(!h.applies_live("agent", Some("1"), false));
        assert!(h.applies_live("name", Some("x"), false));
        assert!(h.applies_live("ciuser", Some("x"), false));
        let none = Hotplug::parse(Some("0"));
        assert!(!none.applies_live("net0", None, false));
        assert!(Hotplug::parse(Some("memory,cpu")).applies_live("memory", Some("1"), false));
    }
}
