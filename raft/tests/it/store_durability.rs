//! Nothing the Raft store reported durable is lost when its process is SIGKILLed.
//!
//! A child process (see `lab::crash_child`) runs [`script`] through the real store with sled's
//! background flush off, acknowledging each step once the store call returned: `save_vote`,
//! `append` once its callback reported the entries flushed, `truncate`, `purge`, a snapshot
//! build, a snapshot install. The parent kills it after step `k` (before anything later could
//! flush) or while step `k + 1` runs, reopens the directory and requires exactly the state
//! after step `k` (or, in the second case, after `k + 1`). Removing the flush of an operation
//! makes these tests fail, except where sled itself writes the data out before the operation
//! returns (docs/design/durability-tests.md has the record and the exceptions).

// Only built as a test; lets helpers panic like tests do (clippy `allow-unwrap-in-tests`).
#![cfg(test)]

use crate::common::ListMachine;
use lab::crash_child::{self, CrashChild, KillPoint};

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use openraft::storage::{RaftLogStorage, RaftLogStorageExt, RaftStateMachine};
use openraft::{
    CommittedLeaderId, EntryPayload, Membership, RaftLogReader, RaftSnapshotBuilder, Vote,
};
use raft::store::{LogStore, StateMachineStore, StoreOptions};
use raft::types::{Entry, LogId, NodeId, SnapshotMeta, StoredMembership};
use raft::{Command, Machine, MemberNode};
use tempfile::TempDir;

/// The child-mode test's path in this binary, as libtest names it.
const CHILD_TEST: &str = "store_durability::store_child";

/// One store operation that reports itself durable when it returns.
#[derive(Clone, Debug)]
enum Step {
    Vote(Vote<NodeId>),
    Append(Vec<Entry>),
    Truncate(LogId),
    Purge(LogId),
    /// Apply the log to the machine, then build (and store) a snapshot.
    BuildSnapshot,
    /// Install the leader's snapshot, [`leader_snapshot`].
    InstallSnapshot,
}

/// What the store must hold after a prefix of the script: every field is reported durable by
/// some step.
#[derive(Clone, Debug, Default, PartialEq)]
struct Durable {
    vote: Option<Vote<NodeId>>,
    last_purged: Option<LogId>,
    last_log_id: Option<LogId>,
    /// The entries after the purge point (a crash inside `purge` may leave older ones behind,
    /// which is allowed: openraft never reads below the purge point).
    entries: Vec<Entry>,
    snapshot: Option<LogId>,
    /// The machine as restored from the current snapshot.
    items: Vec<(u64, Vec<u8>)>,
}

impl Step {
    fn name(&self) -> String {
        match self {
            Step::Vote(vote) => format!("save_vote {vote}"),
            Step::Append(entries) => match (entries.first(), entries.last()) {
                (Some(first), Some(last)) => format!("append {}..={}", first.log_id, last.log_id),
                _ => "append nothing".to_owned(),
            },
            Step::Truncate(at) => format!("truncate from {at}"),
            Step::Purge(upto) => format!("purge up to {upto}"),
            Step::BuildSnapshot => "build_snapshot".to_owned(),
            Step::InstallSnapshot => "install_snapshot".to_owned(),
        }
    }
}

impl Durable {
    /// The fields where `self` (found) differs from `expected`, for a readable failure
    /// (entries by log id, the machine by applied index).
    fn differences(&self, expected: &Durable) -> Vec<String> {
        fn summary(d: &Durable) -> [(&'static str, String); 6] {
            let ids: Vec<String> = d.entries.iter().map(|e| e.log_id.to_string()).collect();
            let applied: Vec<u64> = d.items.iter().map(|(i, _)| *i).collect();
            [
                ("vote", format!("{:?}", d.vote.map(|v| v.to_string()))),
                (
                    "last_purged",
                    format!("{:?}", d.last_purged.map(|i| i.to_string())),
                ),
                (
                    "last_log_id",
                    format!("{:?}", d.last_log_id.map(|i| i.to_string())),
                ),
                ("entries", format!("{ids:?}")),
                (
                    "snapshot",
                    format!("{:?}", d.snapshot.map(|i| i.to_string())),
                ),
                ("machine", format!("{applied:?}")),
            ]
        }
        let mut out: Vec<String> = summary(self)
            .into_iter()
            .zip(summary(expected))
            .filter(|(found, wanted)| found.1 != wanted.1)
            .map(|(found, wanted)| {
                format!("{} found {} acknowledged {}", found.0, found.1, wanted.1)
            })
            .collect();
        if out.is_empty() && self != expected {
            out.push("same ids, other contents".to_owned());
        }
        out
    }
}

fn log_id(term: u64, index: u64) -> LogId {
    LogId::new(CommittedLeaderId::new(term, 1), index)
}

fn normal(term: u64, index: u64) -> Entry {
    Entry {
        log_id: log_id(term, index),
        payload: EntryPayload::Normal(Command(format!("t{term}-cmd-{index}").into_bytes())),
    }
}

fn membership() -> Membership<NodeId, MemberNode> {
    let nodes: BTreeMap<u64, MemberNode> = [(
        1,
        MemberNode {
            addr: "127.0.0.1:1".into(),
        },
    )]
    .into();
    Membership::new(vec![BTreeSet::from([1])], nodes)
}

/// A leader's snapshot at (3, 12) whose content the local log never had.
fn leader_snapshot() -> (SnapshotMeta, ListMachine) {
    let mut machine = ListMachine::default();
    machine.apply(9, b"leader-9").unwrap();
    machine.apply(12, b"leader-12").unwrap();
    let meta = SnapshotMeta {
        last_log_id: Some(log_id(3, 12)),
        last_membership: StoredMembership::new(Some(log_id(1, 1)), membership()),
        snapshot_id: "leader-3-12".to_owned(),
    };
    (meta, machine)
}

/// Every kind of durable operation, in an order openraft could issue them, each followed by
/// the kill at some point of the sweep.
fn script() -> Vec<Step> {
    vec![
        Step::Vote(Vote::new(1, 1)),
        Step::Append(vec![Entry {
            log_id: log_id(1, 1),
            payload: EntryPayload::Membership(membership()),
        }]),
        Step::Append((2..=4).map(|i| normal(1, i)).collect()),
        Step::Append((5..=8).map(|i| normal(1, i)).collect()),
        Step::Vote(Vote::new_committed(2, 1)),
        Step::Truncate(log_id(1, 6)),
        Step::Append((6..=7).map(|i| normal(2, i)).collect()),
        Step::BuildSnapshot,
        Step::Purge(log_id(1, 4)),
        Step::InstallSnapshot,
        Step::Purge(log_id(3, 12)),
        Step::Append((13..=14).map(|i| normal(3, i)).collect()),
        Step::Vote(Vote::new_committed(3, 1)),
    ]
}

/// The model: what the store must hold after `steps`.
fn expected_after(steps: &[Step]) -> Durable {
    let mut d = Durable::default();
    for step in steps {
        match step {
            Step::Vote(vote) => d.vote = Some(*vote),
            Step::Append(entries) => d.entries.extend(entries.iter().cloned()),
            Step::Truncate(at) => d.entries.retain(|e| e.log_id.index < at.index),
            Step::Purge(upto) => {
                d.last_purged = Some(*upto);
                d.entries.retain(|e| e.log_id.index > upto.index);
            }
            Step::BuildSnapshot => {
                d.snapshot = d.entries.last().map(|e| e.log_id);
                d.items = d
                    .entries
                    .iter()
                    .filter_map(|e| match &e.payload {
                        EntryPayload::Normal(c) => Some((e.log_id.index, c.0.clone())),
                        _ => None,
                    })
                    .collect();
            }
            Step::InstallSnapshot => {
                let (meta, machine) = leader_snapshot();
                d.snapshot = meta.last_log_id;
                d.items = machine.items;
            }
        }
        d.last_log_id = std::cmp::max(d.entries.last().map(|e| e.log_id), d.last_purged);
    }
    d
}

fn crash_options() -> StoreOptions {
    StoreOptions {
        periodic_flush: None,
    }
}

/// Runs one step through the store, as openraft would.
async fn run(step: &Step, log: &mut LogStore, sm: &mut StateMachineStore<ListMachine>) {
    match step {
        Step::Vote(vote) => log.save_vote(vote).await.unwrap(),
        // Returns once the callback reported the entries flushed.
        Step::Append(entries) => log.blocking_append(entries.clone()).await.unwrap(),
        Step::Truncate(at) => log.truncate(*at).await.unwrap(),
        Step::Purge(upto) => log.purge(*upto).await.unwrap(),
        Step::BuildSnapshot => {
            let next = sm
                .applied_state()
                .await
                .unwrap()
                .0
                .map_or(0, |id| id.index + 1);
            let entries = log
                .get_log_reader()
                .await
                .try_get_log_entries(next..)
                .await
                .unwrap();
            sm.apply(entries).await.unwrap();
            sm.get_snapshot_builder()
                .await
                .build_snapshot()
                .await
                .unwrap();
        }
        Step::InstallSnapshot => {
            let (meta, machine) = leader_snapshot();
            let mut receiving = sm.begin_receiving_snapshot().await.unwrap();
            receiving
                .get_mut()
                .extend_from_slice(&machine.snapshot().unwrap());
            sm.install_snapshot(&meta, receiving).await.unwrap();
        }
    }
}

/// Child mode: runs the script on the directory the parent named, acknowledging every step.
#[tokio::test]
#[ignore = "child mode of the crash tests below, which run it in a process they SIGKILL"]
async fn store_child() {
    let Some(dir) = crash_child::child_dir() else {
        return;
    };
    let (mut log, mut sm) =
        raft::store::open_with(&dir, ListMachine::default(), &crash_options()).unwrap();
    for (index, step) in script().iter().enumerate() {
        run(step, &mut log, &mut sm).await;
        if !crash_child::acknowledge_and_wait(index) {
            return;
        }
    }
}

/// Reads what a reopened store holds.
async fn observe(dir: &Path) -> Durable {
    let (mut log, mut sm) = raft::store::open(dir, ListMachine::default()).unwrap();
    let state = log.get_log_state().await.unwrap();
    let all = log
        .get_log_reader()
        .await
        .try_get_log_entries(0..)
        .await
        .unwrap();
    let indexes: Vec<u64> = all.iter().map(|e| e.log_id.index).collect();
    assert!(
        indexes.windows(2).all(|w| w[1] == w[0] + 1),
        "a hole in the log: {indexes:?}"
    );
    let purged = state.last_purged_log_id.map(|id| id.index);
    Durable {
        vote: log.read_vote().await.unwrap(),
        last_purged: state.last_purged_log_id,
        last_log_id: state.last_log_id,
        entries: all
            .into_iter()
            .filter(|e| Some(e.log_id.index) > purged)
            .collect(),
        snapshot: sm
            .get_current_snapshot()
            .await
            .unwrap()
            .and_then(|s| s.meta.last_log_id),
        items: sm.machine().read(|m| m.items.clone()).unwrap(),
    }
}

/// Kills a child at every step of the script and checks the reopened store each time.
async fn sweep(kill: KillPoint) {
    let script = script();
    let mut failures = Vec::new();
    for last_acked in 0..script.len() {
        let dir = TempDir::new().unwrap();
        CrashChild::run_to(CHILD_TEST, dir.path(), last_acked, kill)
            .await
            .unwrap();

        let found = observe(dir.path()).await;
        let acked = expected_after(&script[..=last_acked]);
        let next = expected_after(&script[..script.len().min(last_acked + 2)]);
        let ok = match kill {
            KillPoint::AfterAck => found == acked,
            KillPoint::DuringNext => found == acked || found == next,
        };
        if !ok {
            failures.push(format!(
                "killed {kill:?} of step {last_acked} ({}): the reopened store differs from the \
                 acknowledged state: {}",
                script[last_acked].name(),
                found.differences(&acked).join("; ")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn a_sigkill_right_after_any_acknowledged_step_loses_nothing() {
    sweep(KillPoint::AfterAck).await;
}

#[tokio::test]
async fn a_sigkill_during_the_next_step_leaves_the_state_before_or_after_it() {
    sweep(KillPoint::DuringNext).await;
}

#[test]
fn the_model_follows_the_script() {
    let all = expected_after(&script());
    assert_eq!(all.vote, Some(Vote::new_committed(3, 1)));
    assert_eq!(all.last_purged, Some(log_id(3, 12)));
    assert_eq!(all.last_log_id, Some(log_id(3, 14)));
    assert_eq!(all.entries, vec![normal(3, 13), normal(3, 14)]);
    assert_eq!(all.snapshot, Some(log_id(3, 12)));
    let built = expected_after(&script()[..8]);
    assert_eq!(built.snapshot, Some(log_id(2, 7)));
    assert_eq!(built.items.len(), 6, "{:?}", built.items);
}
