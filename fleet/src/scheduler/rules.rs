//! The affinity rules as hard filters (`placement.apart_from`, `placement.together_with`),
//! strict like PVE's resource-affinity rules: a host that breaks one never takes the VM, even
//! when that leaves the VM waiting. Each rule holds both ways ([`RuleParty`]), so a VM that no
//! rule of its own names is still kept off (or on) a host by the rules of the VMs there.
//!
//! Anti-affinity looks at the guests of the host being judged. Affinity looks at every host:
//! once a partner is placed, only its host will do; with partners on several hosts, only the
//! host most of them are on (ties: the host name first in order), as PVE's
//! `apply_positive_resource_affinity` keeps the most populated node; the fleet then gathers the
//! others there (`crate::gather`).

use protocol::identity::NodeId;
use protocol::spec::{RuleParty, VmSpec};

use super::filters::{Exclusion, FilterName};
use super::inputs::HostView;

/// Where the VM's affinity partners are placed, and the partners still to be placed.
#[derive(Debug, Clone, Default)]
pub(crate) struct Partners<'a> {
    /// Each placed partner: its host's id and name, its name, and the rule in words.
    placed: Vec<(NodeId, String, String, String)>,
    /// The members of the VM's group that go where it goes (not placed, or being moved with
    /// it): their own host constraints and anti-affinity bind the VM's host too.
    pending: &'a [&'a VmSpec],
}

impl Partners<'_> {
    /// The host the placed partners gather on: the one most of them are on, ties broken by
    /// the host name (PVE sorts nodes by name, then by count); `None` with none placed.
    fn gather_host(&self) -> Option<NodeId> {
        let mut count: std::collections::BTreeMap<(&str, NodeId), usize> = Default::default();
        for (id, name, ..) in &self.placed {
            *count.entry((name.as_str(), *id)).or_default() += 1;
        }
        count
            .into_iter()
            .min_by_key(|((name, _), n)| (std::cmp::Reverse(*n), *name))
            .map(|((_, id), _)| id)
    }
}

/// The placed VMs an affinity rule ties `vm` to, on any host, and the group's members
/// `pending` placement with it.
pub(crate) fn partners<'a>(
    vm: &VmSpec,
    pending: &'a [&'a VmSpec],
    hosts: &[&HostView],
) -> Partners<'a> {
    let me = RuleParty::of(vm);
    let mut placed = Vec::new();
    for host in hosts {
        for guest in &host.guests {
            if let Some(rule) = me.together(&guest.party()) {
                placed.push((host.id, host.name.clone(), guest.name.clone(), rule));
            }
        }
    }
    Partners { placed, pending }
}

/// The rule `host` breaks for `vm`, if any.
pub(crate) fn exclusion(
    vm: &VmSpec,
    host: &HostView,
    partners: &Partners<'_>,
) -> Option<Exclusion> {
    let me = RuleParty::of(vm);
    for guest in &host.guests {
        if let Some(rule) = me.apart(&guest.party()) {
            return Some((
                FilterName::AntiAffinity,
                format!("vm {} is placed here ({rule})", guest.name),
            ));
        }
    }
    if let Some(gather) = partners.gather_host()
        && gather != host.id
        && let Some((_, host_name, guest, rule)) =
            partners.placed.iter().find(|(id, ..)| *id == gather)
    {
        return Some((
            FilterName::Affinity,
            format!("vm {guest} is on {host_name} ({rule})"),
        ));
    }
    partners
        .pending
        .iter()
        .find_map(|member| member_refuses(member, host))
        .map(|(member, why)| {
            (
                FilterName::Affinity,
                format!("vm {member}, kept together with vm {}, {why}", vm.name),
            )
        })
}

/// Why a group member that goes where the VM goes could not be on `host`.
fn member_refuses<'a>(member: &'a VmSpec, host: &HostView) -> Option<(&'a str, String)> {
    let p = &member.placement;
    let why = if !p.hosts.is_empty() && !p.hosts.contains(&host.name) {
        format!("may only run on [{}]", p.hosts.join(", "))
    } else if p.exclude_hosts.contains(&host.name) {
        "excludes this host".to_string()
    } else if let Some((key, value)) = p
        .labels
        .iter()
        .find(|(k, v)| host.labels.get(*k) != Some(*v))
    {
        format!("needs label {key}={value}")
    } else {
        let me = RuleParty::of(member);
        let (guest, rule) = host
            .guests
            .iter()
            .find_map(|g| me.apart(&g.party()).map(|rule| (&g.name, rule)))?;
        format!("is kept apart from vm {guest} here ({rule})")
    };
    Some((&member.name, why))
}
