//! Benchmark (figures, not pass/fail): planning a rebalance of 10,000 guests on 1,000 hosts
//! (40 PVE clusters of 25 nodes) with `fleet::rebalance::plan` and its defaults (at most 20
//! moves), on a fleet where a few hosts of every cluster carry most of the load. The state is
//! built through the state machine's own commands, as the leader has it. Prints the time of
//! each plan, its moves, and the imbalance (standard deviation of memory utilization, percent
//! points) of the last cluster it moved guests in, after its last move.
//!
//! `cargo bench -p pvefleet-tests --bench rebalance_plan`
#![allow(clippy::expect_used)] // a broken run aborts: its figures mean nothing

use std::time::Instant;

use fleet::rebalance::{RebalanceConfig, plan};
use fleet::state::{Command, CommandReply, FleetState};
use fleet::views::host_views;
use protocol::agent::StorageInfo;
use protocol::fleet::{Capacity, HostFacts, HostState, PVE_CLUSTER_LABEL};
use protocol::spec::{VmSpec, VmidRangeSpec};

const HOSTS: u64 = 1_000;
const PER_CLUSTER: u64 = 25;
const GUESTS: u64 = 10_000;

fn apply(state: &mut FleetState, index: &mut u64, cmd: Command) {
    *index += 1;
    let reply = state.apply(*index, cmd);
    assert!(!matches!(reply, CommandReply::Refused(_)), "{reply:?}");
}

fn fleet() -> FleetState {
    let mut s = FleetState::new();
    let mut i = 0;
    apply(
        &mut s,
        &mut i,
        Command::PutVmidRange {
            spec: VmidRangeSpec {
                name: "main".into(),
                start: 100,
                end: 99_999,
            },
            now: 1,
        },
    );
    for h in 0..HOSTS {
        let id = h + 1;
        apply(
            &mut s,
            &mut i,
            Command::RegisterHost {
                id,
                name: format!("pve-{h:04}"),
                labels: [(
                    PVE_CLUSTER_LABEL.to_string(),
                    format!("c{:02}", h / PER_CLUSTER),
                )]
                .into(),
                capacity: Capacity {
                    cpus: 64,
                    memory_mib: 512 * 1024,
                },
                now: 1,
            },
        );
        apply(
            &mut s,
            &mut i,
            Command::SetHostFacts {
                id,
                facts: Box::new(HostFacts {
                    pve_version: "9.1.1".into(),
                    storages: vec![StorageInfo {
                        id: "local-lvm".into(),
                        kind: "lvmthin".into(),
                        content: ["images".to_string()].into(),
                        active: true,
                        total_bytes: 1 << 44,
                        available_bytes: 1 << 44,
                        ..StorageInfo::default()
                    }],
                    ..HostFacts::default()
                }),
            },
        );
        apply(
            &mut s,
            &mut i,
            Command::SetHostState {
                id,
                state: HostState::Online,
                now: 1,
            },
        );
    }
    for g in 0..GUESTS {
        let name = format!("vm-{g:05}");
        apply(
            &mut s,
            &mut i,
            Command::apply_vm(VmSpec::new(&name, 4096), 2),
        );
        // The first five hosts of each cluster take 3 guests in 4.
        let cluster = g % (HOSTS / PER_CLUSTER);
        let slot = if g % 4 == 0 { 5 + g % 20 } else { g % 5 };
        let host = cluster * PER_CLUSTER + slot + 1;
        apply(
            &mut s,
            &mut i,
            Command::ScheduleVm {
                name: name.clone(),
                host: Some(host),
                expected: None,
                now: 2,
            },
        );
        apply(
            &mut s,
            &mut i,
            Command::AllocateVmid {
                vm: name,
                avoid: vec![],
                now: 2,
            },
        );
    }
    s
}

fn main() {
    let built = Instant::now();
    let state = fleet();
    println!(
        "rebalance plan: {GUESTS} guests on {HOSTS} hosts ({} PVE clusters of {PER_CLUSTER}); state built in {:.1} s",
        HOSTS / PER_CLUSTER,
        built.elapsed().as_secs_f64()
    );
    println!(
        "{:>5}  {:>8}  {:>6}  {:>14}",
        "run", "plan", "moves", "imbalance after"
    );
    let mut times = Vec::new();
    for run in 1..=3 {
        let started = Instant::now();
        let moves = plan(&state, host_views(&state), &RebalanceConfig::default());
        let took = started.elapsed();
        times.push(took);
        println!(
            "{run:>5}  {:>6.0}ms  {:>6}  {:>13.1}%",
            took.as_secs_f64() * 1000.0,
            moves.len(),
            moves.last().map_or(0.0, |m| m.spread_after)
        );
    }
    times.sort();
    println!("median  {:>6.0}ms", times[1].as_secs_f64() * 1000.0);
}
