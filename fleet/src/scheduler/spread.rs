//! Spreading a VM group's members (`[[vm_group]]`, `spread = true`, the default) among the
//! hosts every other filter and rule let through: only the hosts with the fewest members of
//! the VM's group stay. A preference, never a reason to wait: some eligible host always stays,
//! so a group larger than the fleet doubles up instead of waiting. What it excludes it names.

use std::collections::BTreeMap;

use protocol::identity::NodeId;
use protocol::spec::VmSpec;

use super::filters::{Exclusion, FilterName};
use super::inputs::HostView;

/// The eligible hosts spreading excludes, with why.
pub(crate) fn exclusions(vm: &VmSpec, eligible: &[&HostView]) -> Vec<(NodeId, Exclusion)> {
    let Some(group) = vm.spread_group() else {
        return Vec::new();
    };
    let count = |h: &HostView| {
        h.guests
            .iter()
            .filter(|g| g.name != vm.name && g.spread_group.as_deref() == Some(group))
            .count()
    };
    let counts: BTreeMap<NodeId, usize> = eligible.iter().map(|h| (h.id, count(h))).collect();
    let Some(&fewest) = counts.values().min() else {
        return Vec::new();
    };
    let best: Vec<&str> = eligible
        .iter()
        .filter(|h| counts.get(&h.id) == Some(&fewest))
        .map(|h| h.name.as_str())
        .collect();
    eligible
        .iter()
        .filter_map(|h| {
            let here = *counts.get(&h.id)?;
            (here > fewest).then(|| {
                (
                    h.id,
                    (
                        FilterName::Spread,
                        format!(
                            "{here} member(s) of group {group} here; {} {} {fewest}",
                            best.join(", "),
                            if best.len() == 1 { "has" } else { "have" }
                        ),
                    ),
                )
            })
        })
        .collect()
}
