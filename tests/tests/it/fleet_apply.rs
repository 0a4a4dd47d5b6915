//! `pvefleet apply -f FILE`: a whole fleet file is one write. A file whose third VM names an
//! unknown pool is refused naming the VM, the field and the pools that exist, and nothing of
//! it is applied (not its pool, not its first two VMs); the corrected file is committed at
//! once and, with `--wait`, followed on stderr until every VM runs with its address.

use std::path::PathBuf;
use std::time::Duration;

use protocol::spec::{FleetSpecFile, NicIp};
use pvefleet_tests::fleet::{
    Fleet, HostOptions, PveAccess, all_running_with_ips, test_pool, test_range, test_vm,
};

/// The file: the test pool and range, and VMs `vm-1`.. of which the last draws from `pool`.
fn write_file(fleet: &Fleet, name: &str, n: usize, last_pool: &str) -> PathBuf {
    let mut vms: Vec<_> = (1..=n).map(|i| test_vm(&format!("vm-{i}"))).collect();
    if let Some(last) = vms.last_mut() {
        last.nics[0].ip = Some(NicIp::Pool(last_pool.into()));
    }
    let file = FleetSpecFile {
        pool: vec![test_pool()],
        vmid_range: vec![test_range()],
        vm: vms,
        ..FleetSpecFile::default()
    };
    let path = fleet.cluster.root().join(name);
    std::fs::write(&path, toml::to_string(&file).unwrap()).unwrap();
    path
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_fleet_file_whose_third_vm_names_an_unknown_pool_applies_nothing() {
    let mut fleet = Fleet::start(3);
    for i in 1..=2 {
        fleet.add_host(HostOptions::new(format!("sim{i}"), PveAccess::Https));
    }
    let bad = write_file(&fleet, "bad.toml", 3, "nope");
    let out = fleet.cluster.cli(&["apply", "-f", bad.to_str().unwrap()]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "refused: {stderr}");
    for needle in [
        "vm vm-3",
        "nics[0].ip.pool = \"nope\"",
        "a defined IP pool: lan",
        "nothing was applied",
    ] {
        assert!(stderr.contains(needle), "{needle:?} missing from: {stderr}");
    }
    // Nothing of the file: no VM, and not even the pool and range it defines.
    assert!(fleet.vms().unwrap().is_empty());
    let pools = fleet.cluster.cli_json(&["pool", "ls"]);
    assert_eq!(pools["pools"].as_array().map(Vec::len), Some(0), "{pools}");
    let ranges = fleet.cluster.cli_json(&["range", "ls"]);
    assert_eq!(
        ranges["ranges"].as_array().map(Vec::len),
        Some(0),
        "{ranges}"
    );

    // Corrected, the file is one write, followed to the end.
    let good = write_file(&fleet, "good.toml", 3, "lan");
    let out = fleet.cluster.cli(&[
        "apply",
        "-f",
        good.to_str().unwrap(),
        "--wait",
        "--wait-timeout",
        "2m",
    ]);
    let stderr = text(&out.stderr);
    assert!(
        out.status.success(),
        "apply --wait failed ({}): {stderr}",
        out.status
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let applied: Vec<(&str, &str, &str)> = report["applied"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["kind"].as_str().unwrap(),
                a["name"].as_str().unwrap(),
                a["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        applied,
        [
            ("pool", "lan", "created"),
            ("vmid_range", "fleet", "created"),
            ("vm", "vm-1", "created"),
            ("vm", "vm-2", "created"),
            ("vm", "vm-3", "created"),
        ]
    );
    assert!(
        stderr.contains("committed as one write"),
        "no commit line: {stderr}"
    );
    assert!(
        stderr.contains("placed 3/3, created 3/3, running 3/3"),
        "no final progress line: {stderr}"
    );
    let names: Vec<String> = (1..=3).map(|i| format!("vm-{i}")).collect();
    fleet.wait_vms("every VM running", Duration::from_secs(60), |vms| {
        all_running_with_ips(vms, &names)
    });
}
