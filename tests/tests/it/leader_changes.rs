//! A leader change never brings a healthy host near a fence. Three members and
//! six agents with the production heartbeat (1 s), both cores kept busy by a CPU hog; the
//! leading member is SIGKILLed round after round and restarted once a new leader leads. An
//! agent finds the new leader only after its beat to the dead one times out and a follower
//! names the new one, which can take longer than the 3 s after which a leader shows a silent
//! host unreachable. The new leader hears every agent's VIP renewals all the same (agents renew
//! with every member) and gives such hosts time to find it (`fleet::liveness`). Checked: no
//! host ever left online in the replicated events, over every round.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use pvefleet_tests::fleet::{Fleet, sim_hosts};

/// How long each round watches after the kill: the new leader's unreachable bound (3 s) and
/// grace (5 s) after an election of up to a few seconds.
const WATCH: Duration = Duration::from_secs(12);

/// Two threads that spin until dropped (bounded: they stop by themselves after `limit`).
struct Hog {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Hog {
    fn start(threads: usize, limit: Duration) -> Hog {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..threads)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    let end = Instant::now() + limit;
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed) && Instant::now() < end {
                        for i in 0..100_000u64 {
                            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
                        }
                    }
                })
            })
            .collect();
        Hog { stop, threads }
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[test]
fn healthy_hosts_stay_online_through_leader_changes_under_cpu_load() {
    let mut fleet = Fleet::start(3);
    fleet.add_hosts(&sim_hosts(6));
    let ids: Vec<u64> = fleet.agents().iter().map(|a| a.node_id).collect();
    for id in &ids {
        fleet.wait_host_online(*id);
    }
    let hog = Hog::start(2, Duration::from_secs(300));
    let rounds = 4;
    for round in 0..rounds {
        let leader = fleet.cluster.leader_index();
        fleet.cluster.kill9(leader);
        let killed_at = Instant::now();
        // A new leader, then the watch.
        let new_leader = fleet.cluster.leader_index();
        assert_ne!(
            new_leader, leader,
            "round {round}: the killed member still leads"
        );
        std::thread::sleep(WATCH.saturating_sub(killed_at.elapsed()));
        fleet.cluster.start(leader);
        // Back once it follows a leader again.
        let deadline = Instant::now() + Duration::from_secs(60);
        while !fleet
            .cluster
            .metric(leader, "pvefleet_raft_current_leader")
            .is_some_and(|l| l > 0.0)
        {
            assert!(
                Instant::now() < deadline,
                "round {round}: the restarted member follows no leader"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    drop(hog);
    let events = fleet.cluster.cli_json(&["events", "--limit", "10000"]);
    let unreachable: Vec<String> = events["events"]
        .as_array()
        .map(|all| {
            all.iter()
                .filter_map(|e| e["message"].as_str())
                .filter(|m| m.contains("-> unreachable") || m.contains("-> fenced"))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    assert!(
        unreachable.is_empty(),
        "healthy hosts left online over {rounds} leader changes: {unreachable:#?}"
    );
    // The events were read: there are host events at all (each host came online).
    assert!(
        events["events"]
            .as_array()
            .is_some_and(|a| a.len() >= ids.len()),
        "{events}"
    );
}
