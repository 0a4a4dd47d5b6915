//! Moves between PVE clusters end to end, every part a real process: three coordinators, two
//! agents on two simulated PVE clusters (two `pve-sim` processes that talk to each other over
//! HTTPS, as two datacenters do). A running VM with a local disk moves with PVE's remote
//! migration (the target's agent mints a token, the fleet hands it to the source's agent):
//! same VMID, running on the target, gone from the source, and never running in both
//! clusters (sampled across both simulators while it moves). A remote migration PVE fails
//! halfway leaves it running where it was and nothing behind on the target. A `recovery =
//! recreate` VM is rebuilt on the target instead. No token ever reaches a log.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use std::process::Output;
use std::time::Duration;

use protocol::fleet::VmPhase;
use protocol::spec::{DiskOptions, DiskSpec, HaSpec, RecoveryMode, VmSpec};
use pvefleet_tests::fleet::{Fleet, HostOptions, PveAccess, PveClusterOptions, SimControl};

const ALPHA: &str = "pve-r1";
const BETA: &str = "pve-r2";

fn vm(name: &str) -> VmSpec {
    let mut spec = VmSpec::new(name, 512);
    spec.disks = vec![DiskSpec {
        slot: "scsi0".into(),
        storage: Some("local-lvm".into()),
        size_gib: 4,
        options: DiskOptions::default(),
    }];
    spec.placement.hosts = vec![ALPHA.into()];
    spec
}

fn record(fleet: &Fleet, name: &str) -> protocol::fleet::VmRecord {
    fleet
        .vms()
        .unwrap()
        .into_iter()
        .find(|v| v.spec.name == name)
        .unwrap()
}

fn migrate(fleet: &Fleet, controls: &[SimControl], name: &str, to: &str) -> Output {
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
    fleet.cli_sampled_across(&args, controls, Duration::from_secs(150))
}

fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Where guest `name` is in a simulator: (node, running, lock).
fn in_pve(fleet: &Fleet, control: &SimControl, name: &str) -> Vec<(String, bool, Option<String>)> {
    fleet
        .block_on(control.vms())
        .unwrap()
        .into_iter()
        .filter(|v| v.name.as_deref() == Some(name))
        .map(|v| (v.node, v.running, v.lock))
        .collect()
}

#[test]
fn vms_move_between_pve_clusters_with_a_minted_token_and_a_failed_move_leaves_nothing_behind() {
    let mut fleet = Fleet::start(3);
    fleet.add_pve_cluster(&PveClusterOptions::new("alpha", [ALPHA]));
    fleet.add_pve_cluster(&PveClusterOptions::new("beta", [BETA]));
    fleet.add_host(HostOptions::new(ALPHA, PveAccess::Https).in_pve_cluster("alpha"));
    fleet.add_host(HostOptions::new(BETA, PveAccess::Https).in_pve_cluster("beta"));
    fleet.apply_resources();
    let mut cattle = vm("cattle-1");
    cattle.ha = HaSpec {
        recovery: Some(RecoveryMode::Recreate),
        ..HaSpec::started()
    };
    cattle.placement.hosts = vec![];
    cattle.placement.exclude_hosts = vec![BETA.into()];
    let mut db = vm("db-1");
    db.placement.hosts = vec![];
    db.placement.exclude_hosts = vec![BETA.into()];
    fleet.apply_vms(&[db, cattle]);
    fleet.wait_vms("both running", Duration::from_secs(120), |v| {
        v.len() == 2 && v.iter().all(|v| v.status.phase == VmPhase::Running)
    });
    let alpha = fleet.pve_control("alpha");
    let beta = fleet.pve_control("beta");
    let controls = [alpha.clone(), beta.clone()];
    // Pinned off BETA: the placement rule refuses the move, naming it.
    let plan = fleet
        .cluster
        .cli_json(&["vm", "migrate", "db-1", "--to", BETA, "--dry-run"]);
    assert!(plan["to"].is_null(), "{plan}");
    assert!(plan["why"].as_str().unwrap().contains("excluded"), "{plan}");
    let mut free = vm("db-1");
    free.placement.hosts = vec![];
    let mut cattle = vm("cattle-1");
    cattle.placement.hosts = vec![];
    cattle.ha = HaSpec {
        recovery: Some(RecoveryMode::Recreate),
        ..HaSpec::started()
    };
    fleet.apply_vms(&[free, cattle]);
    // Without --to: its own cluster has no other node, so the scheduler goes to another one.
    let plan = fleet
        .cluster
        .cli_json(&["vm", "migrate", "db-1", "--dry-run"]);
    assert_eq!(plan["to"].as_str(), Some(BETA), "{plan}");
    assert!(
        plan["why"].as_str().unwrap().contains("remote migration"),
        "{plan}"
    );
    let vmid = record(&fleet, "db-1").assignment.vmid.unwrap();

    // PVE fails the remote migration halfway (disks copied, before the switch): the VM stays
    // running on ALPHA, BETA keeps nothing, the CLI says why in PVE's words.
    fleet
        .block_on(alpha.fail_tasks(
            Some(vmid),
            "qmigrate",
            "injected by the test: tunnel lost",
            Some(1),
        ))
        .unwrap();
    let out = migrate(&fleet, &controls, "db-1", BETA);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("failed, it stays on") && text(&out).contains("injected by the test"),
        "{}",
        text(&out)
    );
    assert_eq!(fleet.host_name_of("db-1"), ALPHA);
    assert_eq!(
        in_pve(&fleet, &alpha, "db-1"),
        vec![(ALPHA.to_string(), true, None)]
    );
    assert!(in_pve(&fleet, &beta, "db-1").is_empty());

    // Now it moves: same VMID, running on BETA, gone from ALPHA.
    let out = migrate(&fleet, &controls, "db-1", BETA);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("migrated from {ALPHA} to {BETA}")),
        "{}",
        text(&out)
    );
    // Its progress: the target got ready (its token's id, never its secret).
    assert!(
        text(&out).contains(&format!(
            "{BETA} is ready to receive it: token pvefleet-migrate@pve!vm{vmid}"
        )),
        "{}",
        text(&out)
    );
    assert_eq!(
        in_pve(&fleet, &beta, "db-1"),
        vec![(BETA.to_string(), true, None)]
    );
    assert!(in_pve(&fleet, &alpha, "db-1").is_empty());
    let moved = fleet
        .block_on(beta.vms())
        .unwrap()
        .into_iter()
        .find(|v| v.name.as_deref() == Some("db-1"))
        .unwrap();
    assert_eq!(moved.vmid, vmid);
    assert_eq!(fleet.host_name_of("db-1"), BETA);
    fleet.wait_vms(
        "db-1 running on its new host",
        Duration::from_secs(60),
        |v| {
            v.iter()
                .any(|v| v.spec.name == "db-1" && v.status.phase == VmPhase::Running)
        },
    );

    // A `recovery = recreate` VM is rebuilt on the target and removed from the source.
    let out = migrate(&fleet, &controls, "cattle-1", BETA);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(fleet.host_name_of("cattle-1"), BETA);
    fleet.wait_vms("cattle-1 rebuilt on BETA", Duration::from_secs(120), |v| {
        v.iter().any(|v| {
            v.spec.name == "cattle-1"
                && v.status.phase == VmPhase::Running
                && v.status.current_host.is_some()
                && v.status.current_host == v.assignment.host
        })
    });
    assert_eq!(
        in_pve(&fleet, &beta, "cattle-1"),
        vec![(BETA.to_string(), true, None)]
    );
    assert!(in_pve(&fleet, &alpha, "cattle-1").is_empty());

    // No token in any log of any process (coordinators, agents, simulators).
    let logs = fleet.cluster.lab.layout().logs();
    let mut read = 0;
    for entry in std::fs::read_dir(&logs).unwrap() {
        let path = entry.unwrap().path();
        let log = std::fs::read(&path).unwrap_or_default();
        read += 1;
        assert!(
            !String::from_utf8_lossy(&log).contains("PVEAPIToken=pvefleet-migrate"),
            "{} holds a migration token",
            path.display()
        );
    }
    assert!(read >= 5, "only {read} logs in {}", logs.display());
}
