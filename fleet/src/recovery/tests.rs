//! The recovery planner against hand-built states: only fenced hosts' HA guests move, relocate
//! stays in the PVE cluster on shared storage, recreate leaves it, constraints are honoured,
//! many guests are spread, a VM with no eligible host waits (one decision per reason), and
//! entries end when the VM settled or its host came back first. The state machine's side:
//! a recovery from a host that is not fenced is refused.

use protocol::agent::StorageInfo;
use protocol::fleet::{Capacity, HostFacts, HostState, PVE_CLUSTER_LABEL, VmPhase, VmStatus};
use protocol::spec::{DiskSpec, HaSpec, HaState, RecoveryMode, VmSpec};
use protocol::version::CURRENT;

use super::{RecoveryAction, plan};
use crate::state::{Command, CommandReply, FleetState};

struct World {
    state: FleetState,
    index: u64,
    now: u64,
}

impl World {
    fn new() -> World {
        let mut w = World {
            state: FleetState::new(),
            index: 0,
            now: 1_000,
        };
        w.ok(Command::SetClusterVersion {
            version: CURRENT,
            now: 1,
        });
        w
    }

    fn run(&mut self, cmd: Command) -> CommandReply {
        self.index += 1;
        self.now += 10;
        self.state.apply(self.index, cmd)
    }

    fn ok(&mut self, cmd: Command) {
        let reply = self.run(cmd.clone());
        assert!(
            !matches!(reply, CommandReply::Refused(_)),
            "{cmd:?}: {reply:?}"
        );
    }

    /// Host `id` named `name` in PVE cluster `cluster` (`None`: standalone) with `cpus`
    /// CPUs, storage `local` and, when `shared`, storage `shared`.
    fn host(&mut self, id: u64, name: &str, cluster: Option<&str>, cpus: u32, shared: bool) {
        let mut labels = protocol::spec::Labels::new();
        if let Some(c) = cluster {
            labels.insert(PVE_CLUSTER_LABEL.to_string(), c.to_string());
        }
        if name.ends_with('a') {
            labels.insert("zone".into(), "a".into());
        }
        self.ok(Command::RegisterHost {
            id,
            name: name.into(),
            labels,
            capacity: Capacity {
                cpus,
                memory_mib: 65_536,
            },
            now: self.now,
        });
        let storage = |id: &str, shared: bool| StorageInfo {
            id: id.into(),
            kind: "dir".into(),
            content: ["images".to_string()].into(),
            shared,
            active: true,
            total_bytes: 1 << 40,
            available_bytes: 1 << 40,
        };
        let mut storages = vec![storage("local", false)];
        if shared {
            storages.push(storage("shared", true));
        }
        self.ok(Command::SetHostFacts {
            id,
            facts: Box::new(HostFacts {
                pve_version: "9.1.1".into(),
                storages,
                ..HostFacts::default()
            }),
        });
        self.ok(Command::SetHostState {
            id,
            state: HostState::Online,
            now: self.now,
        });
    }

    fn fence(&mut self, id: u64) {
        for (expected, state) in [
            (HostState::Online, HostState::Unreachable),
            (HostState::Unreachable, HostState::Fenced),
        ] {
            self.ok(Command::SetHostLiveness {
                id,
                expected,
                state,
                reason: "test".into(),
                now: self.now,
            });
        }
    }

    fn back(&mut self, id: u64) {
        self.ok(Command::SetHostLiveness {
            id,
            expected: HostState::Fenced,
            state: HostState::Online,
            reason: "new session".into(),
            now: self.now,
        });
    }

    /// VM `name` with `ha`, its disk on `storage`, placed on `host`.
    fn vm(&mut self, name: &str, ha: HaSpec, storage: &str, host: u64) {
        let mut spec = VmSpec::new(name, 2048);
        spec.cores = 2;
        spec.ha = ha;
        if ha.state == Some(HaState::Stopped) || ha.state == Some(HaState::Disabled) {
            spec.state = protocol::spec::DesiredState::Stopped;
        }
        spec.disks = vec![DiskSpec {
            slot: "scsi0".into(),
            storage: Some(storage.into()),
            size_gib: 8,
            options: Default::default(),
        }];
        self.ok(Command::apply_vm(spec, self.now));
        self.ok(Command::ScheduleVm {
            name: name.into(),
            host: Some(host),
            expected: None,
            now: self.now,
        });
    }

    /// Applies every decision of a plan; answers them.
    fn step(&mut self) -> Vec<RecoveryAction> {
        let actions = plan(&self.state, self.now);
        for a in &actions {
            let cmd = a.command(self.now);
            self.ok(cmd);
        }
        actions
    }

    fn host_of(&self, vm: &str) -> Option<u64> {
        self.state.vm(vm).unwrap().assignment.host
    }
}

fn ha(recovery: RecoveryMode) -> HaSpec {
    HaSpec {
        recovery: Some(recovery),
        ..HaSpec::started()
    }
}

fn with_state(state: HaState) -> HaSpec {
    HaSpec {
        state: Some(state),
        ..HaSpec::started()
    }
}

/// Three nodes of PVE cluster `alpha` with shared storage, and a standalone host.
fn alpha() -> World {
    let mut w = World::new();
    w.host(1, "pve-a", Some("alpha"), 16, true);
    w.host(2, "pve-b", Some("alpha"), 16, true);
    w.host(3, "pve-c", Some("alpha"), 16, true);
    w.host(4, "solo", None, 64, false);
    w
}

#[test]
fn nothing_moves_while_the_host_is_only_unreachable() {
    let mut w = alpha();
    w.vm("db", ha(RecoveryMode::Relocate), "shared", 2);
    w.ok(Command::SetHostLiveness {
        id: 2,
        expected: HostState::Online,
        state: HostState::Unreachable,
        reason: "silent".into(),
        now: w.now,
    });
    assert_eq!(plan(&w.state, w.now), vec![]);
    // And the state machine refuses it whatever the proposer believes.
    let reply = w.run(Command::RecoverVm {
        name: "db".into(),
        from: 2,
        to: Some(1),
        message: "forced".into(),
        now: w.now,
    });
    assert!(
        matches!(&reply, CommandReply::Refused(e) if e.to_string().contains("only the VMs of a fenced host")),
        "{reply:?}"
    );
    assert_eq!(w.host_of("db"), Some(2));
}

#[test]
fn relocate_stays_in_the_pve_cluster_on_shared_storage_and_ends_when_running() {
    let mut w = alpha();
    w.vm("db", ha(RecoveryMode::Relocate), "shared", 2);
    w.fence(2);
    let actions = w.step();
    let [RecoveryAction::Recover { to: Some(to), .. }] = actions.as_slice() else {
        panic!("{actions:?}");
    };
    assert!([1, 3].contains(to), "stays in alpha: {to}");
    assert_eq!(w.host_of("db"), Some(*to));
    let r = w.state.recovery("db").unwrap().clone();
    assert_eq!((r.from_host, r.from_node.as_str()), (2, "pve-b"));
    // Not settled yet: nothing more to do.
    assert_eq!(plan(&w.state, w.now), vec![]);
    let status = VmStatus {
        phase: VmPhase::Running,
        current_host: Some(*to),
        observed_generation: 1,
        ..VmStatus::default()
    };
    w.ok(Command::SetVmStatus {
        name: "db".into(),
        status,
        now: w.now,
    });
    let actions = w.step();
    assert!(
        matches!(actions.as_slice(), [RecoveryAction::End { message, .. }] if message.contains("recovered from fenced host pve-b")),
        "{actions:?}"
    );
    assert!(w.state.recovery("db").is_none());
}

#[test]
fn relocate_never_leaves_shared_storage_nor_the_cluster_and_waits_instead() {
    let mut w = alpha();
    w.vm("local-disk", ha(RecoveryMode::Relocate), "local", 2);
    w.fence(2);
    let actions = w.step();
    assert!(
        matches!(actions.as_slice(), [RecoveryAction::Recover { to: None, message, .. }]
            if message.contains("no other node of PVE cluster alpha has local as shared storage")),
        "{actions:?}"
    );
    assert_eq!(w.host_of("local-disk"), Some(2));
    // The same reason is not recorded again every round.
    assert_eq!(plan(&w.state, w.now), vec![]);
    // The host comes back before anything was found: the wait ends, the VM never moved.
    w.back(2);
    let actions = w.step();
    assert!(
        matches!(actions.as_slice(), [RecoveryAction::End { message, .. }] if message.contains("online again")),
        "{actions:?}"
    );
    assert_eq!(w.host_of("local-disk"), Some(2));
}

#[test]
fn a_standalone_host_cannot_relocate_but_recreate_goes_outside_the_cluster() {
    let mut w = alpha();
    w.host(5, "solo-2", None, 16, false);
    w.vm("cattle", ha(RecoveryMode::Recreate), "local", 1);
    w.vm("pet", ha(RecoveryMode::Relocate), "local", 4);
    w.fence(1);
    w.fence(4);
    w.step();
    // Recreate never lands in alpha, where VMID and config of the fenced copy still live.
    assert!(
        [4, 5].contains(&w.host_of("cattle").unwrap()),
        "{:?}",
        w.host_of("cattle")
    );
    assert_ne!(w.host_of("cattle"), Some(4), "host 4 is fenced too");
    let waiting = w.state.recovery("pet").unwrap();
    assert!(waiting.is_waiting());
    assert!(
        waiting.message.contains("standalone"),
        "{}",
        waiting.message
    );
}

#[test]
fn disabled_ignored_stopped_none_and_non_ha_vms() {
    let mut w = alpha();
    w.vm("dis", with_state(HaState::Disabled), "shared", 2);
    w.vm("ign", with_state(HaState::Ignored), "shared", 2);
    w.vm("plain", HaSpec::none(), "shared", 2);
    w.vm("manual", ha(RecoveryMode::None), "shared", 2);
    w.vm("parked", with_state(HaState::Stopped), "shared", 2);
    w.fence(2);
    let actions = w.step();
    let moved: Vec<&str> = actions.iter().map(RecoveryAction::vm).collect();
    assert_eq!(
        moved,
        vec!["parked"],
        "only the HA-stopped guest is recovered (stopped)"
    );
    for vm in ["dis", "ign", "plain", "manual"] {
        assert_eq!(w.host_of(vm), Some(2), "{vm} stays with its host");
    }
}

#[test]
fn placement_constraints_hold_during_recovery() {
    let mut w = alpha();
    let mut spec = VmSpec::new("pinned", 1024);
    spec.ha = ha(RecoveryMode::Relocate);
    spec.placement.labels.insert("zone".into(), "a".into());
    spec.disks = vec![DiskSpec {
        slot: "scsi0".into(),
        storage: Some("shared".into()),
        size_gib: 8,
        options: Default::default(),
    }];
    w.ok(Command::apply_vm(spec, w.now));
    w.ok(Command::ScheduleVm {
        name: "pinned".into(),
        host: Some(1),
        expected: None,
        now: w.now,
    });
    w.fence(1);
    w.step();
    let r = w.state.recovery("pinned").unwrap();
    assert!(
        r.is_waiting(),
        "the only zone=a host is the fenced one: {r:?}"
    );
    assert_eq!(w.host_of("pinned"), Some(1));
}

#[test]
fn seventeen_guests_of_one_host_are_spread_over_the_survivors() {
    let mut w = World::new();
    for (id, name) in [(1, "pve-a"), (2, "pve-b"), (3, "pve-c"), (4, "pve-d")] {
        w.host(id, name, Some("alpha"), 32, true);
    }
    for i in 0..17 {
        w.vm(
            &format!("vm-{i:02}"),
            ha(RecoveryMode::Relocate),
            "shared",
            1,
        );
    }
    w.fence(1);
    let actions = w.step();
    assert_eq!(actions.len(), 17);
    let mut per_host = std::collections::BTreeMap::new();
    for i in 0..17 {
        *per_host
            .entry(w.host_of(&format!("vm-{i:02}")).unwrap())
            .or_insert(0) += 1;
    }
    assert!(!per_host.contains_key(&1));
    assert_eq!(per_host.len(), 3, "{per_host:?}");
    assert!(
        per_host.values().all(|&n| (5..=6).contains(&n)),
        "spread evenly: {per_host:?}"
    );
}

#[test]
fn a_recovery_is_refused_onto_a_host_that_is_not_online() {
    let mut w = alpha();
    w.vm("db", ha(RecoveryMode::Relocate), "shared", 2);
    w.fence(2);
    w.fence(3);
    let reply = w.run(Command::RecoverVm {
        name: "db".into(),
        from: 2,
        to: Some(3),
        message: "stale".into(),
        now: w.now,
    });
    assert!(matches!(reply, CommandReply::Refused(_)), "{reply:?}");
    w.step();
    assert_eq!(w.host_of("db"), Some(1));
}

/// `name` failed to start on `host` once more.
fn fail_start(w: &mut World, name: &str, host: u64) {
    w.ok(Command::HaStartFailed {
        name: name.into(),
        host,
        message: "start failed: QEMU exited with code 1".into(),
        now: w.now,
    });
}

#[test]
fn failed_starts_restart_then_relocate_to_untried_hosts_then_give_up() {
    let mut w = alpha();
    let tries = HaSpec {
        max_restart: Some(1),
        max_relocate: Some(1),
        ..ha(RecoveryMode::Relocate)
    };
    w.vm("flaky", tries, "shared", 1);
    // First failure: retried on the same host (max_restart = 1).
    fail_start(&mut w, "flaky", 1);
    assert_eq!(plan(&w.state, w.now), vec![]);
    // Second: moved to an untried node of the cluster, recorded as a relocation.
    fail_start(&mut w, "flaky", 1);
    let actions = w.step();
    let [
        RecoveryAction::Relocate {
            from: 1,
            to,
            message,
            ..
        },
    ] = actions.as_slice()
    else {
        panic!("{actions:?}");
    };
    assert!([2, 3].contains(to), "{to}");
    assert!(message.contains("relocation 1 of 1"), "{message}");
    assert_eq!(w.host_of("flaky"), Some(*to));
    let r = w.state.recovery("flaky").unwrap();
    assert_eq!(
        (r.from_node.as_str(), r.mode),
        ("pve-a", RecoveryMode::Relocate)
    );
    // Fails there too, past max_restart, with max_relocate used up: error, no more retries.
    let there = *to;
    fail_start(&mut w, "flaky", there);
    assert_eq!(plan(&w.state, w.now), vec![]);
    fail_start(&mut w, "flaky", there);
    let actions = w.step();
    assert!(
        matches!(actions.as_slice(), [RecoveryAction::GiveUp { message, .. }]
            if message.contains("after 1 relocation") && message.contains("disabled")),
        "{actions:?}"
    );
    assert!(w.state.ha_error("flaky").is_some());
    assert_eq!(w.state.vm("flaky").unwrap().status.phase, VmPhase::Failed);
    // The relocation it was in is over; then it stays given up (no new decision), until its
    // HA state changes: disabled clears it.
    let actions = w.step();
    assert!(
        matches!(actions.as_slice(), [RecoveryAction::End { message, .. }] if message.contains("HA error")),
        "{actions:?}"
    );
    assert_eq!(plan(&w.state, w.now), vec![]);
    let mut spec = w.state.vm("flaky").unwrap().spec.clone();
    spec.ha.state = Some(HaState::Disabled);
    spec.state = protocol::spec::DesiredState::Stopped;
    w.ok(Command::apply_vm(spec, w.now));
    let actions = w.step();
    assert!(
        matches!(actions.as_slice(), [RecoveryAction::ClearFailures { .. }]),
        "{actions:?}"
    );
    assert!(w.state.start_failure("flaky").is_none());
}

#[test]
fn a_vm_that_cannot_relocate_gives_up_after_its_restarts_and_one_that_runs_is_forgiven() {
    let mut w = alpha();
    w.vm("solo-vm", ha(RecoveryMode::Relocate), "local", 4);
    fail_start(&mut w, "solo-vm", 4);
    fail_start(&mut w, "solo-vm", 4);
    let actions = w.step();
    assert!(
        matches!(actions.as_slice(), [RecoveryAction::GiveUp { message, .. }]
            if message.contains("cannot be relocated") && message.contains("standalone")),
        "{actions:?}"
    );

    w.vm("lucky", ha(RecoveryMode::Relocate), "shared", 2);
    fail_start(&mut w, "lucky", 2);
    w.ok(Command::SetVmStatus {
        name: "lucky".into(),
        status: VmStatus {
            phase: VmPhase::Running,
            current_host: Some(2),
            observed_generation: 1,
            ..VmStatus::default()
        },
        now: w.now,
    });
    let actions = w.step();
    assert!(
        matches!(actions.as_slice(), [RecoveryAction::ClearFailures { message, .. }] if message.contains("after 1 failed start")),
        "{actions:?}"
    );
}

/// The fleet's HA defaults: `max_restart`, `max_relocate` and the recovery mode a VM leaves out.
fn set_ha_defaults(w: &mut World, defaults: protocol::spec::HaDefaults) {
    let settings = protocol::fleet::Settings {
        ha: defaults,
        ..w.state.settings().clone()
    };
    w.ok(Command::put_settings(settings, w.now));
}

#[test]
fn what_a_vm_leaves_out_follows_the_fleets_defaults_and_what_it_says_wins() {
    let mut w = alpha();
    set_ha_defaults(
        &mut w,
        protocol::spec::HaDefaults {
            recovery: RecoveryMode::None,
            ..Default::default()
        },
    );
    // `ha = true`: the fleet's default, none: left to the operator.
    w.vm("follows", HaSpec::started(), "shared", 2);
    // Its own mode wins over the default.
    w.vm("own", ha(RecoveryMode::Relocate), "shared", 2);
    w.fence(2);
    let actions = w.step();
    assert!(
        matches!(actions.as_slice(), [RecoveryAction::Recover { vm, to: Some(_), .. }] if vm == "own"),
        "{actions:?}"
    );
    assert_eq!(w.host_of("follows"), Some(2));
    assert!(w.state.recovery("follows").is_none());
    // A default changed later applies to every VM that leaves it out, read when used.
    set_ha_defaults(
        &mut w,
        protocol::spec::HaDefaults {
            recovery: RecoveryMode::Relocate,
            ..Default::default()
        },
    );
    let actions = w.step();
    assert!(
        matches!(actions.as_slice(), [RecoveryAction::Recover { vm, to: Some(_), .. }] if vm == "follows"),
        "{actions:?}"
    );
    assert_ne!(w.host_of("follows"), Some(2));
}

#[test]
fn start_failure_limits_a_vm_leaves_out_are_the_fleets_defaults() {
    let mut w = alpha();
    // No restart on the same host, no relocation: the first failed start is an error.
    set_ha_defaults(
        &mut w,
        protocol::spec::HaDefaults {
            max_restart: 0,
            max_relocate: 0,
            ..Default::default()
        },
    );
    w.vm("strict", HaSpec::started(), "shared", 1);
    // Its own max_restart (1) wins; max_relocate (0) is the default's.
    let own = HaSpec {
        max_restart: Some(1),
        ..HaSpec::started()
    };
    w.vm("patient", own, "shared", 1);
    fail_start(&mut w, "strict", 1);
    fail_start(&mut w, "patient", 1);
    let actions = w.step();
    assert!(
        matches!(actions.as_slice(), [RecoveryAction::GiveUp { vm, message }]
            if vm == "strict" && message.contains("max_restart = 0, max_relocate = 0")),
        "{actions:?}"
    );
    fail_start(&mut w, "patient", 1);
    let actions = w.step();
    assert!(
        matches!(actions.as_slice(), [RecoveryAction::GiveUp { vm, message }]
            if vm == "patient" && message.contains("max_restart = 1, max_relocate = 0")),
        "{actions:?}"
    );
}

/// `vm` with its tags and affinity rules set, placed on `host`.
fn ruled_vm(
    w: &mut World,
    name: &str,
    tags: &[&str],
    apart: &[&str],
    together: &[&str],
    host: u64,
) {
    let mut spec = VmSpec::new(name, 2048);
    spec.ha = ha(RecoveryMode::Relocate);
    spec.tags = tags.iter().map(|t| t.to_string()).collect();
    spec.placement.apart_from = apart.iter().map(|t| t.to_string()).collect();
    spec.placement.together_with = together.iter().map(|t| t.to_string()).collect();
    spec.disks = vec![DiskSpec {
        slot: "scsi0".into(),
        storage: Some("shared".into()),
        size_gib: 8,
        options: Default::default(),
    }];
    w.ok(Command::apply_vm(spec, w.now));
    w.ok(Command::ScheduleVm {
        name: name.into(),
        host: Some(host),
        expected: None,
        now: w.now,
    });
}

#[test]
fn anti_affinity_beats_load_in_recovery_and_a_replica_waits_rather_than_share_a_host() {
    let mut w = alpha();
    for (i, host) in [1, 2, 3].into_iter().enumerate() {
        ruled_vm(
            &mut w,
            &format!("web-{i}"),
            &["web"],
            &["tag:web"],
            &[],
            host,
        );
    }
    w.fence(1);
    let actions = w.step();
    assert!(
        matches!(actions.as_slice(), [RecoveryAction::Recover { to: None, message, .. }]
            if message.contains("anti-affinity")),
        "{actions:?}"
    );
    assert_eq!(w.host_of("web-0"), Some(1));
    // A fourth node of the cluster, loaded more than the others: the only one without a
    // replica, so it takes web-0 whatever its load.
    w.host(5, "pve-e", Some("alpha"), 4, true);
    ruled_vm(&mut w, "filler", &[], &[], &[], 5);
    let actions = w.step();
    assert!(
        matches!(
            actions.as_slice(),
            [RecoveryAction::Recover { to: Some(5), .. }]
        ),
        "{actions:?}"
    );
}

#[test]
fn a_group_kept_together_is_recovered_onto_one_host() {
    let mut w = alpha();
    ruled_vm(&mut w, "db", &[], &[], &[], 2);
    ruled_vm(&mut w, "app", &[], &[], &["db"], 2);
    ruled_vm(&mut w, "cache", &[], &[], &["app"], 2);
    w.fence(2);
    let actions = w.step();
    assert_eq!(actions.len(), 3, "{actions:?}");
    let to = w.host_of("db").unwrap();
    assert!([1, 3].contains(&to), "{to}");
    assert_eq!(w.host_of("app"), Some(to));
    assert_eq!(w.host_of("cache"), Some(to));
}

#[test]
fn a_group_follows_its_most_constrained_member_and_waits_for_one_left_behind() {
    let mut w = alpha();
    ruled_vm(&mut w, "app", &[], &[], &["db"], 2);
    ruled_vm(&mut w, "db", &[], &[], &[], 2);
    // db may only use pve-b (fenced) and pve-c: the group lands on pve-c, whichever member is
    // recovered first.
    let mut spec = w.state.vm("db").unwrap().spec.clone();
    spec.placement.hosts = vec!["pve-b".into(), "pve-c".into()];
    w.ok(Command::apply_vm(spec, w.now));
    // A second group whose database is not recovered (recovery = "none"): its app waits.
    ruled_vm(&mut w, "app-2", &[], &[], &["db-2"], 2);
    ruled_vm(&mut w, "db-2", &[], &[], &[], 2);
    let mut spec = w.state.vm("db-2").unwrap().spec.clone();
    spec.ha.recovery = Some(RecoveryMode::None);
    w.ok(Command::apply_vm(spec, w.now));
    w.fence(2);
    w.step();
    assert_eq!(w.host_of("app"), Some(3));
    assert_eq!(w.host_of("db"), Some(3));
    assert_eq!(w.host_of("app-2"), Some(2));
    let waiting = w.state.recovery("app-2").unwrap();
    assert!(
        waiting.is_waiting() && waiting.message.contains("kept together with vm db-2"),
        "{}",
        waiting.message
    );
}

#[test]
fn a_waiting_recovery_shows_the_vm_stopped_and_ends_when_it_is_disabled() {
    let mut w = alpha();
    w.vm("local-disk", ha(RecoveryMode::Relocate), "local", 2);
    w.fence(2);
    let actions = w.step();
    assert!(
        matches!(
            actions.as_slice(),
            [RecoveryAction::Recover { to: None, .. }]
        ),
        "{actions:?}"
    );
    // The fence stopped it: never shown running while it waits.
    let rec = w.state.vm("local-disk").unwrap();
    assert_eq!(rec.status.phase, VmPhase::Stopped);
    assert!(rec.status.message.contains("stopped by the fence of pve-b"));
    // The operator disables it: the recovery is over, the VM stays where it is.
    let mut spec = rec.spec.clone();
    spec.ha.state = Some(HaState::Disabled);
    spec.state = protocol::spec::DesiredState::Stopped;
    w.ok(Command::apply_vm(spec, w.now));
    let actions = w.step();
    assert!(
        matches!(actions.as_slice(), [RecoveryAction::End { message, .. }]
            if message.contains("its HA state is disabled")),
        "{actions:?}"
    );
    assert!(w.state.recovery("local-disk").is_none());
    assert_eq!(w.host_of("local-disk"), Some(2));
    assert_eq!(plan(&w.state, w.now), vec![]);
}

#[test]
fn a_vm_in_ha_error_on_a_fenced_host_stays_there() {
    let mut w = alpha();
    let once = HaSpec {
        max_restart: Some(0),
        max_relocate: Some(0),
        ..ha(RecoveryMode::Relocate)
    };
    w.vm("broken", once, "shared", 2);
    w.vm("fine", ha(RecoveryMode::Relocate), "shared", 2);
    fail_start(&mut w, "broken", 2);
    let actions = w.step();
    assert!(
        matches!(actions.as_slice(), [RecoveryAction::GiveUp { .. }]),
        "{actions:?}"
    );
    w.fence(2);
    let actions = w.step();
    assert!(
        matches!(actions.as_slice(), [RecoveryAction::Recover { vm, to: Some(_), .. }] if vm == "fine"),
        "only the healthy guest is recovered: {actions:?}"
    );
    assert_eq!(w.host_of("broken"), Some(2));
    assert!(w.state.recovery("broken").is_none());
    assert_eq!(w.state.vm("broken").unwrap().status.phase, VmPhase::Failed);
}

#[test]
fn stopped_guests_are_no_load_when_a_recovery_chooses_its_host() {
    let mut w = alpha();
    // pve-b holds six stopped guests, pve-c runs two: PVE's HA manager counts running
    // services only, so pve-b is the less loaded node.
    for i in 0..6 {
        w.vm(
            &format!("idle-{i}"),
            with_state(HaState::Stopped),
            "shared",
            2,
        );
    }
    for i in 0..2 {
        w.vm(
            &format!("busy-{i}"),
            ha(RecoveryMode::Relocate),
            "shared",
            3,
        );
    }
    w.vm("lost", ha(RecoveryMode::Relocate), "shared", 1);
    w.fence(1);
    let actions = w.step();
    assert!(
        matches!(actions.as_slice(), [RecoveryAction::Recover { vm, to: Some(2), .. }] if vm == "lost"),
        "{actions:?}"
    );
}

#[test]
fn a_kept_together_member_whose_starts_fail_relocates_with_its_partners() {
    let mut w = alpha();
    let tries = HaSpec {
        max_restart: Some(0),
        max_relocate: Some(1),
        ..ha(RecoveryMode::Relocate)
    };
    ruled_vm(&mut w, "db", &[], &[], &[], 1);
    ruled_vm(&mut w, "app", &[], &[], &["db"], 1);
    ruled_vm(&mut w, "cache", &[], &[], &["app"], 1);
    let mut spec = w.state.vm("app").unwrap().spec.clone();
    spec.ha = tries;
    w.ok(Command::apply_vm(spec, w.now));
    w.ok(Command::PutVmidRange {
        spec: protocol::spec::VmidRangeSpec {
            name: "main".into(),
            start: 100,
            end: 199,
        },
        now: w.now,
    });
    for name in ["db", "app", "cache"] {
        w.ok(Command::AllocateVmid {
            vm: name.into(),
            avoid: vec![],
            now: w.now,
        });
    }
    // app fails to start on pve-a, past max_restart = 0: the group moves, not app alone.
    fail_start(&mut w, "app", 1);
    let actions = w.step();
    let [
        RecoveryAction::Relocate {
            vm, to, message, ..
        },
        riders @ ..,
    ] = actions.as_slice()
    else {
        panic!("{actions:?}");
    };
    assert_eq!(vm, "app");
    assert!([2, 3].contains(to), "{to}");
    assert!(message.contains("with its group (cache, db)"), "{message}");
    let moved: Vec<(&str, u64)> = riders
        .iter()
        .map(|a| match a {
            RecoveryAction::MoveWithGroup { vm, to, .. } => (vm.as_str(), *to),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(moved, [("cache", *to), ("db", *to)]);
    assert_eq!(w.host_of("app"), Some(*to));
    for rider in ["cache", "db"] {
        let m = w.state.migration(rider).expect("its partners migrate");
        assert_eq!(m.to_host, *to);
    }
}
