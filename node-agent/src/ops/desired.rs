//! The VM an [`EnsureVm`] asks for, in PVE's terms: the spec's choices converted to the typed
//! values of the `pve` client (models, slots, `ipconfig` addresses from the allocated pool
//! addresses, DNS servers, the snippet volume), checked once so the plan only compares.
//!
//! Settings the spec leaves open (`cpu`, `machine`, `bios`, `scsihw`, `ostype`, `balloon`,
//! a NIC's `mtu`, a disk's `cache`) are not managed: whatever PVE or the template has stays.

use std::net::IpAddr;

use protocol::agent::{EnsureVm, OWNERSHIP_TAG};
use protocol::spec::{Cidr, NicIp};
use pve::calls::{Bios, OsType, ScsiHw};
use pve::props::{
    DiskBus, DiskCache, DiskSlot, IpConfig, Ipv4Config, Ipv6Config, MacAddr, NetModel,
};

use super::plan_error::PlanError;

/// One NIC as wanted.
#[derive(Debug, Clone, PartialEq)]
pub struct DesiredNic {
    /// Card model.
    pub model: NetModel,
    /// Bridge.
    pub bridge: String,
    /// VLAN tag; `None` = untagged.
    pub vlan: Option<u16>,
    /// Fixed MAC; `None` keeps the one PVE generated.
    pub mac: Option<MacAddr>,
    /// PVE firewall on the NIC.
    pub firewall: bool,
    /// MTU; `None` = not managed.
    pub mtu: Option<u32>,
}

/// One disk as wanted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredDisk {
    /// The bus.
    pub bus: DiskBus,
    /// The index on the bus.
    pub index: u8,
    /// Storage for a new volume (`None`: the slot must come from the template).
    pub storage: Option<String>,
    /// Size in GiB (grown to, never shrunk).
    pub size_gib: u64,
    /// Present as SSD.
    pub ssd: bool,
    /// Pass discard.
    pub discard: bool,
    /// Own IO thread.
    pub iothread: bool,
    /// Cache mode; `None` = not managed.
    pub cache: Option<DiskCache>,
}

impl DesiredDisk {
    /// The config key (`scsi1`).
    pub fn key(&self) -> String {
        format!("{}{}", self.bus.prefix(), self.index)
    }
}

/// Cloud-init settings as wanted.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DesiredCloudInit {
    /// `ciuser`.
    pub user: Option<String>,
    /// `sshkeys`, one key per entry.
    pub ssh_keys: Vec<String>,
    /// `ipconfig<n>` by NIC index.
    pub ipconfig: Vec<(u8, IpConfig)>,
    /// `nameserver`.
    pub nameservers: Vec<IpAddr>,
    /// `searchdomain`.
    pub searchdomain: Option<String>,
    /// The user-data snippet volume (`local:snippets/pvefleet-web-1.yaml`).
    pub user_snippet: Option<String>,
}

/// The whole VM as wanted.
#[derive(Debug, Clone, PartialEq)]
pub struct DesiredVm {
    /// VM name (the fleet name).
    pub name: String,
    /// Spec generation (managed-notes block).
    pub generation: u64,
    /// An HA guest for fencing (`ha.state` `started` or `stopped`, [`HaSpec::fences`]): the
    /// managed-notes block says `ha=1` (what the fencing reads).
    ///
    /// [`HaSpec::fences`]: protocol::spec::HaSpec::fences
    pub ha: bool,
    /// The spec's own description text.
    pub description: String,
    /// Tags, the ownership tag included, sorted and unique.
    pub tags: Vec<String>,
    /// Cores per socket.
    pub cores: u32,
    /// Sockets.
    pub sockets: u32,
    /// Memory in MiB.
    pub memory_mib: u64,
    /// Balloon minimum in MiB (0 = off).
    pub balloon_mib: Option<u64>,
    /// CPU type.
    pub cpu: Option<String>,
    /// Machine type.
    pub machine: Option<String>,
    /// Firmware.
    pub bios: Option<Bios>,
    /// SCSI controller.
    pub scsihw: Option<ScsiHw>,
    /// Guest OS type.
    pub ostype: Option<OsType>,
    /// Guest agent.
    pub agent: bool,
    /// Start at host boot.
    pub onboot: bool,
    /// Removal protection.
    pub protection: bool,
    /// NICs, `net0` first.
    pub nics: Vec<DesiredNic>,
    /// Disks.
    pub disks: Vec<DesiredDisk>,
    /// Cloud-init, when the spec has a `cloud_init` section.
    pub cloud_init: Option<DesiredCloudInit>,
}

/// The snippet file holding a VM's user data.
pub fn snippet_file(vm: &str) -> String {
    format!("pvefleet-{vm}.yaml")
}

fn invalid(field: impl Into<String>, reason: impl Into<String>) -> PlanError {
    PlanError::Invalid {
        field: field.into(),
        reason: reason.into(),
    }
}

fn parse_as<T: std::str::FromStr>(field: &str, text: &str) -> Result<T, PlanError> {
    text.parse()
        .map_err(|_| invalid(field, format!("'{text}' is not known to PVE")))
}

fn ip_config(addr: IpAddr, prefix: u8, gateway: Option<IpAddr>) -> Result<IpConfig, PlanError> {
    match (addr, gateway) {
        (IpAddr::V4(a), None | Some(IpAddr::V4(_))) => Ok(IpConfig {
            ip: Some(Ipv4Config::Static { addr: a, prefix }),
            gw: gateway.and_then(|g| match g {
                IpAddr::V4(g) => Some(g),
                IpAddr::V6(_) => None,
            }),
            ..IpConfig::default()
        }),
        (IpAddr::V6(a), None | Some(IpAddr::V6(_))) => Ok(IpConfig {
            ip6: Some(Ipv6Config::Static { addr: a, prefix }),
            gw6: gateway.and_then(|g| match g {
                IpAddr::V6(g) => Some(g),
                IpAddr::V4(_) => None,
            }),
            ..IpConfig::default()
        }),
        _ => Err(invalid(
            "gateway",
            format!("{gateway:?} is not of the address family of {addr}"),
        )),
    }
}

fn nic_index(i: usize) -> Result<u8, PlanError> {
    u8::try_from(i).ok().filter(|n| *n <= 31).ok_or_else(|| {
        invalid(
            format!("nics[{i}]"),
            "PVE allows at most 32 NICs (net0-net31)",
        )
    })
}

fn ipconfigs(cmd: &EnsureVm) -> Result<Vec<(u8, IpConfig)>, PlanError> {
    let mut out = Vec::new();
    for (i, nic) in cmd.spec.nics.iter().enumerate() {
        let n = nic_index(i)?;
        let field = format!("nics[{i}].ip");
        let cfg = match &nic.ip {
            None => continue,
            Some(NicIp::Dhcp) => IpConfig::dhcp(),
            Some(NicIp::Pool(pool)) => {
                let a = cmd
                    .ips
                    .iter()
                    .find(|a| a.nic == u32::from(n) && a.pool == *pool)
                    .ok_or_else(|| PlanError::MissingAddress {
                        nic: n,
                        pool: pool.clone(),
                    })?;
                ip_config(a.address, a.prefix_len, a.gateway)?
            }
            Some(NicIp::Static { address, gateway }) => {
                let cidr: Cidr = address
                    .parse()
                    .map_err(|_| invalid(&field, format!("'{address}' is not ADDRESS/PREFIX")))?;
                let gw = gateway
                    .as_deref()
                    .map(|g| parse_as::<IpAddr>(&field, g))
                    .transpose()?;
                ip_config(cidr.address(), cidr.prefix_len(), gw)?
            }
        };
        out.push((n, cfg));
    }
    Ok(out)
}

/// The VM `cmd` asks for; `user_snippet` is the volume the user data was written to.
pub fn desired_vm(cmd: &EnsureVm, user_snippet: Option<String>) -> Result<DesiredVm, PlanError> {
    let spec = &cmd.spec;
    let mut tags: Vec<String> = spec.tags.iter().map(|t| t.to_lowercase()).collect();
    tags.push(OWNERSHIP_TAG.to_string());
    tags.sort();
    tags.dedup();
    let mut nics = Vec::with_capacity(spec.nics.len());
    for (i, n) in spec.nics.iter().enumerate() {
        nic_index(i)?;
        nics.push(DesiredNic {
            model: parse_as(&format!("nics[{i}].model"), n.model.as_str())?,
            bridge: n.bridge.clone(),
            vlan: n.vlan,
            mac: n
                .mac
                .as_deref()
                .map(|m| parse_as(&format!("nics[{i}].mac"), m))
                .transpose()?,
            firewall: n.firewall,
            mtu: n.mtu.map(u32::from),
        });
    }
    let mut disks = Vec::with_capacity(spec.disks.len());
    for (i, d) in spec.disks.iter().enumerate() {
        let field = format!("disks[{i}].slot");
        let (bus, index) = match d.slot.parse::<DiskSlot>() {
            Ok(DiskSlot::Drive(bus, index)) => (bus, index),
            _ => return Err(invalid(field, format!("'{}' is not a drive slot", d.slot))),
        };
        disks.push(DesiredDisk {
            bus,
            index,
            storage: d.storage.clone(),
            size_gib: u64::from(d.size_gib),
            ssd: d.options.ssd,
            discard: d.options.discard,
            iothread: d.options.iothread,
            cache: d
                .options
                .cache
                .map(|c| parse_as(&format!("disks[{i}].options.cache"), c.as_str()))
                .transpose()?,
        });
    }
    let cloud_init = match &spec.cloud_init {
        None => None,
        Some(ci) => {
            let servers = if ci.dns_servers.is_empty() {
                &cmd.pool_dns
            } else {
                &ci.dns_servers
            };
            let nameservers = servers
                .iter()
                .map(|s| parse_as::<IpAddr>("cloud_init.dns_servers", s))
                .collect::<Result<Vec<_>, _>>()?;
            Some(DesiredCloudInit {
                user: ci.user.clone(),
                ssh_keys: ci.ssh_keys.clone(),
                ipconfig: ipconfigs(cmd)?,
                nameservers,
                searchdomain: ci.search_domain.clone(),
                user_snippet,
            })
        }
    };
    Ok(DesiredVm {
        name: spec.name.clone(),
        generation: cmd.generation,
        ha: spec.ha.fences(),
        description: spec.description.clone(),
        tags,
        cores: spec.cores,
        sockets: spec.sockets,
        memory_mib: spec.memory_mib,
        balloon_mib: spec.balloon_mib,
        cpu: spec.cpu.clone(),
        machine: spec.machine.clone(),
        bios: spec
            .bios
            .map(|b| parse_as("bios", b.as_str()))
            .transpose()?,
        scsihw: spec
            .scsihw
            .map(|s| parse_as("scsihw", s.as_str()))
            .transpose()?,
        ostype: spec
            .ostype
            .map(|o| parse_as("ostype", o.as_str()))
            .transpose()?,
        agent: spec.agent,
        // PVE starts an `onboot` guest when the host boots, without asking anyone: after a
        // fence reset the coordinators may already run an HA guest elsewhere (rule 1). An HA
        // guest (`started`/`stopped`) starts only through a command, under a lease
        // (docs/design/fencing-agent.md). `disabled` and `ignored` guests are not fenced, so
        // their `onboot` is the spec's.
        onboot: spec.onboot && !spec.ha.fences(),
        protection: spec.protection,
        nics,
        disks,
        cloud_init,
    })
}
