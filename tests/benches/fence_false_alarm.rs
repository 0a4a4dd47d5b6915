//! Benchmark (figures; it fails only on a false alarm): speed must not buy false alarms. With
//! the default timing (10 s lease, 1 s beats, fencing from 2 s before the lease end), a fleet of
//! 3 coordinators and 3 hosts, each running an HA guest, runs for 10 minutes while every core
//! of the machine is saturated by CPU hogs (two busy processes per core, at the daemons'
//! priority) and its disk by an I/O hog (4 MiB writes, each fsynced). Nothing may be fenced,
//! shown unreachable or stopped.
//!
//! It prints, per host, the closest margin seen: the longest gap between two acknowledged
//! beats (the lease end the agent records moves with each acknowledgement, by the gap
//! between their send times), against the lease and against the start of fencing. It also
//! counts the coordinators' Raft elections (terms started) and leader changes seen in their
//! `/metrics` once a second: short election timeouts must not make a loaded leader look dead.
//!
//! Run: `make bench` (it builds the release binaries first). `PVEFLEET_HOG_SECS` shortens the
//! run (600 by default).
#![allow(clippy::expect_used, clippy::unwrap_used)] // a broken run aborts: its figures mean nothing

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use node_agent::fence::clock::now_mono_ns;
use node_agent::fence::record::{FenceRecord, record_path};
use protocol::admin::HostStatusReply;
use protocol::fleet::{HostState, VmPhase};
use pvefleet_tests::fleet::{Fleet, HostOptions, PveAccess, test_vm};

const HOSTS: [&str; 3] = ["pve-h1", "pve-h2", "pve-h3"];
const LEASE_MS: u64 = 10_000;
const LEAD_MS: u64 = 2_000;
/// Bytes the I/O hog writes before it truncates its file and starts over.
const IO_FILE_CAP: u64 = 1 << 30;
const IO_BLOCK: usize = 4 << 20;

/// What one host's record showed over the run.
#[derive(Debug, Default, Clone)]
struct Margins {
    last_end_ns: Option<u64>,
    /// The longest move of the lease end between two samples that saw it move.
    longest_gap_ns: u64,
    /// The smallest `lease_end - now` seen.
    closest_ns: Option<i128>,
    renewals: u64,
}

fn cpu_hogs() -> Vec<Child> {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    (0..2 * cores)
        .map(|_| {
            Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .stdout(Stdio::null())
                .spawn()
                .expect("a CPU hog")
        })
        .collect()
}

/// Writes and fsyncs `IO_BLOCK`s to a file in `dir` until `stop`; the bytes written.
fn io_hog(dir: std::path::PathBuf, stop: Arc<AtomicBool>, written: Arc<AtomicU64>) {
    let path = dir.join("io-hog");
    let block = vec![0x5a_u8; IO_BLOCK];
    let mut file = std::fs::File::create(&path).expect("the I/O hog's file");
    let mut in_file = 0_u64;
    while !stop.load(Ordering::Relaxed) {
        file.write_all(&block).expect("an I/O hog write");
        file.sync_data().expect("an I/O hog fsync");
        in_file += IO_BLOCK as u64;
        written.fetch_add(IO_BLOCK as u64, Ordering::Relaxed);
        if in_file >= IO_FILE_CAP {
            file = std::fs::File::create(&path).expect("the I/O hog's file again");
            in_file = 0;
        }
    }
    let _ = std::fs::remove_file(&path);
}

/// The coordinators' Raft terms and leaders over the run, from their `/metrics`.
#[derive(Debug, Default)]
struct RaftChanges {
    first_term: Option<u64>,
    last_term: Option<u64>,
    leader: Option<u64>,
    /// When the leader changed (to whom), as seen by the once-a-second samples.
    changes: Vec<String>,
}

impl RaftChanges {
    fn sample(&mut self, fleet: &Fleet, at: Duration) {
        let members = fleet.cluster.members().len();
        let mut term = None;
        let mut leader = None;
        for i in 0..members {
            let t = fleet
                .cluster
                .metric(i, "pvefleet_raft_term")
                .map(|t| t as u64);
            term = term.max(t);
            if fleet.cluster.metric(i, "pvefleet_raft_is_leader") == Some(1.0) {
                leader = fleet
                    .cluster
                    .metric(i, "pvefleet_raft_current_leader")
                    .map(|l| l as u64);
            }
        }
        let Some(term) = term else { return };
        self.first_term.get_or_insert(term);
        self.last_term = Some(term);
        if let Some(now) = leader {
            if self.leader.is_some_and(|before| before != now) {
                self.changes
                    .push(format!("{:.1} s (to {now})", at.as_secs_f64()));
            }
            self.leader = Some(now);
        }
    }

    /// Terms started during the run: each is an election (won or not).
    fn elections(&self) -> u64 {
        self.last_term.unwrap_or(0) - self.first_term.unwrap_or(0)
    }
}

fn host_states(fleet: &Fleet) -> Option<BTreeMap<String, HostState>> {
    let out = fleet.cluster.cli(&["host", "ls"]);
    let reply: HostStatusReply = serde_json::from_slice(&out.stdout).ok()?;
    Some(
        reply
            .hosts
            .into_iter()
            .map(|h| (h.host.name, h.host.state))
            .collect(),
    )
}

fn main() {
    let secs: u64 = std::env::var("PVEFLEET_HOG_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    let mut fleet = Fleet::start(3);
    for name in HOSTS {
        let mut opts = HostOptions::new(name, PveAccess::Https);
        opts.heartbeat_ms = 1000;
        fleet.add_host(opts);
    }
    fleet.apply_resources();
    let specs: Vec<_> = HOSTS
        .iter()
        .map(|h| {
            let mut spec = test_vm(&format!("ha-{h}"));
            spec.ha = protocol::spec::HaSpec::started();
            spec.placement.hosts = vec![(*h).to_string()];
            spec
        })
        .collect();
    fleet.apply_vms(&specs);
    fleet.wait_vms("the HA guests running", Duration::from_secs(300), |v| {
        v.iter()
            .filter(|v| v.status.phase == VmPhase::Running)
            .count()
            == HOSTS.len()
    });
    let records: Vec<_> = HOSTS
        .iter()
        .map(|h| (*h, record_path(&fleet.agent(h).data_dir)))
        .collect();

    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let hog_dir = tempfile::tempdir().expect("a directory for the I/O hog");
    let io = {
        let (dir, stop, written) = (
            hog_dir.path().to_path_buf(),
            Arc::clone(&stop),
            Arc::clone(&written),
        );
        std::thread::spawn(move || io_hog(dir, stop, written))
    };
    let mut hogs = cpu_hogs();
    println!(
        "fence_false_alarm: {} CPU hogs on {} cores and one fsync-ing I/O hog for {secs} s; \
         lease {LEASE_MS} ms, fencing from {} ms before its end",
        hogs.len(),
        hogs.len() / 2,
        LEAD_MS
    );

    let mut margins: BTreeMap<&str, Margins> = BTreeMap::new();
    let mut raft = RaftChanges::default();
    let mut not_online: Vec<String> = Vec::new();
    let started = Instant::now();
    let mut next_states = Instant::now();
    while started.elapsed() < Duration::from_secs(secs) {
        for (host, path) in &records {
            let Ok(Some(record)) = FenceRecord::read(path) else {
                continue;
            };
            let now = now_mono_ns();
            let m = margins.entry(host).or_default();
            if let Some(last) = m.last_end_ns
                && record.lease_end_mono_ns > last
            {
                m.longest_gap_ns = m.longest_gap_ns.max(record.lease_end_mono_ns - last);
                m.renewals += 1;
            }
            m.last_end_ns = Some(record.lease_end_mono_ns);
            let left = i128::from(record.lease_end_mono_ns) - i128::from(now);
            m.closest_ns = Some(m.closest_ns.map_or(left, |c| c.min(left)));
        }
        if Instant::now() >= next_states {
            next_states = Instant::now() + Duration::from_secs(1);
            raft.sample(&fleet, started.elapsed());
            if let Some(states) = host_states(&fleet) {
                for (host, state) in states {
                    if state != HostState::Online {
                        not_online.push(format!(
                            "{:.1} s: {host} {state}",
                            started.elapsed().as_secs_f64()
                        ));
                    }
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::Relaxed);
    for hog in &mut hogs {
        let _ = hog.kill();
        let _ = hog.wait();
    }
    io.join().expect("the I/O hog thread");

    assert!(
        raft.first_term.is_some(),
        "no member's /metrics could be read: the election count would mean nothing"
    );
    let events = String::from_utf8_lossy(&fleet.cluster.cli(&["events"]).stdout).into_owned();
    let alarms: Vec<&str> = events
        .lines()
        .filter(|l| l.contains("-> unreachable") || l.contains("-> fenced"))
        .collect();
    let stopped: Vec<_> = fleet
        .host_vms()
        .into_iter()
        .filter(|v| v.status != "running")
        .collect();

    println!(
        "\n| host | renewals | longest gap between acknowledged beats | lease | closest to the lease end | closest to fencing |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for (host, m) in &margins {
        let closest_ms = m.closest_ns.unwrap_or(0) / 1_000_000;
        println!(
            "| {host} | {} | {} ms | {LEASE_MS} ms | {closest_ms} ms | {} ms |",
            m.renewals,
            m.longest_gap_ns / 1_000_000,
            closest_ms - i128::from(LEAD_MS)
        );
    }
    println!(
        "\nI/O hog: {:.1} GiB written and fsynced in {:.0} s",
        written.load(Ordering::Relaxed) as f64 / f64::from(1 << 30),
        started.elapsed().as_secs_f64()
    );
    println!(
        "raft: {} elections (terms {}..={}), {} leader changes{}",
        raft.elections(),
        raft.first_term.unwrap_or(0),
        raft.last_term.unwrap_or(0),
        raft.changes.len(),
        if raft.changes.is_empty() {
            String::new()
        } else {
            format!(" at {}", raft.changes.join(", "))
        }
    );
    println!(
        "false alarms: {} host-state samples not online, {} unreachable/fenced events, {} guests \
         not running",
        not_online.len(),
        alarms.len(),
        stopped.len()
    );
    assert!(
        not_online.is_empty() && alarms.is_empty() && stopped.is_empty(),
        "false alarm under load: {not_online:?} {alarms:?} {stopped:?}"
    );
}
