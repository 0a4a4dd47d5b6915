//! The VM config keys the schema accepts on create and update (`POST /nodes/{node}/qemu`,
//! `PUT|POST .../config`), with the index ranges of the indexed ones, and the closed value sets
//! of the typed settings.

use crate::error::PveError;
use crate::props::kv::invalid;
use crate::props::str_enum::str_enum;

/// Plain (not indexed) config keys of the schema.
pub const CONFIG_KEYS: &[&str] = &[
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
    "migrate_downtime",
    "migrate_speed",
    "name",
    "nameserver",
    "numa",
    "onboot",
    "ostype",
    "protection",
    "reboot",
    "rng0",
    "scsihw",
    "searchdomain",
    "shares",
    "smbios1",
    "smp",
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
    "vmstatestorage",
    "watchdog",
];

/// Indexed config keys (`net[n]` in the schema) and the largest index qemu-server accepts.
pub const INDEXED_CONFIG_KEYS: &[(&str, u32)] = &[
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
    ("usb", 13),
    ("virtio", 15),
    ("virtiofs", 9),
];

/// Whether `key` is a config key of the schema (`name`, `net0`, `scsi30`, `unused7`).
pub fn is_config_key(key: &str) -> bool {
    if CONFIG_KEYS.contains(&key) {
        return true;
    }
    let Some(pos) = key.find(|c: char| c.is_ascii_digit()) else {
        return false;
    };
    let (prefix, index) = key.split_at(pos);
    let canonical = index == "0" || !index.starts_with('0');
    INDEXED_CONFIG_KEYS
        .iter()
        .any(|(p, max)| *p == prefix && canonical && index.parse::<u32>().is_ok_and(|n| n <= *max))
}

/// `Ok` when `key` is a config key; the error names `field` and lists the rule.
pub fn check_config_key(field: &str, key: &str) -> Result<(), PveError> {
    if is_config_key(key) {
        return Ok(());
    }
    Err(invalid(
        field,
        format!(
            "'{key}' is not a VM config key of the schema (e.g. name, memory, net0-31, scsi0-30, virtio0-15, sata0-5, ide0-3, ipconfig0-31, unused0-255)"
        ),
    ))
}

str_enum! {
    /// Firmware.
    pub enum Bios: "bios" {
        SeaBios = "seabios",
        Ovmf = "ovmf",
    }
}

str_enum! {
    /// SCSI controller model.
    pub enum ScsiHw: "scsihw" {
        Lsi = "lsi",
        Lsi53c810 = "lsi53c810",
        VirtioScsiPci = "virtio-scsi-pci",
        VirtioScsiSingle = "virtio-scsi-single",
        Megasas = "megasas",
        Pvscsi = "pvscsi",
    }
}

str_enum! {
    /// Guest operating system (enables OS-specific tweaks).
    pub enum OsType: "ostype" {
        Other = "other",
        Wxp = "wxp",
        W2k = "w2k",
        W2k3 = "w2k3",
        W2k8 = "w2k8",
        Wvista = "wvista",
        Win7 = "win7",
        Win8 = "win8",
        Win10 = "win10",
        Win11 = "win11",
        L24 = "l24",
        L26 = "l26",
        Solaris = "solaris",
    }
}

str_enum! {
    /// A hotplug feature.
    pub enum HotplugFeature: "hotplug" {
        Network = "network",
        Disk = "disk",
        Cpu = "cpu",
        Memory = "memory",
        Usb = "usb",
        Cloudinit = "cloudinit",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_and_indexed_keys_follow_the_schema_ranges() {
        for ok in [
            "name",
            "memory",
            "net0",
            "net31",
            "scsi30",
            "virtio15",
            "sata5",
            "ide3",
            "ipconfig31",
            "unused255",
            "allow-ksm",
        ] {
            assert!(is_config_key(ok), "{ok}");
        }
        for bad in [
            "net32", "scsi31", "virtio16", "sata6", "ide4", "net01", "net", "digest", "delete",
            "node", "vmid", "foo0", "efidisk1",
        ] {
            assert!(!is_config_key(bad), "{bad}");
        }
        let e = check_config_key("delete", "net32").unwrap_err();
        assert!(
            matches!(e, PveError::Invalid { ref field, ref reason } if field == "delete" && reason.contains("net32"))
        );
    }

    #[test]
    fn config_keys_match_the_schema() {
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../../pve-sim/schema/endpoints-9.1.json"))
                .unwrap();
        let put = schema
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["path"] == "/nodes/{node}/qemu/{vmid}/config")
            .unwrap();
        let props = put["info"]["PUT"]["parameters"]["properties"]
            .as_object()
            .unwrap();
        let control = [
            "node", "vmid", "delete", "revert", "digest", "skiplock", "force",
        ];
        let mut from_schema: Vec<String> = props
            .keys()
            .filter(|k| !control.contains(&k.as_str()))
            .cloned()
            .collect();
        from_schema.sort();
        let mut ours: Vec<String> = CONFIG_KEYS.iter().map(|k| k.to_string()).collect();
        ours.extend(INDEXED_CONFIG_KEYS.iter().map(|(p, _)| format!("{p}[n]")));
        ours.sort();
        assert_eq!(ours, from_schema);
        let enum_of = |key: &str| -> Vec<String> {
            props[key]["enum"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect()
        };
        let names = |all: Vec<&str>| all.into_iter().map(str::to_string).collect::<Vec<_>>();
        assert_eq!(
            names(Bios::ALL.iter().map(|v| v.as_str()).collect()),
            enum_of("bios")
        );
        assert_eq!(
            names(ScsiHw::ALL.iter().map(|v| v.as_str()).collect()),
            enum_of("scsihw")
        );
        assert_eq!(
            names(OsType::ALL.iter().map(|v| v.as_str()).collect()),
            enum_of("ostype")
        );
    }
}
