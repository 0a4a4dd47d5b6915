//! A VM: its config, the node holding the config, and the QEMU process state. Also the checks
//! and texts every VM operation shares (`VM is locked (x)`, missing config files).

use std::time::Instant;

use super::config::text::VmConfig;
use super::drive::{Drive, is_drive_key, parse_kv};

/// The simulated QEMU process.
#[derive(Debug, Clone, Default)]
pub(super) struct RunState {
    /// A QEMU process exists (`status: running`, even if paused).
    pub(super) running: bool,
    /// QMP status `paused` (suspend to RAM).
    pub(super) paused: bool,
    /// Process start, for `uptime`.
    pub(super) started: Option<Instant>,
    /// Guest (re)boot, for when the guest agent comes up.
    pub(super) guest_booted: Option<Instant>,
    /// Process id.
    pub(super) pid: u32,
}

/// One VM.
#[derive(Debug, Clone)]
pub(super) struct Vm {
    pub(super) vmid: u32,
    /// Node whose `qemu-server/` directory holds the config.
    pub(super) node: String,
    pub(super) conf: VmConfig,
    pub(super) run: RunState,
}

/// `Configuration file 'nodes/<node>/qemu-server/<vmid>.conf' does not exist`.
pub(super) fn conf_missing(node: &str, vmid: u32) -> String {
    format!("Configuration file 'nodes/{node}/qemu-server/{vmid}.conf' does not exist")
}

/// `unable to find configuration file for VM <vmid> on node '<node>'` (`check_running`).
pub(super) fn conf_not_found(node: &str, vmid: u32) -> String {
    format!("unable to find configuration file for VM {vmid} on node '{node}'")
}

/// `check_lock`: `VM is locked (<lock>)`.
pub(super) fn check_lock(conf: &VmConfig) -> Result<(), String> {
    match conf.lock() {
        Some(lock) => Err(format!("VM is locked ({lock})")),
        None => Ok(()),
    }
}

/// The drives of a config section (`scsi0`, `ide2`, ...), sorted by key.
pub(super) fn drives(section: &std::collections::BTreeMap<String, String>) -> Vec<(String, Drive)> {
    section
        .iter()
        .filter(|(k, _)| is_drive_key(k))
        .filter_map(|(k, v)| Drive::parse(v).map(|d| (k.clone(), d)))
        .collect()
}

/// Memory in MiB (`memory: [current=]<MiB>`, default 512).
pub(super) fn memory_mib(conf: &VmConfig) -> u64 {
    conf.get("memory")
        .map(|m| parse_kv(m, "current"))
        .and_then(|kv| kv.get("current").and_then(|c| c.parse().ok()))
        .unwrap_or(512)
}

/// vCPUs as `vmstatus` counts them (`sockets * cores`, capped at the host, `vcpus` wins).
pub(super) fn cpus(conf: &VmConfig, host_cpus: u32) -> u32 {
    let get = |k: &str| conf.get(k).and_then(|v| v.parse::<u32>().ok());
    if let Some(v) = get("vcpus") {
        return v;
    }
    let n = get("sockets").unwrap_or(1).max(1) * get("cores").unwrap_or(1).max(1);
    n.min(host_cpus.max(1))
}

/// Whether the guest agent is enabled (`agent: 1` or `agent: enabled=1,...`).
pub(super) fn agent_enabled(conf: &VmConfig) -> bool {
    conf.get("agent")
        .map(|a| parse_kv(a, "enabled"))
        .is_some_and(|kv| kv.get("enabled").is_some_and(|e| e == "1"))
}

/// The boot disk: first entry of `boot: order=` that is a non-CD drive, else the first disk.
pub(super) fn boot_disk(conf: &VmConfig) -> Option<(String, Drive)> {
    let all = drives(&conf.main);
    let order: Vec<String> = conf
        .get("boot")
        .map(|b| parse_kv(b, "legacy"))
        .and_then(|kv| kv.get("order").cloned())
        .map(|o| o.split(';').map(str::to_string).collect())
        .unwrap_or_default();
    order
        .iter()
        .find_map(|k| {
            all.iter()
                .find(|(key, d)| key == k && !d.is_cdrom())
                .cloned()
        })
        .or_else(|| default_disk(&all, false).cloned())
}

/// `resolve_first_disk`: the first hard disk (or CD-ROM) in `ide, sata, scsi, virtio` order.
fn default_disk(all: &[(String, Drive)], cdrom: bool) -> Option<&(String, Drive)> {
    ["ide", "sata", "scsi", "virtio"].iter().find_map(|prefix| {
        let mut of_kind: Vec<&(String, Drive)> = all
            .iter()
            .filter(|(k, d)| {
                k.strip_prefix(prefix)
                    .is_some_and(|n| n.parse::<u32>().is_ok())
                    && d.is_cdrom() == cdrom
                    && !d.is_cloudinit()
            })
            .collect();
        of_kind.sort_by_key(|(k, _)| k[prefix.len()..].parse::<u32>().unwrap_or(0));
        of_kind.first().copied()
    })
}

/// `get_default_bootdevices` + `print_bootorder`: `order=scsi0;ide2;net0`.
pub(super) fn default_boot_order(conf: &VmConfig) -> String {
    let all = drives(&conf.main);
    let mut devs: Vec<String> = Vec::new();
    if let Some((k, _)) = default_disk(&all, false) {
        devs.push(k.clone());
    }
    if let Some((k, _)) = default_disk(&all, true) {
        devs.push(k.clone());
    }
    let mut nets: Vec<u32> = conf
        .main
        .keys()
        .filter_map(|k| super::drive::net_index(k))
        .collect();
    nets.sort_unstable();
    if let Some(n) = nets.first() {
        devs.push(format!("net{n}"));
    }
    format!("order={}", devs.join(";"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(pairs: &[(&str, &str)]) -> VmConfig {
        let mut c = VmConfig::default();
        for (k, v) in pairs {
            c.set(k, *v);
        }
        c
    }

    #[test]
    fn boot_order_default_puts_disk_cdrom_net() {
        let c = conf(&[
            ("scsi0", "local-lvm:vm-100-disk-0,size=8G"),
            ("ide2", "none,media=cdrom"),
            ("ide0", "local-lvm:vm-100-cloudinit,media=cdrom"),
            ("net1", "virtio=BC:24:11:00:00:01"),
            ("net0", "virtio=BC:24:11:00:00:00"),
        ]);
        assert_eq!(default_boot_order(&c), "order=scsi0;ide2;net0");
        assert_eq!(boot_disk(&c).unwrap().0, "scsi0");
    }

    #[test]
    fn derived_values() {
        let c = conf(&[
            ("memory", "2048"),
            ("cores", "4"),
            ("sockets", "2"),
            ("agent", "enabled=1,fstrim_cloned_disks=1"),
        ]);
        assert_eq!(memory_mib(&c), 2048);
        assert_eq!(cpus(&c, 16), 8);
        assert_eq!(cpus(&c, 4), 4);
        assert!(agent_enabled(&c));
        assert!(!agent_enabled(&conf(&[("agent", "0")])));
        assert_eq!(memory_mib(&conf(&[])), 512);
        assert_eq!(
            check_lock(&conf(&[("lock", "clone")])).unwrap_err(),
            "VM is locked (clone)"
        );
    }
}
