#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking
//! The agent's own fencing in process, against a simulated PVE node: an HA guest ensured with
//! `ha = true` is marked `ha=1` in its notes, the collector finds it, and when the lease is not
//! renewed the fencer stops it (only it) before the lease ends, closes the start gate, raises
//! the VIP flag and disarms the fence record; a renewal opens everything again. An agent
//! restarted within its lease takes the lease from the record and fences at the old deadline.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use node_agent::fence::clock::{MonoClock, now_mono_ns};
use node_agent::fence::guests::GuestStopper;
use node_agent::fence::record::{current_boot_id, record_path};
use node_agent::fence::{FenceRecord, Fencer, FencerConfig, StartGate};
use node_agent::inventory::{self, Collector};
use node_agent::ops::notes;
use node_agent::session::{Lease, SessionStatus};
use protocol::agent::{FailureKind, PowerAction, PowerOp};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::ops_support::{NODE, ensure_cmd, harness, web_spec};

const BOUND: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(5);
const HA: u32 = 101;
const PLAIN: u32 = 102;

/// Waits (bounded) until `cond` holds.
async fn until(what: &str, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + BOUND;
    while !cond() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        tokio::time::sleep(POLL).await;
    }
}

fn record(dir: &std::path::Path) -> FenceRecord {
    FenceRecord::read(&record_path(dir)).unwrap().unwrap()
}

/// An HA guest at 101 and a plain one at 102, both running.
async fn two_guests(h: &crate::ops_support::Harness) {
    let mut ha = web_spec("db-1");
    ha.ha = protocol::spec::HaSpec::started();
    h.ops.ensure(&ensure_cmd(ha, HA)).await.unwrap();
    h.ops
        .ensure(&ensure_cmd(web_spec("web-1"), PLAIN))
        .await
        .unwrap();
    assert_eq!(h.sim.vm_running(HA), Some(true));
    assert_eq!(h.sim.vm_running(PLAIN), Some(true));
    let marked = |d: Option<String>| d.and_then(|d| notes::parse(&d)).map(|n| n.ha);
    assert_eq!(marked(h.config(HA).await.description()), Some(true));
    assert_eq!(marked(h.config(PLAIN).await.description()), Some(false));
}

#[tokio::test]
async fn an_unrenewed_lease_stops_the_ha_guest_before_it_ends_and_a_renewal_reopens() {
    let h = harness();
    two_guests(&h).await;
    let tmp = tempfile::tempdir().unwrap();
    let stop = CancellationToken::new();
    let (sender, feed) = inventory::feed();
    let collector = Collector::new(h.client.clone(), NODE, Duration::from_millis(200), sender);
    tokio::spawn(collector.run(stop.clone()));
    let mut watch_feed = feed.clone();
    until("the HA guest in the inventory", || {
        watch_feed
            .latest()
            .is_some_and(|s| s.ha_running == BTreeSet::from([HA]))
    })
    .await;

    let lease_len = Duration::from_millis(4000);
    let lead = Duration::from_millis(1500);
    let granted = Instant::now();
    let (status, status_rx) = watch::channel(SessionStatus {
        lease: Some(Lease::new(granted, 4000)),
        ..SessionStatus::default()
    });
    let gate = StartGate::new();
    let fencer = Fencer::prepare(
        FencerConfig {
            data_dir: tmp.path().to_path_buf(),
            lead,
        },
        GuestStopper::new(h.client.clone(), NODE, Duration::from_secs(1)),
        status_rx,
        feed,
        gate.clone(),
    )
    .unwrap();
    let vips = fencer.vip_fence();
    tokio::spawn(fencer.run(stop.clone()));
    let lease_end = granted + lease_len;
    let lease_end_ns = MonoClock::new().ns_of(lease_end);

    // Armed while the HA guest runs under the lease.
    until("an armed record", || record(tmp.path()).armed).await;
    let r = record(tmp.path());
    assert_eq!(r.boot_id, current_boot_id().unwrap());
    assert_eq!(r.agent_pid, std::process::id());
    assert!(
        r.lease_end_mono_ns.abs_diff(lease_end_ns) < 5_000_000,
        "{r:?}"
    );
    assert!(!*vips.borrow() && !gate.is_closed());

    // No renewal: the HA guest is stopped before the lease ends, the plain one is not.
    until("the HA guest stopped", || {
        h.sim.vm_running(HA) == Some(false)
    })
    .await;
    let stopped_at = Instant::now();
    assert!(
        stopped_at < lease_end,
        "stopped {:?} after the lease ended",
        stopped_at - lease_end
    );
    assert_eq!(
        h.sim.vm_running(PLAIN),
        Some(true),
        "only HA guests are fenced"
    );
    assert!(*vips.borrow(), "VIPs are let go");
    assert!(gate.is_closed());
    until("a disarmed record", || !record(tmp.path()).armed).await;
    assert!(
        Instant::now() < lease_end,
        "disarmed only after the lease ended: the guard would have reset the host"
    );

    // While fenced no command starts a guest.
    let ops = h.ops.clone().with_start_gate(gate.clone());
    let start = PowerOp {
        name: "db-1".into(),
        vmid: HA,
        action: PowerAction::Start,
    };
    let refused = ops.power(&start).await.unwrap_err();
    assert_eq!(refused.kind, FailureKind::Transient, "{refused:?}");
    assert!(refused.message.contains("lease"), "{refused:?}");
    assert_eq!(h.sim.vm_running(HA), Some(false));

    // A leader acknowledges again: starts and VIPs are allowed again.
    status.send_modify(|s| s.lease = Some(Lease::new(Instant::now(), 10_000)));
    until("the gate open", || !gate.is_closed()).await;
    until("the VIP flag down", || !*vips.borrow()).await;
    assert!(ops.power(&start).await.unwrap().running);
    until("armed again", || record(tmp.path()).armed).await;
    stop.cancel();
}

#[tokio::test]
async fn a_restarted_agent_fences_at_the_deadline_of_its_record() {
    let h = harness();
    two_guests(&h).await;
    let tmp = tempfile::tempdir().unwrap();
    // The previous run of this boot held a lease ending 2.5 s from now, HA guests armed.
    let lease_end_ns = now_mono_ns() + 2_500_000_000;
    FenceRecord {
        boot_id: current_boot_id().unwrap(),
        lease_end_mono_ns: lease_end_ns,
        armed: true,
        agent_pid: 1,
    }
    .write(&record_path(tmp.path()))
    .unwrap();
    let stop = CancellationToken::new();
    let (sender, feed) = inventory::feed();
    tokio::spawn(
        Collector::new(h.client.clone(), NODE, Duration::from_millis(200), sender)
            .run(stop.clone()),
    );
    // No leader answers this run: the session never publishes a lease.
    let (_status, status_rx) = watch::channel(SessionStatus::default());
    let gate = StartGate::new();
    let fencer = Fencer::prepare(
        FencerConfig {
            data_dir: tmp.path().to_path_buf(),
            lead: Duration::from_millis(1000),
        },
        GuestStopper::new(h.client.clone(), NODE, Duration::from_secs(1)),
        status_rx,
        feed,
        gate.clone(),
    )
    .unwrap();
    // Rewritten as this process's at once, the old lease kept, still armed.
    let r = record(tmp.path());
    assert_eq!(
        (r.lease_end_mono_ns, r.armed, r.agent_pid),
        (lease_end_ns, true, std::process::id())
    );
    tokio::spawn(fencer.run(stop.clone()));
    until("the HA guest stopped", || {
        h.sim.vm_running(HA) == Some(false)
    })
    .await;
    assert!(
        now_mono_ns() < lease_end_ns,
        "stopped after the recorded lease ended"
    );
    assert_eq!(h.sim.vm_running(PLAIN), Some(true));
    until("a disarmed record", || !record(tmp.path()).armed).await;
    assert!(gate.is_closed(), "no lease: no guest starts");
    stop.cancel();
}
