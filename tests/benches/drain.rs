//! Benchmark (figures; it fails only when the drain does not complete): how long the fleet
//! takes to drain a host of 50 running guests by live migration, and to bring them all back,
//! with zero PVE task latency (the simulator's tasks are instant), so the figure is the
//! fleet's own: the planner, Raft, the agents' round trips and PVE's API calls.
//!
//! Real processes: three coordinators, three agents on the nodes of one simulated PVE cluster.
//! The 50 guests are made on the first node before the two others join; then `pvefleet host
//! maintenance enable NODE --wait` and `... disable NODE --wait` are timed, wall clock, from
//! the command to its exit (every guest moved and reported). Prints one row per round and the
//! medians. `PVEFLEET_DRAIN_ROUNDS` sets the rounds (3 by default).
//!
//! `cargo bench -p pvefleet-tests --bench drain` (`make bench` runs it on release binaries).
#![allow(clippy::expect_used, clippy::unwrap_used)] // a broken run aborts: its figures mean nothing

use std::time::{Duration, Instant};

use protocol::fleet::VmPhase;
use protocol::spec::{DiskOptions, DiskSpec, VmSpec};
use pvefleet_tests::fleet::{Fleet, HostOptions, PveAccess, PveClusterOptions};

const GUESTS: usize = 50;

fn guest(round: usize, i: usize) -> VmSpec {
    let mut spec = VmSpec::new(format!("r{round}-g{i:02}"), 256);
    spec.disks = vec![DiskSpec {
        slot: "scsi0".into(),
        storage: Some(lab::pve_cluster::SHARED_STORAGE.into()),
        size_gib: 2,
        options: DiskOptions::default(),
    }];
    spec
}

/// Runs `host maintenance ACTION NODE --wait`; its wall time.
fn timed(fleet: &Fleet, action: &str, node: &str) -> Duration {
    let started = Instant::now();
    let out = fleet.cluster.cli(&[
        "host",
        "maintenance",
        action,
        node,
        "--wait",
        "--wait-timeout",
        "10m",
    ]);
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "maintenance {action} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

fn round(round: usize) -> (Duration, Duration) {
    let nodes = [
        format!("pve-d{round}a"),
        format!("pve-d{round}b"),
        format!("pve-d{round}c"),
    ];
    let mut fleet = Fleet::start(3);
    let cluster = format!("drain{round}");
    fleet.add_pve_cluster(&PveClusterOptions::new(&cluster, nodes.clone()));
    fleet.add_host(HostOptions::new(nodes[0].clone(), PveAccess::Https).in_pve_cluster(&cluster));
    fleet.apply_resources();
    let specs: Vec<VmSpec> = (0..GUESTS).map(|i| guest(round, i)).collect();
    fleet.apply_vms(&specs);
    fleet.wait_vms("every guest running", Duration::from_secs(300), |v| {
        v.len() == GUESTS && v.iter().all(|v| v.status.phase == VmPhase::Running)
    });
    for node in &nodes[1..] {
        fleet.add_host(HostOptions::new(node.clone(), PveAccess::Https).in_pve_cluster(&cluster));
    }
    let drain = timed(&fleet, "enable", &nodes[0]);
    let back = timed(&fleet, "disable", &nodes[0]);
    (drain, back)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let rounds: usize = std::env::var("PVEFLEET_DRAIN_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    println!("drain: a host of {GUESTS} running guests, zero PVE task latency, 3 nodes");
    println!(
        "{:>5}  {:>10}  {:>10}  {:>14}",
        "round", "drain", "back home", "per guest (drain)"
    );
    let mut drains = Vec::new();
    let mut backs = Vec::new();
    for r in 0..rounds {
        let (drain, back) = round(r);
        println!(
            "{:>5}  {:>9.1}s  {:>9.1}s  {:>13.0}ms",
            r + 1,
            drain.as_secs_f64(),
            back.as_secs_f64(),
            drain.as_secs_f64() * 1000.0 / GUESTS as f64
        );
        drains.push(drain);
        backs.push(back);
    }
    let (d, b) = (median(drains), median(backs));
    println!(
        "median  {:>9.1}s  {:>9.1}s  {:>13.0}ms",
        d.as_secs_f64(),
        b.as_secs_f64(),
        d.as_secs_f64() * 1000.0 / GUESTS as f64
    );
}
