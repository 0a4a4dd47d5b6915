//! Hosts, members, settings and VIP ownership.

use protocol::fleet::{Capacity, HostState, Member, MemberRole, Settings};
use protocol::spec::VipSpecV1;
use protocol::spec::{HaDefaults, RecoveryMode};
use protocol::version::{HA_DEFAULTS, Version};

use super::Fleet;
use crate::state::{Command, CommandReply, StateError, decode_snapshot, encode_snapshot};

fn register(id: u64, name: &str) -> Command {
    Command::RegisterHost {
        id,
        name: name.into(),
        labels: [("zone".to_string(), "a".to_string())].into(),
        capacity: Capacity {
            cpus: 16,
            memory_mib: 65536,
        },
        now: 5,
    }
}

#[test]
fn hosts_register_once_per_name_and_a_removed_host_is_gone_for_good() {
    let mut f = Fleet::new();
    f.ok(register(10, "pve1"));
    assert_eq!(f.state.hosts()[&10].state, HostState::Joining);
    let seq = f.state.last_event_seq();
    f.ok(register(10, "pve1"));
    assert_eq!(
        f.state.last_event_seq(),
        seq,
        "an identical registration changes nothing"
    );
    assert!(matches!(
        f.err(register(11, "PVE1")),
        StateError::Conflict(_)
    ));
    assert!(matches!(
        f.err(register(11, "pve_1")),
        StateError::Invalid(_)
    ));
    f.ok(Command::SetHostState {
        id: 10,
        state: HostState::Online,
        now: 6,
    });
    assert_eq!(f.state.hosts()[&10].state_since, 6);
    f.ok(Command::SetHostState {
        id: 10,
        state: HostState::Removed,
        now: 7,
    });
    assert!(f.state.is_node_revoked(10));
    assert!(matches!(
        f.err(register(10, "pve1")),
        StateError::Conflict(_)
    ));
    assert!(matches!(
        f.err(Command::SetHostState {
            id: 10,
            state: HostState::Online,
            now: 8
        }),
        StateError::Conflict(_)
    ));
    f.ok(register(12, "pve1"));
    assert_eq!(
        f.state.host_by_name("pve1").map(|h| h.id),
        Some(12),
        "a removed host's name is free"
    );
}

#[test]
fn removed_members_are_refused_and_their_ids_never_handed_out() {
    let mut f = Fleet::new();
    let member = |id, addr: &str| Command::AddMember {
        member: Member {
            id,
            addr: addr.into(),
            role: MemberRole::Learner,
        },
        now: 1,
    };
    f.ok(member(5, "10.0.0.5:7000"));
    assert!(matches!(
        f.err(member(6, "10.0.0.6")),
        StateError::Invalid(_)
    ));
    f.ok(Command::RemoveMember { id: 5, now: 2 });
    assert!(f.state.is_node_revoked(5));
    assert!(matches!(
        f.err(member(5, "10.0.0.5:7000")),
        StateError::Conflict(_)
    ));
    assert!(matches!(
        f.err(Command::RemoveMember { id: 5, now: 2 }),
        StateError::NotFound { .. }
    ));
    assert_eq!(f.state.clone().allocate_node_id(), 6);
}

#[test]
fn settings_are_validated_and_the_default_range_must_exist() {
    let mut f = Fleet::new();
    let put = |settings| Command::put_settings(settings, 1);
    let bad = Settings {
        cpu_overcommit_percent: 5,
        ..Settings::default()
    };
    match f.err(put(bad)) {
        StateError::Invalid(e) => assert_eq!(e.field, "cpu_overcommit_percent"),
        other => panic!("{other}"),
    }
    let missing = Settings {
        default_vmid_range: Some("prod".into()),
        ..Settings::default()
    };
    match f.err(put(missing.clone())) {
        StateError::Invalid(e) => assert!(e.allowed.contains("none is defined yet"), "{e}"),
        other => panic!("{other}"),
    }
    f.range("prod", 100, 199);
    f.ok(put(missing.clone()));
    assert_eq!(
        f.ok(put(missing)),
        CommandReply::Applied {
            outcome: protocol::admin::ApplyOutcome::Unchanged
        }
    );
    assert!(
        f.err(Command::DeleteVmidRange {
            name: "prod".into(),
            now: 1
        })
        .to_string()
        .contains("default_vmid_range")
    );
}

#[test]
fn a_vip_changes_holder_only_from_the_epoch_the_proposer_saw() {
    let mut f = Fleet::new();
    for (id, name) in [(1, "pve1"), (2, "pve2"), (3, "pve3")] {
        f.ok(register(id, name));
        f.ok(Command::SetHostState {
            id,
            state: HostState::Online,
            now: 1,
        });
    }
    let spec = VipSpecV1 {
        name: "api".into(),
        address: "10.9.0.10/24".into(),
        interface: "vmbr0".into(),
        hosts: vec!["pve1".into(), "pve2".into()],
    };
    f.ok(Command::PutVip {
        spec: spec.clone(),
        now: 1,
    });
    let give = |owner, expected_epoch| Command::SetVipOwner {
        name: "api".into(),
        owner,
        expected_epoch,
        now: 2,
    };
    assert_eq!(
        f.ok(give(Some(1), 0)),
        CommandReply::VipOwner {
            owner: Some(1),
            epoch: 1
        }
    );
    // A controller acting on the old epoch cannot hand it out a second time.
    assert!(matches!(f.err(give(Some(2), 0)), StateError::Conflict(_)));
    assert!(f.err(give(Some(3), 1)).to_string().contains("not eligible"));
    assert_eq!(
        f.ok(give(Some(2), 1)),
        CommandReply::VipOwner {
            owner: Some(2),
            epoch: 2
        }
    );
    assert_eq!(
        f.ok(give(None, 2)),
        CommandReply::VipOwner {
            owner: None,
            epoch: 3
        }
    );
    // Redefining keeps the holder and epoch, and bumps the generation.
    let moved = VipSpecV1 {
        interface: "vmbr1".into(),
        ..spec.clone()
    };
    f.ok(Command::PutVip {
        spec: moved,
        now: 3,
    });
    let vip = &f.state.vips()["api"];
    assert_eq!((vip.generation, vip.epoch), (2, 3));
    let twin = VipSpecV1 {
        name: "api2".into(),
        ..spec
    };
    assert!(
        f.err(Command::PutVip { spec: twin, now: 3 })
            .to_string()
            .contains("already VIP api")
    );
    f.ok(Command::DeleteVip {
        name: "api".into(),
        now: 4,
    });
    assert!(matches!(
        f.err(Command::DeleteVip {
            name: "api".into(),
            now: 4
        }),
        StateError::NotFound { .. }
    ));
}

#[test]
fn ha_defaults_need_v2_and_a_v1_put_brings_back_pves() {
    let mut f = Fleet::new();
    let tuned = Settings {
        ha: HaDefaults {
            max_restart: 0,
            max_relocate: 3,
            recovery: RecoveryMode::Recreate,
            ..HaDefaults::default()
        },
        ..Settings::default()
    };
    // Only PVE's defaults fit the v1 command; the others need v2.
    assert!(matches!(
        Command::put_settings(Settings::default(), 1),
        Command::PutSettings { .. }
    ));
    let apply = Command::put_settings(tuned.clone(), 1);
    assert!(matches!(apply, Command::ApplySettings { .. }));
    assert_eq!(apply.since(), HA_DEFAULTS);
    f.ok(apply);
    assert_eq!(f.state.settings(), &tuned);
    // Out-of-range defaults are refused, naming the field.
    let mut bad = tuned.clone();
    bad.ha.max_restart = 11;
    match f.err(Command::put_settings(bad, 1)) {
        StateError::Invalid(e) => assert_eq!(e.field, "ha.max_restart"),
        other => panic!("{other}"),
    }
    // A v1 snapshot would drop them: refused, never written.
    let refused = encode_snapshot(&f.state, Version(1)).unwrap_err();
    assert!(refused.to_string().contains("HA defaults"), "{refused}");
    let v2 = encode_snapshot(&f.state, HA_DEFAULTS).unwrap();
    assert_eq!(decode_snapshot(&v2).unwrap(), f.state);
    // The v1 command means v1's settings: PVE's HA defaults again.
    f.ok(Command::put_settings(Settings::default(), 1));
    assert_eq!(f.state.settings().ha, HaDefaults::default());
    encode_snapshot(&f.state, Version(1)).unwrap();
}
