//! VMID allocation: lowest free, unique, idempotent per VM, exhaustion named, ranges resolved
//! and protected.

use protocol::fleet::Settings;
use protocol::spec::{VmSpec, VmidRangeSpec};

use super::Fleet;
use crate::state::{Command, CommandReply, StateError};

#[test]
fn vmids_are_lowest_free_unique_and_stable_per_vm() {
    let mut f = Fleet::new();
    f.range("prod", 1000, 1004);
    for (i, name) in ["a", "b", "c"].iter().enumerate() {
        f.put_vm(VmSpec::new(*name, 512));
        assert_eq!(f.vmid(name), Ok(1000 + i as u32));
    }
    // Asking again answers the same VMID and allocates nothing.
    assert_eq!(f.vmid("b"), Ok(1001));
    assert_eq!(f.state.vmid_ranges()["prod"].allocations.len(), 3);
    // VMIDs known taken on hosts are skipped.
    f.put_vm(VmSpec::new("d", 512));
    let reply = f.ok(Command::AllocateVmid {
        vm: "d".into(),
        avoid: vec![1003],
        now: 1,
    });
    assert_eq!(
        reply,
        CommandReply::Vmid {
            vmid: 1004,
            range: "prod".into()
        }
    );
}

#[test]
fn exhaustion_names_the_range_and_release_makes_room() {
    let mut f = Fleet::new();
    f.range("small", 200, 201);
    for name in ["a", "b", "c"] {
        f.put_vm(VmSpec::new(name, 512));
    }
    assert_eq!(f.vmid("a"), Ok(200));
    assert_eq!(f.vmid("b"), Ok(201));
    let before = f.state.clone();
    let e = f.vmid("c").unwrap_err();
    assert_eq!(
        e,
        StateError::VmidsExhausted {
            range: "small".into(),
            start: 200,
            end: 201,
            size: 2
        }
    );
    assert!(e.to_string().contains("\"small\" is exhausted"), "{e}");
    assert_eq!(
        f.state.vms(),
        before.vms(),
        "nothing allocated on exhaustion"
    );
    f.delete_and_release("a");
    assert_eq!(f.vmid("c"), Ok(200));
}

#[test]
fn the_range_comes_from_the_spec_the_setting_or_the_only_range() {
    let mut f = Fleet::new();
    f.put_vm(VmSpec::new("a", 512));
    let e = f.vmid("a").unwrap_err();
    assert!(e.to_string().contains("no VMID range"), "{e}");
    f.range("one", 100, 199);
    assert_eq!(f.vmid("a"), Ok(100), "the only range");
    f.range("two", 500, 599);
    f.put_vm(VmSpec::new("b", 512));
    assert!(
        f.vmid("b")
            .unwrap_err()
            .to_string()
            .contains("default_vmid_range")
    );
    let settings = Settings {
        default_vmid_range: Some("two".into()),
        ..Settings::default()
    };
    f.ok(Command::put_settings(settings, 1));
    assert_eq!(f.vmid("b"), Ok(500), "the default range");
    let mut c = VmSpec::new("c", 512);
    c.vmid_range = Some("one".into());
    f.put_vm(c);
    assert_eq!(f.vmid("c"), Ok(101), "the spec's own range");
}

#[test]
fn ranges_never_overlap_nor_drop_allocated_vmids() {
    let mut f = Fleet::new();
    f.range("a", 1000, 1999);
    let put = |name: &str, start, end| Command::PutVmidRange {
        spec: VmidRangeSpec {
            name: name.into(),
            start,
            end,
        },
        now: 1,
    };
    let e = f.err(put("b", 1999, 2999));
    assert!(e.to_string().contains("overlaps range a"), "{e}");
    f.ok(put("b", 2000, 2999));
    f.put_vm(VmSpec::new("x", 512));
    let mut spec = VmSpec::new("y", 512);
    spec.vmid_range = Some("b".into());
    f.put_vm(spec);
    assert_eq!(f.vmid("y"), Ok(2000));
    match f.err(put("b", 2001, 2999)) {
        StateError::Invalid(e) => assert!(e.allowed.contains("keep allocated VMID 2000"), "{e}"),
        other => panic!("{other}"),
    }
    assert_eq!(
        f.ok(put("b", 2000, 3999)),
        CommandReply::Applied {
            outcome: protocol::admin::ApplyOutcome::Updated
        }
    );
    let e = f.err(Command::DeleteVmidRange {
        name: "b".into(),
        now: 1,
    });
    assert!(e.to_string().contains("still has 1 VMIDs"), "{e}");
    f.ok(Command::DeleteVmidRange {
        name: "a".into(),
        now: 1,
    });
    assert!(matches!(
        f.err(Command::DeleteVmidRange {
            name: "a".into(),
            now: 1
        }),
        StateError::NotFound { .. }
    ));
}
