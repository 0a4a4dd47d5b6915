//! Whose VM is this? The agent changes a VM only when it is the fleet's VM of that name: it
//! carries the ownership tag, or (the window between a clone and its first configure, which
//! a crash may leave behind) the managed-notes block the agent passes to the clone. Anything
//! else at the VMID is someone else's and is left alone.

use protocol::agent::OWNERSHIP_TAG;
use pve::types::VmConfig;

use super::notes;

/// The verdict on a VM found at the VMID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ownership {
    /// The fleet's VM of this name.
    Owned,
    /// Not ours; the reason says why.
    Foreign(String),
}

/// Whether the VM with config `cfg` is the fleet's VM `name`.
pub(crate) fn ownership(cfg: &VmConfig, name: &str) -> Ownership {
    let pve_name = cfg.name();
    if pve_name.as_deref() != Some(name) {
        return Ownership::Foreign(match pve_name {
            Some(other) => format!("it is named '{other}', not '{name}'"),
            None => format!("it has no name (expected '{name}')"),
        });
    }
    let tagged = cfg
        .tags()
        .is_ok_and(|tags| tags.iter().any(|t| t.eq_ignore_ascii_case(OWNERSHIP_TAG)));
    let noted = cfg
        .description()
        .and_then(|d| notes::parse(&d))
        .is_some_and(|n| n.vm == name);
    if tagged || noted {
        Ownership::Owned
    } else {
        Ownership::Foreign(format!(
            "it lacks the ownership tag '{OWNERSHIP_TAG}': the fleet never touches VMs it did not create"
        ))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cfg(v: serde_json::Value) -> VmConfig {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn tag_or_own_notes_with_the_same_name_make_a_vm_ours() {
        let tagged = cfg(json!({"name": "web-1", "tags": "prod;pvefleet"}));
        assert_eq!(ownership(&tagged, "web-1"), Ownership::Owned);
        let noted =
            cfg(json!({"name": "web-1", "description": notes::render_block("web-1", 1, false)}));
        assert_eq!(ownership(&noted, "web-1"), Ownership::Owned);
    }

    #[test]
    fn untagged_renamed_or_foreign_notes_are_not_ours() {
        let cases = [
            (json!({"name": "web-1", "tags": "prod"}), "ownership tag"),
            (
                json!({"name": "web-2", "tags": "pvefleet"}),
                "named 'web-2'",
            ),
            (json!({"tags": "pvefleet"}), "no name"),
            (
                json!({"name": "web-1", "description": notes::render_block("web-9", 1, false)}),
                "ownership tag",
            ),
        ];
        for (v, why) in cases {
            match ownership(&cfg(v.clone()), "web-1") {
                Ownership::Foreign(reason) => assert!(reason.contains(why), "{v}: {reason}"),
                Ownership::Owned => panic!("{v} taken as ours"),
            }
        }
    }
}
