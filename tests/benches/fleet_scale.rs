//! Benchmark (figures, not pass/fail): 1,000 VMs applied to a fleet of 50 simulated hosts
//! with zero task latency, every part a real process: 3 coordinators, 50 `pvefleet-agent`
//! processes in simulation mode. Prints how long the apply took and the time from the apply
//! until a quarter, half, three quarters and all of the VMs were running with addresses.
//!
//! Run: `make bench` (it builds the release binaries first).
#![allow(clippy::expect_used, clippy::unwrap_used)] // a broken run aborts: its figures mean nothing

use std::time::{Duration, Instant};

use pvefleet_tests::fleet::{
    Fleet, HostOptions, PveAccess, all_running_with_ips, running_with_ips, test_vm,
};

const HOSTS: usize = 50;
const VMS: usize = 1_000;

fn main() {
    let setup = Instant::now();
    let mut fleet = Fleet::start(3);
    for i in 1..=HOSTS {
        let mut host = HostOptions::new(format!("sim{i:02}"), PveAccess::Sim);
        host.heartbeat_ms = 1000;
        fleet.add_host(host);
    }
    fleet.apply_resources();
    println!(
        "fleet_scale: 3 coordinators and {HOSTS} agents up in {:.1} s",
        setup.elapsed().as_secs_f64()
    );

    let names: Vec<String> = (1..=VMS).map(|i| format!("vm-{i:04}")).collect();
    let specs: Vec<_> = names.iter().map(|n| test_vm(n)).collect();
    let start = Instant::now();
    fleet.apply_vms(&specs);
    let applied = start.elapsed();
    println!(
        "fleet_scale: applying {VMS} VM specs took {:.1} s ({:.1} ms per VM)",
        applied.as_secs_f64(),
        applied.as_secs_f64() * 1000.0 / VMS as f64
    );

    let mut marks = [VMS / 4, VMS / 2, VMS * 3 / 4, VMS].into_iter().peekable();
    let deadline = start + Duration::from_secs(3600);
    while marks.peek().is_some() {
        assert!(Instant::now() < deadline, "not converged within an hour");
        let Some(vms) = fleet.vms() else {
            std::thread::sleep(Duration::from_secs(1));
            continue;
        };
        let running = vms.iter().filter(|v| running_with_ips(v)).count();
        while let Some(&mark) = marks.peek() {
            if running < mark {
                break;
            }
            println!(
                "fleet_scale: {mark} of {VMS} VMs running with addresses {:.1} s after the apply began",
                start.elapsed().as_secs_f64()
            );
            marks.next();
        }
        if running == VMS && all_running_with_ips(&vms, &names) {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    let total = start.elapsed();
    println!(
        "fleet_scale: all {VMS} VMs running on {HOSTS} hosts {:.1} s after the apply began ({:.1} VMs/s)",
        total.as_secs_f64(),
        VMS as f64 / total.as_secs_f64()
    );
}
