//! Three in-process members on loopback QUIC with mutual TLS: replication, a new leader after
//! the leader dies, and a learner added after log compaction catching up by snapshot.

// Only built as a test; lets helpers panic like tests do (clippy `allow-unwrap-in-tests`).
#![cfg(test)]

use crate::common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use common::certs::TestCa;
use common::{ListMachine, pad_command};
use openraft::error::{ClientWriteError, RaftError};
use openraft::{Config, SnapshotPolicy};
use raft::store::{LogStore, MachineHandle, StateMachineStore};
use raft::types::Raft;
use raft::{Command, MemberNode};
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;
use transport::{Endpoint, Router, Server, Service, TransportConfig};

/// Upper bound of every wait: generous for a loaded 2-core machine, never a timing assertion.
const PATIENCE: Duration = Duration::from_secs(90);

struct Member {
    id: u64,
    raft: Raft,
    machine: MachineHandle<ListMachine>,
    addr: SocketAddr,
    endpoint: Endpoint,
    shutdown: CancellationToken,
    dir: TempDir,
}

impl Member {
    fn node(&self) -> MemberNode {
        MemberNode {
            addr: self.addr.to_string(),
        }
    }

    /// Stops Raft, the server and the endpoint; returns the data directory for a restart.
    async fn stop(self) -> TempDir {
        self.raft.shutdown().await.unwrap();
        self.shutdown.cancel();
        self.endpoint.close(Duration::from_secs(1)).await;
        self.dir
    }
}

fn test_config() -> Arc<Config> {
    let config = Config {
        // Small enough that the test compacts the log; nothing is kept behind a snapshot, so a
        // new member can only catch up from the snapshot.
        snapshot_policy: SnapshotPolicy::LogsSinceLast(8),
        max_in_snapshot_log_to_keep: 0,
        purge_batch_size: 1,
        ..raft::config::default_config()
    };
    Arc::new(config.validate().unwrap())
}

async fn start_member(id: u64, ca: &TestCa) -> Member {
    let bind: SocketAddr = "127.0.0.1:0".parse().unwrap();
    start_member_in(id, ca, TempDir::new().unwrap(), bind).await
}

/// Opens the store in `dir`, retrying while a just-stopped member still holds sled's lock.
async fn open_store(dir: &TempDir) -> (LogStore, StateMachineStore<ListMachine>) {
    for _ in 0..100 {
        match raft::store::open(dir.path(), ListMachine::default()) {
            Ok(store) => return store,
            Err(e) => eprintln!("store not reopenable yet: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the store was never released");
}

/// Starts member `id` on its data in `dir`, serving on `bind`.
async fn start_member_in(id: u64, ca: &TestCa, dir: TempDir, bind: SocketAddr) -> Member {
    let (log, sm) = open_store(&dir).await;
    start_raft(id, ca, dir, bind, log, sm).await
}

async fn start_raft(
    id: u64,
    ca: &TestCa,
    dir: TempDir,
    bind: SocketAddr,
    log: LogStore,
    sm: StateMachineStore<ListMachine>,
) -> Member {
    let machine = sm.machine();
    let endpoint = Endpoint::server(
        bind,
        &ca.coordinator(id),
        &[Service::Raft],
        TransportConfig::default(),
    )
    .unwrap();
    let addr = endpoint.local_addr().unwrap();
    let network = raft::network::Network::new(endpoint.clone());
    let raft = Raft::new(id, test_config(), network, log, sm)
        .await
        .unwrap();
    let mut router = Router::new();
    raft::network::register(&mut router, raft.clone());
    let shutdown = CancellationToken::new();
    let server = Server::new(endpoint.clone(), router);
    tokio::spawn(server.run(shutdown.clone()));
    Member {
        id,
        raft,
        machine,
        addr,
        endpoint,
        shutdown,
        dir,
    }
}

/// Waits until one of `members` is the leader recognised by all of them; returns its index.
async fn leader_of(members: &[&Member], not: Option<u64>) -> usize {
    let first = &members[0].raft;
    let metrics = first
        .wait(Some(PATIENCE))
        .metrics(
            |m| {
                m.current_leader
                    .is_some_and(|l| Some(l) != not && members.iter().any(|x| x.id == l))
            },
            "a leader among the live members",
        )
        .await
        .unwrap();
    let leader = metrics.current_leader.unwrap();
    members.iter().position(|m| m.id == leader).unwrap()
}

/// Writes through the leader. Only a `ForwardToLeader` refusal is retried (that node never
/// appended the entry), so a retry can never apply a command twice.
async fn write(members: &[&Member], command: Vec<u8>) -> u64 {
    for _ in 0..20 {
        let leader = leader_of(members, None).await;
        match members[leader]
            .raft
            .client_write(Command(command.clone()))
            .await
        {
            Ok(response) => return response.log_id.index,
            Err(RaftError::APIError(ClientWriteError::ForwardToLeader(_))) => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("write through node {} failed: {e}", members[leader].id),
        }
    }
    panic!("no leader accepted the write after 20 attempts");
}

async fn wait_applied(member: &Member, index: u64) {
    member
        .raft
        .wait(Some(PATIENCE))
        .applied_index_at_least(Some(index), format!("node {} applies {index}", member.id))
        .await
        .unwrap();
}

fn items(member: &Member) -> ListMachine {
    member.machine.read(|m| m.clone()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_replicates_survives_its_leader_and_catches_up_a_learner_by_snapshot() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    // RUST_LOG=openraft=info,raft=debug shows elections and snapshot chunks when debugging.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let ca = TestCa::new();
    let mut members = Vec::new();
    for id in 1..=3 {
        members.push(start_member(id, &ca).await);
    }
    let initial: BTreeMap<u64, MemberNode> = members.iter().map(|m| (m.id, m.node())).collect();
    members[0].raft.initialize(initial).await.unwrap();

    // Replication through the first leader.
    let all: Vec<&Member> = members.iter().collect();
    let mut last = 0;
    for i in 0..10u8 {
        last = write(&all, vec![b'a', i]).await;
    }
    for member in &members {
        wait_applied(member, last).await;
    }
    let reference = items(&members[0]);
    assert_eq!(reference.items.len(), 10);
    for member in &members[1..] {
        assert_eq!(items(member), reference, "node {} diverged", member.id);
    }

    // Kill the leader: the other two elect a new one and keep accepting writes.
    let old = leader_of(&all, None).await;
    let old_id = members[old].id;
    let dead = members.remove(old);
    dead.stop().await;
    let live: Vec<&Member> = members.iter().collect();
    let new_leader = leader_of(&live, Some(old_id)).await;
    assert_ne!(live[new_leader].id, old_id);
    for i in 0..10u8 {
        last = write(&live, vec![b'b', i]).await;
    }
    // Grow the state to tens of MiB, so the snapshot shipped below takes many chunks.
    for _ in 0..4 {
        last = write(&live, pad_command(6 << 20)).await;
    }
    for member in &members {
        wait_applied(member, last).await;
    }
    let reference = items(&members[0]);
    assert_eq!(reference.items.len(), 24);
    assert_eq!(reference.padding.len(), 24 << 20);
    assert_eq!(items(&members[1]), reference);

    // Compact every live member's log up to its last entry, so whoever leads must ship a
    // snapshot to a new member.
    for member in &members {
        member.raft.trigger().snapshot().await.unwrap();
        member
            .raft
            .wait(Some(PATIENCE))
            .metrics(
                |m| m.purged.is_some_and(|p| p.index >= last),
                format!("node {} purges its log behind a snapshot", member.id),
            )
            .await
            .unwrap();
    }

    // A learner added now can only catch up from the snapshot.
    let learner = start_member(4, &ca).await;
    let mut added = false;
    for _ in 0..20 {
        let leader = &members[leader_of(&live, None).await];
        match leader
            .raft
            .add_learner(learner.id, learner.node(), true)
            .await
        {
            Ok(_) => {
                added = true;
                break;
            }
            Err(RaftError::APIError(ClientWriteError::ForwardToLeader(_))) => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("add_learner through node {} failed: {e}", leader.id),
        }
    }
    assert!(added, "no leader accepted the learner after 20 attempts");
    wait_applied(&learner, last).await;
    let metrics = learner.raft.metrics().borrow().clone();
    assert!(
        metrics.snapshot.is_some_and(|s| s.index >= last),
        "the learner installed a snapshot: {metrics:?}"
    );
    assert_eq!(items(&learner), reference);

    learner.stop().await;
    for member in members {
        member.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_member_recovers_from_its_snapshot_and_log_and_catches_up() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let ca = TestCa::new();
    let mut members = Vec::new();
    for id in 1..=3 {
        members.push(start_member(id, &ca).await);
    }
    let initial: BTreeMap<u64, MemberNode> = members.iter().map(|m| (m.id, m.node())).collect();
    members[0].raft.initialize(initial).await.unwrap();

    let all: Vec<&Member> = members.iter().collect();
    let mut last = 0;
    for i in 0..8u8 {
        last = write(&all, vec![b'c', i]).await;
    }
    for member in &members {
        wait_applied(member, last).await;
    }
    // The follower snapshots here, then more entries are committed after the snapshot.
    let leader = leader_of(&all, None).await;
    let follower = (leader + 1) % members.len();
    // openraft ignores a trigger while a snapshot (started by the policy, of fewer entries)
    // is being built: trigger again until one covers `last`.
    let mut covered = false;
    for _ in 0..30 {
        members[follower].raft.trigger().snapshot().await.unwrap();
        covered = members[follower]
            .raft
            .wait(Some(Duration::from_secs(3)))
            .metrics(
                |m| m.snapshot.is_some_and(|s| s.index >= last),
                "the follower stores a snapshot",
            )
            .await
            .is_ok();
        if covered {
            break;
        }
    }
    assert!(covered, "the follower stored no snapshot covering {last}");
    for i in 8..13u8 {
        last = write(&all, vec![b'c', i]).await;
    }
    for member in &members {
        wait_applied(member, last).await;
    }
    let before = items(&members[0]);

    // Restart the follower on the same data directory and address.
    let stopped = members.remove(follower);
    let snapshot = stopped.raft.metrics().borrow().snapshot.unwrap();
    let (id, addr) = (stopped.id, stopped.addr);
    let dir = stopped.stop().await;
    let (log, sm) = open_store(&dir).await;
    let restored = sm.machine().read(|m| m.clone()).unwrap();
    assert_eq!(
        sm.machine().last_applied().unwrap(),
        Some(snapshot),
        "the machine reopens at its snapshot"
    );
    assert!(
        snapshot.index < last,
        "entries were committed after the snapshot"
    );
    assert_eq!(restored.items[..], before.items[..restored.items.len()]);
    members.push(start_raft(id, &ca, dir, addr, log, sm).await);
    let restarted = members.last().unwrap();

    // The committed log after the snapshot is re-applied, then new writes arrive.
    wait_applied(restarted, last).await;
    let live: Vec<&Member> = members.iter().collect();
    for i in 0..5u8 {
        last = write(&live, vec![b'd', i]).await;
    }
    for member in &members {
        wait_applied(member, last).await;
    }
    let reference = items(&members[0]);
    assert_eq!(reference.items.len(), 18);
    for member in &members[1..] {
        assert_eq!(items(member), reference, "node {} diverged", member.id);
    }
    for member in members {
        member.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_that_cannot_read_a_committed_entry_stops_instead_of_skipping_it() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let ca = TestCa::new();
    let member = start_member(1, &ca).await;
    let initial: BTreeMap<u64, MemberNode> = [(member.id, member.node())].into();
    member.raft.initialize(initial).await.unwrap();
    let before = write(&[&member], b"readable".to_vec()).await;
    wait_applied(&member, before).await;

    // The entry commits (it is in the log), but applying it fails: Raft stops for good.
    let refused = member
        .raft
        .client_write(Command(common::UNREADABLE.to_vec()))
        .await;
    assert!(
        refused.is_err(),
        "the write of an unreadable entry answered"
    );
    let stopped = member
        .raft
        .wait(Some(PATIENCE))
        .metrics(|m| m.running_state.is_err(), "raft stops")
        .await
        .unwrap();
    let why = stopped.running_state.unwrap_err().to_string();
    assert!(why.contains("cannot apply log entry"), "{why}");
    // Nothing after the last readable entry was applied.
    let applied = items(&member).items;
    assert_eq!(applied.last().map(|(i, _)| *i), Some(before), "{applied:?}");
    assert!(
        member
            .raft
            .client_write(Command(b"later".to_vec()))
            .await
            .is_err(),
        "a stopped member accepts nothing more"
    );
}
