//! Hosts leaving cleanly in the state machine: the shutdown policy's decision is recorded (a
//! freeze's hold, a drain's maintenance), a repeat of the same agent session changes nothing,
//! a hold is never shortened by a later session, another session's beat is the host back (a
//! maintenance the policy began ends), the record goes only once the host is back, and a state
//! with a record is never written at v1.

use protocol::agent::{LeaveAction, LeaveKind};
use protocol::fleet::{Capacity, HostState, PVE_CLUSTER_LABEL, Settings};
use protocol::spec::ShutdownPolicy;
use protocol::version::Version;

use super::Fleet;
use crate::shutdown::{FREEZE_HOLD_MS, RESTART_HOLD_MS};
use crate::state::{Command, StateError, encode_snapshot};

/// Host 1 (pve-a) online in PVE cluster alpha, the shutdown policy `policy`.
fn fleet(policy: ShutdownPolicy) -> Fleet {
    let mut f = Fleet::new();
    f.ok(Command::RegisterHost {
        id: 1,
        name: "pve-a".into(),
        labels: [(PVE_CLUSTER_LABEL.to_string(), "alpha".to_string())].into(),
        capacity: Capacity {
            cpus: 16,
            memory_mib: 65_536,
        },
        now: 1,
    });
    f.ok(Command::SetHostState {
        id: 1,
        state: HostState::Online,
        now: 1,
    });
    let mut settings = Settings::default();
    settings.ha.shutdown_policy = policy;
    f.ok(Command::put_settings(settings, 2));
    f
}

fn leaving(kind: LeaveKind, boot_id: u64) -> Command {
    Command::HostLeaving {
        id: 1,
        kind,
        boot_id,
        now: 3,
    }
}

fn returned(boot_id: u64) -> Command {
    Command::HostReturned {
        id: 1,
        boot_id,
        now: 4,
    }
}

#[test]
fn a_restart_is_held_then_back_then_forgotten() {
    let mut f = fleet(ShutdownPolicy::Failover);
    f.ok(leaving(LeaveKind::Restart, 7));
    let l = f.state.leaving()[&1].clone();
    assert_eq!(
        (l.action, l.hold_ms, l.drained, l.returned),
        (LeaveAction::Freeze, RESTART_HOLD_MS, false, false)
    );
    // The same session again: nothing changes; its own beats are no return.
    f.ok(leaving(LeaveKind::Restart, 7));
    f.ok(returned(7));
    assert_eq!(f.state.leaving()[&1], l);
    // Not back: the record stays, its hold may still run.
    let e = f.err(Command::EndLeaving { id: 1, now: 5 });
    assert!(
        matches!(&e, StateError::Conflict(m) if m.contains("hold")),
        "{e:?}"
    );
    assert!(encode_snapshot(&f.state, Version(1)).is_err());
    // Another session beats: back; then the record may go.
    f.ok(returned(8));
    assert!(f.state.leaving()[&1].returned);
    f.ok(Command::EndLeaving { id: 1, now: 5 });
    assert!(f.state.leaving().is_empty());
}

#[test]
fn migrate_drains_through_a_maintenance_that_ends_when_the_host_is_back() {
    let mut f = fleet(ShutdownPolicy::Migrate);
    f.ok(leaving(LeaveKind::Reboot, 7));
    assert_eq!(f.state.hosts()[&1].state, HostState::Maintenance);
    let l = &f.state.leaving()[&1];
    assert_eq!(
        (l.action, l.hold_ms, l.drained),
        (LeaveAction::Drain, FREEZE_HOLD_MS, true)
    );
    f.ok(returned(8));
    assert_eq!(f.state.hosts()[&1].state, HostState::Online);
}

#[test]
fn an_operators_maintenance_outlives_the_reboot() {
    let mut f = fleet(ShutdownPolicy::Migrate);
    f.ok(Command::SetMaintenance {
        id: 1,
        enable: true,
        now: 3,
    });
    f.ok(leaving(LeaveKind::Reboot, 7));
    assert!(!f.state.leaving()[&1].drained);
    f.ok(returned(8));
    assert_eq!(f.state.hosts()[&1].state, HostState::Maintenance);
}

#[test]
fn failover_records_nothing_and_never_shortens_an_earlier_hold() {
    let mut f = fleet(ShutdownPolicy::Conditional);
    f.ok(leaving(LeaveKind::PowerOff, 7));
    assert!(f.state.leaving().is_empty());
    // A reboot freezes for 5 minutes; the next session's restart keeps that hold.
    f.ok(leaving(LeaveKind::Reboot, 8));
    assert_eq!(f.state.leaving()[&1].hold_ms, FREEZE_HOLD_MS);
    f.ok(leaving(LeaveKind::Restart, 9));
    assert_eq!(f.state.leaving()[&1].hold_ms, FREEZE_HOLD_MS);
    assert_eq!(f.state.leaving()[&1].boot_id, 9);
    // A power-off under failover leaves the hold in place.
    f.ok(leaving(LeaveKind::PowerOff, 10));
    assert_eq!(f.state.leaving()[&1].hold_ms, FREEZE_HOLD_MS);
}

#[test]
fn a_host_that_cannot_beat_cannot_leave_and_a_removed_one_loses_its_record() {
    let mut f = fleet(ShutdownPolicy::Freeze);
    f.ok(leaving(LeaveKind::Reboot, 7));
    f.ok(Command::SetHostState {
        id: 1,
        state: HostState::Removed,
        now: 5,
    });
    assert!(f.state.leaving().is_empty());
    let e = f.err(leaving(LeaveKind::Reboot, 8));
    assert!(matches!(e, StateError::Conflict(_)), "{e:?}");
}
