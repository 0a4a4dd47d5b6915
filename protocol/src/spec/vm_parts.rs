//! The parts of a [`VmSpec`](super::VmSpec): hardware choices (closed sets named as PVE names
//! them), the template to clone, disks, NICs, cloud-init and placement.

use serde::{Deserialize, Serialize};

use super::labels::Labels;

/// Declares a closed set of PVE values: serde and [`as_str`](Bios::as_str) use the same names.
macro_rules! pve_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant,)+
        }

        impl $name {
            /// The value as PVE writes it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text,)+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

pve_enum! {
    /// Firmware (PVE `bios`).
    Bios {
        /// Legacy BIOS (PVE's default).
        SeaBios = "seabios",
        /// UEFI; the agent adds an EFI disk.
        Ovmf = "ovmf",
    }
}

pve_enum! {
    /// SCSI controller (PVE `scsihw`).
    ScsiController {
        /// LSI 53C895A (PVE's default).
        Lsi = "lsi",
        /// LSI 53C810.
        Lsi53c810 = "lsi53c810",
        /// VirtIO SCSI, one controller for all disks.
        VirtioScsiPci = "virtio-scsi-pci",
        /// VirtIO SCSI, one controller per disk (needed for per-disk IO threads).
        VirtioScsiSingle = "virtio-scsi-single",
        /// MegaRAID SAS.
        Megasas = "megasas",
        /// VMware paravirtual SCSI.
        Pvscsi = "pvscsi",
    }
}

pve_enum! {
    /// Guest OS type (PVE `ostype`).
    OsType {
        /// Other.
        Other = "other",
        /// Windows XP.
        Wxp = "wxp",
        /// Windows 2000.
        W2k = "w2k",
        /// Windows 2003.
        W2k3 = "w2k3",
        /// Windows 2008.
        W2k8 = "w2k8",
        /// Windows Vista.
        Wvista = "wvista",
        /// Windows 7.
        Win7 = "win7",
        /// Windows 8 / 2012.
        Win8 = "win8",
        /// Windows 10 / 2016 / 2019.
        Win10 = "win10",
        /// Windows 11 / 2022 / 2025.
        Win11 = "win11",
        /// Linux 2.4.
        L24 = "l24",
        /// Linux 2.6 and later.
        L26 = "l26",
        /// Solaris.
        Solaris = "solaris",
    }
}

pve_enum! {
    /// NIC model (PVE `net[n]` model).
    #[derive(Default)]
    NicModel {
        /// Intel E1000.
        E1000 = "e1000",
        /// Intel 82540EM.
        E1000_82540em = "e1000-82540em",
        /// Intel 82544GC.
        E1000_82544gc = "e1000-82544gc",
        /// Intel 82545EM.
        E1000_82545em = "e1000-82545em",
        /// Intel E1000E.
        E1000e = "e1000e",
        /// Intel i82551.
        I82551 = "i82551",
        /// Intel i82557B.
        I82557b = "i82557b",
        /// Intel i82559ER.
        I82559er = "i82559er",
        /// NE2000 ISA.
        Ne2kIsa = "ne2k_isa",
        /// NE2000 PCI.
        Ne2kPci = "ne2k_pci",
        /// AMD PCnet.
        Pcnet = "pcnet",
        /// Realtek RTL8139.
        Rtl8139 = "rtl8139",
        /// VirtIO (paravirtualized; the default).
        #[default]
        Virtio = "virtio",
        /// VMware vmxnet3.
        Vmxnet3 = "vmxnet3",
    }
}

pve_enum! {
    /// Disk cache mode (PVE drive `cache`).
    DiskCache {
        /// No host cache (PVE's default).
        NoCache = "none",
        /// Direct sync.
        Directsync = "directsync",
        /// Write-through.
        Writethrough = "writethrough",
        /// Write-back.
        Writeback = "writeback",
        /// Write-back without flushes (unsafe).
        Unsafe = "unsafe",
    }
}

pve_enum! {
    /// How a VM is cloned from its template.
    #[derive(Default)]
    CloneMode {
        /// Copy-on-write over the template's disks (fast; needs the template on the same storage).
        Linked = "linked",
        /// A full copy (independent of the template; may target another storage). The default:
        /// a fleet's VMs should not depend on a template staying in place.
        #[default]
        Full = "full",
    }
}

pve_enum! {
    /// The power state the fleet keeps a VM in.
    #[derive(Default)]
    DesiredState {
        /// Started and kept running (the default).
        #[default]
        Running = "running",
        /// Kept stopped: never started by the fleet.
        Stopped = "stopped",
    }
}

pve_enum! {
    /// Whether a change that only takes effect after a reboot may restart the VM.
    #[derive(Default)]
    RestartPolicy {
        /// Leave the change pending until the VM restarts for another reason (the default).
        #[default]
        Never = "never",
        /// Restart the VM (shutdown, then start) to apply the change.
        Allowed = "allowed",
    }
}

/// The template a VM is cloned from, found by name on the chosen host or by VMID.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemplateSpec {
    /// The template's VM name (exactly one of `name` and `vmid`).
    #[serde(default)]
    pub name: Option<String>,
    /// The template's VMID (exactly one of `name` and `vmid`).
    #[serde(default)]
    pub vmid: Option<u32>,
    /// Linked or full clone.
    #[serde(default)]
    pub clone: CloneMode,
    /// Target storage of a full clone; absent = the template's storage.
    #[serde(default)]
    pub storage: Option<String>,
}

/// One disk. For a clone, a slot the template already has is grown to `size_gib` (never
/// shrunk); other slots are added.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskSpec {
    /// The PVE slot: `scsi0`-`scsi30`, `virtio0`-`virtio15`, `sata0`-`sata5`, `ide0`-`ide3`.
    pub slot: String,
    /// The storage a new disk is allocated on; required unless the slot comes from a template.
    #[serde(default)]
    pub storage: Option<String>,
    /// Size in GiB.
    pub size_gib: u32,
    /// Drive options.
    #[serde(default)]
    pub options: DiskOptions,
}

/// Drive options of a [`DiskSpec`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskOptions {
    /// Present the disk as an SSD.
    #[serde(default)]
    pub ssd: bool,
    /// Pass discard/TRIM to the storage.
    #[serde(default)]
    pub discard: bool,
    /// A dedicated IO thread (with `virtio-scsi-single` for SCSI disks).
    #[serde(default)]
    pub iothread: bool,
    /// Cache mode; absent = PVE's default (`none`).
    #[serde(default)]
    pub cache: Option<DiskCache>,
}

/// One network interface (`net<index>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NicSpec {
    /// NIC model.
    #[serde(default)]
    pub model: NicModel,
    /// The host bridge, e.g. `vmbr0`.
    pub bridge: String,
    /// VLAN tag (1-4094).
    #[serde(default)]
    pub vlan: Option<u16>,
    /// A fixed MAC address; absent = PVE generates one.
    #[serde(default)]
    pub mac: Option<String>,
    /// Protect the NIC with the PVE firewall.
    #[serde(default)]
    pub firewall: bool,
    /// MTU (VirtIO only); absent = the bridge's MTU.
    #[serde(default)]
    pub mtu: Option<u16>,
    /// How the guest gets its address (written as cloud-init `ipconfig<index>`); absent = not
    /// managed.
    #[serde(default)]
    pub ip: Option<NicIp>,
}

/// The address of a NIC: `"dhcp"`, `{ pool = "lan" }` or
/// `{ static = { address = "10.0.0.5/24", gateway = "10.0.0.1" } }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum NicIp {
    /// DHCP.
    Dhcp,
    /// An address allocated by the fleet from this IP pool.
    Pool(String),
    /// A fixed address.
    Static {
        /// The address with its prefix length.
        address: String,
        /// The default gateway.
        #[serde(default)]
        gateway: Option<String>,
    },
}

/// Cloud-init settings (PVE `ciuser`, `sshkeys`, `nameserver`, `searchdomain`, and user data as
/// a snippet).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CloudInitSpec {
    /// The default user's name.
    #[serde(default)]
    pub user: Option<String>,
    /// OpenSSH public keys for the default user.
    #[serde(default)]
    pub ssh_keys: Vec<String>,
    /// DNS servers (at most 3); absent = those of the NIC's pool, if any.
    #[serde(default)]
    pub dns_servers: Vec<String>,
    /// DNS search domain.
    #[serde(default)]
    pub search_domain: Option<String>,
    /// User data (`#cloud-config` and the other cloud-init formats), stored as a snippet.
    #[serde(default)]
    pub user_data: Option<String>,
}

/// Placement constraints. Empty lists mean no constraint.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Placement {
    /// Only these hosts (by name).
    #[serde(default)]
    pub hosts: Vec<String>,
    /// Never these hosts (by name).
    #[serde(default)]
    pub exclude_hosts: Vec<String>,
    /// Labels a host must carry, with these values.
    #[serde(default)]
    pub labels: Labels,
    /// Anti-affinity (strict): never on a host where one of these VMs is placed. Each is a VM
    /// name or `tag:<tag>` (every VM with that PVE tag). It works both ways: a VM named here
    /// is kept off this VM's host too ([`GuestSelector`](super::GuestSelector)).
    #[serde(default)]
    pub apart_from: Vec<String>,
    /// Affinity (strict): on the host of these VMs once one of them is placed (names or
    /// `tag:<tag>`); both ways, so overlapping rules keep a whole group on one host.
    #[serde(default)]
    pub together_with: Vec<String>,
    /// Node affinity (PVE HA's node-affinity rule): preferred hosts with priorities.
    #[serde(default)]
    pub node_affinity: Option<NodeAffinity>,
}

/// Preferred hosts with priorities, as PVE HA 9's node-affinity rules: the VM runs on the
/// available host of the highest priority listed; `strict` keeps it off every other host
/// (it waits instead); `failback` moves it back when a host of a higher priority than its
/// own becomes available again.
///
/// ```toml
/// [vm.placement.node_affinity]
/// nodes = { pve-a = 2, pve-b = 2, pve-c = 1 }   # priority: higher first (0-1000)
/// strict = false                                # default: other hosts when none is available
/// failback = true                               # default (PVE's)
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeAffinity {
    /// Host names with their priority (higher is preferred).
    pub nodes: std::collections::BTreeMap<String, u32>,
    /// Only those hosts.
    #[serde(default)]
    pub strict: bool,
    /// Move back to a host of a higher priority once it is available.
    #[serde(default = "yes")]
    pub failback: bool,
}

fn yes() -> bool {
    true
}

impl NodeAffinity {
    /// The priority of `host`; `None` when it is not listed.
    pub fn priority(&self, host: &str) -> Option<u32> {
        self.nodes.get(host).copied()
    }
}
