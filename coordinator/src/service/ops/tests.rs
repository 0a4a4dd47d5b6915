//! The VM operations' decisions against a small fleet: two online hosts `pve7` and `pve8`,
//! `web-1` (2 vCPUs, 2 GiB) placed on `pve7` with VMID 100, `db-1` not placed yet.

use protocol::agent::{CommandFailure, FailureKind, SnapshotAction};
use protocol::fleet::{Capacity, HostState};
use protocol::spec::{DesiredState, VmSpec, VmidRangeSpec};
use transport::{RemoteCode, RemoteError};

use super::plan::{self, Placed, PowerPlan};
use fleet::scheduler::{HostUsage, HostView};
use fleet::state::{Command, CommandReply, FleetState};

fn apply(s: &mut FleetState, index: u64, cmd: Command) -> CommandReply {
    let reply = s.apply(index, cmd);
    assert!(
        !matches!(reply, CommandReply::Refused(_)),
        "refused: {reply:?}"
    );
    reply
}

fn fleet() -> FleetState {
    let mut s = FleetState::new();
    let mut web = VmSpec::new("web-1", 2048);
    web.cores = 2;
    let commands = [
        Command::PutVmidRange {
            spec: VmidRangeSpec {
                name: "default".into(),
                start: 100,
                end: 199,
            },
            now: 1,
        },
        Command::RegisterHost {
            id: 7,
            name: "pve7".into(),
            labels: Default::default(),
            capacity: Capacity {
                cpus: 4,
                memory_mib: 8192,
            },
            now: 1,
        },
        Command::RegisterHost {
            id: 8,
            name: "pve8".into(),
            labels: Default::default(),
            capacity: Capacity {
                cpus: 4,
                memory_mib: 8192,
            },
            now: 1,
        },
        Command::SetHostState {
            id: 7,
            state: HostState::Online,
            now: 2,
        },
        Command::SetHostState {
            id: 8,
            state: HostState::Online,
            now: 2,
        },
        Command::apply_vm(web, 3),
        Command::apply_vm(VmSpec::new("db-1", 1024), 3),
        Command::ScheduleVm {
            name: "web-1".into(),
            host: Some(7),
            expected: None,
            now: 4,
        },
        Command::AllocateVmid {
            vm: "web-1".into(),
            avoid: Vec::new(),
            now: 4,
        },
    ];
    for (i, cmd) in commands.into_iter().enumerate() {
        apply(&mut s, i as u64 + 1, cmd);
    }
    s
}

/// The hosts as the control plane would report them: `web-1` counted on `pve7`.
fn views() -> Vec<HostView> {
    let capacity = Capacity {
        cpus: 4,
        memory_mib: 8192,
    };
    let mut pve7 = HostView::new(7, "pve7", capacity);
    pve7.usage = HostUsage {
        vcpus: 2,
        memory_mib: 2048,
        vm_count: 1,
    };
    vec![pve7, HostView::new(8, "pve8", capacity)]
}

#[test]
fn a_one_shot_command_goes_to_the_placed_vms_host_and_vmid() {
    let s = fleet();
    assert_eq!(
        plan::placed(&s, "web-1", "restart").unwrap(),
        Placed {
            host: 7,
            host_name: "pve7".into(),
            vmid: 100,
            generation: 1,
        }
    );
    let unplaced = plan::placed(&s, "db-1", "restart").unwrap_err();
    assert_eq!(unplaced.code, RemoteCode::Conflict);
    assert!(
        unplaced.message.contains("not placed on a host yet")
            && unplaced.message.contains("pvefleet vm explain db-1"),
        "{}",
        unplaced.message
    );
    let missing = plan::placed(&s, "web-9", "restart").unwrap_err();
    assert_eq!(missing.code, RemoteCode::NotFound);
    assert!(missing.message.contains("web-9"), "{}", missing.message);
}

#[test]
fn a_vm_without_a_vmid_or_being_deleted_cannot_take_one_shot_commands() {
    let mut s = fleet();
    apply(
        &mut s,
        20,
        Command::ScheduleVm {
            name: "db-1".into(),
            host: Some(8),
            expected: None,
            now: 5,
        },
    );
    let e = plan::placed(&s, "db-1", "snapshot ls").unwrap_err();
    assert_eq!(e.code, RemoteCode::Conflict);
    assert!(
        e.message.contains("no VMID yet") && e.message.contains("pve8"),
        "{}",
        e.message
    );
    apply(
        &mut s,
        21,
        Command::DeleteVm {
            name: "web-1".into(),
            now: 6,
        },
    );
    let e = plan::placed(&s, "web-1", "restart").unwrap_err();
    assert_eq!(e.code, RemoteCode::Conflict);
    assert!(e.message.contains("being deleted"), "{}", e.message);
}

#[test]
fn start_and_stop_change_only_the_desired_state_and_only_when_it_differs() {
    let s = fleet();
    assert_eq!(
        plan::power_plan(&s, "web-1", DesiredState::Running, 9).unwrap(),
        PowerPlan::Unchanged { generation: 1 }
    );
    assert_eq!(
        plan::power_plan(&s, "web-1", DesiredState::Stopped, 9).unwrap(),
        PowerPlan::Propose(Command::SetVmState {
            name: "web-1".into(),
            state: DesiredState::Stopped,
            now: 9
        }),
        "a stop of a running VM changes only its state"
    );
    let mut applied = s.clone();
    let index = applied.last_applied().unwrap_or(0) + 1;
    let reply = apply(
        &mut applied,
        index,
        Command::SetVmState {
            name: "web-1".into(),
            state: DesiredState::Stopped,
            now: 9,
        },
    );
    assert!(
        matches!(reply, CommandReply::VmApplied { generation: 2, .. }),
        "{reply:?}"
    );
    let mut expected = s.vm("web-1").unwrap().spec.clone();
    expected.state = DesiredState::Stopped;
    assert_eq!(
        applied.vm("web-1").unwrap().spec,
        expected,
        "nothing but the state changes"
    );
    let e = plan::power_plan(&s, "nope", DesiredState::Stopped, 9).unwrap_err();
    assert_eq!(e.code, RemoteCode::NotFound);

    let text = plan::power_message("web-1", DesiredState::Stopped, true, 2, Some("pve7"));
    assert!(
        text.contains("kept stopped (generation 2)") && text.contains("pve7"),
        "{text}"
    );
    let text = plan::power_message("db-1", DesiredState::Running, false, 1, None);
    assert!(text.contains("already kept running"), "{text}");
}

#[test]
fn start_and_stop_move_an_ha_request_along_and_a_disabled_vm_is_not_started() {
    use protocol::spec::{HaSpec, HaState};
    let mut s = fleet();
    let mut web = s.vm("web-1").unwrap().spec.clone();
    web.ha = HaSpec {
        max_restart: Some(4),
        ..HaSpec::started()
    };
    let next = |s: &mut FleetState, cmd| {
        let index = s.last_applied().unwrap_or(0) + 1;
        apply(s, index, cmd)
    };
    next(&mut s, Command::apply_vm(web, 9));
    let power = |s: &mut FleetState, state| {
        match plan::power_plan(s, "web-1", state, 10).unwrap() {
            PowerPlan::Propose(cmd) => next(s, cmd),
            other => panic!("{other:?}"),
        };
        s.vm("web-1").unwrap().spec.ha
    };
    let stopped = power(&mut s, DesiredState::Stopped);
    assert_eq!(stopped.state, Some(HaState::Stopped));
    assert_eq!(stopped.max_restart, Some(4), "only the request changes");
    assert_eq!(
        power(&mut s, DesiredState::Running).state,
        Some(HaState::Started)
    );
    // Disabled: kept stopped; a start is refused, naming ha.state and the way out.
    let mut disabled = s.vm("web-1").unwrap().spec.clone();
    disabled.state = DesiredState::Stopped;
    disabled.ha = HaSpec::with_state(HaState::Disabled);
    next(&mut s, Command::apply_vm(disabled, 11));
    let e = plan::power_plan(&s, "web-1", DesiredState::Running, 12).unwrap_err();
    assert_eq!(e.code, RemoteCode::Conflict);
    assert!(
        e.message.contains("ha.state = \"disabled\"") && e.message.contains("\"started\""),
        "{}",
        e.message
    );
    // Ignored: the request is HA's business only; the power changes alone.
    let mut ignored = s.vm("web-1").unwrap().spec.clone();
    ignored.ha = HaSpec::with_state(HaState::Ignored);
    next(&mut s, Command::apply_vm(ignored, 13));
    assert_eq!(
        power(&mut s, DesiredState::Running).state,
        Some(HaState::Ignored)
    );
}

#[test]
fn snapshot_names_follow_pves_rules() {
    for good in ["pre-upgrade", "s1", "Before_2", &"a".repeat(40)] {
        plan::check_snapshot_name(good).unwrap_or_else(|e| panic!("{good}: {}", e.message));
    }
    for bad in [
        "",
        "x",
        "1st",
        "a/b",
        "../x",
        "has space",
        "é1",
        &"a".repeat(41),
    ] {
        let e = plan::check_snapshot_name(bad).unwrap_err();
        assert_eq!(e.code, RemoteCode::BadRequest, "{bad}");
        assert!(e.message.contains("2 to 40 characters"), "{}", e.message);
    }
    for reserved in ["current", "pending", "Current"] {
        let e = plan::check_snapshot_name(reserved).unwrap_err();
        assert!(e.message.contains("reserves"), "{}", e.message);
    }
    plan::check_snapshot_action(&SnapshotAction::List).unwrap();
    assert!(
        plan::check_snapshot_action(&SnapshotAction::Delete {
            snapshot: "x".into()
        })
        .is_err()
    );
    assert_eq!(
        plan::snapshot_verb(&SnapshotAction::Rollback {
            snapshot: "s1".into(),
            start: true
        }),
        "snapshot rollback s1"
    );
}

#[test]
fn an_agent_failure_names_the_vm_the_host_and_pves_text() {
    let target = plan::placed(&fleet(), "web-1", "restart").unwrap();
    let failure = |kind| CommandFailure {
        kind,
        step: "shutdown".into(),
        message: "VM 100 qmp command 'system_powerdown' failed - got timeout".into(),
    };
    for (kind, code, advice) in [
        (
            FailureKind::Permanent,
            RemoteCode::Conflict,
            "fix what PVE names",
        ),
        (
            FailureKind::Transient,
            RemoteCode::Conflict,
            "retry shortly",
        ),
        (FailureKind::InDoubt, RemoteCode::Conflict, "may or may not"),
        (FailureKind::NotOwned, RemoteCode::Conflict, "does not own"),
        (
            FailureKind::NotFound,
            RemoteCode::NotFound,
            "does not exist",
        ),
    ] {
        let e = plan::failure_error("restart", "web-1", &target, &failure(kind));
        assert_eq!(e.code, code, "{kind:?}");
        for part in [
            "restart of vm web-1 (vmid 100) on host pve7 failed at step shutdown",
            "got timeout",
            advice,
        ] {
            assert!(e.message.contains(part), "{kind:?}: {}", e.message);
        }
    }
}

#[test]
fn no_result_is_final_unless_the_member_no_longer_leads() {
    let target = plan::placed(&fleet(), "web-1", "restart").unwrap();
    let silent = plan::no_result_error(
        "restart",
        "web-1",
        &target,
        RemoteError::unavailable("the agent did not answer within 120s; it may still complete"),
    );
    assert_eq!(
        silent.code,
        RemoteCode::Conflict,
        "a retry could restart twice"
    );
    assert!(
        silent
            .message
            .starts_with("no result for the restart of vm web-1 from host pve7: ")
            && silent.message.contains("it may still complete")
            && silent.message.contains("before retrying"),
        "{}",
        silent.message
    );
    let moved = RemoteError::not_leader(Some((2, "10.0.0.2:7400".into())));
    assert_eq!(
        plan::no_result_error("restart", "web-1", &target, moved.clone()),
        moved
    );
}

#[test]
fn explain_judges_the_placed_host_without_the_vms_own_share() {
    let s = fleet();
    let reply = plan::explain_vm(&s, views(), "web-1").unwrap();
    assert_eq!(reply.vm, "web-1");
    assert_eq!(reply.placed_on.as_deref(), Some("pve7"));
    assert_eq!(reply.verdicts.len(), 2);
    // Without its own share both hosts are empty and equal: the tie goes by name.
    let names: Vec<&str> = reply
        .verdicts
        .iter()
        .map(|v| v.host_name.as_str())
        .collect();
    assert_eq!(names, ["pve7", "pve8"]);
    let (a, b) = (
        reply.verdicts[0].scores.unwrap(),
        reply.verdicts[1].scores.unwrap(),
    );
    assert_eq!(a.closeness, b.closeness);
    assert!(
        reply
            .verdicts
            .iter()
            .all(|v| v.filter.is_none() && v.detail.is_empty())
    );

    // db-1 is unplaced: pve7 keeps web-1's share, so the emptier pve8 wins.
    let reply = plan::explain_vm(&s, views(), "db-1").unwrap();
    assert_eq!(reply.placed_on, None);
    assert_eq!(reply.verdicts[0].host_name, "pve8");
    assert!(
        reply.verdicts[0].scores.unwrap().closeness > reply.verdicts[1].scores.unwrap().closeness
    );
}

#[test]
fn explain_names_the_filter_that_excluded_a_host() {
    let s = fleet();
    let mut hosts = views();
    hosts[1].state = HostState::Maintenance;
    let reply = plan::explain_vm(&s, hosts, "db-1").unwrap();
    let excluded = &reply.verdicts[1];
    assert_eq!(excluded.host_name, "pve8");
    assert_eq!(excluded.filter.as_deref(), Some("maintenance"));
    assert!(
        excluded.detail.contains("maintenance"),
        "{}",
        excluded.detail
    );
    assert_eq!(excluded.scores, None);
    let e = plan::explain_vm(&s, views(), "web-9").unwrap_err();
    assert_eq!(e.code, RemoteCode::NotFound);
}

#[test]
fn host_usage_counts_the_vms_assigned_to_each_host() {
    let mut s = fleet();
    apply(
        &mut s,
        30,
        Command::ScheduleVm {
            name: "db-1".into(),
            host: Some(7),
            expected: None,
            now: 5,
        },
    );
    let entries = plan::host_entries(&s);
    let pve7 = entries.iter().find(|e| e.host.id == 7).unwrap();
    assert_eq!(
        (pve7.vm_count, pve7.vcpus, pve7.memory_mib),
        (2, 3, 3072),
        "web-1 (2 vCPUs, 2 GiB) and db-1 (1 vCPU, 1 GiB)"
    );
    let pve8 = entries.iter().find(|e| e.host.id == 8).unwrap();
    assert_eq!((pve8.vm_count, pve8.vcpus, pve8.memory_mib), (0, 0, 0));
    assert!(
        entries
            .iter()
            .all(|e| e.last_seen_ms.is_none() && e.resources.is_none())
    );
}

#[test]
fn a_host_silent_longer_than_its_lease_is_never_shown_online() {
    let s = fleet();
    let entries = plan::host_entries(&s);
    // (state, last seen, shown state)
    let table = [
        (HostState::Online, Some(9_999), HostState::Online),
        (HostState::Online, Some(10_001), HostState::Unreachable),
        (HostState::Online, None, HostState::Online),
        (HostState::Fenced, Some(60_000), HostState::Fenced),
        (HostState::Maintenance, Some(60_000), HostState::Maintenance),
    ];
    for (state, seen, shown) in table {
        let mut e = entries[0].clone();
        e.host.state = state;
        e.last_seen_ms = seen;
        plan::never_online_when_silent(&mut e, 10_000);
        assert_eq!(e.host.state, shown, "{state} seen {seen:?}");
        if shown != state {
            assert!(e.host.state_reason.contains("longer than its lease"));
        }
    }
}
