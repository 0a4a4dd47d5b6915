//! Recovery end to end (docs/design/fencing.md, "Recovery"), every part a real process: three
//! coordinators, three agents on the nodes of ONE simulated PVE cluster with shared storage,
//! HA guests with their disks on it. A node is powered off (its agent SIGKILLed, the simulated
//! node off): its guests are relocated — their configurations moved to the survivors' node
//! directories, same VMIDs — and started there, never before the node is fenced and never two
//! copies at once (sampled every 100 ms from the simulator, the ground truth, and the fleet).
//! The node comes back: it stays empty, nothing is started on it.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use protocol::admin::HostStatusReply;
use protocol::fleet::{HostState, VmPhase, VmRecord};
use protocol::spec::{DiskOptions, DiskSpec, HaSpec, VmSpec};
use pvefleet_tests::fleet::{Fleet, HostOptions, PveAccess, PveClusterOptions};

const NODES: [&str; 3] = ["pve-r1", "pve-r2", "pve-r3"];
const GUESTS: usize = 4;
/// Fencing (lease 10 s + 1 s) plus the recovery, with room for a loaded machine.
const RECOVERED_WITHIN: Duration = Duration::from_secs(90);

/// An HA guest built from scratch with its disk on the cluster's shared storage.
fn ha_guest(name: &str) -> VmSpec {
    let mut spec = VmSpec::new(name, 512);
    spec.ha = HaSpec::started();
    spec.disks = vec![DiskSpec {
        slot: "scsi0".into(),
        storage: Some(lab::pve_cluster::SHARED_STORAGE.into()),
        size_gib: 4,
        options: DiskOptions::default(),
    }];
    spec
}

fn fleet_on_one_pve_cluster() -> Fleet {
    let mut fleet = Fleet::start(3);
    fleet.add_pve_cluster(&PveClusterOptions::new("alpha", NODES));
    for node in NODES {
        fleet.add_host(HostOptions::new(node, PveAccess::Https).in_pve_cluster("alpha"));
    }
    fleet.apply_resources();
    let specs: Vec<VmSpec> = (1..=GUESTS).map(|i| ha_guest(&format!("ha-{i}"))).collect();
    fleet.apply_vms(&specs);
    fleet.wait_vms("every HA guest running", Duration::from_secs(120), |v| {
        v.len() == GUESTS && v.iter().all(|v| v.status.phase == VmPhase::Running)
    });
    fleet
}

fn host_states(fleet: &Fleet) -> BTreeMap<u64, (String, HostState)> {
    let out = fleet.cluster.cli(&["host", "ls"]);
    let Ok(reply) = serde_json::from_slice::<HostStatusReply>(&out.stdout) else {
        return BTreeMap::new();
    };
    reply
        .hosts
        .into_iter()
        .map(|h| (h.host.id, (h.host.name, h.host.state)))
        .collect()
}

fn placed(vms: &[VmRecord]) -> BTreeMap<String, Option<u64>> {
    vms.iter()
        .map(|v| (v.spec.name.clone(), v.assignment.host))
        .collect()
}

#[test]
fn a_powered_off_nodes_guests_are_relocated_after_its_fence_and_it_stays_empty_when_back() {
    let mut fleet = fleet_on_one_pve_cluster();
    let control = fleet.pve_control("alpha");
    let vms = fleet.vms().unwrap();
    // The node with the most guests goes.
    let mut per_host: BTreeMap<u64, usize> = BTreeMap::new();
    for v in &vms {
        *per_host.entry(v.assignment.host.unwrap()).or_default() += 1;
    }
    let (&victim_id, _) = per_host.iter().max_by_key(|(_, n)| **n).unwrap();
    let hosts = host_states(&fleet);
    let victim = hosts[&victim_id].0.clone();
    let moved: Vec<String> = vms
        .iter()
        .filter(|v| v.assignment.host == Some(victim_id))
        .map(|v| v.spec.name.clone())
        .collect();
    let vmids: BTreeMap<String, u32> = vms
        .iter()
        .map(|v| (v.spec.name.clone(), v.assignment.vmid.unwrap()))
        .collect();

    // Power off: the agent and its guard die with the node.
    let stopped = fleet.power_off(&victim);
    let off_at = Instant::now();
    assert_eq!(stopped.len(), moved.len(), "{stopped:?} vs {moved:?}");

    let mut before = placed(&vms);
    let mut fenced_at = None;
    let recovered_at = loop {
        assert!(
            off_at.elapsed() < RECOVERED_WITHIN,
            "not recovered within {RECOVERED_WITHIN:?}: {:?}",
            fleet.vms().map(|v| pvefleet_tests::fleet::describe(&v))
        );
        // VMs before hosts: a move seen here happened before the host state read next.
        let Some(vms) = fleet.vms() else {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        let hosts = host_states(&fleet);
        let pve = fleet.running_in_pve(&control);
        let t = off_at.elapsed();
        // One runner per VM.
        for (name, nodes) in &pve {
            assert!(nodes.len() <= 1, "{name} runs on {nodes:?} at {t:?}");
        }
        // No move without the fence.
        let now = placed(&vms);
        for (name, host) in &now {
            if before.get(name) == Some(&Some(victim_id)) && *host != Some(victim_id) {
                assert_eq!(
                    hosts.get(&victim_id).map(|h| h.1),
                    Some(HostState::Fenced),
                    "{name} moved off {victim} at {t:?} before it was fenced"
                );
            }
        }
        before = now;
        if fenced_at.is_none() && hosts.get(&victim_id).map(|h| h.1) == Some(HostState::Fenced) {
            fenced_at = Some(t);
        }
        let all_back = moved.iter().all(|name| {
            pve.get(name)
                .is_some_and(|nodes| nodes.len() == 1 && nodes[0] != victim)
        });
        if all_back {
            break t;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let fenced_at = fenced_at.expect("recovered only after the fence, which was seen");
    eprintln!(
        "{victim} powered off with {} HA guests: fenced after {:.1} s, all running elsewhere after {:.1} s",
        moved.len(),
        fenced_at.as_secs_f64(),
        recovered_at.as_secs_f64()
    );
    // Relocated: the same VMIDs, now in the survivors' directories.
    let in_pve = fleet.block_on(control.vms()).unwrap();
    for name in &moved {
        let vm = in_pve
            .iter()
            .find(|v| v.vmid == vmids[name])
            .unwrap_or_else(|| panic!("VMID of {name} gone from the cluster"));
        assert_ne!(
            vm.node, victim,
            "{name}'s configuration is still on {victim}"
        );
        assert!(vm.running, "{name}");
    }
    let vms = fleet.wait_vms("the recoveries over", Duration::from_secs(30), |v| {
        v.iter().all(|v| v.status.phase == VmPhase::Running)
    });
    assert!(vms.iter().all(|v| v.assignment.host != Some(victim_id)));
    let events = String::from_utf8_lossy(&fleet.cluster.cli(&["events"]).stdout).to_string();
    assert!(
        events.contains(&format!("recovering from fenced host {victim} onto")),
        "{events}"
    );

    // The node comes back: nothing is started on it, the guests stay where they are.
    fleet.power_on(&victim);
    fleet.wait_host_online(victim_id);
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        let pve = fleet.running_in_pve(&control);
        for name in &moved {
            let nodes = pve.get(name).cloned().unwrap_or_default();
            assert!(
                nodes.len() == 1 && nodes[0] != victim,
                "{name} after {victim} came back: {nodes:?}"
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let events = String::from_utf8_lossy(&fleet.cluster.cli(&["events"]).stdout).to_string();
    assert!(events.contains("recovered from fenced host"), "{events}");
}

#[test]
fn a_guest_that_fails_to_start_is_restarted_then_relocated_then_given_up() {
    let mut fleet = Fleet::start(1);
    fleet.add_pve_cluster(&PveClusterOptions::new("alpha", NODES));
    for node in NODES {
        fleet.add_host(HostOptions::new(node, PveAccess::Https).in_pve_cluster("alpha"));
    }
    fleet.apply_resources();
    let control = fleet.pve_control("alpha");
    // The first two starts fail (max_restart = 1: one retry on the host, then a move).
    fleet
        .block_on(control.fail_tasks(
            None,
            "qmstart",
            "start failed: QEMU exited with code 1",
            Some(2),
        ))
        .unwrap();
    fleet.apply_vms(&[ha_guest("flaky")]);
    let vms = fleet.wait_vms(
        "flaky running after a relocation",
        Duration::from_secs(120),
        |v| v[0].status.phase == VmPhase::Running,
    );
    let events = String::from_utf8_lossy(&fleet.cluster.cli(&["events"]).stdout).to_string();
    let relocation = events
        .lines()
        .find(|l| l.contains("relocating from"))
        .unwrap_or_else(|| panic!("no relocation event: {events}"))
        .to_string();
    let hosts = host_states(&fleet);
    let now_on = hosts[&vms[0].assignment.host.unwrap()].0.clone();
    assert!(
        relocation.contains(&format!("onto {now_on}")) && relocation.contains("relocation 1 of 1"),
        "{relocation}"
    );
    let pve = fleet.running_in_pve(&control);
    assert_eq!(pve.get("flaky"), Some(&vec![now_on.clone()]));

    // Every start fails from now on: one retry where it is, no relocation left: HA error,
    // and no more retries.
    fleet
        .block_on(control.fail_tasks(
            None,
            "qmstart",
            "start failed: QEMU exited with code 1",
            None,
        ))
        .unwrap();
    fleet
        .block_on(control.power_node(&now_on, "reset"))
        .unwrap();
    fleet.wait_vms("flaky in HA error", Duration::from_secs(120), |v| {
        v[0].status.phase == VmPhase::Failed && v[0].status.message.starts_with("HA error")
    });
    let events = String::from_utf8_lossy(&fleet.cluster.cli(&["events"]).stdout).to_string();
    assert!(events.contains("after 1 relocation"), "{events}");
}
