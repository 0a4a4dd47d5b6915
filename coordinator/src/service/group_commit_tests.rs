//! The queue against a stand-in for Raft that holds every commit until the test lets it go
//! and applies what it commits to a real state machine: writes that wait are committed as one
//! entry, each gets its own reply, requests stay at most once, and what must go alone does.

use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use protocol::RequestId;
use protocol::spec::IpPoolSpec;
use protocol::version::{BATCHES, Version};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use transport::RemoteError;

use super::{Commit, GroupCommit, MAX_GROUP_WRITE_BYTES, MAX_IN_FLIGHT, Written, groupable, split};
use fleet::state::{
    Command, CommandReply, FleetState, StateError, decode_command, encode_command, encode_reply,
};

const NOW: u64 = 1_700_000_000_000;

/// Raft as far as the queue can tell: commits wait for a permit, then apply in order.
#[derive(Clone)]
struct HeldRaft {
    state: Arc<Mutex<(u64, FleetState)>>,
    /// Writes per committed entry, in commit order.
    entries: Arc<Mutex<Vec<usize>>>,
    permits: Arc<Semaphore>,
}

impl HeldRaft {
    fn new() -> HeldRaft {
        let raft = HeldRaft {
            state: Arc::new(Mutex::new((0, FleetState::new()))),
            entries: Arc::default(),
            permits: Arc::new(Semaphore::new(0)),
        };
        let pool = Command::PutPool {
            spec: IpPoolSpec {
                name: "lan".into(),
                cidr: "10.9.0.0/24".into(),
                gateway: None,
                range_start: "10.9.0.10".into(),
                range_end: "10.9.0.200".into(),
                dns: vec![],
            },
            now: NOW,
        };
        let mut state = raft.state.lock().unwrap();
        state.0 += 1;
        let index = state.0;
        assert!(!matches!(
            state.1.apply(index, pool),
            CommandReply::Refused(_)
        ));
        drop(state);
        raft
    }

    fn entries(&self) -> Vec<usize> {
        self.entries.lock().unwrap().clone()
    }
}

impl Commit for HeldRaft {
    async fn commit(&self, bytes: Vec<u8>) -> Result<Vec<u8>, RemoteError> {
        self.permits
            .acquire()
            .await
            .map_err(|e| RemoteError::internal(e.to_string()))?
            .forget();
        let cmd = decode_command(&bytes).map_err(|e| RemoteError::internal(e.to_string()))?;
        let writes = match &cmd {
            Command::Batch { chains } => chains.len(),
            _ => 1,
        };
        let mut state = self.state.lock().unwrap();
        state.0 += 1;
        let index = state.0;
        let reply = state.1.apply(index, cmd);
        self.entries.lock().unwrap().push(writes);
        encode_reply(&reply).map_err(|e| RemoteError::internal(e.to_string()))
    }
}

fn alloc(id: u8, owner: &str) -> Command {
    Command::Once {
        request: RequestId([id; 16]),
        seq: 0,
        now: NOW,
        command: Box::new(Command::AllocateIp {
            pool: "lan".into(),
            owner: owner.into(),
            now: NOW,
        }),
    }
}

fn encoded(cmd: &Command) -> Vec<u8> {
    encode_command(cmd, BATCHES).unwrap()
}

fn address(written: &Written) -> IpAddr {
    match written {
        Ok(CommandReply::Ip { address, .. }) => *address,
        other => panic!("not an address: {other:?}"),
    }
}

/// Starts `cmd` on the queue in its own task.
fn start(set: &mut JoinSet<Written>, queue: &Arc<GroupCommit<HeldRaft>>, cmd: Command) {
    let queue = Arc::clone(queue);
    set.spawn(async move {
        let bytes = encoded(&cmd);
        queue.write(cmd, bytes, BATCHES).await
    });
}

/// Waits (bounded) until `n` writes wait in the queue behind the ones in flight.
async fn until_waiting(queue: &GroupCommit<HeldRaft>, n: usize) {
    for _ in 0..1_000 {
        if super::lock(&queue.queue).waiting.len() == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    panic!("{n} writes never queued up");
}

/// Waits (bounded) until `n` entries are on their way and nothing waits: each write started
/// went alone.
async fn until_in_flight(queue: &GroupCommit<HeldRaft>, n: usize) {
    for _ in 0..1_000 {
        {
            let queue = super::lock(&queue.queue);
            if queue.in_flight == n && queue.waiting.is_empty() {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    panic!("{n} entries never went on their way");
}

#[tokio::test]
async fn writes_that_wait_go_as_one_entry_and_each_gets_its_own_reply() {
    let raft = HeldRaft::new();
    let queue = Arc::new(GroupCommit::new(raft.clone()));
    let mut set = JoinSet::new();
    // The first writes find the queue idle and go at once, each in its own entry...
    for i in 0..MAX_IN_FLIGHT {
        start(&mut set, &queue, alloc(i as u8, &format!("early-{i}")));
        until_in_flight(&queue, i + 1).await;
    }
    // ...then ten more arrive while those are held: they wait, and go together.
    for i in 0..10u8 {
        start(&mut set, &queue, alloc(100 + i, &format!("late-{i}")));
    }
    until_waiting(&queue, 10).await;
    assert!(raft.entries().is_empty(), "nothing committed while held");
    raft.permits.add_permits(100);
    let mut addresses = Vec::new();
    while let Some(written) = set.join_next().await {
        addresses.push(address(&written.unwrap()));
    }
    addresses.sort();
    addresses.dedup();
    assert_eq!(
        addresses.len(),
        MAX_IN_FLIGHT + 10,
        "every write its own address"
    );
    let mut entries = raft.entries();
    entries.sort_unstable();
    let mut expected = vec![1; MAX_IN_FLIGHT];
    expected.push(10);
    assert_eq!(entries, expected, "the ten that waited shared one entry");
    assert_eq!(super::lock(&queue.queue).in_flight, 0, "the drains ended");
}

#[tokio::test]
async fn a_retry_grouped_with_others_answers_its_first_reply_and_a_refusal_stays_alone() {
    let raft = HeldRaft::new();
    raft.permits.add_permits(1);
    let queue = Arc::new(GroupCommit::new(raft.clone()));
    let first = queue
        .write(alloc(7, "db"), encoded(&alloc(7, "db")), BATCHES)
        .await;
    let first_address = address(&first);
    // Hold the next commits so a group forms: two writes in flight, then the retry of
    // request 7 (its reply was lost), a new write and one for a pool that does not exist.
    let mut set = JoinSet::new();
    for i in 0..MAX_IN_FLIGHT {
        start(&mut set, &queue, alloc(20 + i as u8, "filler"));
        until_in_flight(&queue, i + 1).await;
    }
    let ghost = Command::Once {
        request: RequestId([9; 16]),
        seq: 0,
        now: NOW,
        command: Box::new(Command::AllocateIp {
            pool: "ghost".into(),
            owner: "x".into(),
            now: NOW,
        }),
    };
    let mut grouped = JoinSet::new();
    for cmd in [alloc(7, "db"), alloc(8, "web"), ghost] {
        let queue = Arc::clone(&queue);
        grouped.spawn(async move {
            let bytes = encoded(&cmd);
            (format!("{cmd:?}"), queue.write(cmd, bytes, BATCHES).await)
        });
        // In this order in the queue.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    until_waiting(&queue, 3).await;
    raft.permits.add_permits(100);
    while set.join_next().await.is_some() {}
    let mut replies = Vec::new();
    while let Some(done) = grouped.join_next().await {
        replies.push(done.unwrap());
    }
    replies.sort_by(|a, b| a.0.cmp(&b.0));
    let by_request = |id: u8| {
        replies
            .iter()
            .find(|(cmd, _)| cmd.contains(&format!("RequestId([{id}, ")))
            .map(|(_, w)| w.clone())
            .unwrap()
    };
    assert_eq!(
        address(&by_request(7)),
        first_address,
        "the retry, answered"
    );
    assert_ne!(address(&by_request(8)), first_address);
    assert!(
        matches!(
            by_request(9),
            Ok(CommandReply::Refused(StateError::NotFound { .. }))
        ),
        "{:?}",
        by_request(9)
    );
    let mut entries = raft.entries();
    entries.sort_unstable();
    assert_eq!(
        entries.last(),
        Some(&3),
        "the three shared an entry: {entries:?}"
    );
    let state = raft.state.lock().unwrap();
    let held = state.1.ip_pools()["lan"].allocations.len();
    assert_eq!(
        held,
        2 + MAX_IN_FLIGHT,
        "request 7 holds one address, not two"
    );
}

#[test]
fn batches_whole_files_large_writes_and_older_clusters_go_alone() {
    let small = alloc(1, "db");
    assert!(groupable(&small, 100, BATCHES));
    assert!(
        !groupable(&small, 100, Version(1)),
        "v1 members cannot read a batch"
    );
    assert!(!groupable(&small, MAX_GROUP_WRITE_BYTES + 1, BATCHES));
    let batch = Command::Batch { chains: vec![] };
    assert!(!groupable(&batch, 100, BATCHES));
    let wrapped = Command::Once {
        request: RequestId([1; 16]),
        seq: 0,
        now: NOW,
        command: Box::new(Command::Batch { chains: vec![] }),
    };
    assert!(!groupable(&wrapped, 100, BATCHES));
}

#[test]
fn a_group_reply_that_does_not_match_fails_every_write_in_it() {
    let ok = |n: u8| CommandReply::Vmid {
        vmid: 100 + u32::from(n),
        range: "fleet".into(),
    };
    let good = split(Ok(CommandReply::Batch(vec![vec![ok(1)], vec![ok(2)]])), 2);
    assert_eq!(good, vec![Ok(ok(1)), Ok(ok(2))]);
    let short = split(Ok(CommandReply::Batch(vec![vec![ok(1)]])), 2);
    assert!(short.iter().all(Result::is_err), "{short:?}");
    let empty = split(Ok(CommandReply::Batch(vec![vec![], vec![ok(2)]])), 2);
    assert!(empty[0].is_err() && empty[1].is_ok(), "{empty:?}");
    let lost = split(Err(RemoteError::unavailable("leader lost")), 3);
    assert_eq!(lost.len(), 3);
    assert!(lost.iter().all(Result::is_err));
    let replayed = CommandReply::Refused(StateError::AlreadyApplied {
        index: 4,
        last_applied: 9,
    });
    assert_eq!(
        split(Ok(replayed.clone()), 2),
        vec![Ok(replayed.clone()), Ok(replayed)]
    );
}
