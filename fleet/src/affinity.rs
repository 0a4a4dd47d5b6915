//! The affinity groups of the fleet (VMs tied by `placement.together_with`, transitively) as
//! the placers need them: which members go where a VM goes. Built once per pass; a fleet
//! without affinity rules pays nothing.

use protocol::spec::{RuleParty, VmSpec, together_group};

use crate::state::FleetState;

/// Every VM spec, and those with affinity rules of their own.
pub struct AffinityGroups<'a> {
    all: Vec<&'a VmSpec>,
    ruled: Vec<&'a VmSpec>,
}

impl<'a> AffinityGroups<'a> {
    /// The groups of `state`'s VMs (those being deleted are in no group).
    pub fn of(state: &'a FleetState) -> AffinityGroups<'a> {
        let all: Vec<&VmSpec> = state
            .vms()
            .values()
            .filter(|r| !r.deleting)
            .map(|r| &r.spec)
            .collect();
        let ruled = all
            .iter()
            .copied()
            .filter(|s| !s.placement.together_with.is_empty())
            .collect();
        AffinityGroups { all, ruled }
    }

    /// The other members of `vm`'s group (empty when no rule ties it to any VM).
    pub fn members(&self, vm: &VmSpec) -> Vec<&'a VmSpec> {
        let me = RuleParty::of(vm);
        let tied = !vm.placement.together_with.is_empty()
            || self
                .ruled
                .iter()
                .any(|r| RuleParty::of(r).together(&me).is_some());
        if tied {
            together_group(vm, &self.all)
        } else {
            Vec::new()
        }
    }
}
