//! Benchmark (figures, not pass/fail): what one `pvefleet-agent` costs its host while idle with
//! 100 VMs running: resident memory (`VmRSS`, and the peak `VmHWM`) and CPU time
//! (`utime + stime` of `/proc/<pid>/stat`) over 30 s, heartbeats and periodic inventory
//! included, as on a PVE host: the agent talks HTTPS with an API token to a separate
//! `pve-sim serve` process standing in for pveproxy (whose cost, like a real host's pveproxy,
//! is not the agent's). The agent has no other way to PVE.
//!
//! Run: `make bench` (it builds the release binaries first).
#![allow(clippy::expect_used, clippy::unwrap_used)] // a broken run aborts: its figures mean nothing

use std::time::{Duration, Instant};

use pvefleet_tests::fleet::{Fleet, HostOptions, PveAccess, all_running_with_ips, test_vm};
use pvefleet_tests::proc_stats::{cpu_ticks, status_kib, thread_ticks, ticks_per_second};

const VMS: usize = 100;
const WINDOW: Duration = Duration::from_secs(30);

fn main() {
    measure(
        PveAccess::Https,
        "PVE API over HTTPS (pve-sim serve), as on a host",
    );
}

fn measure(access: PveAccess, label: &str) {
    let mut fleet = Fleet::start(1);
    // The agent's default beat: what a production host pays.
    let mut opts = HostOptions::new("sim-idle", access);
    opts.heartbeat_ms = 1000;
    opts.inventory_ms = Some(5000);
    // Room for 100 one-vCPU VMs at the default 400 % CPU overcommit.
    opts.cpus = 32;
    let host = fleet.add_host(opts);
    fleet.apply_resources();
    let names: Vec<String> = (1..=VMS).map(|i| format!("idle-{i:03}")).collect();
    let specs: Vec<_> = names.iter().map(|n| test_vm(n)).collect();
    fleet.apply_vms(&specs);
    fleet.wait_vms("100 VMs running", Duration::from_secs(600), |v| {
        all_running_with_ips(v, &names)
    });
    let pid = fleet.agent_pid(host).expect("the agent runs");
    // Let the last results be acknowledged and the inventory settle before measuring.
    std::thread::sleep(Duration::from_secs(5));

    let rss_before = status_kib(pid, "VmRSS");
    let ticks_before = cpu_ticks(pid);
    let threads_before = thread_ticks(pid);
    let started = Instant::now();
    std::thread::sleep(WINDOW);
    let elapsed = started.elapsed().as_secs_f64();
    let cpu_secs = (cpu_ticks(pid) - ticks_before) as f64 / ticks_per_second();
    let rss_after = status_kib(pid, "VmRSS");
    let hwm = status_kib(pid, "VmHWM");
    let threads_after = thread_ticks(pid);
    println!("agent_idle, {label}:");
    println!(
        "agent_idle: {VMS} VMs, resident memory {:.1} MiB at the start and {:.1} MiB at the end \
         of {elapsed:.0} s idle (peak {:.1} MiB)",
        rss_before as f64 / 1024.0,
        rss_after as f64 / 1024.0,
        hwm as f64 / 1024.0
    );
    println!(
        "agent_idle: CPU {cpu_secs:.2} s in {elapsed:.0} s = {:.2} % of one core",
        cpu_secs * 100.0 / elapsed
    );
    // Where the memory and the CPU go (the profile the work on a lighter agent starts from).
    let mib = |field: &str| status_kib(pid, field) as f64 / 1024.0;
    println!(
        "agent_idle: resident {:.1} MiB = {:.1} anonymous (heap, stacks) + {:.1} file-backed \
         (the binary's and libraries' pages touched); {} threads",
        mib("VmRSS"),
        mib("RssAnon"),
        mib("RssFile"),
        status_kib(pid, "Threads")
    );
    let tps = ticks_per_second();
    for (name, after) in &threads_after {
        let ticks = after.saturating_sub(threads_before.get(name).copied().unwrap_or(0));
        println!(
            "agent_idle:   thread {name:<16} {:>6.2} s CPU ({:.2} % of one core)",
            ticks as f64 / tps,
            ticks as f64 / tps * 100.0 / elapsed
        );
    }
}
