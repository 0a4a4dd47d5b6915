//! `vm migrate` end to end, every part a real process: three coordinators, two agents on the
//! nodes of ONE simulated PVE cluster. A running VM with a local disk and one on shared
//! storage are moved with PVE's migration (live, local disks copied): same VMID, running on
//! the target, the fleet's host following only once the source agent reported the move, and
//! never two running copies (sampled from the simulator while the move runs). A move PVE
//! fails leaves the VM where it was, running, and `--wait` exits non-zero with PVE's reason.
//! What cannot move is refused naming why.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use std::collections::BTreeMap;
use std::process::Output;
use std::time::Duration;

use protocol::fleet::VmPhase;
use protocol::spec::{DiskOptions, DiskSpec, VmSpec};
use pvefleet_tests::fleet::{Fleet, HostOptions, PveAccess, PveClusterOptions, SimControl};

const NODES: [&str; 2] = ["pve-m1", "pve-m2"];

fn vm(name: &str, storage: &str) -> VmSpec {
    let mut spec = VmSpec::new(name, 512);
    spec.disks = vec![DiskSpec {
        slot: "scsi0".into(),
        storage: Some(storage.into()),
        size_gib: 4,
        options: DiskOptions::default(),
    }];
    spec
}

/// `pvefleet vm migrate NAME --to TO --wait`, the simulator sampled meanwhile for two copies.
fn migrate_sampled(fleet: &Fleet, control: &SimControl, name: &str, to: &str) -> Output {
    let args = [
        "vm",
        "migrate",
        name,
        "--to",
        to,
        "--wait",
        "--wait-timeout",
        "2m",
    ];
    fleet.cli_sampled(&args, control, Duration::from_secs(150))
}

#[test]
fn running_vms_move_live_within_their_pve_cluster_and_a_failed_move_leaves_them_running() {
    let mut fleet = Fleet::start(3);
    fleet.add_pve_cluster(&PveClusterOptions::new("alpha", NODES));
    for node in NODES {
        fleet.add_host(HostOptions::new(node, PveAccess::Https).in_pve_cluster("alpha"));
    }
    fleet.apply_resources();
    fleet.apply_vms(&[
        vm("local-1", "local-lvm"),
        vm("shared-1", lab::pve_cluster::SHARED_STORAGE),
    ]);
    fleet.wait_vms("both running", Duration::from_secs(120), |v| {
        v.len() == 2 && v.iter().all(|v| v.status.phase == VmPhase::Running)
    });
    let control = fleet.pve_control("alpha");
    let vmids: BTreeMap<String, u32> = fleet
        .vms()
        .unwrap()
        .iter()
        .map(|v| (v.spec.name.clone(), v.assignment.vmid.unwrap()))
        .collect();

    // A dry run says where it would go and how the other nodes were judged; nothing moves.
    let from = fleet.host_name_of("shared-1");
    let plan = fleet
        .cluster
        .cli_json(&["vm", "migrate", "shared-1", "--dry-run"]);
    let to = plan["to"].as_str().unwrap().to_string();
    assert!(NODES.contains(&to.as_str()) && to != from, "{plan}");
    let judged: Vec<&str> = plan["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["host_name"].as_str().unwrap())
        .collect();
    assert_eq!(judged.len(), NODES.len() - 1, "{plan}");
    assert!(!judged.contains(&from.as_str()), "{plan}");
    assert_eq!(judged[0], to, "the best first: {plan}");
    assert!(plan["why"].as_str().unwrap().contains("eligible"), "{plan}");
    assert_eq!(fleet.host_name_of("shared-1"), from);
    let plan = fleet
        .cluster
        .cli_json(&["vm", "migrate", "shared-1", "--to", &from, "--dry-run"]);
    assert!(plan["to"].is_null(), "{plan}");
    assert!(plan["why"].as_str().unwrap().contains("already"), "{plan}");

    for name in ["local-1", "shared-1"] {
        let from = fleet.host_name_of(name);
        let to = NODES.iter().find(|n| **n != from).unwrap().to_string();
        let out = migrate_sampled(&fleet, &control, name, &to);
        assert!(
            out.status.success(),
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(&format!("migrated from {from} to {to}")),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // PVE: on the target, running, same VMID; the fleet: the target is its host.
        let pve = fleet.running_in_pve(&control);
        assert_eq!(pve.get(name), Some(&vec![to.clone()]), "{pve:?}");
        let moved = fleet
            .block_on(control.vms())
            .unwrap()
            .into_iter()
            .find(|v| v.name.as_deref() == Some(name))
            .unwrap();
        assert_eq!(moved.vmid, vmids[name]);
        assert_eq!(fleet.host_name_of(name), to);
    }

    // PVE fails the next migration task: the VM stays where it is, running, and the CLI says
    // why with PVE's words.
    let from = fleet.host_name_of("local-1");
    let to = NODES.iter().find(|n| **n != from).unwrap().to_string();
    fleet
        .block_on(control.fail_tasks(
            Some(vmids["local-1"]),
            "qmigrate",
            "migration aborted: injected by the test",
            Some(1),
        ))
        .unwrap();
    let out = migrate_sampled(&fleet, &control, "local-1", &to);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("failed, it stays on") && stderr.contains("injected by the test"),
        "{stderr}"
    );
    assert_eq!(fleet.host_name_of("local-1"), from);
    let pve = fleet.running_in_pve(&control);
    assert_eq!(pve.get("local-1"), Some(&vec![from.clone()]), "{pve:?}");

    // What cannot move is refused, naming why.
    let refused = |args: &[&str], want: &str| {
        let out = fleet.cluster.cli(args);
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(
            !out.status.success() && stderr.contains(want),
            "{args:?}: {stderr}"
        );
    };
    refused(&["vm", "migrate", "local-1", "--to", &from], "is on");
    refused(
        &["vm", "migrate", "local-1", "--to", "pve-x"],
        "is not another online host known to the fleet",
    );
    refused(&["vm", "migrate", "nope"], "no VM named");
}
