//! A write made as a client's request applies once: the same (request, number) again answers
//! the first reply and changes nothing (a refusal included); the memory forgets by proposal
//! time and by count, and travels in the v2 snapshot.

use protocol::RequestId;
use protocol::version::Version;

use super::{Fleet, pool_spec};
use crate::state::request_memory::REQUEST_MEMORY_MS;
use crate::state::{Command, CommandReply, StateError, decode_snapshot, encode_snapshot};

fn alloc(owner: &str, now: u64) -> Command {
    Command::AllocateIp {
        pool: "lan".into(),
        owner: owner.into(),
        now,
    }
}

fn once(id: u8, seq: u32, now: u64, command: Command) -> Command {
    Command::Once {
        request: RequestId([id; 16]),
        seq,
        now,
        command: Box::new(command),
    }
}

/// Pool `lan`: 10.9.0.10 up to `last`.
fn lan(f: &mut Fleet, last: &str) {
    f.pool(pool_spec("lan", "10.9.0.0/24", None, "10.9.0.10", last));
}

fn held(f: &Fleet) -> usize {
    f.state
        .ip_pools()
        .values()
        .map(|p| p.allocations.len())
        .sum()
}

#[test]
fn the_same_request_applies_once_and_answers_its_first_reply() {
    let mut f = Fleet::new();
    lan(&mut f, "10.9.0.20");
    let now = f.now;
    let first = f.ok(once(1, 0, now, alloc("db", now)));
    assert!(matches!(first, CommandReply::Ip { .. }), "{first:?}");
    // The retry: same request, same number; later, on another leader.
    let before = f.state.clone();
    let again = f.ok(once(1, 0, now + 5_000, alloc("db", now + 5_000)));
    assert_eq!(again, first);
    assert_eq!(held(&f), 1);
    assert_eq!(f.state.ip_pools(), before.ip_pools());
    // The request's next proposal is another write; another request too.
    f.ok(once(1, 1, now, alloc("db", now)));
    f.ok(once(2, 0, now, alloc("web", now)));
    assert_eq!(held(&f), 3);
    assert_eq!(f.state.requests().len(), 3);
}

#[test]
fn a_refused_request_is_refused_again_without_applying() {
    let mut f = Fleet::new();
    let now = f.now;
    let refused = f.run(once(3, 0, now, alloc("db", now)));
    assert!(matches!(refused, CommandReply::Refused(_)), "{refused:?}");
    // The pool appears meanwhile: the retry still answers the first reply, nothing applied.
    lan(&mut f, "10.9.0.20");
    assert_eq!(f.run(once(3, 0, now, alloc("db", now))), refused);
    assert_eq!(held(&f), 0);
    // A request cannot wrap another.
    let nested = f.run(once(4, 0, now, once(5, 0, now, alloc("x", now))));
    assert!(matches!(nested, CommandReply::Refused(_)), "{nested:?}");
    assert_eq!(held(&f), 0);
}

#[test]
fn replies_are_forgotten_after_the_memory_time_and_the_snapshot_keeps_them() {
    let mut f = Fleet::new();
    lan(&mut f, "10.9.0.20");
    let t0 = f.now;
    f.ok(once(1, 0, t0, alloc("a", t0)));
    // The v2 snapshot carries the memory; v1 cannot, and refuses rather than drop it.
    let v2 = encode_snapshot(&f.state, protocol::version::REQUESTS).unwrap();
    assert_eq!(decode_snapshot(&v2).unwrap(), f.state);
    assert!(encode_snapshot(&f.state, Version(1)).is_err());
    let later = t0 + REQUEST_MEMORY_MS + 1;
    f.ok(once(2, 0, later, alloc("b", later)));
    assert_eq!(f.state.requests().len(), 1, "the first one is forgotten");
    // Forgotten, the same key is a new write (long after any client gave up on it).
    f.ok(once(1, 0, later, alloc("a", later)));
    assert_eq!(held(&f), 3);
}

#[test]
fn requests_grouped_in_one_entry_apply_alone_and_a_retry_in_a_later_group_applies_nothing() {
    let mut f = Fleet::new();
    lan(&mut f, "10.9.0.11");
    let now = f.now;
    // The leader's group commit: one chain per client's write.
    let group = |writes: Vec<Command>| Command::Batch {
        chains: writes.into_iter().map(|w| vec![w]).collect(),
    };
    let CommandReply::Batch(first) = f.ok(group(vec![
        once(1, 0, now, alloc("a", now)),
        once(2, 0, now, alloc("b", now)),
        // The pool has two addresses: this one is refused, the others are not affected.
        once(3, 0, now, alloc("c", now)),
        once(4, 0, now, Command::Batch { chains: vec![] }),
    ])) else {
        panic!("not a batch reply");
    };
    assert!(matches!(first[0][0], CommandReply::Ip { .. }), "{first:?}");
    assert!(matches!(first[1][0], CommandReply::Ip { .. }), "{first:?}");
    assert!(
        matches!(
            first[2][0],
            CommandReply::Refused(StateError::IpsExhausted { .. })
        ),
        "{first:?}"
    );
    assert!(
        matches!(first[3][0], CommandReply::Refused(StateError::Conflict(_))),
        "batches do not nest, not even inside a request: {first:?}"
    );
    assert_eq!(held(&f), 2);
    // Request 2's reply was lost with the leader; its retry lands in another group, beside a
    // new request that frees an address first.
    let release = match &first[0][0] {
        CommandReply::Ip { address, .. } => Command::ReleaseIp {
            pool: "lan".into(),
            address: *address,
            now,
        },
        other => panic!("not an address: {other:?}"),
    };
    let CommandReply::Batch(second) = f.ok(group(vec![
        once(5, 0, now, release),
        once(2, 0, now + 900, alloc("b", now + 900)),
        once(3, 0, now + 900, alloc("c", now + 900)),
    ])) else {
        panic!("not a batch reply");
    };
    assert_eq!(
        second[1][0], first[1][0],
        "the retry answers its first reply"
    );
    assert_eq!(
        second[2][0], first[2][0],
        "a refusal is answered again, not retried"
    );
    assert_eq!(held(&f), 1, "one released, nothing allocated twice");
    // Request 4 was refused by the batch before it ran: nothing to remember.
    assert_eq!(f.state.requests().len(), 4);
}
