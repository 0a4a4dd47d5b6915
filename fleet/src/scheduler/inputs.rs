//! What the scheduler knows about a host: a plain snapshot the caller assembles from the fleet
//! state and the agents' inventory reports, so placement stays a pure function of its inputs.

use std::collections::BTreeSet;

use protocol::fleet::{Capacity, HostState};
use protocol::identity::NodeId;
use protocol::spec::{Labels, RuleParty, VmSpec};
use serde::Serialize;

/// One host as the scheduler sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostView {
    /// The agent's node id.
    pub id: NodeId,
    /// The PVE node name.
    pub name: String,
    /// Lifecycle state; only `Online` hosts take new VMs.
    pub state: HostState,
    /// Labels matched against a VM's `placement.labels`.
    pub labels: Labels,
    /// What the host offers to guests.
    pub capacity: Capacity,
    /// What the VMs already placed on the host have committed.
    pub usage: HostUsage,
    /// Storages present on the host.
    pub storages: Vec<StorageView>,
    /// Bridges present on the host (`vmbr0`, ...).
    pub bridges: BTreeSet<String>,
    /// Templates present on the host.
    pub templates: Vec<TemplateView>,
    /// The VMs placed on the host, as the affinity rules see them.
    pub guests: Vec<GuestView>,
}

/// A VM placed on a host, as the affinity rules see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GuestView {
    /// The VM's name.
    pub name: String,
    /// Its PVE tags.
    pub tags: Vec<String>,
    /// Its `placement.apart_from`.
    pub apart_from: Vec<String>,
    /// Its `placement.together_with`.
    pub together_with: Vec<String>,
    /// The VM group it is spread with (`[[vm_group]]`, `spread`).
    pub spread_group: Option<String>,
}

impl GuestView {
    /// The guest of a spec.
    pub fn of(spec: &VmSpec) -> GuestView {
        GuestView {
            name: spec.name.clone(),
            tags: spec.tags.clone(),
            apart_from: spec.placement.apart_from.clone(),
            together_with: spec.placement.together_with.clone(),
            spread_group: spec.spread_group().map(str::to_string),
        }
    }

    /// The guest as a party of the rules.
    pub fn party(&self) -> RuleParty<'_> {
        RuleParty {
            name: &self.name,
            tags: &self.tags,
            apart_from: &self.apart_from,
            together_with: &self.together_with,
        }
    }
}

/// Resources committed on a host by the VMs placed there (static: configured sizes, as PVE's
/// static scheduler counts them, not live usage).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct HostUsage {
    /// vCPUs (cores x sockets) of the VMs placed on the host.
    pub vcpus: u64,
    /// Memory in MiB of the VMs placed on the host.
    pub memory_mib: u64,
    /// How many VMs are placed on the host.
    pub vm_count: u32,
}

/// One storage on a host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StorageView {
    /// The PVE storage id (`local-lvm`).
    pub id: String,
    /// PVE content types the storage accepts (`images`, `snippets`, ...).
    pub content: BTreeSet<String>,
    /// Free space in bytes.
    pub free_bytes: u64,
}

/// One template on a host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TemplateView {
    /// The template's VMID.
    pub vmid: u32,
    /// The template's VM name.
    pub name: String,
}

impl HostView {
    /// A host with the given capacity, online, with nothing placed, no labels and no storages,
    /// bridges or templates: useful to build views in code.
    pub fn new(id: NodeId, name: impl Into<String>, capacity: Capacity) -> HostView {
        HostView {
            id,
            name: name.into(),
            state: HostState::Online,
            labels: Labels::new(),
            capacity,
            usage: HostUsage::default(),
            storages: Vec::new(),
            bridges: BTreeSet::new(),
            templates: Vec::new(),
            guests: Vec::new(),
        }
    }
}
