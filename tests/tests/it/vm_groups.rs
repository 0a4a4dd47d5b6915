//! VM groups end to end, every part a real process: three coordinators, three agents on the
//! nodes of one simulated PVE cluster, one of them far bigger than the others. A file with
//! `[vm_defaults]` and a `[[vm_group]]` of three is applied with `vm apply -f`: three members
//! run, one per node (spread, where the scores alone would pile them on the big node); `vm scale
//! web 5` adds web-4 and web-5 from the group's spec; `vm scale web 2` deletes web-3..5;
//! applying the file again (replicas 3) brings web-3 back.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use std::collections::BTreeSet;
use std::time::Duration;

use protocol::fleet::{VmPhase, VmRecord};
use pvefleet_tests::fleet::{Fleet, HostOptions, PveAccess, PveClusterOptions};

const NODES: [&str; 3] = ["pve-g1", "pve-g2", "pve-g3"];

const FILE: &str = r#"
[vm_defaults]
memory_mib = 256
cores = 1

[[vm_group]]
name = "web"
replicas = 3
tags = ["web"]
disks = [{ slot = "scsi0", storage = "shared", size_gib = 2 }]
"#;

fn members(vms: &[VmRecord]) -> BTreeSet<String> {
    vms.iter()
        .filter(|v| v.spec.group.as_ref().is_some_and(|g| g.group == "web") && !v.deleting)
        .map(|v| v.spec.name.clone())
        .collect()
}

fn running(vms: &[VmRecord], names: &[&str]) -> bool {
    let wanted: BTreeSet<String> = names.iter().map(|n| n.to_string()).collect();
    members(vms) == wanted
        && vms
            .iter()
            .filter(|v| wanted.contains(&v.spec.name))
            .all(|v| v.status.phase == VmPhase::Running)
        && vms.iter().all(|v| wanted.contains(&v.spec.name))
}

#[test]
fn a_group_is_applied_spread_scaled_up_and_down_and_applied_again() {
    let mut fleet = Fleet::start(3);
    fleet.add_pve_cluster(&PveClusterOptions::new("alpha", NODES));
    // pve-g1 is far bigger: by the scores alone every member would go there.
    for node in NODES {
        let mut opts = HostOptions::new(node, PveAccess::Https).in_pve_cluster("alpha");
        if node == NODES[0] {
            opts.cpus = 256;
            opts.memory_gib = 2048;
        }
        fleet.add_host(opts);
    }
    fleet.apply_resources();
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), FILE).unwrap();
    let path = file.path().to_str().unwrap();

    fleet.cluster.cli_json(&["vm", "apply", "-f", path]);
    let vms = fleet.wait_vms("three members running", Duration::from_secs(120), |v| {
        running(v, &["web-1", "web-2", "web-3"])
    });
    // Spread: one per node, though the scores prefer pve-g1 for each.
    let hosts: BTreeSet<u64> = vms.iter().filter_map(|v| v.assignment.host).collect();
    assert_eq!(hosts.len(), 3, "{vms:#?}");
    let g = vms[0].spec.group.clone().unwrap();
    assert_eq!((g.pattern.as_str(), g.spread), ("web-{n}", true));

    let out = fleet.cluster.cli(&["vm", "scale", "web", "5"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let vms = fleet.wait_vms("five members running", Duration::from_secs(120), |v| {
        running(v, &["web-1", "web-2", "web-3", "web-4", "web-5"])
    });
    let web5 = vms.iter().find(|v| v.spec.name == "web-5").unwrap();
    assert_eq!(web5.spec.memory_mib, 256);
    assert_eq!(web5.spec.tags, ["web"]);
    assert_eq!(web5.spec.group.as_ref().unwrap().index, 5);

    fleet.cluster.cli_json(&["vm", "scale", "web", "2"]);
    fleet.wait_vms("two members left", Duration::from_secs(120), |v| {
        running(v, &["web-1", "web-2"])
    });

    // The file says three: applying it again brings web-3 back.
    fleet.cluster.cli_json(&["vm", "apply", "-f", path]);
    fleet.wait_vms("three members again", Duration::from_secs(120), |v| {
        running(v, &["web-1", "web-2", "web-3"])
    });

    // A group nobody belongs to is named as unknown.
    let out = fleet.cluster.cli(&["vm", "scale", "nope", "2"]);
    assert_eq!(out.status.code(), Some(4));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no VM belongs to group \"nope\""),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
