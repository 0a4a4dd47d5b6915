//! VM records: create/update by name with generations, refusal of bad specs, deletion and
//! release, placement.

use protocol::admin::ApplyOutcome;
use protocol::fleet::{Capacity, HostState, VmPhase, VmStatus};
use protocol::spec::{NicIp, NicSpec, VmSpec};

use super::{Fleet, pool_spec, vm_with_pools};
use crate::state::{Command, CommandReply, StateError};

fn applied(outcome: ApplyOutcome, generation: u64) -> CommandReply {
    CommandReply::VmApplied {
        outcome,
        generation,
    }
}

type Mutation = fn(&mut VmSpec);

#[test]
fn generation_grows_only_when_the_spec_really_changes() {
    let mut f = Fleet::new();
    let base = VmSpec::new("web-1", 1024);
    let table: &[(&str, Mutation, CommandReply)] = &[
        (
            "first apply creates",
            |_| {},
            applied(ApplyOutcome::Created, 1),
        ),
        (
            "same spec again",
            |_| {},
            applied(ApplyOutcome::Unchanged, 1),
        ),
        (
            "more cores",
            |s| s.cores = 2,
            applied(ApplyOutcome::Updated, 2),
        ),
        (
            "same again",
            |s| s.cores = 2,
            applied(ApplyOutcome::Unchanged, 2),
        ),
        (
            "a tag",
            |s| (s.cores, s.tags) = (2, vec!["prod".into()]),
            applied(ApplyOutcome::Updated, 3),
        ),
        (
            "back to the base",
            |_| {},
            applied(ApplyOutcome::Updated, 4),
        ),
    ];
    for (what, mutate, expected) in table {
        let mut spec = base.clone();
        mutate(&mut spec);
        let events_before = f.state.last_event_seq();
        assert_eq!(&f.put_vm(spec.clone()), expected, "{what}");
        let rec = f.state.vm("web-1").unwrap();
        assert_eq!(rec.spec, spec, "{what}");
        let unchanged = matches!(
            expected,
            CommandReply::VmApplied {
                outcome: ApplyOutcome::Unchanged,
                ..
            }
        );
        assert_eq!(
            f.state.last_event_seq() == events_before,
            unchanged,
            "{what}: event only on change"
        );
    }
    let rec = f.state.vm("web-1").unwrap();
    assert_eq!(rec.created_at, 1_700_000_000_000);
    assert_eq!(rec.status.phase, VmPhase::Pending);
}

#[test]
fn a_bad_spec_or_reference_is_refused_and_nothing_is_written() {
    let mut f = Fleet::new();
    f.range("prod", 1000, 1099);
    f.pool(pool_spec(
        "lan",
        "10.0.0.0/24",
        Some("10.0.0.1"),
        "10.0.0.100",
        "10.0.0.200",
    ));
    let mut taken = vm_with_pools("db-1", &[]);
    taken.nics.push(static_nic("10.0.0.20/24"));
    assert!(matches!(f.put_vm(taken), CommandReply::VmApplied { .. }));

    // (what, spec, expected field, fragment of allowed) for refusals naming a field
    let invalid: Vec<(&str, VmSpec, &str, &str)> = vec![
        (
            "bad vlan",
            {
                let mut s = vm_with_pools("a", &["lan"]);
                s.nics[0].vlan = Some(4095);
                s
            },
            "nics[0].vlan",
            "1-4094",
        ),
        (
            "unknown pool",
            vm_with_pools("a", &["dmz"]),
            "nics[0].ip.pool",
            "a defined IP pool: lan",
        ),
        (
            "unknown range",
            {
                let mut s = VmSpec::new("a", 512);
                s.vmid_range = Some("test".into());
                s
            },
            "vmid_range",
            "a defined VMID range: prod",
        ),
        (
            "static address in a pool range",
            {
                let mut s = vm_with_pools("a", &[]);
                s.nics.push(static_nic("10.0.0.150/24"));
                s
            },
            "nics[0].ip.static.address",
            "pool lan hands out 10.0.0.100-10.0.0.200",
        ),
    ];
    for (what, spec, field, allowed) in invalid {
        match f.err(Command::apply_vm(spec, 1)) {
            StateError::Invalid(e) => {
                assert_eq!(e.field, field, "{what}");
                assert!(e.allowed.contains(allowed), "{what}: {}", e.allowed);
            }
            other => panic!("{what}: {other}"),
        }
    }
    let mut dup = vm_with_pools("b", &[]);
    dup.nics.push(static_nic("10.0.0.20/24"));
    let e = f.err(Command::apply_vm(dup, 1));
    assert!(
        e.to_string()
            .contains("already the static address of VM \"db-1\""),
        "{e}"
    );
    assert!(f.state.vm("a").is_none() && f.state.vm("b").is_none());
}

fn static_nic(address: &str) -> NicSpec {
    NicSpec {
        model: Default::default(),
        bridge: "vmbr0".into(),
        vlan: None,
        mac: None,
        firewall: false,
        mtu: None,
        ip: Some(NicIp::Static {
            address: address.into(),
            gateway: None,
        }),
    }
}

#[test]
fn delete_removes_at_once_only_a_vm_that_holds_no_vmid() {
    let mut f = Fleet::new();
    f.range("prod", 1000, 1009);
    f.put_vm(VmSpec::new("never-created", 512));
    assert_eq!(
        f.ok(Command::DeleteVm {
            name: "never-created".into(),
            now: 1
        }),
        CommandReply::VmDeleted { removed: true }
    );
    assert!(f.state.vm("never-created").is_none());

    f.put_vm(VmSpec::new("web-1", 512));
    assert_eq!(f.vmid("web-1"), Ok(1000));
    // Releasing a VM still desired is refused.
    assert!(matches!(
        f.err(Command::ReleaseVm {
            name: "web-1".into(),
            now: 1
        }),
        StateError::Conflict(_)
    ));
    assert_eq!(
        f.ok(Command::DeleteVm {
            name: "web-1".into(),
            now: 1
        }),
        CommandReply::VmDeleted { removed: false }
    );
    // Deleting twice is harmless; re-applying while deleting is refused.
    assert_eq!(
        f.ok(Command::DeleteVm {
            name: "web-1".into(),
            now: 1
        }),
        CommandReply::VmDeleted { removed: false }
    );
    let e = f.err(Command::apply_vm(VmSpec::new("web-1", 512), 1));
    assert!(e.to_string().contains("being deleted"), "{e}");
    // The VMID stays held until the VM is gone.
    f.put_vm(VmSpec::new("web-2", 512));
    assert_eq!(f.vmid("web-2"), Ok(1001));
    assert!(f.state.vm("web-1").unwrap().deleting);
    f.ok(Command::ReleaseVm {
        name: "web-1".into(),
        now: 1,
    });
    assert!(f.state.vm("web-1").is_none());
    f.put_vm(VmSpec::new("web-3", 512));
    assert_eq!(f.vmid("web-3"), Ok(1000), "a released VMID is reused");
    assert!(matches!(
        f.err(Command::DeleteVm {
            name: "nope".into(),
            now: 1
        }),
        StateError::NotFound { .. }
    ));
}

#[test]
fn a_protected_vm_cannot_be_deleted() {
    let mut f = Fleet::new();
    let mut spec = VmSpec::new("db-1", 512);
    spec.protection = true;
    f.put_vm(spec);
    let e = f.err(Command::DeleteVm {
        name: "db-1".into(),
        now: 1,
    });
    assert!(e.to_string().contains("protection = false"), "{e}");
}

#[test]
fn scheduling_needs_an_online_host_and_the_placement_the_proposer_saw() {
    let mut f = Fleet::new();
    f.put_vm(VmSpec::new("web-1", 512));
    for id in [7, 8] {
        f.ok(Command::RegisterHost {
            id,
            name: format!("pve{id}"),
            labels: Default::default(),
            capacity: Capacity {
                cpus: 8,
                memory_mib: 32768,
            },
            now: 1,
        });
    }
    let schedule = |host, expected| Command::ScheduleVm {
        name: "web-1".into(),
        host,
        expected,
        now: 2,
    };
    let e = f.err(schedule(Some(7), None));
    assert!(
        e.to_string().contains("joining"),
        "a joining host takes no VM: {e}"
    );
    f.ok(Command::SetHostState {
        id: 7,
        state: HostState::Online,
        now: 2,
    });
    f.ok(Command::SetHostState {
        id: 8,
        state: HostState::Online,
        now: 2,
    });
    f.ok(schedule(Some(7), None));
    assert_eq!(f.state.vm("web-1").unwrap().assignment.host, Some(7));
    // A second scheduler that still believes the VM unplaced is refused.
    assert!(matches!(
        f.err(schedule(Some(8), None)),
        StateError::Conflict(_)
    ));
    f.ok(schedule(Some(8), Some(7)));
    assert_eq!(f.state.vm("web-1").unwrap().assignment.host, Some(8));
    assert!(matches!(
        f.err(schedule(Some(9), Some(8))),
        StateError::NotFound { .. }
    ));

    let status = VmStatus {
        phase: VmPhase::Running,
        current_host: Some(8),
        observed_generation: 1,
        ..Default::default()
    };
    f.ok(Command::SetVmStatus {
        name: "web-1".into(),
        status,
        now: 42,
    });
    let rec = f.state.vm("web-1").unwrap();
    assert_eq!(
        (rec.status.phase, rec.status.updated_at),
        (VmPhase::Running, 42)
    );
}

#[test]
fn affinity_rules_that_cannot_all_hold_are_refused_naming_both_rules() {
    let mut f = Fleet::new();
    let spec = |name: &str, tags: &[&str], apart: &[&str], together: &[&str]| {
        let mut s = VmSpec::new(name, 512);
        s.tags = tags.iter().map(|t| t.to_string()).collect();
        s.placement.apart_from = apart.iter().map(|t| t.to_string()).collect();
        s.placement.together_with = together.iter().map(|t| t.to_string()).collect();
        Command::apply_vm(s, 1)
    };
    f.ok(spec("db", &["data"], &[], &[]));
    f.ok(spec("app", &[], &[], &["db"]));
    // Directly: cache wants db and refuses tag:data (db's tag).
    let e = f.err(spec("cache", &[], &["tag:data"], &["db"]));
    let m = e.to_string();
    assert!(
        m.contains("cache's placement.apart_from \"tag:data\"") && m.contains("cache, db"),
        "{m}"
    );
    // Transitively: web goes with app (so with db), but keeps apart from db.
    let m = f.err(spec("web", &[], &["db"], &["app"])).to_string();
    assert!(
        m.contains("web, app, db") && m.contains("web's placement.apart_from \"db\""),
        "{m}"
    );
    // The same rule written on the other side is caught too: db may not join a group that
    // keeps it apart.
    f.ok(spec("lonely", &[], &["db"], &[]));
    let m = f.err(spec("db", &["data"], &[], &["lonely"])).to_string();
    assert!(m.contains("lonely's placement.apart_from \"db\""), "{m}");
    // Rules that agree are applied.
    f.ok(spec("web", &["web"], &["tag:web"], &["app"]));
    assert!(f.state.vm("web").is_some());
}
