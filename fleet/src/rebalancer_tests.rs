//! Automatic rebalancing against hand-built states: nothing while it is off or during a spike
//! shorter than the hold, one move once the hold passed, the next only when that one ended,
//! nothing while the cluster is disturbed (a host down, a drain), and the state machine's own
//! refusals (off, a second move).

use protocol::NodeId;
use protocol::fleet::{HostState, MigrationPurpose, Settings};
use protocol::spec::VmSpec;

use super::{Decision, Hold, decide};
use crate::state::{Command, StateError};
use crate::test_world::{World, alpha};
use crate::views::host_views;

/// Cluster alpha with twelve 8 GiB guests on pve-a and rebalancing on (hold 60 s).
fn skewed(enabled: bool) -> World {
    let mut w = alpha();
    for i in 0..12 {
        w.spec_on(VmSpec::new(format!("vm-{i:02}"), 8192), 1);
    }
    let mut settings = Settings::default();
    settings.rebalance.enabled = enabled;
    settings.rebalance.hold_s = 60;
    w.ok(Command::put_settings(settings, 3));
    w
}

fn pass(w: &World, hold: &Hold, mono_ms: u64) -> Decision {
    decide(&w.state, &host_views(&w.state), hold, mono_ms, 10)
}

/// The VM and target of a decision's move.
fn moved(d: &Decision) -> Option<(String, NodeId)> {
    match &d.command {
        Some(Command::StartMigration {
            name, to, purpose, ..
        }) => {
            assert_eq!(*purpose, MigrationPurpose::Rebalance);
            Some((name.clone(), *to))
        }
        Some(other) => panic!("{other:?}"),
        None => None,
    }
}

#[test]
fn off_moves_nothing_and_keeps_no_hold() {
    let w = skewed(false);
    let d = pass(&w, &Hold::default(), 1_000_000);
    assert_eq!(d.command, None);
    assert_eq!(d.hold, Hold::default());
}

#[test]
fn a_move_waits_for_the_hold_and_a_spike_shorter_than_it_moves_nothing() {
    let mut w = skewed(true);
    let d = pass(&w, &Hold::default(), 1_000);
    assert_eq!(moved(&d), None);
    assert_eq!(d.hold.since("alpha"), Some(1_000));
    let d = pass(&w, &d.hold, 60_999);
    assert_eq!(moved(&d), None, "59.999 s into a 60 s hold");
    // The spike ends (the load evens out by itself): the hold is forgotten...
    for i in 0..8 {
        w.ok(Command::ScheduleVm {
            name: format!("vm-{i:02}"),
            host: Some(2 + i % 2),
            expected: Some(1),
            now: 4,
        });
    }
    let calm = pass(&w, &d.hold, 61_000);
    assert_eq!(moved(&calm), None);
    assert_eq!(calm.hold.since("alpha"), None);
    // ... so when the skew comes back, it starts again from zero.
    for i in 0..8 {
        w.ok(Command::ScheduleVm {
            name: format!("vm-{i:02}"),
            host: Some(1),
            expected: Some(2 + i % 2),
            now: 5,
        });
    }
    let d = pass(&w, &calm.hold, 62_000);
    assert_eq!(d.hold.since("alpha"), Some(62_000));
    assert_eq!(moved(&pass(&w, &d.hold, 121_999)), None);
    let d = pass(&w, &d.hold, 122_000);
    let (vm, to) = moved(&d).expect("the hold passed");
    assert!(vm.starts_with("vm-"));
    assert_ne!(to, 1, "off the busy host");
}

#[test]
fn one_move_in_flight_then_a_whole_new_hold_before_the_next_until_balanced() {
    const HOLD_MS: u64 = 60_000;
    let mut w = skewed(true);
    let mut hold = pass(&w, &Hold::default(), 0).hold;
    let mut moves = 0;
    let mut now = HOLD_MS;
    while let Some((vm, to)) = moved(&pass(&w, &hold, now)) {
        let d = pass(&w, &hold, now);
        w.ok(d.command.clone().expect("a move"));
        moves += 1;
        // While it runs: no second move, and the move has spent the hold.
        let during = pass(&w, &d.hold, now + 1);
        assert_eq!(during.command, None);
        assert_eq!(during.hold.since("alpha"), None);
        // The state machine refuses a second one whatever a leader believes.
        let other = if vm == "vm-11" { "vm-10" } else { "vm-11" };
        let e = w.err(Command::StartMigration {
            name: other.into(),
            to,
            purpose: MigrationPurpose::Rebalance,
            now: 11,
        });
        assert!(
            matches!(&e, StateError::Conflict(m) if m.contains("one VM at a time")),
            "{e:?}"
        );
        let node = w.state.hosts()[&to].name.clone();
        w.end(&vm, Some(&node), 12);
        // Still out of balance: a new hold starts when the move ended, and the next move
        // waits all of it (the outside check saw the second move start at once).
        let after = pass(&w, &during.hold, now + 2);
        assert_eq!(after.command, None);
        let Some(since) = after.hold.since("alpha") else {
            break;
        };
        assert_eq!(since, now + 2);
        let early = pass(&w, &after.hold, since + HOLD_MS - 1);
        assert_eq!(early.command, None, "the next move before its hold is over");
        hold = early.hold;
        now = since + HOLD_MS;
        assert!(moves <= 12, "rebalancing does not converge");
    }
    assert!(moves >= 4, "{moves} moves");
    let views = host_views(&w.state);
    let imbalance = crate::rebalance::cluster_imbalance(&views, "alpha").expect("3 hosts");
    assert!(imbalance <= 10.0, "{imbalance}");
}

#[test]
fn a_disturbed_cluster_is_left_alone_and_its_hold_forgotten() {
    let mut w = skewed(true);
    let hold = pass(&w, &Hold::default(), 0).hold;
    assert_eq!(hold.since("alpha"), Some(0));
    // A host in maintenance (its drain under way).
    w.ok(Command::SetMaintenance {
        id: 3,
        enable: true,
        now: 4,
    });
    let d = pass(&w, &hold, 100_000);
    assert_eq!(d.command, None);
    assert_eq!(d.hold.since("alpha"), None);
    w.ok(Command::SetMaintenance {
        id: 3,
        enable: false,
        now: 5,
    });
    // A host down.
    w.ok(Command::SetHostState {
        id: 2,
        state: HostState::Unreachable,
        now: 6,
    });
    assert_eq!(pass(&w, &hold, 100_000).command, None);
}

#[test]
fn the_state_machine_refuses_a_rebalance_move_while_rebalancing_is_off() {
    let mut w = skewed(false);
    let e = w.err(Command::StartMigration {
        name: "vm-00".into(),
        to: 2,
        purpose: MigrationPurpose::Rebalance,
        now: 11,
    });
    assert!(
        matches!(&e, StateError::Conflict(m) if m.contains("rebalancing is off")),
        "{e:?}"
    );
}
