//! The hard filters: a host that fails one never takes the VM, whatever its score. Each filter
//! names itself and says, in words an operator can act on, what was missing.

use std::collections::BTreeMap;
use std::fmt;

use protocol::fleet::{HostState, Settings};
use protocol::spec::VmSpec;
use serde::Serialize;

use super::inputs::HostView;

const MIB: u64 = 1024 * 1024;
const GIB: u64 = 1024 * MIB;

/// The hard filter that excluded a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FilterName {
    /// The host is not online (joining, unreachable, fenced, removed).
    HostState,
    /// The operator took the host out of scheduling.
    Maintenance,
    /// The VM lists allowed hosts and this is not one of them.
    AllowedHosts,
    /// The VM excludes this host.
    ExcludedHosts,
    /// The host lacks a label the VM requires.
    Labels,
    /// A VM an anti-affinity rule keeps apart from this one is placed on the host.
    AntiAffinity,
    /// A VM an affinity rule keeps together with this one is placed on another host.
    Affinity,
    /// The VM's node affinity prefers other hosts that can take it (or, strict, allows only
    /// its listed hosts).
    NodeAffinity,
    /// The VM's group spreads its members, and other hosts that can take it have fewer.
    Spread,
    /// The host already runs the most VMs a host may run.
    VmLimit,
    /// Not enough schedulable vCPUs left (after overcommit).
    Cpu,
    /// Not enough schedulable memory left (after the reserve and overcommit).
    Memory,
    /// A storage the VM's disks need is missing, holds no images, or is too full.
    Storage,
    /// A bridge a NIC needs is missing.
    Bridge,
    /// The template to clone is missing.
    Template,
    /// A move keeps the VM's VMID: the target's PVE cluster must not use it already.
    Vmid,
}

impl FilterName {
    /// The kebab-case name shown by `vm explain`.
    pub fn as_str(self) -> &'static str {
        match self {
            FilterName::HostState => "host-state",
            FilterName::Maintenance => "maintenance",
            FilterName::AllowedHosts => "allowed-hosts",
            FilterName::ExcludedHosts => "excluded-hosts",
            FilterName::Labels => "labels",
            FilterName::AntiAffinity => "anti-affinity",
            FilterName::Affinity => "affinity",
            FilterName::NodeAffinity => "node-affinity",
            FilterName::Spread => "spread",
            FilterName::VmLimit => "vm-limit",
            FilterName::Cpu => "cpu",
            FilterName::Memory => "memory",
            FilterName::Storage => "storage",
            FilterName::Bridge => "bridge",
            FilterName::Template => "template",
            FilterName::Vmid => "vmid",
        }
    }
}

impl fmt::Display for FilterName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a host was excluded.
pub(crate) type Exclusion = (FilterName, String);

/// One hard filter: the reason it excludes the host, if it does.
type Filter = fn(&VmSpec, &HostView, &Settings) -> Option<Exclusion>;

/// The filters in the order they are tried (cheap, operator-set ones first).
const FILTERS: [Filter; 10] = [
    state, allowed, excluded, labels, vm_limit, cpu, memory, storage, bridge, template,
];

/// vCPUs the VM asks for.
pub(crate) fn vm_vcpus(vm: &VmSpec) -> u64 {
    u64::from(vm.cores) * u64::from(vm.sockets)
}

/// vCPUs a host may carry: its CPUs times the overcommit ratio.
pub(crate) fn cpu_limit(host: &HostView, settings: &Settings) -> u64 {
    u64::from(host.capacity.cpus) * u64::from(settings.cpu_overcommit_percent) / 100
}

/// Guest memory a host may carry: what the reserve leaves, times the overcommit ratio.
pub(crate) fn memory_limit_mib(host: &HostView, settings: &Settings) -> u64 {
    let usable = host
        .capacity
        .memory_mib
        .saturating_sub(settings.host_memory_reserve_mib);
    usable.saturating_mul(u64::from(settings.memory_overcommit_percent)) / 100
}

/// The first of the host's own constraints it fails (state, allowed and excluded hosts,
/// labels): tried before the affinity rules.
pub(crate) fn constraint_exclusion(
    vm: &VmSpec,
    host: &HostView,
    settings: &Settings,
) -> Option<Exclusion> {
    FILTERS[..4]
        .iter()
        .find_map(|filter| filter(vm, host, settings))
}

/// The first resource filter the host fails (VM limit, CPU, memory, storage, bridge,
/// template): tried after the affinity rules.
pub(crate) fn resource_exclusion(
    vm: &VmSpec,
    host: &HostView,
    settings: &Settings,
) -> Option<Exclusion> {
    FILTERS[4..]
        .iter()
        .find_map(|filter| filter(vm, host, settings))
}

fn state(_: &VmSpec, host: &HostView, _: &Settings) -> Option<Exclusion> {
    match host.state {
        HostState::Online => None,
        HostState::Maintenance => Some((
            FilterName::Maintenance,
            "host is in maintenance".to_string(),
        )),
        other => Some((
            FilterName::HostState,
            format!("host is {other}, not online"),
        )),
    }
}

fn allowed(vm: &VmSpec, host: &HostView, _: &Settings) -> Option<Exclusion> {
    let hosts = &vm.placement.hosts;
    (!hosts.is_empty() && !hosts.contains(&host.name)).then(|| {
        (
            FilterName::AllowedHosts,
            format!("not among the allowed hosts [{}]", hosts.join(", ")),
        )
    })
}

fn excluded(vm: &VmSpec, host: &HostView, _: &Settings) -> Option<Exclusion> {
    vm.placement.exclude_hosts.contains(&host.name).then(|| {
        (
            FilterName::ExcludedHosts,
            "excluded by placement.exclude_hosts".to_string(),
        )
    })
}

fn labels(vm: &VmSpec, host: &HostView, _: &Settings) -> Option<Exclusion> {
    vm.placement.labels.iter().find_map(|(key, want)| {
        let detail = match host.labels.get(key) {
            Some(have) if have == want => return None,
            Some(have) => format!("label {key} is \"{have}\", VM requires \"{want}\""),
            None => format!("label {key} missing, VM requires \"{want}\""),
        };
        Some((FilterName::Labels, detail))
    })
}

fn vm_limit(_: &VmSpec, host: &HostView, settings: &Settings) -> Option<Exclusion> {
    let max = settings.max_vms_per_host?;
    (host.usage.vm_count >= max).then(|| {
        (
            FilterName::VmLimit,
            format!(
                "{} VMs placed, limit is {max} per host",
                host.usage.vm_count
            ),
        )
    })
}

fn cpu(vm: &VmSpec, host: &HostView, settings: &Settings) -> Option<Exclusion> {
    let need = vm_vcpus(vm);
    let limit = cpu_limit(host, settings);
    let free = limit.saturating_sub(host.usage.vcpus);
    (need > free).then(|| {
        (
            FilterName::Cpu,
            format!(
                "needs {need} vCPUs, {free} free ({} committed of {limit} = {} CPUs x {}%)",
                host.usage.vcpus, host.capacity.cpus, settings.cpu_overcommit_percent
            ),
        )
    })
}

fn memory(vm: &VmSpec, host: &HostView, settings: &Settings) -> Option<Exclusion> {
    let limit = memory_limit_mib(host, settings);
    let free = limit.saturating_sub(host.usage.memory_mib);
    (vm.memory_mib > free).then(|| {
        (
            FilterName::Memory,
            format!(
                "needs {} MiB, {free} MiB free ({} committed of {limit} = ({} - {} reserve) MiB x {}%)",
                vm.memory_mib,
                host.usage.memory_mib,
                host.capacity.memory_mib,
                settings.host_memory_reserve_mib,
                settings.memory_overcommit_percent
            ),
        )
    })
}

/// Bytes each named storage must have free: new disks plus a full clone's target.
fn storage_needs(vm: &VmSpec) -> BTreeMap<&str, u64> {
    let mut needs = BTreeMap::new();
    for disk in &vm.disks {
        if let Some(id) = &disk.storage {
            *needs.entry(id.as_str()).or_insert(0) += u64::from(disk.size_gib) * GIB;
        }
    }
    if let Some(id) = vm.template.as_ref().and_then(|t| t.storage.as_deref()) {
        // The clone's size is the template's, which the spec does not say: require presence.
        needs.entry(id).or_insert(0);
    }
    needs
}

fn storage(vm: &VmSpec, host: &HostView, _: &Settings) -> Option<Exclusion> {
    storage_needs(vm).into_iter().find_map(|(id, need)| {
        let detail = match host.storages.iter().find(|s| s.id == id) {
            None => format!("storage {id} not present"),
            Some(s) if !s.content.contains("images") => {
                format!("storage {id} does not hold disk images")
            }
            Some(s) if s.free_bytes < need => format!(
                "storage {id} has {} GiB free, disks need {} GiB",
                s.free_bytes / GIB,
                need.div_ceil(GIB)
            ),
            Some(_) => return None,
        };
        Some((FilterName::Storage, detail))
    })
}

fn bridge(vm: &VmSpec, host: &HostView, _: &Settings) -> Option<Exclusion> {
    vm.nics.iter().enumerate().find_map(|(i, nic)| {
        (!host.bridges.contains(&nic.bridge)).then(|| {
            (
                FilterName::Bridge,
                format!("bridge {} (net{i}) not present", nic.bridge),
            )
        })
    })
}

fn template(vm: &VmSpec, host: &HostView, _: &Settings) -> Option<Exclusion> {
    let t = vm.template.as_ref()?;
    let found = host.templates.iter().any(|have| {
        t.name.as_ref().is_none_or(|n| *n == have.name) && t.vmid.is_none_or(|v| v == have.vmid)
    });
    let wanted = match (&t.name, t.vmid) {
        (Some(name), _) => format!("template {name}"),
        (None, Some(vmid)) => format!("template VMID {vmid}"),
        (None, None) => "a template".to_string(),
    };
    (!found).then(|| (FilterName::Template, format!("{wanted} not present")))
}
