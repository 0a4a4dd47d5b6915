//! Host maintenance end to end, every part a real process: three coordinators, three agents
//! on the nodes of ONE simulated PVE cluster. Twenty running guests on one node (made there
//! before the other nodes joined); `host maintenance enable --wait` drains it: every guest
//! moves by live migration to the other nodes, never two running copies (sampled from the
//! simulator while it drains), nothing placed on the node meanwhile; `disable --wait` brings
//! every one of them back.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use std::process::Output;
use std::time::Duration;

use protocol::fleet::VmPhase;
use protocol::spec::{DiskOptions, DiskSpec, VmSpec};
use pvefleet_tests::fleet::{Fleet, HostOptions, PveAccess, PveClusterOptions, SimControl};

const NODES: [&str; 3] = ["pve-w1", "pve-w2", "pve-w3"];
const GUESTS: usize = 20;

fn guest(i: usize) -> VmSpec {
    let mut spec = VmSpec::new(format!("g-{i:02}"), 256);
    spec.disks = vec![DiskSpec {
        slot: "scsi0".into(),
        storage: Some(if i.is_multiple_of(2) {
            "local-lvm".into()
        } else {
            lab::pve_cluster::SHARED_STORAGE.into()
        }),
        size_gib: 2,
        options: DiskOptions::default(),
    }];
    spec
}

/// `pvefleet host maintenance ACTION HOST --wait`, the simulator sampled meanwhile: at most
/// one running copy of every guest, all the time.
fn maintenance_sampled(fleet: &Fleet, control: &SimControl, action: &str, host: &str) -> Output {
    let args = [
        "host",
        "maintenance",
        action,
        host,
        "--wait",
        "--wait-timeout",
        "4m",
    ];
    fleet.cli_sampled(&args, control, Duration::from_secs(300))
}

fn on_node(fleet: &Fleet, control: &SimControl, node: &str) -> usize {
    fleet
        .running_in_pve(control)
        .values()
        .filter(|nodes| nodes.as_slice() == [node.to_string()])
        .count()
}

#[test]
fn a_host_with_twenty_guests_is_drained_by_live_migration_and_gets_them_back() {
    let mut fleet = Fleet::start(3);
    fleet.add_pve_cluster(&PveClusterOptions::new("alpha", NODES));
    fleet.add_host(HostOptions::new(NODES[0], PveAccess::Https).in_pve_cluster("alpha"));
    fleet.apply_resources();
    let specs: Vec<VmSpec> = (0..GUESTS).map(guest).collect();
    fleet.apply_vms(&specs);
    fleet.wait_vms("every guest running", Duration::from_secs(180), |v| {
        v.len() == GUESTS && v.iter().all(|v| v.status.phase == VmPhase::Running)
    });
    for node in &NODES[1..] {
        fleet.add_host(HostOptions::new(*node, PveAccess::Https).in_pve_cluster("alpha"));
    }
    let control = fleet.pve_control("alpha");
    assert_eq!(on_node(&fleet, &control, NODES[0]), GUESTS);

    let out = maintenance_sampled(&fleet, &control, "enable", NODES[0]);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(&format!("draining {}", NODES[0])),
        "{stderr}"
    );
    let reply: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_default();
    assert_eq!(reply["state"], "maintenance", "{stdout}");
    assert_eq!(reply["left"], serde_json::json!([]), "{stdout}");
    assert_eq!(
        reply["away"].as_array().map(Vec::len),
        Some(GUESTS),
        "{stdout}"
    );
    assert_eq!(on_node(&fleet, &control, NODES[0]), 0);
    let pve = fleet.running_in_pve(&control);
    assert_eq!(pve.len(), GUESTS, "{pve:?}");
    // Spread over both other nodes, not piled on one.
    for node in &NODES[1..] {
        assert!(on_node(&fleet, &control, node) >= GUESTS / 4, "{pve:?}");
    }
    // The fleet agrees, and a new VM is never placed on the node in maintenance.
    let hosts = fleet.cluster.cli_json(&["host", "ls"]);
    let maintained = hosts["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["host"]["name"] == NODES[0])
        .map(|h| h["host"]["id"].as_u64().unwrap())
        .unwrap();
    fleet.apply_vms(&[guest(GUESTS)]);
    fleet.wait_vms("the new guest running", Duration::from_secs(60), |v| {
        v.iter()
            .any(|v| v.spec.name == format!("g-{GUESTS:02}") && v.status.phase == VmPhase::Running)
    });
    let vms = fleet.vms().unwrap();
    assert!(vms.iter().all(|v| v.assignment.host != Some(maintained)));

    let out = maintenance_sampled(&fleet, &control, "disable", NODES[0]);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reply: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_default();
    assert_eq!(reply["state"], "online", "{stdout}");
    assert_eq!(reply["away"], serde_json::json!([]), "{stdout}");
    // Every drained guest is home; the one made during the maintenance stays where it is.
    assert_eq!(on_node(&fleet, &control, NODES[0]), GUESTS);
    let vms = fleet.vms().unwrap();
    let home = vms
        .iter()
        .filter(|v| v.assignment.host == Some(maintained))
        .count();
    assert_eq!(home, GUESTS);
}
