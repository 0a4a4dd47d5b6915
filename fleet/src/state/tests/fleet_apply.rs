//! A whole fleet file as one command (`ApplyFleet`): all of it or nothing, the refused entry
//! named; and the reconciler's `Batch`: chains independent, each stopping at its refusal.

use protocol::admin::{ApplyOutcome, FleetApply, MemberDeleted};
use protocol::spec::{GroupMember, VmSpec, VmidRangeSpec};
use protocol::version::{BATCHES, Version};

use super::{Fleet, pool_spec, vm_with_pools};
use crate::state::{CodecError, Command, CommandReply, StateError, decode_command, encode_command};

fn fleet_file(vms: Vec<VmSpec>) -> FleetApply {
    FleetApply {
        pools: vec![pool_spec(
            "lan",
            "10.9.0.0/24",
            Some("10.9.0.1"),
            "10.9.0.10",
            "10.9.0.99",
        )],
        vmid_ranges: vec![VmidRangeSpec {
            name: "fleet".into(),
            start: 1000,
            end: 1999,
        }],
        vms,
        ..FleetApply::default()
    }
}

fn apply(f: &Fleet, request: FleetApply) -> Command {
    Command::ApplyFleet {
        request: Box::new(request),
        now: f.now,
    }
}

#[test]
fn a_file_whose_third_vm_names_an_unknown_pool_applies_nothing_and_names_the_vm() {
    let mut f = Fleet::new();
    let request = fleet_file(vec![
        vm_with_pools("web-1", &["lan"]),
        vm_with_pools("web-2", &["lan"]),
        vm_with_pools("web-3", &["lab"]),
    ]);
    // `err` checks that nothing but the applied index changed: not the pool, not web-1.
    let e = f.err(apply(&f, request));
    let StateError::Entry { kind, name, error } = &e else {
        panic!("not an entry refusal: {e:?}");
    };
    assert_eq!((kind.as_str(), name.as_str()), ("vm", "web-3"));
    let StateError::Invalid(spec) = error.as_ref() else {
        panic!("not invalid: {error:?}");
    };
    assert_eq!(spec.field, "nics[0].ip.pool");
    assert!(spec.allowed.contains("lan"), "{spec}");
    assert!(
        e.to_string()
            .starts_with("vm web-3: invalid: nics[0].ip.pool = \"lab\""),
        "{e}"
    );
    assert_eq!(e.innermost(), error.as_ref());
    assert!(f.state.vms().is_empty() && f.state.ip_pools().is_empty());
}

#[test]
fn a_valid_file_applies_every_entry_at_once_using_its_own_pool_and_range() {
    let mut f = Fleet::new();
    let mut with_range = vm_with_pools("web-2", &["lan"]);
    with_range.vmid_range = Some("fleet".into());
    let request = fleet_file(vec![vm_with_pools("web-1", &["lan"]), with_range]);
    let CommandReply::FleetApplied(reply) = f.ok(apply(&f, request.clone())) else {
        panic!("not a fleet reply");
    };
    assert_eq!(reply.pools, [ApplyOutcome::Created]);
    assert_eq!(reply.vmid_ranges, [ApplyOutcome::Created]);
    let outcomes: Vec<(ApplyOutcome, u64)> = reply
        .vms
        .iter()
        .map(|v| (v.outcome, v.generation))
        .collect();
    assert_eq!(outcomes, [(ApplyOutcome::Created, 1); 2]);
    assert_eq!(f.state.vms().len(), 2);
    // The same file again changes nothing.
    let CommandReply::FleetApplied(again) = f.ok(apply(&f, request)) else {
        panic!("not a fleet reply");
    };
    assert!(
        again
            .vms
            .iter()
            .all(|v| v.outcome == ApplyOutcome::Unchanged)
    );
    assert_eq!(again.pools, [ApplyOutcome::Unchanged]);
}

#[test]
fn a_name_given_twice_refuses_the_file() {
    let mut f = Fleet::new();
    let request = fleet_file(vec![VmSpec::new("a", 512), VmSpec::new("a", 1024)]);
    let e = f.err(apply(&f, request));
    assert!(
        matches!(&e, StateError::Entry { kind, name, .. } if kind == "vm" && name == "a"),
        "{e:?}"
    );
}

#[test]
fn a_groups_members_past_its_replicas_are_deleted_with_the_file() {
    let mut f = Fleet::new();
    let member = |index: u32| {
        let mut spec = VmSpec::new(format!("api-{index}"), 512);
        spec.group = Some(GroupMember {
            group: "api".into(),
            index,
            pattern: "api-{n}".into(),
            spread: true,
        });
        spec
    };
    let three = FleetApply {
        groups: vec![("api".into(), 3)],
        vms: (1..=3).map(member).collect(),
        ..FleetApply::default()
    };
    f.ok(apply(&f, three));
    let one = FleetApply {
        groups: vec![("api".into(), 1)],
        vms: vec![member(1)],
        ..FleetApply::default()
    };
    let CommandReply::FleetApplied(reply) = f.ok(apply(&f, one)) else {
        panic!("not a fleet reply");
    };
    let gone = |name: &str| MemberDeleted {
        name: name.into(),
        removed: true,
    };
    assert_eq!(reply.deleted, [gone("api-3"), gone("api-2")]);
    assert_eq!(f.state.vms().keys().collect::<Vec<_>>(), ["api-1"]);
}

#[test]
fn a_batch_applies_each_chain_until_its_refusal_and_the_others_regardless() {
    let mut f = Fleet::new();
    f.range("fleet", 1000, 1999);
    f.put_vm(VmSpec::new("a", 512));
    f.put_vm(VmSpec::new("b", 512));
    let now = f.now;
    let vmid = |vm: &str| Command::AllocateVmid {
        vm: vm.into(),
        avoid: vec![],
        now,
    };
    let delete = |vm: &str| Command::DeleteVm {
        name: vm.into(),
        now,
    };
    let nested = Command::Batch { chains: vec![] };
    let CommandReply::Batch(replies) = f.ok(Command::Batch {
        chains: vec![
            vec![vmid("a"), vmid("ghost"), delete("a")],
            vec![vmid("b")],
            vec![nested],
        ],
    }) else {
        panic!("not a batch reply");
    };
    assert_eq!(replies.len(), 3);
    assert!(matches!(
        replies[0][0],
        CommandReply::Vmid { vmid: 1000, .. }
    ));
    assert!(matches!(
        replies[0][1],
        CommandReply::Refused(StateError::NotFound { .. })
    ));
    assert_eq!(replies[0].len(), 2, "the chain stops at its refusal");
    assert!(f.state.vm("a").is_some_and(|v| !v.deleting));
    assert!(matches!(
        replies[1][0],
        CommandReply::Vmid { vmid: 1001, .. }
    ));
    assert!(matches!(
        replies[2][0],
        CommandReply::Refused(StateError::Conflict(_))
    ));
}

#[test]
fn both_commands_need_v2_and_a_v1_entry_cannot_hold_them() {
    let f = Fleet::new();
    let v1 = Version(1);
    let whole = apply(&f, fleet_file(vec![]));
    let batch = Command::Batch {
        chains: vec![vec![Command::AllocateIp {
            pool: "lan".into(),
            owner: "x".into(),
            now: 1,
        }]],
    };
    for cmd in [whole, batch] {
        assert_eq!(cmd.since(), BATCHES);
        assert!(matches!(
            encode_command(&cmd, v1),
            Err(CodecError::TooNew { needs: BATCHES, .. })
        ));
        let mut bytes = encode_command(&cmd, BATCHES).unwrap();
        assert_eq!(decode_command(&bytes).unwrap(), cmd);
        bytes[..2].copy_from_slice(&v1.0.to_be_bytes());
        assert!(matches!(
            decode_command(&bytes),
            Err(CodecError::Malformed { .. })
        ));
    }
}
