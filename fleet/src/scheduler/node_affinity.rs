//! Node affinity (`placement.node_affinity`, PVE HA 9's node-affinity rule) among the hosts
//! the other filters let through: only the listed hosts of the highest priority present stay;
//! with none of them eligible, a strict rule leaves no host (the VM waits) and a loose one
//! leaves every eligible host. What it excludes it names, so `vm explain` says why.

use protocol::identity::NodeId;
use protocol::spec::VmSpec;

use super::filters::{Exclusion, FilterName};
use super::inputs::HostView;

/// The eligible hosts node affinity excludes, with why.
pub(crate) fn exclusions(vm: &VmSpec, eligible: &[&HostView]) -> Vec<(NodeId, Exclusion)> {
    let Some(na) = &vm.placement.node_affinity else {
        return Vec::new();
    };
    let best = eligible.iter().filter_map(|h| na.priority(&h.name)).max();
    let preferred = |prio: u32| -> Vec<&str> {
        eligible
            .iter()
            .filter(|h| na.priority(&h.name) == Some(prio))
            .map(|h| h.name.as_str())
            .collect()
    };
    match best {
        Some(top) => {
            let names = preferred(top).join(", ");
            eligible
                .iter()
                .filter(|h| na.priority(&h.name) != Some(top))
                .map(|h| {
                    let mine = na
                        .priority(&h.name)
                        .map_or_else(|| "not listed".to_string(), |p| format!("priority {p}"));
                    (
                        h.id,
                        (
                            FilterName::NodeAffinity,
                            format!("{names} (priority {top}) can take it; this host is {mine}"),
                        ),
                    )
                })
                .collect()
        }
        None if na.strict => {
            let listed: Vec<&str> = na.nodes.keys().map(String::as_str).collect();
            eligible
                .iter()
                .map(|h| {
                    (
                        h.id,
                        (
                            FilterName::NodeAffinity,
                            format!(
                                "strict: only {} may take it, and none can now",
                                listed.join(", ")
                            ),
                        ),
                    )
                })
                .collect()
        }
        None => Vec::new(),
    }
}
