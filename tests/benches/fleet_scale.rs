//! Benchmark (figures, not pass/fail): a whole fleet applied at once to simulated hosts with
//! zero task latency, every part a real process: 3 coordinators and one `pvefleet-agent`
//! process per host in simulation mode (the agent's default periods: a beat every second, an
//! inventory every 5 s). Two sizes, each on a fleet of its own:
//! 1,000 VMs on 50 hosts, then 10,000 VMs on 200 hosts.
//!
//! For each it prints how long the fleet took to start (3 coordinators, then every agent ready
//! and its host online), how long `pvefleet apply -f FILE` took (the whole file, one request,
//! one log entry), and the time from the command until a quarter, half, three quarters and
//! all of the VMs ran with their addresses, and when every VM was placed, given its ids and
//! created on its host (read with `vm ls` every 200 ms, which takes longer itself at 10,000
//! VMs).
//!
//! Run: `make bench` (it builds the release binaries first); `FLEET_SCALE=1k` or `10k` runs
//! one size only.
#![allow(clippy::expect_used, clippy::unwrap_used)] // a broken run aborts: its figures mean nothing

use std::time::{Duration, Instant};

use protocol::fleet::{ConditionKind, VmPhase, VmRecord};
use protocol::spec::FleetSpecFile;
use pvefleet_tests::fleet::{
    Fleet, all_running_with_ips, running_with_ips, sim_hosts, test_pool, test_range, test_vm,
};
use pvefleet_tests::proc_stats::{cpu_secs, unix_ms};

/// One size: hosts and VMs, and its name for `FLEET_SCALE`.
struct Size {
    name: &'static str,
    hosts: usize,
    vms: usize,
}

const SIZES: [Size; 2] = [
    Size {
        name: "1k",
        hosts: 50,
        vms: 1_000,
    },
    Size {
        name: "10k",
        hosts: 200,
        vms: 10_000,
    },
];

/// A stage every VM passes: its name, whether a VM has reached it, and when all had.
type Stage = (&'static str, fn(&VmRecord) -> bool, Option<f64>);

/// How often the VMs are read while waiting.
const POLL: Duration = Duration::from_millis(200);

/// CPU seconds (user + system) the agents and the coordinators have used so far.
fn cpu(fleet: &mut Fleet, hosts: usize) -> (f64, f64) {
    let agents = (0..hosts)
        .filter_map(|i| fleet.agent_pid(i))
        .map(cpu_secs)
        .sum();
    let members = fleet.cluster.members().len();
    let coordinators = (0..members)
        .filter_map(|i| fleet.cluster.lab.pid(lab::Part::Member(i)))
        .map(cpu_secs)
        .sum();
    (agents, coordinators)
}

/// When the leader recorded each VM running (its Running condition's time), against the
/// command's start: the median and the last, which the reads above lag behind.
fn recorded(label: &str, vms: &[VmRecord], start_unix: u64) {
    let mut at: Vec<u64> = vms
        .iter()
        .filter_map(|v| {
            v.status
                .conditions
                .iter()
                .find(|c| c.kind == ConditionKind::Running && c.status)
                .map(|c| c.since.saturating_sub(start_unix))
        })
        .collect();
    at.sort_unstable();
    if let (Some(median), Some(last)) = (at.get(at.len() / 2), at.last()) {
        println!(
            "{label}: the leader recorded them running {:.1} s (median) and {:.1} s (last) after \
             the command",
            *median as f64 / 1000.0,
            *last as f64 / 1000.0
        );
    }
}

/// Whether the VM exists on its host (its agent said so, or it runs).
fn created(vm: &VmRecord) -> bool {
    vm.status.phase == VmPhase::Running
        || vm
            .status
            .conditions
            .iter()
            .any(|c| c.kind == ConditionKind::Created && c.status)
}

fn main() {
    let only = std::env::var("FLEET_SCALE").ok();
    for size in SIZES
        .iter()
        .filter(|s| only.as_deref().is_none_or(|o| o == s.name))
    {
        run(size);
    }
}

fn run(size: &Size) {
    let (hosts, vms) = (size.hosts, size.vms);
    let label = format!("fleet_scale {vms} VMs / {hosts} hosts");

    let setup = Instant::now();
    let mut fleet = Fleet::start(3);
    let coordinators = setup.elapsed();
    fleet.add_hosts(&sim_hosts(hosts));
    let started = setup.elapsed();
    println!(
        "{label}: fleet started in {:.1} s (3 coordinators {:.1} s, then {hosts} agents ready \
         and online {:.1} s)",
        started.as_secs_f64(),
        coordinators.as_secs_f64(),
        (started - coordinators).as_secs_f64()
    );

    let names: Vec<String> = (1..=vms).map(|i| format!("vm-{i:05}")).collect();
    let file = FleetSpecFile {
        pool: vec![test_pool()],
        vmid_range: vec![test_range()],
        vm: names.iter().map(|n| test_vm(n)).collect(),
        ..FleetSpecFile::default()
    };
    let cpu_before = cpu(&mut fleet, hosts);
    let start = Instant::now();
    let start_unix = unix_ms();
    fleet.apply_fleet(&file);
    let applied = start.elapsed();
    println!(
        "{label}: `pvefleet apply` of the file (one request) took {:.2} s ({:.2} ms per VM)",
        applied.as_secs_f64(),
        applied.as_secs_f64() * 1000.0 / vms as f64
    );

    let mut marks = [vms / 4, vms / 2, vms * 3 / 4, vms].into_iter().peekable();
    let mut stages: Vec<Stage> = vec![
        ("placed on a host", |v| v.assignment.host.is_some(), None),
        (
            "given a VMID and an address",
            |v| v.assignment.vmid.is_some() && !v.assignment.ips.is_empty(),
            None,
        ),
        ("created on their host", created, None),
    ];
    let deadline = start + Duration::from_secs(3600);
    while marks.peek().is_some() {
        assert!(Instant::now() < deadline, "not converged within an hour");
        let Some(listed) = fleet.vms() else {
            std::thread::sleep(POLL);
            continue;
        };
        let at = start.elapsed().as_secs_f64();
        for (_, reached, when) in &mut stages {
            if when.is_none() && listed.len() == vms && listed.iter().all(*reached) {
                *when = Some(at);
            }
        }
        let running = listed.iter().filter(|v| running_with_ips(v)).count();
        while let Some(&mark) = marks.peek() {
            if running < mark {
                break;
            }
            println!(
                "{label}: {mark} VMs running with addresses {:.1} s after the command",
                start.elapsed().as_secs_f64()
            );
            marks.next();
        }
        if running == vms && all_running_with_ips(&listed, &names) {
            recorded(&label, &listed, start_unix);
            break;
        }
        std::thread::sleep(POLL);
    }
    let total = start.elapsed();
    let cpu_after = cpu(&mut fleet, hosts);
    println!(
        "{label}: CPU used meanwhile: agents {:.1} s ({:.1} ms per VM), coordinators {:.1} s",
        cpu_after.0 - cpu_before.0,
        (cpu_after.0 - cpu_before.0) * 1000.0 / vms as f64,
        cpu_after.1 - cpu_before.1
    );
    for (stage, _, when) in stages {
        if let Some(at) = when {
            println!("{label}: every VM {stage} {at:.1} s after the command");
        }
    }
    println!(
        "{label}: all running {:.1} s after the command ({:.0} VMs/s)",
        total.as_secs_f64(),
        vms as f64 / total.as_secs_f64()
    );
}
