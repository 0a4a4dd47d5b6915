//! The event log bound, the byte formats (commands, replies, snapshots) and determinism.

use protocol::fleet::{EventKind, EventLevel};

use super::{Fleet, pool_spec, vm_with_pools};
use protocol::version::{CURRENT, OLDEST, Version};

use crate::state::{
    CodecError, Command, CommandReply, EVENT_LOG_CAPACITY, StateError, decode_command,
    decode_reply, decode_snapshot, encode_command, encode_reply, encode_snapshot,
};

fn event(n: u64) -> Command {
    Command::RecordEvent {
        level: EventLevel::Info,
        kind: EventKind::Vm,
        subject: format!("vm-{n}"),
        message: format!("event {n}"),
        now: n,
    }
}

#[test]
fn the_event_log_keeps_the_newest_entries_while_seq_keeps_growing() {
    let mut f = Fleet::new();
    assert_eq!(
        (f.state.first_event_seq(), f.state.last_event_seq()),
        (0, 0)
    );
    let total = EVENT_LOG_CAPACITY as u64 + 250;
    for n in 1..=total {
        f.ok(event(n));
    }
    assert_eq!(f.state.events.len(), EVENT_LOG_CAPACITY);
    assert_eq!(f.state.last_event_seq(), total);
    assert_eq!(f.state.first_event_seq(), 251);
    let all = f.state.events_after(0, None);
    assert_eq!(all.len(), EVENT_LOG_CAPACITY);
    assert!(all.windows(2).all(|w| w[1].seq == w[0].seq + 1));
    assert_eq!(all[0].message, "event 251");
    let tail = f.state.events_after(total - 3, None);
    assert_eq!(
        tail.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [total - 2, total - 1, total]
    );
    assert_eq!(
        f.state
            .events_after(300, Some(2))
            .iter()
            .map(|e| e.seq)
            .collect::<Vec<_>>(),
        [301, 302]
    );
    assert!(f.state.events_after(total, None).is_empty());
}

/// A fleet with something of every kind in it.
fn busy_fleet() -> Fleet {
    let mut f = Fleet::new();
    f.range("prod", 1000, 1999);
    f.pool(pool_spec(
        "lan",
        "10.0.0.0/24",
        Some("10.0.0.1"),
        "10.0.0.10",
        "10.0.0.99",
    ));
    for i in 0..5 {
        let name = format!("vm-{i}");
        f.put_vm(vm_with_pools(&name, &["lan"]));
        f.vmid(&name).unwrap();
        f.ok(Command::AllocateIps { vm: name, now: 1 });
    }
    f.ok(event(7));
    f
}

#[test]
fn a_snapshot_restores_an_identical_state() {
    let f = busy_fleet();
    for version in Version::supported() {
        let bytes = encode_snapshot(&f.state, version).unwrap();
        assert_eq!(bytes[..2], version.0.to_be_bytes());
        let restored = decode_snapshot(&bytes).unwrap();
        assert_eq!(restored, f.state);
        assert_eq!(encode_snapshot(&restored, version).unwrap(), bytes);
    }
}

#[test]
fn corrupt_snapshots_and_commands_are_refused_not_misread() {
    let f = busy_fleet();
    let good = encode_snapshot(&f.state, CURRENT).unwrap();
    let mut wrong_format = good.clone();
    wrong_format[..2].copy_from_slice(&(CURRENT.0 + 1).to_be_bytes());
    let mut trailing = good.clone();
    trailing.push(0);
    let cases: [(&str, &[u8]); 4] = [
        ("empty", &[]),
        ("format", &wrong_format),
        ("truncated", &good[..good.len() / 2]),
        ("trailing", &trailing),
    ];
    for (what, bytes) in cases {
        let e = decode_snapshot(bytes).expect_err(what);
        match (what, &e) {
            ("empty", CodecError::Empty { .. }) | ("format", CodecError::Unsupported { .. }) => {}
            ("truncated" | "trailing", CodecError::Malformed { .. }) => {}
            _ => panic!("{what}: {e}"),
        }
    }
    assert!(matches!(
        decode_command(&[0, 1, 0xff, 0xff]),
        Err(CodecError::Malformed { .. })
    ));
    let unknown = decode_command(&[0xff, 0xff, 0]).unwrap_err();
    assert!(
        matches!(unknown, CodecError::Unsupported { .. }),
        "{unknown}"
    );
    assert!(
        unknown.to_string().contains("run a release that reads"),
        "{unknown}"
    );
    assert!(matches!(
        encode_snapshot(&f.state, Version(CURRENT.0 + 1)),
        Err(CodecError::Unsupported { .. })
    ));
}

#[test]
fn a_command_is_written_at_the_cluster_version_and_never_above_what_it_names() {
    let cmd = Command::SetClusterVersion {
        version: OLDEST,
        now: 1,
    };
    for version in Version::supported().filter(|&v| v >= cmd.since()) {
        let bytes = encode_command(&cmd, version).unwrap();
        assert_eq!(bytes[..2], version.0.to_be_bytes());
        assert_eq!(decode_command(&bytes).unwrap(), cmd);
    }
    if OLDEST > Version(0) {
        let below = Version(OLDEST.0 - 1);
        assert!(
            encode_command(&cmd, below).is_err(),
            "{below} is not written"
        );
    }
}

#[test]
fn commands_and_replies_round_trip_as_bytes() {
    let cmd = Command::PutVmidRange {
        spec: protocol::spec::VmidRangeSpec {
            name: "r".into(),
            start: 100,
            end: 200,
        },
        now: 1,
    };
    let bytes = encode_command(&cmd, CURRENT).unwrap();
    assert_eq!(decode_command(&bytes).unwrap(), cmd);
    let r = CommandReply::Refused(StateError::Conflict("x".into()));
    assert_eq!(decode_reply(&encode_reply(&r).unwrap()).unwrap(), r);
    assert!(decode_reply(&[]).is_err());
}

#[test]
fn applying_the_same_commands_twice_gives_identical_bytes() {
    let run = || {
        let f = busy_fleet();
        (encode_snapshot(&f.state, CURRENT).unwrap(), f.state.view())
    };
    let (a, view_a) = run();
    let (b, view_b) = run();
    assert_eq!(a, b);
    assert_eq!(view_a, view_b);
    assert_eq!(view_a.vms.len(), 5);
}

#[test]
fn the_fleet_view_renders_as_json_for_the_cli() {
    let f = busy_fleet();
    let view = f.state.view();
    let json = serde_json::to_string(&view).unwrap();
    assert!(json.contains("\"10.0.0.10\""), "addresses as text: {json}");
    let back: protocol::fleet::FleetView = serde_json::from_str(&json).unwrap();
    assert_eq!(back, view);
}

#[test]
fn a_command_of_a_newer_version_is_refused_at_an_older_cluster_version_with_the_way_forward() {
    let revoke = Command::RevokeAdmin { id: 3, now: 1 };
    let v1 = Version(1);
    let e = encode_command(&revoke, v1).unwrap_err();
    assert!(matches!(e, CodecError::TooNew { .. }), "{e}");
    assert!(
        e.to_string()
            .contains("needs cluster version v2, the cluster is at v1")
            && e.to_string()
                .contains("every member runs a release that reads v2"),
        "{e}"
    );
    // Written at v2, it decodes; the same bytes claiming v1 are refused as malformed.
    let mut bytes = encode_command(&revoke, CURRENT).unwrap();
    assert_eq!(decode_command(&bytes).unwrap(), revoke);
    bytes[..2].copy_from_slice(&v1.0.to_be_bytes());
    assert!(matches!(
        decode_command(&bytes),
        Err(CodecError::Malformed { .. })
    ));
}
