//! What an operator declares: a VM (`pvefleet vm apply -f FILE`, created or updated by name) and
//! the fleet resources VMs draw from (IP pools, VMID ranges, VIPs).
//!
//! These types are read from TOML, so they refuse unknown keys (a typo fails loudly), and they
//! also travel through Raft as bincode, so they use only plain structs and externally tagged
//! enums. Closed sets (BIOS, NIC model, ...) are enums: TOML parsing already names the allowed
//! values. Everything else is checked by [`validate_spec`], which names the field, the value and
//! what is allowed.
//!
//! ```toml
//! [[vm]]
//! name = "web-1"
//! cores = 2
//! memory_mib = 2048
//! template = { name = "debian-12", clone = "linked" }
//! disks = [{ slot = "scsi0", size_gib = 20 }]
//! nics = [{ bridge = "vmbr0", vlan = 20, ip = { pool = "lan" } }]
//! cloud_init = { user = "ops", ssh_keys = ["ssh-ed25519 AAAAC3Nz... ops@laptop"] }
//! ```

mod cidr;
mod description;
mod file;
mod guest_selector;
mod ha;
#[cfg(test)]
mod ha_tests;
mod infra;
mod labels;
pub(crate) mod rules;
pub(crate) mod validate;
mod vip_check;
mod vip_v1;
mod vm_group;
#[cfg(test)]
mod vm_group_tests;
mod vm_parts;
mod vm_v1;

#[cfg(test)]
mod infra_tests;
#[cfg(test)]
mod validate_tests;

use serde::{Deserialize, Serialize};

pub use cidr::{Cidr, CidrError, ip_to_u128, next_ip};
pub use description::{
    DESCRIPTION_MAX_CHARS, DESCRIPTION_RESERVED_CHARS, PVE_DESCRIPTION_MAX_CHARS,
};
pub use file::{
    FleetSpecFile, GroupReplicas, SpecFileError, VmSpecFile, parse_fleet_file, parse_vm_file,
    read_vm_file,
};
pub use guest_selector::{GuestSelector, RuleParty, together_group};
pub use ha::{
    DEFAULT_MAX_RELOCATE, DEFAULT_MAX_RESTART, HaDefaults, HaPolicy, HaSpec, HaState, MAX_HA_TRIES,
    RecoveryMode, ShutdownPolicy,
};
pub use infra::{
    DEFAULT_PREEMPT_DELAY_SECS, IpPoolSpec, MAX_VIP_CHECKS, PoolBounds, VipSpec, VmidRangeSpec,
    validate_ip_owner, validate_ip_pool, validate_vip, validate_vmid_range,
};
pub use labels::Labels;
pub use validate::{SpecError, validate_spec};
pub use vip_check::{CheckType, VipCheck, validate_check};
pub use vip_v1::{VipSpecV1, VipV1};
pub use vm_group::{GROUP_KEYS, GroupMember, INDEX_PLACEHOLDER, MAX_REPLICAS};
pub use vm_parts::{
    Bios, CloneMode, CloudInitSpec, DesiredState, DiskCache, DiskOptions, DiskSpec, NicIp,
    NicModel, NicSpec, NodeAffinity, OsType, Placement, RestartPolicy, ScsiController,
    TemplateSpec,
};
pub use vm_v1::VmSpecV1;

/// One VM as the operator wants it. The name is the VM's identity in the fleet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VmSpec {
    /// The VM's name: a DNS label, unique in the fleet (also the PVE VM name).
    pub name: String,
    /// Free text shown in PVE's notes (the agent appends a managed-notes block): any text PVE
    /// accepts except NUL, at most [`DESCRIPTION_MAX_CHARS`] characters.
    #[serde(default)]
    pub description: String,
    /// PVE tags (the agent adds the fleet's ownership tag).
    #[serde(default)]
    pub tags: Vec<String>,
    /// Cores per socket.
    #[serde(default = "one")]
    pub cores: u32,
    /// CPU sockets.
    #[serde(default = "one")]
    pub sockets: u32,
    /// Memory in MiB (PVE `memory`).
    pub memory_mib: u64,
    /// Minimum memory for the balloon device in MiB; `0` disables ballooning; absent leaves
    /// PVE's default (balloon up to `memory_mib`).
    #[serde(default)]
    pub balloon_mib: Option<u64>,
    /// QEMU CPU model (PVE `cpu`), e.g. `host`, `x86-64-v2-AES`; absent = PVE's default.
    #[serde(default)]
    pub cpu: Option<String>,
    /// QEMU machine type (PVE `machine`), e.g. `q35`, `pc-i440fx-9.0`.
    #[serde(default)]
    pub machine: Option<String>,
    /// Firmware.
    #[serde(default)]
    pub bios: Option<Bios>,
    /// SCSI controller model.
    #[serde(default)]
    pub scsihw: Option<ScsiController>,
    /// Guest OS type (PVE `ostype`), which tunes PVE's defaults for the guest.
    #[serde(default)]
    pub ostype: Option<OsType>,
    /// Clone from this template; absent = create from scratch with [`VmSpec::disks`].
    #[serde(default)]
    pub template: Option<TemplateSpec>,
    /// Disks: added from scratch, or (for a clone) grown or added beside the template's disks.
    #[serde(default)]
    pub disks: Vec<DiskSpec>,
    /// Network interfaces, `net0` first.
    #[serde(default)]
    pub nics: Vec<NicSpec>,
    /// Cloud-init settings; needed for any NIC `ip`.
    #[serde(default)]
    pub cloud_init: Option<CloudInitSpec>,
    /// Enable the QEMU guest agent (used to report IPs and for clean shutdowns).
    #[serde(default)]
    pub agent: bool,
    /// Start the VM when its host boots (PVE `onboot`).
    #[serde(default)]
    pub onboot: bool,
    /// PVE `protection`: refuse removal of the VM and its disks.
    #[serde(default)]
    pub protection: bool,
    /// Running or stopped.
    #[serde(default)]
    pub state: DesiredState,
    /// Whether a change that needs a reboot may restart the VM.
    #[serde(default)]
    pub restart: RestartPolicy,
    /// Where the VM may be placed.
    #[serde(default)]
    pub placement: Placement,
    /// PVE HA's settings: whether the fleet's HA manages the VM (fenced with its host,
    /// recovered elsewhere), its request, retry limits and recovery mode. Spec files take
    /// `ha = true` (started, the fleet's defaults), `ha = false` or a `[vm.ha]` table
    /// ([`HaSpec`]).
    #[serde(default)]
    pub ha: HaSpec,
    /// The VMID range to allocate from; absent = the fleet's default range.
    #[serde(default)]
    pub vmid_range: Option<String>,
    /// The VM group it is a member of (`[[vm_group]]`, encoding v2): set when a group is
    /// expanded, not written by hand.
    #[serde(default)]
    pub group: Option<GroupMember>,
}

fn one() -> u32 {
    1
}

impl VmSpec {
    /// The VM group the scheduler spreads the VM with, if any (`[[vm_group]]`, `spread`).
    pub fn spread_group(&self) -> Option<&str> {
        self.group
            .as_ref()
            .filter(|g| g.spread)
            .map(|g| g.group.as_str())
    }

    /// A spec with only the required fields and every default: useful to build specs in code.
    pub fn new(name: impl Into<String>, memory_mib: u64) -> VmSpec {
        VmSpec {
            name: name.into(),
            description: String::new(),
            tags: Vec::new(),
            cores: 1,
            sockets: 1,
            memory_mib,
            balloon_mib: None,
            cpu: None,
            machine: None,
            bios: None,
            scsihw: None,
            ostype: None,
            template: None,
            disks: Vec::new(),
            nics: Vec::new(),
            cloud_init: None,
            agent: false,
            onboot: false,
            protection: false,
            state: DesiredState::default(),
            restart: RestartPolicy::default(),
            placement: Placement::default(),
            ha: HaSpec::none(),
            vmid_range: None,
            group: None,
        }
    }

    /// The names of the IP pools this VM's NICs draw from, with the NIC index.
    pub fn pool_nics(&self) -> impl Iterator<Item = (usize, &str)> {
        self.nics
            .iter()
            .enumerate()
            .filter_map(|(i, nic)| match &nic.ip {
                Some(NicIp::Pool(pool)) => Some((i, pool.as_str())),
                _ => None,
            })
    }
}
