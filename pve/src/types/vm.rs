//! VM answers: `GET /nodes/{node}/qemu` (list) and `GET .../status/current`.

use serde::Deserialize;

use crate::de;

/// One VM of `GET /nodes/{node}/qemu`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct VmListEntry {
    /// VMID.
    #[serde(deserialize_with = "de::u32_lenient")]
    pub vmid: u32,
    /// Name.
    #[serde(default, deserialize_with = "de::opt_string_lenient")]
    pub name: Option<String>,
    /// `running` or `stopped`.
    #[serde(default)]
    pub status: String,
    /// QMP state (`running`, `paused`, ...), with `full=1`.
    #[serde(default)]
    pub qmpstatus: Option<String>,
    /// Config lock.
    #[serde(default)]
    pub lock: Option<String>,
    /// Tags (`;`-separated).
    #[serde(default, deserialize_with = "de::opt_string_lenient")]
    pub tags: Option<String>,
    /// Is a template.
    #[serde(default, deserialize_with = "de::bool_lenient")]
    pub template: bool,
    /// QEMU process id when running.
    #[serde(default, deserialize_with = "de::opt_u32_lenient")]
    pub pid: Option<u32>,
    /// CPU usage (fraction of `cpus`).
    #[serde(default, deserialize_with = "de::opt_f64_lenient")]
    pub cpu: Option<f64>,
    /// vCPUs.
    #[serde(default, deserialize_with = "de::opt_f64_lenient")]
    pub cpus: Option<f64>,
    /// Memory used (bytes).
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub mem: Option<u64>,
    /// Memory size (bytes).
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub maxmem: Option<u64>,
    /// Boot disk size (bytes).
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub maxdisk: Option<u64>,
    /// Uptime (seconds).
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub uptime: Option<u64>,
    /// Bytes received.
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub netin: Option<u64>,
    /// Bytes sent.
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub netout: Option<u64>,
    /// Bytes read from disks.
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub diskread: Option<u64>,
    /// Bytes written to disks.
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub diskwrite: Option<u64>,
}

impl VmListEntry {
    /// Whether a QEMU process exists (it may be paused).
    pub fn is_running(&self) -> bool {
        self.status == "running"
    }
}

/// HA state of a VM (`ha` of `status/current`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
pub struct VmHaStatus {
    /// Managed by the HA stack.
    #[serde(default, deserialize_with = "de::bool_lenient")]
    pub managed: bool,
    /// HA state (`started`, ...), when managed.
    #[serde(default)]
    pub state: Option<String>,
}

/// `GET /nodes/{node}/qemu/{vmid}/status/current`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct VmStatus {
    /// VMID.
    #[serde(deserialize_with = "de::u32_lenient")]
    pub vmid: u32,
    /// `running` (a QEMU process exists, even if paused) or `stopped`.
    #[serde(default)]
    pub status: String,
    /// QMP state: `running`, `paused`, `prelaunch`, `suspended`, `postmigrate`, ...
    #[serde(default)]
    pub qmpstatus: Option<String>,
    /// Name (`VM <vmid>` when unset).
    #[serde(default, deserialize_with = "de::opt_string_lenient")]
    pub name: Option<String>,
    /// Config lock.
    #[serde(default)]
    pub lock: Option<String>,
    /// Is a template.
    #[serde(default, deserialize_with = "de::bool_lenient")]
    pub template: bool,
    /// Tags (`;`-separated).
    #[serde(default, deserialize_with = "de::opt_string_lenient")]
    pub tags: Option<String>,
    /// Guest agent enabled in the config.
    #[serde(default, deserialize_with = "de::bool_lenient")]
    pub agent: bool,
    /// HA state.
    #[serde(default)]
    pub ha: VmHaStatus,
    /// QEMU process id when running.
    #[serde(default, deserialize_with = "de::opt_u32_lenient")]
    pub pid: Option<u32>,
    /// Uptime (seconds).
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub uptime: Option<u64>,
    /// CPU usage (fraction of `cpus`).
    #[serde(default, deserialize_with = "de::opt_f64_lenient")]
    pub cpu: Option<f64>,
    /// vCPUs.
    #[serde(default, deserialize_with = "de::opt_f64_lenient")]
    pub cpus: Option<f64>,
    /// Memory used (bytes).
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub mem: Option<u64>,
    /// Memory size (bytes).
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub maxmem: Option<u64>,
    /// Boot disk size (bytes).
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub maxdisk: Option<u64>,
    /// Bytes received.
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub netin: Option<u64>,
    /// Bytes sent.
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub netout: Option<u64>,
    /// Bytes read from disks.
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub diskread: Option<u64>,
    /// Bytes written to disks.
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub diskwrite: Option<u64>,
    /// Machine type QEMU runs with.
    #[serde(rename = "running-machine", default)]
    pub running_machine: Option<String>,
    /// QEMU version running.
    #[serde(rename = "running-qemu", default)]
    pub running_qemu: Option<String>,
}

impl VmStatus {
    /// Whether a QEMU process exists (it may be paused).
    pub fn is_running(&self) -> bool {
        self.status == "running"
    }

    /// Whether the guest is actually executing (running and not paused/suspended).
    pub fn is_executing(&self) -> bool {
        self.is_running() && self.qmpstatus.as_deref().is_none_or(|q| q == "running")
    }
}
