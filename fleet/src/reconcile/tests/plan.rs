//! `plan`: placement, ids, when an Ensure is due and when it is not, deletion.

use protocol::agent::OpKind;
use std::net::IpAddr;

use protocol::agent::{DeleteVm, EnsureVm, Op, VmObservation};
use protocol::fleet::{EventLevel, HostState, NicAddress, VmPhase, VmStatus};
use protocol::spec::DesiredState;

use super::*;
use crate::reconcile::status::observed_status;
use crate::reconcile::{Action, Backoff, InflightCommand, plan};

fn run(fleet: &Fleet, live: &LiveView, inflight: &Inflight, now: Clock) -> Vec<Action> {
    plan(&fleet.state, live, inflight, &POLICY, now)
}

fn sends(actions: &[Action]) -> Vec<&Op> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Send { op, .. } => Some(op),
            _ => None,
        })
        .collect()
}

/// The status after an Ensure that found `rec` running with an address on host A.
fn in_order(fleet: &mut Fleet, vm: &str) {
    let rec = fleet.vm(vm);
    let obs = VmObservation {
        vmid: rec.assignment.vmid.unwrap(),
        generation: rec.generation,
        running: true,
        ips: vec!["10.0.0.10".parse().unwrap()],
        pending_restart: vec![],
        digest: "d".into(),
    };
    let status = observed_status(&rec, "pve-a", &obs, NOW);
    fleet.status(vm, status);
}

#[test]
fn an_unplaced_vm_is_scheduled_and_gets_its_ids_in_the_same_tick() {
    let mut fleet = Fleet::new();
    fleet.put(spec("web"));
    let actions = run(&fleet, &live(&[]), &Inflight::default(), NOW);
    assert_eq!(actions.len(), 4, "{actions:#?}");
    // Equal hosts: the tie goes to the first name.
    assert_eq!(
        actions[0],
        Action::Schedule {
            vm: "web".into(),
            host: A
        }
    );
    let Action::SetStatus { status, .. } = &actions[1] else {
        panic!("{:?}", actions[1]);
    };
    assert_eq!(status.phase, VmPhase::Scheduled);
    assert_eq!(status.message, "placed on host pve-a");
    assert_eq!(
        actions[2],
        Action::AllocateVmid {
            vm: "web".into(),
            avoid: vec![FOREIGN_VMID, TEMPLATE_VMID]
        }
    );
    assert_eq!(actions[3], Action::AllocateIps { vm: "web".into() });
}

#[test]
fn a_burst_of_vms_is_spread_over_the_hosts_it_is_placed_in() {
    let mut fleet = Fleet::new();
    for i in 0..6 {
        fleet.put(spec(&format!("web-{i}")));
    }
    let actions = run(&fleet, &live(&[]), &Inflight::default(), NOW);
    let hosts: Vec<NodeId> = actions
        .iter()
        .filter_map(|a| match a {
            Action::Schedule { host, .. } => Some(*host),
            _ => None,
        })
        .collect();
    assert_eq!(hosts.len(), 6);
    let on_a = hosts.iter().filter(|&&h| h == A).count();
    assert_eq!(on_a, 3, "{hosts:?}");
}

#[test]
fn the_plan_is_the_same_for_the_same_inputs() {
    let mut fleet = Fleet::new();
    for i in 0..5 {
        fleet.put(spec(&format!("vm-{i}")));
    }
    fleet.placed(spec("placed"), B);
    let live = live(&[]);
    let first = run(&fleet, &live, &Inflight::default(), NOW);
    for _ in 0..3 {
        assert_eq!(run(&fleet, &live, &Inflight::default(), NOW), first);
    }
}

#[test]
fn an_unplaceable_vm_is_pending_with_the_schedulers_reasons_and_warned_once() {
    let mut fleet = Fleet::new();
    let mut s = spec("web");
    s.nics = vec![nic("vmbr9", None)];
    fleet.put(s);
    let actions = run(&fleet, &live(&[]), &Inflight::default(), NOW);
    assert_eq!(actions.len(), 2, "{actions:#?}");
    let Action::SetStatus { status, .. } = &actions[0] else {
        panic!("{:?}", actions[0]);
    };
    assert_eq!(status.phase, VmPhase::Pending);
    assert!(
        status.message.starts_with("no eligible host for VM web:")
            && status.message.contains("bridge vmbr9 (net0) not present"),
        "{}",
        status.message
    );
    assert_eq!(
        actions[1],
        Action::Event {
            vm: "web".into(),
            level: EventLevel::Warning,
            message: status.message.clone()
        }
    );
    // Recorded: the next ticks say nothing more.
    fleet.status("web", status.clone());
    assert!(run(&fleet, &live(&[]), &Inflight::default(), NOW).is_empty());
}

#[test]
fn a_silent_host_takes_no_new_vm_but_silence_right_after_an_election_proves_nothing() {
    let mut fleet = Fleet::new();
    fleet.put(spec("web"));
    let mut view = live(&[]);
    view.hosts.get_mut(&A).unwrap().last_beat_ms = NOW.mono_ms - POLICY.lease_ms - 1;
    let actions = run(&fleet, &view, &Inflight::default(), NOW);
    assert_eq!(
        actions[0],
        Action::Schedule {
            vm: "web".into(),
            host: B
        }
    );
    view.hosts.remove(&A);
    view.leading_since_ms = NOW.mono_ms - 1_000;
    let actions = run(&fleet, &view, &Inflight::default(), NOW);
    assert_eq!(
        actions[0],
        Action::Schedule {
            vm: "web".into(),
            host: A
        }
    );
}

#[test]
fn a_placed_vm_gets_an_ensure_with_its_ids_pool_dns_and_address_wait() {
    let mut fleet = Fleet::new();
    fleet.placed(spec("web"), A);
    let actions = run(&fleet, &live(&[]), &Inflight::default(), NOW);
    assert_eq!(actions.len(), 2, "{actions:#?}");
    let Action::SetStatus { status, .. } = &actions[0] else {
        panic!("{:?}", actions[0]);
    };
    assert_eq!(status.phase, VmPhase::Provisioning);
    assert_eq!(status.message, "creating on host pve-a with VMID 101");
    let expected = Op::Ensure(Box::new(EnsureVm {
        spec: spec("web"),
        generation: 1,
        vmid: 101,
        ips: vec![NicAddress {
            nic: 0,
            pool: "lan".into(),
            address: "10.0.0.10".parse::<IpAddr>().unwrap(),
            prefix_len: 24,
            gateway: Some("10.0.0.1".parse().unwrap()),
        }],
        pool_dns: vec!["10.0.0.53".into(), "10.0.0.54".into()],
        ip_wait_secs: 60,
        take_over: None,
    }));
    assert_eq!(
        actions[1],
        Action::Send {
            host: A,
            generation: 1,
            op: expected
        }
    );
}

#[test]
fn an_ensure_waits_for_a_reporting_host_nothing_in_flight_and_the_back_off() {
    let mut fleet = Fleet::new();
    fleet.placed(spec("web"), A);
    let silent = {
        let mut v = live(&[]);
        v.hosts.get_mut(&A).unwrap().last_beat_ms = NOW.mono_ms - POLICY.lease_ms - 1;
        v
    };
    let in_flight = Inflight {
        commands: [(
            "web".to_string(),
            InflightCommand {
                id: "web/power/g1/t1/1".into(),
                kind: OpKind::Power,
                host: A,
                generation: 1,
            },
        )]
        .into(),
        ..Inflight::default()
    };
    let backoff = |generation, retry_at_ms| VmMemory {
        backoff: Some(Backoff {
            generation,
            attempts: 1,
            retry_at_ms,
        }),
        ..VmMemory::default()
    };
    let not_owned = |generation| VmMemory {
        not_owned_generation: Some(generation),
        ..VmMemory::default()
    };
    let table: [(&str, LiveView, Inflight, bool); 8] = [
        ("reporting, idle", live(&[]), Inflight::default(), true),
        ("host silent", silent, Inflight::default(), false),
        ("a command in flight", live(&[]), in_flight, false),
        (
            "back-off holds",
            live(&[]),
            remember("web", backoff(1, NOW.mono_ms + 1)),
            false,
        ),
        (
            "back-off passed",
            live(&[]),
            remember("web", backoff(1, NOW.mono_ms)),
            true,
        ),
        (
            "back-off of an older generation",
            live(&[]),
            remember("web", backoff(0, NOW.mono_ms + 10_000)),
            true,
        ),
        (
            "not owned at this generation",
            live(&[]),
            remember("web", not_owned(1)),
            false,
        ),
        (
            "not owned at an older generation",
            live(&[]),
            remember("web", not_owned(0)),
            true,
        ),
    ];
    for (case, live, inflight, send) in table {
        let actions = run(&fleet, &live, &inflight, NOW);
        assert_eq!(
            sends(&actions).len(),
            usize::from(send),
            "{case}: {actions:#?}"
        );
    }
}

#[test]
fn a_vm_in_order_is_left_alone_until_its_resync_is_due() {
    let mut fleet = Fleet::new();
    fleet.placed(spec("web"), A);
    in_order(&mut fleet, "web");
    let view = live(&[observed(101, "web", true)]);
    let recent = |last_ensure_ms| VmMemory {
        last_ensure_ms,
        last_result_ms: Some(NOW.mono_ms - 900),
        ..VmMemory::default()
    };
    let quiet = run(
        &fleet,
        &view,
        &remember("web", recent(Some(NOW.mono_ms - 1_000))),
        NOW,
    );
    assert!(quiet.is_empty(), "{quiet:#?}");
    let table = [
        ("resync due", Some(NOW.mono_ms - POLICY.resync_ms)),
        ("never sent by this leader", None),
    ];
    for (case, last_ensure) in table {
        let actions = run(&fleet, &view, &remember("web", recent(last_ensure)), NOW);
        assert_eq!(actions.len(), 1, "{case}: {actions:#?}");
        assert_eq!(sends(&actions).len(), 1, "{case}");
    }
}

#[test]
fn an_inventory_that_contradicts_the_spec_triggers_an_ensure() {
    let mut fleet = Fleet::new();
    fleet.placed(spec("web"), A);
    in_order(&mut fleet, "web");
    // The inventory (a second old) arrived after the last result (5 s old).
    let memory = VmMemory {
        last_ensure_ms: Some(NOW.mono_ms - 6_000),
        last_result_ms: Some(NOW.mono_ms - 5_000),
        ..VmMemory::default()
    };
    let vm = |f: &dyn Fn(&mut ObservedVm)| {
        let mut v = observed(101, "web", true);
        f(&mut v);
        vec![v]
    };
    let table: [(&str, Vec<ObservedVm>, bool); 8] = [
        ("as specified", vm(&|_| {}), false),
        ("gone", vec![], true),
        (
            "stopped behind the fleet's back",
            vm(&|v| v.status = "stopped".into()),
            true,
        ),
        ("cores changed", vm(&|v| v.cpus = 4), true),
        ("memory changed", vm(&|v| v.memory_bytes = 1024), true),
        (
            "stopped but locked by PVE",
            vm(&|v| {
                v.status = "stopped".into();
                v.lock = Some("backup".into());
            }),
            false,
        ),
        (
            "an owned VM of another name at the VMID",
            vm(&|v| {
                v.name = "db".into();
                v.status = "stopped".into();
            }),
            false,
        ),
        (
            "another VM took the VMID",
            vm(&|v| {
                v.owned = false;
                v.status = "stopped".into();
            }),
            false,
        ),
    ];
    for (case, vms, send) in table {
        let actions = run(&fleet, &live(&vms), &remember("web", memory.clone()), NOW);
        assert_eq!(
            sends(&actions).len(),
            usize::from(send),
            "{case}: {actions:#?}"
        );
    }
    // An inventory older than the last result may predate what that command did.
    let newer_result = VmMemory {
        last_result_ms: Some(NOW.mono_ms - 500),
        ..memory.clone()
    };
    let actions = run(&fleet, &live(&[]), &remember("web", newer_result), NOW);
    assert!(actions.is_empty(), "{actions:#?}");
}

#[test]
fn a_vm_kept_stopped_is_ensured_when_it_runs_and_pending_changes_are_no_drift() {
    let mut fleet = Fleet::new();
    let mut s = spec("web");
    s.state = DesiredState::Stopped;
    fleet.placed(s, A);
    in_order(&mut fleet, "web");
    let memory = VmMemory {
        last_ensure_ms: Some(NOW.mono_ms - 6_000),
        last_result_ms: Some(NOW.mono_ms - 5_000),
        ..VmMemory::default()
    };
    let running = run(
        &fleet,
        &live(&[observed(101, "web", true)]),
        &remember("web", memory.clone()),
        NOW,
    );
    assert_eq!(sends(&running).len(), 1, "{running:#?}");

    // The last Ensure left changes pending a restart: the sizes differ and must.
    let mut fleet = Fleet::new();
    fleet.placed(spec("web"), A);
    let rec = fleet.vm("web");
    let obs = VmObservation {
        vmid: 101,
        generation: 1,
        running: true,
        ips: vec![],
        pending_restart: vec!["cores".into()],
        digest: "d".into(),
    };
    fleet.status("web", observed_status(&rec, "pve-a", &obs, NOW));
    let mut changed = observed(101, "web", true);
    changed.cpus = 1;
    let actions = run(&fleet, &live(&[changed]), &remember("web", memory), NOW);
    assert!(actions.is_empty(), "{actions:#?}");
}

#[test]
fn a_spec_change_is_ensured_at_once_without_a_provisioning_status() {
    let mut fleet = Fleet::new();
    fleet.placed(spec("web"), A);
    in_order(&mut fleet, "web");
    let mut bigger = spec("web");
    bigger.memory_mib = 4096;
    fleet.put(bigger);
    let memory = VmMemory {
        last_ensure_ms: Some(NOW.mono_ms - 100),
        last_result_ms: Some(NOW.mono_ms - 50),
        ..VmMemory::default()
    };
    let actions = run(
        &fleet,
        &live(&[observed(101, "web", true)]),
        &remember("web", memory),
        NOW,
    );
    assert_eq!(actions.len(), 1, "{actions:#?}");
    assert!(
        matches!(&actions[0], Action::Send { generation: 2, op: Op::Ensure(e), .. } if e.spec.memory_mib == 4096),
        "{actions:#?}"
    );
}

#[test]
fn a_vm_missing_an_address_gets_it_before_any_ensure() {
    let mut fleet = Fleet::new();
    fleet.placed(spec("web"), A);
    in_order(&mut fleet, "web");
    let mut two = spec("web");
    two.nics.push(nic("vmbr0", Some(NicIp::Pool("lan".into()))));
    fleet.put(two);
    let actions = run(&fleet, &live(&[]), &Inflight::default(), NOW);
    assert_eq!(actions, [Action::AllocateIps { vm: "web".into() }]);
    // An allocation that failed is not retried during its back-off.
    let held = remember(
        "web",
        VmMemory {
            backoff: Some(Backoff {
                generation: 2,
                attempts: 1,
                retry_at_ms: NOW.mono_ms + 1,
            }),
            ..VmMemory::default()
        },
    );
    assert!(run(&fleet, &live(&[]), &held, NOW).is_empty());
}

#[test]
fn deleted_vms_are_destroyed_on_their_host_or_released_when_they_never_got_there() {
    // Never got a VMID (only its address): nothing to destroy.
    let mut fleet = Fleet::new();
    fleet.put(spec("early"));
    fleet.run(Command::AllocateIps {
        vm: "early".into(),
        now: 3,
    });
    fleet.delete("early");
    let actions = run(&fleet, &live(&[]), &Inflight::default(), NOW);
    assert_eq!(actions, [Action::Release { vm: "early".into() }]);

    // On a reporting host: Deleting, then the Delete command.
    let mut fleet = Fleet::new();
    fleet.placed(spec("web"), A);
    fleet.delete("web");
    let actions = run(&fleet, &live(&[]), &Inflight::default(), NOW);
    assert_eq!(actions.len(), 2, "{actions:#?}");
    assert!(
        matches!(&actions[0], Action::SetStatus { status, .. } if status.phase == VmPhase::Deleting)
    );
    assert_eq!(
        actions[1],
        Action::Send {
            host: A,
            generation: 1,
            op: Op::Delete(DeleteVm {
                name: "web".into(),
                vmid: 101
            })
        }
    );
    // Already Deleting (a retry): the command only.
    let mut again = fleet.vm("web").status;
    again.phase = VmPhase::Deleting;
    fleet.status("web", again);
    let actions = run(&fleet, &live(&[]), &Inflight::default(), NOW);
    assert_eq!(sends(&actions).len(), 1);
    assert_eq!(actions.len(), 1);

    // Nothing while its host is silent or a command is in flight.
    let mut silent = live(&[]);
    silent.hosts.remove(&A);
    assert!(run(&fleet, &silent, &Inflight::default(), NOW).is_empty());
    let busy = Inflight {
        commands: [(
            "web".to_string(),
            InflightCommand {
                id: "web/ensure/g1/t1/1".into(),
                kind: OpKind::Ensure,
                host: A,
                generation: 1,
            },
        )]
        .into(),
        ..Inflight::default()
    };
    assert!(run(&fleet, &live(&[]), &busy, NOW).is_empty());

    // Its host was removed: released with a warning.
    fleet.run(Command::SetHostState {
        id: A,
        state: HostState::Removed,
        now: 6,
    });
    let actions = run(&fleet, &live(&[]), &Inflight::default(), NOW);
    assert_eq!(actions.len(), 2, "{actions:#?}");
    assert!(
        matches!(&actions[0], Action::Event { level: EventLevel::Warning, message, .. } if message.contains("removed")),
        "{actions:#?}"
    );
    assert_eq!(actions[1], Action::Release { vm: "web".into() });
}

#[test]
fn status_of_a_placed_vm_is_unchanged_by_an_idle_plan() {
    let mut fleet = Fleet::new();
    fleet.placed(spec("web"), A);
    in_order(&mut fleet, "web");
    let before: VmStatus = fleet.vm("web").status;
    let memory = VmMemory {
        last_ensure_ms: Some(NOW.mono_ms - 1_000),
        last_result_ms: Some(NOW.mono_ms - 900),
        ..VmMemory::default()
    };
    let actions = run(
        &fleet,
        &live(&[observed(101, "web", true)]),
        &remember("web", memory),
        NOW,
    );
    assert!(actions.is_empty());
    assert_eq!(fleet.vm("web").status, before);
}

#[test]
fn a_stale_copy_of_a_recreated_vm_is_deleted_from_the_host_that_comes_back() {
    let mut fleet = Fleet::new();
    let mut cattle = spec("cattle");
    cattle.ha = protocol::spec::HaSpec {
        recovery: Some(protocol::spec::RecoveryMode::Recreate),
        ..protocol::spec::HaSpec::started()
    };
    // Recreated on B; its old copy is still on A (which reports it, stopped).
    fleet.placed(cattle, B);
    fleet.status(
        "cattle",
        VmStatus {
            phase: VmPhase::Running,
            current_host: Some(B),
            observed_generation: 1,
            ..VmStatus::default()
        },
    );
    let vmid = fleet.vm("cattle").assignment.vmid.unwrap();
    // Nothing else is due for it on B this tick (a command for it would wait for the next).
    let quiet = remember(
        "cattle",
        VmMemory {
            last_ensure_ms: Some(NOW.mono_ms),
            ..VmMemory::default()
        },
    );
    let delete = |running: bool| {
        run(
            &fleet,
            &live(&[observed(vmid, "cattle", running)]),
            &quiet,
            NOW,
        )
        .into_iter()
        .filter(|a| matches!(a, Action::Send { host, op: Op::Delete(_), .. } if *host == A))
        .collect::<Vec<_>>()
    };
    assert_eq!(
        delete(false),
        vec![Action::Send {
            host: A,
            generation: 1,
            op: Op::Delete(DeleteVm {
                name: "cattle".into(),
                vmid,
            }),
        }]
    );
    // A running copy was started by hand: not the fleet's to destroy.
    assert_eq!(delete(true), vec![]);

    // A relocating VM leaves no copy behind, and one that stays with its host is no copy.
    let mut fleet = Fleet::new();
    let mut pet = spec("pet");
    pet.ha = protocol::spec::HaSpec::started();
    fleet.placed(pet, B);
    let vmid = fleet.vm("pet").assignment.vmid.unwrap();
    let actions = run(
        &fleet,
        &live(&[observed(vmid, "pet", false)]),
        &Inflight::default(),
        NOW,
    );
    assert!(
        !actions.iter().any(|a| matches!(
            a,
            Action::Send {
                op: Op::Delete(_),
                ..
            }
        )),
        "{actions:?}"
    );
}
