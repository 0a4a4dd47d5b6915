//! `on_result`: statuses, events, stale addresses and back-off from agents' results.

use protocol::agent::OpKind;
use std::net::IpAddr;

use protocol::agent::{CommandFailure, CommandOutput, FailureKind, VmObservation};
use protocol::fleet::{ConditionKind, EventLevel, VmPhase, VmStatus};
use protocol::spec::{DesiredState, NicIp};

use super::*;
use crate::reconcile::status::{ResultMeta, allocation_failed, on_result, same_status};
use crate::reconcile::{Action, BACKOFF_MAX_MS, Backoff, plan};

fn meta(kind: OpKind) -> ResultMeta {
    ResultMeta {
        vm: "web".into(),
        host: A,
        kind,
        generation: 1,
    }
}

fn obs(generation: u64, running: bool, ips: &[&str]) -> CommandOutput {
    CommandOutput::Vm(VmObservation {
        vmid: 101,
        generation,
        running,
        ips: ips.iter().map(|ip| ip.parse::<IpAddr>().unwrap()).collect(),
        pending_restart: vec![],
        digest: "d".into(),
    })
}

fn failure(kind: FailureKind) -> CommandFailure {
    CommandFailure {
        kind,
        step: "clone".into(),
        message: "storage local-lvm is busy".into(),
    }
}

fn statuses(actions: &[Action]) -> Vec<&VmStatus> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::SetStatus { status, .. } => Some(status),
            _ => None,
        })
        .collect()
}

fn events(actions: &[Action]) -> Vec<(EventLevel, &str)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Event { level, message, .. } => Some((*level, message.as_str())),
            _ => None,
        })
        .collect()
}

fn later(ms: u64) -> Clock {
    Clock {
        mono_ms: NOW.mono_ms + ms,
        unix_ms: NOW.unix_ms + ms,
    }
}

#[test]
fn a_first_successful_ensure_records_running_and_ready_and_announces_creation_and_start() {
    let mut fleet = Fleet::new();
    fleet.placed(spec("web"), A);
    let rec = fleet.vm("web");
    let outcome = Ok(obs(1, true, &["10.0.0.10"]));
    let reaction = on_result(
        Some(&rec),
        None,
        "pve-a",
        &meta(OpKind::Ensure),
        &outcome,
        &VmMemory::default(),
        NOW,
    );
    let status = statuses(&reaction.actions)[0];
    assert_eq!(status.phase, VmPhase::Running);
    let conditions: Vec<(ConditionKind, bool, u64)> = status
        .conditions
        .iter()
        .map(|c| (c.kind, c.status, c.since))
        .collect();
    let t = NOW.unix_ms;
    assert_eq!(
        conditions,
        [
            (ConditionKind::Scheduled, true, t),
            (ConditionKind::Created, true, t),
            (ConditionKind::Configured, true, t),
            (ConditionKind::Running, true, t),
            (ConditionKind::Ready, true, t),
        ]
    );
    assert_eq!(status.current_host, Some(A));
    assert_eq!(status.ips, ["10.0.0.10".parse::<IpAddr>().unwrap()]);
    assert_eq!(status.observed_generation, 1);
    assert_eq!(status.message, "");
    assert_eq!(
        events(&reaction.actions),
        [
            (EventLevel::Info, "created on host pve-a with VMID 101"),
            (EventLevel::Info, "started on host pve-a"),
        ]
    );
    assert_eq!(reaction.memory.last_result_ms, Some(NOW.mono_ms));
    assert_eq!(reaction.memory.backoff, None);
}

#[test]
fn the_same_observation_again_writes_nothing_and_conditions_keep_their_times() {
    let mut fleet = Fleet::new();
    fleet.placed(spec("web"), A);
    let outcome = Ok(obs(1, true, &["10.0.0.10"]));
    let first = on_result(
        Some(&fleet.vm("web")),
        None,
        "pve-a",
        &meta(OpKind::Ensure),
        &outcome,
        &VmMemory::default(),
        NOW,
    );
    fleet.status("web", statuses(&first.actions)[0].clone());
    let again = on_result(
        Some(&fleet.vm("web")),
        None,
        "pve-a",
        &meta(OpKind::Ensure),
        &outcome,
        &first.memory,
        later(30_000),
    );
    assert!(again.actions.is_empty(), "{:#?}", again.actions);

    // The guest lost its address: only Ready changes, and only its time moves.
    let lost = Ok(obs(1, true, &[]));
    let reaction = on_result(
        Some(&fleet.vm("web")),
        None,
        "pve-a",
        &meta(OpKind::Ensure),
        &lost,
        &first.memory,
        later(60_000),
    );
    assert!(events(&reaction.actions).is_empty());
    let status = statuses(&reaction.actions)[0];
    for c in &status.conditions {
        let expected = if c.kind == ConditionKind::Ready {
            later(60_000).unix_ms
        } else {
            NOW.unix_ms
        };
        assert_eq!(c.since, expected, "{:?}", c.kind);
    }
    assert_eq!(status.phase, VmPhase::Running);
}

#[test]
fn the_phase_follows_the_power_state_and_the_desired_state() {
    let table = [
        (DesiredState::Running, true, VmPhase::Running, ""),
        (
            DesiredState::Running,
            false,
            VmPhase::Provisioning,
            "created, not running yet",
        ),
        (DesiredState::Stopped, false, VmPhase::Stopped, ""),
        (DesiredState::Stopped, true, VmPhase::Running, ""),
    ];
    for (desired, running, phase, message) in table {
        let mut fleet = Fleet::new();
        let mut s = spec("web");
        s.state = desired;
        fleet.placed(s, A);
        let outcome = Ok(obs(1, running, &[]));
        let reaction = on_result(
            Some(&fleet.vm("web")),
            None,
            "pve-a",
            &meta(OpKind::Ensure),
            &outcome,
            &VmMemory::default(),
            NOW,
        );
        let status = statuses(&reaction.actions)[0];
        assert_eq!(
            (status.phase, status.message.as_str()),
            (phase, message),
            "{desired:?} running {running}"
        );
        let ready = status
            .conditions
            .iter()
            .find(|c| c.kind == ConditionKind::Ready)
            .unwrap();
        assert!(!ready.status);
    }
}

#[test]
fn changes_pending_a_restart_leave_the_vm_not_configured_with_a_message() {
    let mut fleet = Fleet::new();
    fleet.placed(spec("web"), A);
    let outcome = Ok(CommandOutput::Vm(VmObservation {
        vmid: 101,
        generation: 1,
        running: true,
        ips: vec![],
        pending_restart: vec!["cores".into(), "machine".into()],
        digest: "d".into(),
    }));
    let reaction = on_result(
        Some(&fleet.vm("web")),
        None,
        "pve-a",
        &meta(OpKind::Ensure),
        &outcome,
        &VmMemory::default(),
        NOW,
    );
    let status = statuses(&reaction.actions)[0];
    assert_eq!(
        status.message,
        "changes wait for a restart (restart = \"never\"): cores, machine"
    );
    let configured = status
        .conditions
        .iter()
        .find(|c| c.kind == ConditionKind::Configured)
        .unwrap();
    assert_eq!(
        (configured.status, configured.reason.as_str()),
        (false, "PendingRestart")
    );
}

#[test]
fn addresses_the_spec_dropped_are_released_once_the_guest_has_the_new_generation() {
    let mut fleet = Fleet::new();
    fleet.placed(spec("web"), A);
    let mut dhcp = spec("web");
    dhcp.nics[0].ip = Some(NicIp::Dhcp);
    fleet.put(dhcp);
    let rec = fleet.vm("web");
    assert_eq!(rec.generation, 2);
    let old_config = on_result(
        Some(&rec),
        None,
        "pve-a",
        &meta(OpKind::Ensure),
        &Ok(obs(1, true, &[])),
        &VmMemory::default(),
        NOW,
    );
    assert!(
        !old_config
            .actions
            .contains(&Action::ReleaseStaleIps { vm: "web".into() })
    );
    let new_config = on_result(
        Some(&rec),
        None,
        "pve-a",
        &meta(OpKind::Ensure),
        &Ok(obs(2, true, &[])),
        &VmMemory::default(),
        NOW,
    );
    assert_eq!(
        new_config.actions.last(),
        Some(&Action::ReleaseStaleIps { vm: "web".into() })
    );
}

#[test]
fn a_failure_sets_the_phase_warns_once_and_backs_off() {
    // (failure, phase before, phase after)
    let table = [
        (FailureKind::Transient, VmPhase::Running, VmPhase::Running),
        (
            FailureKind::Transient,
            VmPhase::Provisioning,
            VmPhase::Failed,
        ),
        (FailureKind::Permanent, VmPhase::Running, VmPhase::Failed),
        (FailureKind::InDoubt, VmPhase::Running, VmPhase::Failed),
        (FailureKind::NotFound, VmPhase::Scheduled, VmPhase::Failed),
    ];
    for (kind, before, after) in table {
        let mut fleet = Fleet::new();
        fleet.placed(spec("web"), A);
        let mut status = fleet.vm("web").status;
        status.phase = before;
        fleet.status("web", status);
        let outcome = Err(failure(kind));
        let first = on_result(
            Some(&fleet.vm("web")),
            None,
            "pve-a",
            &meta(OpKind::Ensure),
            &outcome,
            &VmMemory::default(),
            NOW,
        );
        let status = statuses(&first.actions)[0].clone();
        assert_eq!(status.phase, after, "{kind:?} from {before:?}");
        assert!(
            status.message.starts_with("ensure failed at step clone (")
                && status.message.ends_with("): storage local-lvm is busy"),
            "{}",
            status.message
        );
        assert_eq!(
            events(&first.actions),
            [(EventLevel::Warning, status.message.as_str())]
        );
        assert_eq!(
            first.memory.backoff,
            Some(Backoff {
                generation: 1,
                attempts: 1,
                retry_at_ms: NOW.mono_ms + 2_000
            })
        );
        // The same failure on the retry: recorded already, so no status and no event.
        fleet.status("web", status);
        let retry = on_result(
            Some(&fleet.vm("web")),
            None,
            "pve-a",
            &meta(OpKind::Ensure),
            &outcome,
            &first.memory,
            later(2_000),
        );
        assert!(retry.actions.is_empty(), "{:#?}", retry.actions);
        assert_eq!(
            retry.memory.backoff.unwrap().retry_at_ms,
            later(2_000).mono_ms + 4_000
        );
        // Success clears the back-off.
        let ok = on_result(
            Some(&fleet.vm("web")),
            None,
            "pve-a",
            &meta(OpKind::Ensure),
            &Ok(obs(1, true, &["10.0.0.10"])),
            &retry.memory,
            later(9_000),
        );
        assert_eq!(ok.memory.backoff, None);
        assert_eq!(statuses(&ok.actions)[0].message, "");
    }
}

#[test]
fn the_back_off_doubles_from_two_seconds_to_a_minute_and_restarts_for_a_new_generation() {
    let mut backoff = None;
    let mut waits = Vec::new();
    for _ in 0..40 {
        let b = Backoff::after(backoff, 1, 0);
        waits.push(b.retry_at_ms);
        backoff = Some(b);
    }
    assert_eq!(
        waits[..7],
        [2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000]
    );
    assert!(waits.iter().all(|&w| w <= BACKOFF_MAX_MS));
    let fresh = Backoff::after(backoff, 2, 100);
    assert_eq!((fresh.attempts, fresh.retry_at_ms), (1, 2_100));
    assert!(fresh.holds(2, 2_099) && !fresh.holds(2, 2_100) && !fresh.holds(3, 0));
}

#[test]
fn a_vmid_held_by_a_foreign_vm_fails_the_vm_until_the_spec_changes() {
    let mut fleet = Fleet::new();
    fleet.placed(spec("web"), A);
    let outcome = Err(CommandFailure {
        kind: FailureKind::NotOwned,
        step: "read".into(),
        message: "VM 101 is named db, not web".into(),
    });
    let reaction = on_result(
        Some(&fleet.vm("web")),
        None,
        "pve-a",
        &meta(OpKind::Ensure),
        &outcome,
        &VmMemory::default(),
        NOW,
    );
    let status = statuses(&reaction.actions)[0].clone();
    assert_eq!(status.phase, VmPhase::Failed);
    assert!(
        status
            .message
            .contains("VMID 101 on host pve-a holds a VM the fleet does not own")
            && status
                .message
                .contains("nothing is retried until the spec changes"),
        "{}",
        status.message
    );
    assert_eq!(events(&reaction.actions).len(), 1);
    assert_eq!(reaction.memory.not_owned_generation, Some(1));
    fleet.status("web", status);

    let memory = remember("web", reaction.memory.clone());
    let much_later = later(10 * BACKOFF_MAX_MS);
    let mut view = live(&[]);
    for h in view.hosts.values_mut() {
        h.last_beat_ms = much_later.mono_ms;
    }
    let actions = plan(&fleet.state, &view, &memory, &POLICY, much_later);
    assert!(actions.is_empty(), "{actions:#?}");
    let mut changed = spec("web");
    changed.cores = 1;
    fleet.put(changed);
    let actions = plan(&fleet.state, &view, &memory, &POLICY, much_later);
    assert!(
        matches!(&actions[..], [Action::Send { generation: 2, .. }]),
        "{actions:#?}"
    );
}

#[test]
fn delete_results_release_the_vm_once_it_is_gone_from_its_host() {
    let gone = |outcome: Result<CommandOutput, CommandFailure>| {
        let mut fleet = Fleet::new();
        fleet.placed(spec("web"), A);
        fleet.delete("web");
        on_result(
            Some(&fleet.vm("web")),
            None,
            "pve-a",
            &meta(OpKind::Delete),
            &outcome,
            &VmMemory::default(),
            NOW,
        )
        .actions
    };
    let release = Action::Release { vm: "web".into() };
    assert_eq!(
        gone(Ok(CommandOutput::Deleted { existed: true })),
        std::slice::from_ref(&release)
    );
    assert_eq!(
        gone(Ok(CommandOutput::Deleted { existed: false })),
        std::slice::from_ref(&release)
    );
    assert_eq!(
        gone(Err(failure(FailureKind::NotFound))),
        std::slice::from_ref(&release)
    );
    let foreign = gone(Err(failure(FailureKind::NotOwned)));
    assert_eq!(foreign.len(), 2);
    assert!(matches!(
        &foreign[0],
        Action::Event {
            level: EventLevel::Warning,
            ..
        }
    ));
    assert_eq!(foreign[1], release);
    let busy = gone(Err(failure(FailureKind::Transient)));
    let status = statuses(&busy)[0];
    assert_eq!(status.phase, VmPhase::Failed);
    assert!(
        status.message.starts_with("delete failed at step clone"),
        "{}",
        status.message
    );
}

#[test]
fn results_for_vms_gone_moved_or_being_deleted_change_nothing() {
    let mut fleet = Fleet::new();
    fleet.placed(spec("web"), A);
    let ok = Ok(obs(1, true, &[]));
    assert!(
        on_result(
            None,
            None,
            "pve-a",
            &meta(OpKind::Ensure),
            &ok,
            &VmMemory::default(),
            NOW
        )
        .actions
        .is_empty()
    );
    let elsewhere = ResultMeta {
        host: B,
        ..meta(OpKind::Ensure)
    };
    assert!(
        on_result(
            Some(&fleet.vm("web")),
            None,
            "pve-b",
            &elsewhere,
            &ok,
            &VmMemory::default(),
            NOW
        )
        .actions
        .is_empty()
    );
    fleet.delete("web");
    assert!(
        on_result(
            Some(&fleet.vm("web")),
            None,
            "pve-a",
            &meta(OpKind::Ensure),
            &ok,
            &VmMemory::default(),
            NOW
        )
        .actions
        .is_empty()
    );
}

#[test]
fn a_refused_allocation_leaves_the_vm_pending_with_the_reason_once() {
    let mut fleet = Fleet::new();
    fleet.put(spec("web"));
    let actions = allocation_failed(&fleet.vm("web"), "VMID range main is exhausted", NOW);
    let status = statuses(&actions)[0].clone();
    assert_eq!(status.phase, VmPhase::Pending);
    assert_eq!(
        status.message,
        "cannot allocate the VM's ids: VMID range main is exhausted"
    );
    assert_eq!(events(&actions).len(), 1);
    fleet.status("web", status.clone());
    assert!(
        allocation_failed(&fleet.vm("web"), "VMID range main is exhausted", later(1)).is_empty()
    );
    assert!(same_status(&status, &fleet.vm("web").status));
}

#[test]
fn a_failed_start_of_an_ha_started_guest_is_counted_and_shown_stopped_not_failed() {
    for (ha, phase, counted) in [
        (
            Some(protocol::spec::HaState::Started),
            VmPhase::Stopped,
            true,
        ),
        (None, VmPhase::Failed, false),
    ] {
        let mut fleet = Fleet::new();
        let mut web = spec("web");
        web.ha.state = ha;
        fleet.placed(web, A);
        let outcome = Err(CommandFailure {
            kind: FailureKind::Permanent,
            step: "start".into(),
            message: "start failed: QEMU exited with code 1".into(),
        });
        let r = on_result(
            Some(&fleet.vm("web")),
            None,
            "pve-a",
            &meta(OpKind::Ensure),
            &outcome,
            &VmMemory::default(),
            NOW,
        );
        assert_eq!(statuses(&r.actions)[0].phase, phase, "HA {ha:?}");
        assert_eq!(
            r.actions
                .iter()
                .any(|a| matches!(a, Action::HaStartFailed { .. })),
            counted,
            "HA {ha:?}"
        );
    }
}
