//! The maintenance planner against hand-built states: a drain moves at most
//! [`DRAIN_PARALLEL`] guests of a host at a time and spreads them, a failed drain waits
//! [`DRAIN_RETRY_MS`] before it is tried again, a guest no node can take stays (and says why),
//! a host that is not online cannot go into maintenance, and the guests come home after it.

use protocol::NodeId;
use protocol::fleet::{HostState, MigrationPurpose};
use protocol::spec::VmSpec;

use super::{DRAIN_PARALLEL, DRAIN_RETRY_MS, left_on, plan};
use crate::state::Command;
use crate::test_world::{World, alpha};
use crate::views::host_views;

/// Nodes 1 (pve-a), 2 (pve-b), 3 (pve-c) of PVE cluster alpha; ten VMs on pve-a.
fn world() -> World {
    let mut w = alpha();
    for i in 0..10 {
        w.vm(&format!("vm-{i}"), 1);
    }
    w
}

#[test]
fn a_drain_moves_a_few_guests_at_a_time_spread_and_brings_them_home_after() {
    let mut w = world();
    assert!(
        plan(&w.state, host_views(&w.state), 10).is_empty(),
        "nothing to do"
    );
    w.ok(Command::SetMaintenance {
        id: 1,
        enable: true,
        now: 10,
    });
    let first = w.step(10);
    assert_eq!(first.len(), DRAIN_PARALLEL);
    assert!(first.iter().all(|m| m.2 == MigrationPurpose::Drain));
    let targets: std::collections::BTreeSet<NodeId> = first.iter().map(|m| m.1).collect();
    assert_eq!(targets.len(), 2, "spread over both other nodes: {first:?}");
    // Nothing more while those run.
    assert!(w.step(11).is_empty());
    let mut now = 12;
    while w.state.vms().values().any(|r| r.assignment.host == Some(1)) {
        let moving: Vec<(String, String)> = w
            .state
            .migrations()
            .iter()
            .map(|(n, m)| (n.clone(), m.to_node.clone()))
            .collect();
        for (name, to) in moving {
            w.end(&name, Some(&to), now);
        }
        w.step(now);
        now += 1;
        assert!(now < 100, "the drain does not end");
    }
    assert_eq!(w.state.homes().len(), 10);
    assert!(left_on(&w.state, &host_views(&w.state), 1).is_empty());
    // Maintenance over: every guest goes home, and stays.
    w.ok(Command::SetMaintenance {
        id: 1,
        enable: false,
        now,
    });
    // As many at a time as a drain.
    let mut home = 0;
    while home < 10 {
        let back = w.step(now);
        assert!(!back.is_empty() && back.len() <= DRAIN_PARALLEL, "{back:?}");
        assert!(
            back.iter()
                .all(|m| m.1 == 1 && m.2 == MigrationPurpose::Home)
        );
        for (name, ..) in back {
            w.end(&name, Some("pve-a"), now);
            home += 1;
        }
        now += 1;
    }
    assert!(w.state.homes().is_empty());
    assert!(w.state.vms().values().all(|r| r.assignment.host == Some(1)));
    assert!(w.step(now + 1).is_empty());
}

#[test]
fn a_failed_drain_waits_before_it_is_tried_again_and_a_stuck_guest_says_why() {
    let mut w = world();
    // A guest pinned to pve-a can go nowhere: it stays, and says why.
    let mut pinned = VmSpec::new("pinned", 512);
    pinned.placement.hosts = vec!["pve-a".into()];
    w.ok(Command::apply_vm(pinned, 3));
    w.ok(Command::ScheduleVm {
        name: "pinned".into(),
        host: Some(1),
        expected: None,
        now: 3,
    });
    w.ok(Command::AllocateVmid {
        vm: "pinned".into(),
        avoid: vec![],
        now: 3,
    });
    w.ok(Command::SetMaintenance {
        id: 1,
        enable: true,
        now: 10,
    });
    let first = w.step(10);
    assert!(first.iter().all(|m| m.0 != "pinned"));
    let failed = first[0].0.clone();
    w.end(&failed, None, 20);
    let left = left_on(&w.state, &host_views(&w.state), 1);
    let why = |name: &str| left.iter().find(|(n, _)| n == name).map(|(_, w)| w.clone());
    assert!(why(&failed).unwrap().contains("last move failed"));
    assert!(why("pinned").unwrap().contains("allowed hosts"), "{left:?}");
    // Not again before the pause (the others go on), then again.
    assert!(w.step(21).iter().all(|m| m.0 != failed));
    let moving: Vec<(String, String)> = w
        .state
        .migrations()
        .iter()
        .map(|(n, m)| (n.clone(), m.to_node.clone()))
        .collect();
    for (name, to) in moving {
        w.end(&name, Some(&to), 22);
    }
    assert!(
        w.step(20 + DRAIN_RETRY_MS - 1)
            .iter()
            .all(|m| m.0 != failed)
    );
    for (name, to) in w
        .state
        .migrations()
        .iter()
        .map(|(n, m)| (n.clone(), m.to_node.clone()))
        .collect::<Vec<_>>()
    {
        w.end(&name, Some(&to), 23);
    }
    assert!(w.step(20 + DRAIN_RETRY_MS).iter().any(|m| m.0 == failed));
}

#[test]
fn only_an_online_host_goes_into_maintenance() {
    let mut w = world();
    w.ok(Command::SetHostLiveness {
        id: 2,
        expected: HostState::Online,
        state: HostState::Unreachable,
        reason: "silent".into(),
        now: 5,
    });
    let e = w.err(Command::SetMaintenance {
        id: 2,
        enable: true,
        now: 6,
    });
    assert!(e.to_string().contains("cannot be drained"), "{e}");
    let e = w.err(Command::SetMaintenance {
        id: 2,
        enable: false,
        now: 6,
    });
    assert!(e.to_string().contains("not in maintenance"), "{e}");
    // Asking twice is no error.
    w.ok(Command::SetMaintenance {
        id: 3,
        enable: false,
        now: 6,
    });
}

#[test]
fn an_affinity_group_is_drained_as_one_to_a_host_that_takes_all_of_it_and_an_operator_move_too() {
    let mut w = alpha();
    // db and cache kept together on pve-a; pve-b cannot take both (one fits), pve-c can.
    let mut db = VmSpec::new("db", 65_536);
    db.placement.together_with = vec!["cache".into()];
    w.spec_on(db, 1);
    w.spec_on(VmSpec::new("cache", 32_768), 1);
    w.spec_on(VmSpec::new("filler", 65_536), 2);
    let (t, riders) =
        crate::migration::group_target(&w.state, host_views(&w.state), "db", None).unwrap();
    assert_eq!(
        (t.to_name.as_str(), riders.as_slice()),
        ("pve-c", &["cache".to_string()][..])
    );
    // Alone, its rule keeps it with cache: it cannot leave.
    let alone = crate::migration::target(&w.state, host_views(&w.state), "db", None);
    assert!(
        alone
            .as_ref()
            .is_err_and(|e| e.contains("kept together with cache on pve-a")),
        "{alone:?}"
    );
    w.ok(Command::SetMaintenance {
        id: 1,
        enable: true,
        now: 10,
    });
    let moves = w.step(10);
    let mut names: Vec<(&str, NodeId)> = moves.iter().map(|m| (m.0.as_str(), m.1)).collect();
    names.sort();
    assert_eq!(names, [("cache", 3), ("db", 3)]);
    assert!(moves.iter().all(|m| m.2 == MigrationPurpose::Drain));
}

#[test]
fn a_stopped_guest_stays_on_a_host_in_maintenance_as_in_pve_and_moves_once_started() {
    let mut w = alpha();
    w.vm("web-1", 1);
    let mut stopped = VmSpec::new("cold-1", 1024);
    stopped.state = protocol::spec::DesiredState::Stopped;
    w.spec_on(stopped.clone(), 1);
    w.ok(Command::SetMaintenance {
        id: 1,
        enable: true,
        now: 10,
    });
    let moved = w.step(10);
    let names: Vec<&str> = moved.iter().map(|m| m.0.as_str()).collect();
    assert_eq!(names, ["web-1"], "only the running guest is drained");
    let left = left_on(&w.state, &host_views(&w.state), 1);
    let cold = left
        .iter()
        .find(|(n, _)| n == "cold-1")
        .expect("cold-1 is left");
    assert!(cold.1.contains("stays"), "{left:?}");
    let (count, _) = crate::shutdown::drain_state(&w.state, &host_views(&w.state), 1);
    assert_eq!(
        count, 1,
        "web-1 is still on its way; cold-1 is not waited for"
    );
    // Started later: the next pass moves it off the host in maintenance.
    stopped.state = protocol::spec::DesiredState::Running;
    w.ok(Command::apply_vm(stopped, 20));
    let moved = w.step(20);
    assert!(moved.iter().any(|m| m.0 == "cold-1"), "{moved:?}");
}
