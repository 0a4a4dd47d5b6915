//! Host failure end to end (docs/design/fencing.md), every part a real process: three
//! coordinators, agents on `pve-sim serve` hosts, an HA guest. An agent that is SIGKILLed or
//! frozen (SIGSTOP) leaves its HA guest running; its fence guard resets the simulated host at
//! the lease end; the leader shows the host unreachable, then fenced — never before the lease
//! end the agent recorded, and never while the guest still runs — and the host comes back
//! online "back after fencing" when its agent runs again. Sampled every 100 ms while the fault
//! lasts, with the monotonic clock the agent's record uses.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use std::time::{Duration, Instant};

use node_agent::fence::clock::now_mono_ns;
use node_agent::fence::record::{FenceRecord, record_path};
use protocol::admin::HostStatusReply;
use protocol::fleet::{HostState, VmPhase};
use pvefleet_tests::fleet::{Fleet, HostOptions, PveAccess, test_vm};

/// How long a fault may take to end in a fence (lease 10 s + the wait, with room).
const FENCE_WITHIN: Duration = Duration::from_secs(60);

/// One sample: the monotonic time, the host's state as the leader shows it, and whether the
/// HA guest runs on the host's PVE.
#[derive(Debug, Clone)]
struct Sample {
    mono_ns: u64,
    state: HostState,
    reason: String,
    guest_running: bool,
}

/// A fleet of two hosts with one HA guest running on `pve-f1`.
fn fleet_with_an_ha_guest() -> Fleet {
    let mut fleet = Fleet::start(3);
    fleet.add_host(HostOptions::new("pve-f1", PveAccess::Https));
    fleet.add_host(HostOptions::new("pve-f2", PveAccess::Https));
    fleet.apply_resources();
    let mut spec = test_vm("ha-1");
    spec.ha = protocol::spec::HaSpec::started();
    spec.placement.hosts = vec!["pve-f1".into()];
    fleet.apply_vms(&[spec]);
    fleet.wait_vms("the HA guest running", Duration::from_secs(120), |v| {
        v.iter()
            .any(|v| v.spec.name == "ha-1" && v.status.phase == VmPhase::Running)
    });
    // The agent armed its record once the guest's notes said `ha=1`.
    let record = record_path(&fleet.agent("pve-f1").data_dir);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !FenceRecord::read(&record)
        .ok()
        .flatten()
        .is_some_and(|r| r.armed)
    {
        assert!(
            Instant::now() < deadline,
            "the agent never armed its record"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    fleet
}

fn host_state(fleet: &Fleet, name: &str) -> Option<(HostState, String)> {
    let out = fleet.cluster.cli(&["host", "ls"]);
    let reply: HostStatusReply = serde_json::from_slice(&out.stdout).ok()?;
    reply
        .hosts
        .into_iter()
        .find(|h| h.host.name == name)
        .map(|h| (h.host.state, h.host.state_reason))
}

fn guest_running(fleet: &Fleet, host: &str) -> bool {
    fleet
        .host_vms()
        .iter()
        .any(|v| v.host == host && v.name == "ha-1" && v.status == "running")
}

/// Samples until the host is shown fenced; checks the invariants at every sample.
fn sample_until_fenced(fleet: &Fleet, host: &str, lease_end_mono_ns: u64) -> Vec<Sample> {
    let start = Instant::now();
    let mut samples: Vec<Sample> = Vec::new();
    loop {
        assert!(
            start.elapsed() < FENCE_WITHIN,
            "{host} not fenced within {FENCE_WITHIN:?}: {samples:#?}"
        );
        let Some((state, reason)) = host_state(fleet, host) else {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        // Sampled after the state: if the leader says fenced, the guest must be down by now.
        let running = guest_running(fleet, host);
        let mono_ns = now_mono_ns();
        let s = Sample {
            mono_ns,
            state,
            reason,
            guest_running: running,
        };
        if s.state == HostState::Fenced {
            // Rule 2 and 3: the proof holds, so the lease has ended and the guest is down.
            assert!(
                mono_ns >= lease_end_mono_ns,
                "fenced {} ms before the lease end the agent recorded: {s:?}",
                (lease_end_mono_ns - mono_ns) / 1_000_000
            );
            assert!(!s.guest_running, "fenced while the HA guest runs: {s:?}");
            samples.push(s);
            return samples;
        }
        // Never shown online once the lease has ended.
        assert!(
            !(s.state == HostState::Online && mono_ns > lease_end_mono_ns + 1_000_000_000),
            "shown online a second after its lease ended: {s:?}"
        );
        samples.push(s);
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The states seen, without repeats: online (maybe), unreachable, fenced.
fn transitions(samples: &[Sample]) -> Vec<HostState> {
    let mut out: Vec<HostState> = Vec::new();
    for s in samples {
        if out.last() != Some(&s.state) {
            out.push(s.state);
        }
    }
    out
}

fn lease_end_of(fleet: &Fleet, host: &str) -> u64 {
    FenceRecord::read(&record_path(&fleet.agent(host).data_dir))
        .unwrap()
        .expect("the agent's fence record")
        .lease_end_mono_ns
}

fn check_fault_timeline(fleet: &mut Fleet, host: &str, lease_end: u64) {
    let samples = sample_until_fenced(fleet, host, lease_end);
    let seen = transitions(&samples);
    assert!(
        seen.ends_with(&[HostState::Unreachable, HostState::Fenced]),
        "every step shown: {seen:?}"
    );
    // The timeline, relative to the lease end (shown with --nocapture).
    let mut last = None;
    for s in &samples {
        if last != Some(s.state) {
            let ms = (i128::from(s.mono_ns) - i128::from(lease_end)) / 1_000_000;
            eprintln!(
                "{host}: {} at {ms:+} ms from the lease end ({})",
                s.state, s.reason
            );
            last = Some(s.state);
        }
    }
    let fenced = samples.last().unwrap();
    assert!(fenced.reason.starts_with("lease expired"), "{fenced:?}");
    // The guard reset the simulated host: the guest stopped, at the latest at the lease end.
    assert!(!guest_running(fleet, host));
    // The other host never left online.
    assert_eq!(
        host_state(fleet, "pve-f2").map(|s| s.0),
        Some(HostState::Online)
    );
}

fn check_back_online(fleet: &mut Fleet, host: &str) {
    fleet.start_agent(host);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some((HostState::Online, reason)) = host_state(fleet, host) {
            assert!(reason.starts_with("back after fencing"), "{reason}");
            break;
        }
        assert!(Instant::now() < deadline, "{host} never back online");
        std::thread::sleep(Duration::from_millis(200));
    }
    let events = fleet.cluster.cli(&["events"]);
    let text = String::from_utf8_lossy(&events.stdout);
    for needle in [
        "online -> unreachable: no heartbeat",
        "unreachable -> fenced: lease expired",
        "fenced -> online: back after fencing",
    ] {
        assert!(text.contains(needle), "no event {needle:?} in {text}");
    }
}

#[test]
fn a_killed_agents_host_is_fenced_only_after_its_lease_ended_and_its_guest_stopped() {
    let mut fleet = fleet_with_an_ha_guest();
    fleet.kill9_agent("pve-f1");
    // Read after the kill: the agent wrote no later lease end.
    let lease_end = lease_end_of(&fleet, "pve-f1");
    assert!(
        guest_running(&fleet, "pve-f1"),
        "a SIGKILL leaves guests running"
    );
    check_fault_timeline(&mut fleet, "pve-f1", lease_end);
    check_back_online(&mut fleet, "pve-f1");
}

#[test]
fn a_frozen_agents_host_is_reset_by_its_guard_and_fenced_after_its_lease() {
    let mut fleet = fleet_with_an_ha_guest();
    fleet.pause_agent("pve-f1");
    let lease_end = lease_end_of(&fleet, "pve-f1");
    check_fault_timeline(&mut fleet, "pve-f1", lease_end);
    // The guard killed the frozen agent as part of the simulated reset.
    check_back_online(&mut fleet, "pve-f1");
}

#[test]
fn when_the_whole_fleet_loses_its_quorum_the_host_stops_its_ha_guest_itself_before_its_lease_ends()
{
    let mut fleet = fleet_with_an_ha_guest();
    let members = fleet.cluster.members().len();
    for i in 0..members {
        fleet.cluster.pause(i);
    }
    // No member answers: the agent's lease runs out. It is alive, so it fences itself.
    let record = record_path(&fleet.agent("pve-f1").data_dir);
    let lease_end = lease_end_of(&fleet, "pve-f1");
    let deadline = Instant::now() + FENCE_WITHIN;
    let stopped_at = loop {
        assert!(Instant::now() < deadline, "the HA guest never stopped");
        let running = guest_running(&fleet, "pve-f1");
        let now = now_mono_ns();
        if !running {
            break now;
        }
        // Rule 3: past its lease end the guest must not run.
        assert!(
            now <= lease_end,
            "the HA guest still runs {} ms after the lease end",
            (now - lease_end) / 1_000_000
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let ms = (i128::from(stopped_at) - i128::from(lease_end)) / 1_000_000;
    eprintln!("pve-f1: HA guest seen stopped at {ms:+} ms from the lease end");
    // The agent stopped it (not the guard): the agent still runs, its record is disarmed.
    assert!(fleet.agent_runs("pve-f1"), "the agent was not reset");
    let deadline = Instant::now() + Duration::from_secs(10);
    while FenceRecord::read(&record).unwrap().is_some_and(|r| r.armed) {
        assert!(Instant::now() < deadline, "the record stays armed");
        std::thread::sleep(Duration::from_millis(50));
    }
    for i in 0..members {
        fleet.cluster.resume(i);
    }
    // Back: a majority elects a leader, the host beats and is online again; the guest is
    // the reconciler's to start again on its host (nothing else runs it).
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if matches!(host_state(&fleet, "pve-f1"), Some((HostState::Online, _))) {
            break;
        }
        assert!(Instant::now() < deadline, "pve-f1 never back online");
        std::thread::sleep(Duration::from_millis(200));
    }
    // The record still says Running (from before): look at the hosts themselves.
    let deadline = Instant::now() + Duration::from_secs(120);
    let running = loop {
        let running: Vec<_> = fleet
            .host_vms()
            .into_iter()
            .filter(|v| v.name == "ha-1" && v.status == "running")
            .collect();
        if !running.is_empty() {
            break running;
        }
        assert!(Instant::now() < deadline, "the HA guest never runs again");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(running.len(), 1, "one runner: {running:?}");
}
