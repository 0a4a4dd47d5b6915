//! The hard filters: a host that fails one never takes the VM, whatever its score. Each filter
//! names itself and says, in words an operator can act on, what was missing.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use protocol::fleet::{HostState, Settings};
use protocol::spec::{Labels, VmSpec};
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

/// The hard filters for one VM, tried on every host in turn: what the VM asks for is worked out
/// once, not once per host, and a detail that reads the same for many hosts (a missing template,
/// a label with the same wrong value) is written once and copied.
///
/// The filters, in the order they are tried (cheap, operator-set ones first): state, allowed
/// and excluded hosts, labels ([`Self::constraint_exclusion`]); then, after the affinity rules,
/// VM limit, CPU, memory, storage, bridge, template ([`Self::resource_exclusion`]).
pub(crate) struct HostFilters<'a> {
    vm: &'a VmSpec,
    settings: &'a Settings,
    vcpus: u64,
    labels: Vec<(&'a str, &'a str)>,
    /// Bytes each named storage must have free, by storage id.
    storage_needs: Vec<(&'a str, u64)>,
    /// Details written so far, by what they depend on.
    details: Vec<(DetailKey<'a>, String)>,
}

/// What a reusable detail depends on: equal keys, equal details.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DetailKey<'a> {
    State(HostState),
    AllowedHosts,
    ExcludedHosts,
    Label { key: &'a str, have: Option<&'a str> },
    StorageMissing(&'a str),
    StorageContent(&'a str),
    Bridge(usize),
    Template,
}

/// At most this many details are kept: enough for every host-independent detail and a few
/// label values, without a long search when hosts differ in every value.
const KEPT_DETAILS: usize = 16;

impl<'a> HostFilters<'a> {
    /// The filters for `vm` under `settings`.
    pub(crate) fn new(vm: &'a VmSpec, settings: &'a Settings) -> HostFilters<'a> {
        HostFilters {
            vm,
            settings,
            vcpus: vm_vcpus(vm),
            labels: vm
                .placement
                .labels
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect(),
            storage_needs: storage_needs(vm).into_iter().collect(),
            details: Vec::new(),
        }
    }

    /// The first of the host's own constraints it fails (state, allowed and excluded hosts,
    /// labels): tried before the affinity rules.
    pub(crate) fn constraint_exclusion(&mut self, host: &'a HostView) -> Option<Exclusion> {
        self.state(host)
            .or_else(|| self.allowed(host))
            .or_else(|| self.excluded(host))
            .or_else(|| self.labels(host))
    }

    /// The first resource filter the host fails (VM limit, CPU, memory, storage, bridge,
    /// template): tried after the affinity rules.
    pub(crate) fn resource_exclusion(&mut self, host: &'a HostView) -> Option<Exclusion> {
        self.vm_limit(host)
            .or_else(|| self.cpu(host))
            .or_else(|| self.memory(host))
            .or_else(|| self.storage(host))
            .or_else(|| self.bridge(host))
            .or_else(|| self.template(host))
    }

    /// The detail for `key`: written by `write` the first time, copied after.
    fn detail(&mut self, key: DetailKey<'a>, write: impl FnOnce() -> String) -> String {
        if let Some((_, detail)) = self.details.iter().find(|(k, _)| *k == key) {
            return detail.clone();
        }
        let detail = write();
        if self.details.len() < KEPT_DETAILS {
            self.details.push((key, detail.clone()));
        }
        detail
    }

    fn state(&mut self, host: &HostView) -> Option<Exclusion> {
        let state = host.state;
        let filter = match state {
            HostState::Online => return None,
            HostState::Maintenance => FilterName::Maintenance,
            _ => FilterName::HostState,
        };
        let detail = self.detail(DetailKey::State(state), || match state {
            HostState::Maintenance => "host is in maintenance".to_string(),
            other => format!("host is {other}, not online"),
        });
        Some((filter, detail))
    }

    fn allowed(&mut self, host: &HostView) -> Option<Exclusion> {
        let hosts = &self.vm.placement.hosts;
        if hosts.is_empty() || hosts.contains(&host.name) {
            return None;
        }
        let detail = self.detail(DetailKey::AllowedHosts, || {
            format!("not among the allowed hosts [{}]", hosts.join(", "))
        });
        Some((FilterName::AllowedHosts, detail))
    }

    fn excluded(&mut self, host: &HostView) -> Option<Exclusion> {
        if !self.vm.placement.exclude_hosts.contains(&host.name) {
            return None;
        }
        let detail = self.detail(DetailKey::ExcludedHosts, || {
            "excluded by placement.exclude_hosts".to_string()
        });
        Some((FilterName::ExcludedHosts, detail))
    }

    fn labels(&mut self, host: &'a HostView) -> Option<Exclusion> {
        let (key, want, have) = self.labels.iter().find_map(|&(key, want)| {
            let have = lookup(&host.labels, key);
            (have != Some(want)).then_some((key, want, have))
        })?;
        let detail = self.detail(DetailKey::Label { key, have }, || match have {
            Some(have) => format!("label {key} is \"{have}\", VM requires \"{want}\""),
            None => format!("label {key} missing, VM requires \"{want}\""),
        });
        Some((FilterName::Labels, detail))
    }

    fn vm_limit(&self, host: &HostView) -> Option<Exclusion> {
        let max = self.settings.max_vms_per_host?;
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

    fn cpu(&self, host: &HostView) -> Option<Exclusion> {
        let settings = self.settings;
        let need = self.vcpus;
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

    fn memory(&self, host: &HostView) -> Option<Exclusion> {
        let (vm, settings) = (self.vm, self.settings);
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

    fn storage(&mut self, host: &HostView) -> Option<Exclusion> {
        for i in 0..self.storage_needs.len() {
            let (id, need) = self.storage_needs[i];
            let detail = match host.storages.iter().find(|s| s.id == id) {
                None => self.detail(DetailKey::StorageMissing(id), || {
                    format!("storage {id} not present")
                }),
                Some(s) if !s.content.contains("images") => self
                    .detail(DetailKey::StorageContent(id), || {
                        format!("storage {id} does not hold disk images")
                    }),
                Some(s) if s.free_bytes < need => format!(
                    "storage {id} has {} GiB free, disks need {} GiB",
                    s.free_bytes / GIB,
                    need.div_ceil(GIB)
                ),
                Some(_) => continue,
            };
            return Some((FilterName::Storage, detail));
        }
        None
    }

    fn bridge(&mut self, host: &HostView) -> Option<Exclusion> {
        let (i, nic) = self
            .vm
            .nics
            .iter()
            .enumerate()
            .find(|(_, nic)| !holds(&host.bridges, &nic.bridge))?;
        let detail = self.detail(DetailKey::Bridge(i), || {
            format!("bridge {} (net{i}) not present", nic.bridge)
        });
        Some((FilterName::Bridge, detail))
    }

    fn template(&mut self, host: &HostView) -> Option<Exclusion> {
        let t = self.vm.template.as_ref()?;
        let found = host.templates.iter().any(|have| {
            t.name.as_ref().is_none_or(|n| *n == have.name) && t.vmid.is_none_or(|v| v == have.vmid)
        });
        if found {
            return None;
        }
        let detail = self.detail(DetailKey::Template, || {
            let wanted = match (&t.name, t.vmid) {
                (Some(name), _) => format!("template {name}"),
                (None, Some(vmid)) => format!("template VMID {vmid}"),
                (None, None) => "a template".to_string(),
            };
            format!("{wanted} not present")
        });
        Some((FilterName::Template, detail))
    }
}

/// Up to this many entries, a set or map is scanned rather than searched: a search compares
/// by order (a call into `memcmp` per entry it passes), a scan by length first.
const SCANNED: usize = 8;

/// Whether `set` holds `item`.
fn holds(set: &BTreeSet<String>, item: &str) -> bool {
    if set.len() <= SCANNED {
        set.iter().any(|entry| entry == item)
    } else {
        set.contains(item)
    }
}

/// The value of `key` among `labels`.
fn lookup<'a>(labels: &'a Labels, key: &str) -> Option<&'a str> {
    if labels.len() <= SCANNED {
        labels
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    } else {
        labels.get(key).map(String::as_str)
    }
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
