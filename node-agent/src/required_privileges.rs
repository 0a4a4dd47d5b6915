//! What the agent's PVE API token must hold, per ACL path, for every operation the agent may
//! run: taken from the `permissions` of each method the agent calls in PVE's API schema (9.1
//! and 8.4), plus the checks PVE makes in code (`SDN.Use` on a bridge, PVE 8+). `pvefleet
//! doctor` compares them with `GET /access/permissions` of the token itself.
//!
//! | path | privileges | for |
//! |---|---|---|
//! | `/` | `Sys.Audit` | cluster status, PVE's HA resources |
//! | `/nodes/NODE` | `Sys.Audit` | node status, task logs |
//! | `/vms` | `VM.Audit`, `VM.Allocate`, `VM.Clone`, `VM.Config.*`, `VM.PowerMgmt`, `VM.Snapshot`, `VM.Migrate`, guest agent | the VMs |
//! | `/storage` | `Datastore.Audit`, `Datastore.AllocateSpace` | disks |
//! | `/sdn/zones/localnetwork` | `SDN.Use` | NICs on the node's bridges |
//! | `/access`, `/access/realm/pve`, `/access/groups`, `/vms` | `Sys.Modify`, `Realm.AllocateUser`, `User.Modify`, `Permissions.Modify` | the token a VM arriving from another PVE cluster is moved with |

use protocol::agent::MissingPrivilege;
use std::collections::{BTreeMap, BTreeSet};

/// One requirement: any of `any_of` on `path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// The ACL path.
    pub path: String,
    /// Privileges of which one is enough.
    pub any_of: Vec<&'static str>,
    /// What the agent cannot do without it.
    pub needed_for: &'static str,
}

/// `(path, any_of, needed_for)`; `{node}` is the agent's node.
const TABLE: &[(&str, &[&str], &str)] = &[
    (
        "/",
        &["Sys.Audit"],
        "reading the PVE cluster's status and PVE's own HA resources",
    ),
    (
        "/nodes/{node}",
        &["Sys.Audit"],
        "reading the node's status and its tasks' logs",
    ),
    (
        "/vms",
        &["VM.Audit"],
        "seeing the node's VMs and their configuration",
    ),
    ("/vms", &["VM.Allocate"], "creating and destroying VMs"),
    ("/vms", &["VM.Clone"], "cloning VMs from templates"),
    (
        "/vms",
        &["VM.Config.Disk"],
        "configuring and resizing VM disks",
    ),
    ("/vms", &["VM.Config.CPU"], "configuring VM CPUs"),
    ("/vms", &["VM.Config.Memory"], "configuring VM memory"),
    ("/vms", &["VM.Config.Network"], "configuring VM NICs"),
    (
        "/vms",
        &["VM.Config.HWType"],
        "configuring VM hardware types",
    ),
    (
        "/vms",
        &["VM.Config.Options"],
        "configuring VM options (name, tags, notes)",
    ),
    ("/vms", &["VM.Config.Cloudinit"], "configuring cloud-init"),
    (
        "/vms",
        &["VM.PowerMgmt"],
        "starting, stopping and restarting VMs",
    ),
    (
        "/vms",
        &["VM.Snapshot"],
        "taking, rolling back and deleting snapshots",
    ),
    (
        "/vms",
        &["VM.Migrate"],
        "moving VMs to other nodes and PVE clusters",
    ),
    (
        "/storage",
        &["Datastore.Audit"],
        "reading storages and their free space",
    ),
    (
        "/storage",
        &["Datastore.AllocateSpace"],
        "allocating VM disks",
    ),
    (
        "/sdn/zones/localnetwork",
        &["SDN.Use"],
        "attaching NICs to the node's bridges",
    ),
    (
        "/access",
        &["Sys.Modify"],
        "creating the role of the token a VM arriving from another PVE cluster moves with",
    ),
    (
        "/access/realm/pve",
        &["Realm.AllocateUser"],
        "creating the user of the tokens VMs arriving from other PVE clusters move with",
    ),
    (
        "/access/groups",
        &["User.Modify"],
        "minting the token a VM arriving from another PVE cluster moves with",
    ),
    (
        "/vms",
        &["Permissions.Modify"],
        "granting that token the arriving VM",
    ),
];

/// Every requirement for an agent on `node` of PVE `major` (the guest-agent privilege was
/// `VM.Monitor` before PVE 9).
pub fn requirements(node: &str, major: u32) -> Vec<Requirement> {
    let mut out: Vec<Requirement> = TABLE
        .iter()
        .map(|(path, any_of, needed_for)| Requirement {
            path: path.replace("{node}", node),
            any_of: any_of.to_vec(),
            needed_for,
        })
        .collect();
    out.push(Requirement {
        path: "/vms".into(),
        any_of: if major >= 9 {
            vec!["VM.GuestAgent.Audit", "VM.GuestAgent.Unrestricted"]
        } else {
            vec!["VM.Monitor"]
        },
        needed_for: "reading guest addresses from the QEMU guest agent",
    });
    out
}

/// The distinct paths of `requirements`, in order.
pub fn paths(requirements: &[Requirement]) -> BTreeSet<String> {
    requirements.iter().map(|r| r.path.clone()).collect()
}

/// What `held` (privileges per path) lacks of `requirements`.
pub fn missing(
    requirements: &[Requirement],
    held: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<MissingPrivilege> {
    requirements
        .iter()
        .filter(|r| {
            let on = held.get(&r.path);
            !r.any_of.iter().any(|p| on.is_some_and(|h| h.contains(*p)))
        })
        .map(|r| MissingPrivilege {
            path: r.path.clone(),
            privileges: r.any_of.iter().map(|p| (*p).to_string()).collect(),
            needed_for: r.needed_for.to_string(),
        })
        .collect()
}

/// The major version of a `pve-manager` version string (`9.1.3` → 9; 0 when unreadable).
pub fn major_of(version: &str) -> u32 {
    version
        .split('.')
        .next()
        .and_then(|m| m.trim().parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_held(reqs: &[Requirement]) -> BTreeMap<String, BTreeSet<String>> {
        let mut held: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for r in reqs {
            held.entry(r.path.clone())
                .or_default()
                .insert(r.any_of[0].to_string());
        }
        held
    }

    #[test]
    fn a_token_holding_everything_lacks_nothing() {
        let reqs = requirements("pve1", 9);
        assert!(missing(&reqs, &all_held(&reqs)).is_empty());
        assert!(paths(&reqs).contains("/nodes/pve1"));
    }

    #[test]
    fn each_missing_privilege_is_named_with_its_path_and_use() {
        let reqs = requirements("pve1", 9);
        let mut held = all_held(&reqs);
        held.get_mut("/vms").unwrap().remove("VM.Snapshot");
        held.remove("/nodes/pve1");
        let m = missing(&reqs, &held);
        assert_eq!(m.len(), 2, "{m:?}");
        assert_eq!(m[0].path, "/nodes/pve1");
        assert_eq!(m[0].privileges, ["Sys.Audit"]);
        assert_eq!(m[1].path, "/vms");
        assert_eq!(m[1].privileges, ["VM.Snapshot"]);
        assert!(m[1].needed_for.contains("snapshots"));
    }

    #[test]
    fn any_of_the_guest_agent_privileges_will_do_and_pve_8_wants_vm_monitor() {
        let reqs = requirements("pve1", 9);
        let mut held = all_held(&reqs);
        let vms = held.get_mut("/vms").unwrap();
        vms.remove("VM.GuestAgent.Audit");
        vms.insert("VM.GuestAgent.Unrestricted".into());
        assert!(missing(&reqs, &held).is_empty());
        let old = requirements("pve1", 8);
        assert!(old.iter().any(|r| r.any_of == ["VM.Monitor"]));
        assert_eq!(major_of("8.4.1"), 8);
        assert_eq!(major_of("x"), 0);
    }
}
