//! The store after a clean close and reopen: it keeps what openraft relies on, replaces (never
//! merges) the machine on snapshot install, refuses data in an unknown on-disk format, and
//! moves the sled log of an earlier build to the journal.
//!
//! These are not crash tests: dropping the store flushes sled, so they pass with every explicit
//! flush removed. Durability across a SIGKILL is checked by `store_durability.rs`, across a
//! power cut by the journal's own tests (`raft/src/store/journal/tests.rs`).

// Only built as a test; lets helpers panic like tests do (clippy `allow-unwrap-in-tests`).
#![cfg(test)]

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use common::ListMachine;
use openraft::storage::{RaftLogStorage, RaftLogStorageExt, RaftStateMachine, StorageHelper};
use openraft::{
    CommittedLeaderId, EntryPayload, Membership, RaftLogReader, RaftSnapshotBuilder, Vote,
};
use raft::store::{LogStore, StateMachineStore};
use raft::types::{Entry, LogId};
use raft::{Command, MemberNode, NodeId, RaftStoreError};
use tempfile::TempDir;

fn log_id(term: u64, index: u64) -> LogId {
    LogId::new(CommittedLeaderId::new(term, 1), index)
}

fn normal(term: u64, index: u64) -> Entry {
    Entry {
        log_id: log_id(term, index),
        payload: EntryPayload::Normal(Command(format!("cmd-{index}").into_bytes())),
    }
}

fn membership(term: u64, index: u64) -> Entry {
    let nodes: BTreeMap<u64, MemberNode> = [(
        1,
        MemberNode {
            addr: "127.0.0.1:1".into(),
        },
    )]
    .into();
    Entry {
        log_id: log_id(term, index),
        payload: EntryPayload::Membership(Membership::new(vec![BTreeSet::from([1])], nodes)),
    }
}

fn open(dir: &Path) -> (LogStore, StateMachineStore<ListMachine>) {
    when_unlocked(|| raft::store::open(dir, ListMachine::default())).unwrap()
}

/// Runs `open` again while it fails on sled's file lock, for at most 10 s. sled releases the
/// lock when its last background task lets go of the file, which can be a moment after the
/// `Db` was dropped; the coordinator waits the same way (`open_store`).
fn when_unlocked<T, E: std::fmt::Display>(mut open: impl FnMut() -> Result<T, E>) -> Result<T, E> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match open() {
            Err(e)
                if e.to_string().contains("could not acquire lock")
                    && Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            result => return result,
        }
    }
}

fn items(sm: &StateMachineStore<ListMachine>) -> Vec<(u64, Vec<u8>)> {
    sm.machine().read(|m| m.items.clone()).unwrap()
}

fn expected_items(indexes: std::ops::RangeInclusive<u64>) -> Vec<(u64, Vec<u8>)> {
    indexes
        .map(|i| (i, format!("cmd-{i}").into_bytes()))
        .collect()
}

#[tokio::test]
async fn a_clean_reopen_keeps_vote_logs_purge_point_snapshot_and_reapplies_committed() {
    let dir = TempDir::new().unwrap();
    let vote = Vote::new_committed(3, 1);
    let snapshot_meta = {
        let (mut log, mut sm) = open(dir.path());
        log.save_vote(&vote).await.unwrap();
        let mut entries = vec![membership(1, 1)];
        entries.extend((2..=10).map(|i| normal(2, i)));
        log.blocking_append(entries.clone()).await.unwrap();
        sm.apply(entries[..6].to_vec()).await.unwrap();
        let snapshot = sm
            .get_snapshot_builder()
            .await
            .build_snapshot()
            .await
            .unwrap();
        assert_eq!(snapshot.meta.last_log_id, Some(log_id(2, 6)));
        log.purge(log_id(2, 3)).await.unwrap();
        log.save_committed(Some(log_id(2, 8))).await.unwrap();
        // Applied past the snapshot but only in memory: that part must come from the log.
        sm.apply(entries[6..7].to_vec()).await.unwrap();
        snapshot.meta
    };

    let (mut log, mut sm) = open(dir.path());
    assert_eq!(log.read_vote().await.unwrap(), Some(vote));
    let state = log.get_log_state().await.unwrap();
    assert_eq!(state.last_purged_log_id, Some(log_id(2, 3)));
    assert_eq!(state.last_log_id, Some(log_id(2, 10)));
    let kept = log.try_get_log_entries(0..).await.unwrap();
    let kept_ids: Vec<u64> = kept.iter().map(|e| e.log_id.index).collect();
    assert_eq!(kept_ids, (4..=10).collect::<Vec<_>>());
    assert_eq!(log.read_committed().await.unwrap(), Some(log_id(2, 8)));

    let current = sm.get_current_snapshot().await.unwrap().unwrap();
    assert_eq!(current.meta, snapshot_meta);
    let (applied, stored_membership) = sm.applied_state().await.unwrap();
    assert_eq!(
        applied,
        Some(log_id(2, 6)),
        "the machine stands at the snapshot"
    );
    assert_eq!(stored_membership.log_id(), &Some(log_id(1, 1)));
    assert_eq!(items(&sm), expected_items(2..=6));

    // openraft's start-up re-applies the committed entries after the snapshot.
    StorageHelper::new(&mut log, &mut sm)
        .get_initial_state()
        .await
        .unwrap();
    assert_eq!(sm.applied_state().await.unwrap().0, Some(log_id(2, 8)));
    assert_eq!(items(&sm), expected_items(2..=8));
    assert_eq!(sm.machine().last_applied().unwrap(), Some(log_id(2, 8)));
}

#[tokio::test]
async fn installing_a_snapshot_replaces_the_machine_and_survives_a_clean_reopen() {
    let leader_dir = TempDir::new().unwrap();
    let (_leader_log, mut leader_sm) = open(leader_dir.path());
    leader_sm
        .apply(vec![membership(1, 1), normal(1, 2), normal(1, 3)])
        .await
        .unwrap();
    let snapshot = leader_sm
        .get_snapshot_builder()
        .await
        .build_snapshot()
        .await
        .unwrap();

    let dir = TempDir::new().unwrap();
    {
        let (_log, mut sm) = open(dir.path());
        sm.apply((1..=5).map(|i| normal(1, i)).collect::<Vec<_>>())
            .await
            .unwrap();
        let old = sm
            .get_snapshot_builder()
            .await
            .build_snapshot()
            .await
            .unwrap();
        assert_eq!(old.meta.last_log_id, Some(log_id(1, 5)));
        assert_eq!(items(&sm), expected_items(1..=5));

        let mut receiving = sm.begin_receiving_snapshot().await.unwrap();
        *receiving = *snapshot.snapshot.clone();
        sm.install_snapshot(&snapshot.meta, receiving)
            .await
            .unwrap();

        assert_eq!(
            items(&sm),
            expected_items(2..=3),
            "nothing of the old state survives"
        );
        let current = sm.get_current_snapshot().await.unwrap().unwrap();
        assert_eq!(current.meta, snapshot.meta);
        assert_eq!(
            current.snapshot.into_inner(),
            snapshot.snapshot.get_ref().clone()
        );
        assert_eq!(sm.applied_state().await.unwrap().0, Some(log_id(1, 3)));
    }

    let (_log, mut sm) = open(dir.path());
    assert_eq!(items(&sm), expected_items(2..=3));
    assert_eq!(
        sm.get_current_snapshot().await.unwrap().unwrap().meta,
        snapshot.meta
    );
}

#[tokio::test]
async fn a_built_snapshot_never_replaces_a_newer_installed_one() {
    let leader_dir = TempDir::new().unwrap();
    let (_leader_log, mut leader_sm) = open(leader_dir.path());
    leader_sm
        .apply((1..=9).map(|i| normal(1, i)).collect::<Vec<_>>())
        .await
        .unwrap();
    let newer = leader_sm
        .get_snapshot_builder()
        .await
        .build_snapshot()
        .await
        .unwrap();

    let dir = TempDir::new().unwrap();
    let (_log, mut sm) = open(dir.path());
    sm.apply(vec![normal(1, 1)]).await.unwrap();
    // A build that started before the install finishes after it.
    let mut late_builder = sm.get_snapshot_builder().await;
    let mut receiving = sm.begin_receiving_snapshot().await.unwrap();
    *receiving = *newer.snapshot.clone();
    sm.install_snapshot(&newer.meta, receiving).await.unwrap();
    let built = late_builder.build_snapshot().await.unwrap();
    assert_eq!(
        built.meta.last_log_id,
        Some(log_id(1, 9)),
        "the builder reads the state at build time"
    );
    let current = sm.get_current_snapshot().await.unwrap().unwrap();
    assert!(current.meta.last_log_id >= newer.meta.last_log_id);
}

/// A value as the sled log of earlier builds stored it: format version 1, then bincode.
fn legacy_value<T: serde::Serialize>(value: &T) -> Vec<u8> {
    let mut out = vec![1];
    out.extend(bincode::serde::encode_to_vec(value, bincode::config::standard()).unwrap());
    out
}

#[tokio::test]
async fn the_sled_log_of_an_earlier_build_moves_to_the_journal_once() {
    let dir = TempDir::new().unwrap();
    {
        let db = sled::open(dir.path()).unwrap();
        let logs = db.open_tree("logs").unwrap();
        let meta = db.open_tree("meta").unwrap();
        meta.insert("vote", legacy_value(&Vote::<NodeId>::new_committed(3, 1)))
            .unwrap();
        meta.insert("last_purged", legacy_value(&log_id(1, 2)))
            .unwrap();
        meta.insert("committed", legacy_value(&Some(log_id(2, 4))))
            .unwrap();
        for i in 1..=5_u64 {
            logs.insert(
                i.to_be_bytes(),
                legacy_value(&normal(if i > 3 { 2 } else { 1 }, i)),
            )
            .unwrap();
        }
        db.flush().unwrap();
    }
    for pass in ["the move", "a reopen after it"] {
        let (mut log, _sm) =
            when_unlocked(|| raft::store::open(dir.path(), ListMachine::default()))
                .unwrap_or_else(|e| panic!("{pass}: {e}"));
        assert_eq!(
            log.read_vote().await.unwrap(),
            Some(Vote::new_committed(3, 1)),
            "{pass}"
        );
        assert_eq!(
            log.read_committed().await.unwrap(),
            Some(log_id(2, 4)),
            "{pass}"
        );
        let state = log.get_log_state().await.unwrap();
        assert_eq!(state.last_purged_log_id, Some(log_id(1, 2)), "{pass}");
        assert_eq!(state.last_log_id, Some(log_id(2, 5)), "{pass}");
        let entries = log.try_get_log_entries(0..).await.unwrap();
        let ids: Vec<u64> = entries.iter().map(|e| e.log_id.index).collect();
        assert_eq!(ids, [3, 4, 5], "{pass}: the entries after the purge point");
        // New writes go to the journal and survive a reopen.
        log.save_vote(&Vote::new_committed(4, 1)).await.unwrap();
        log.save_vote(&Vote::new_committed(3, 1)).await.unwrap();
    }
    // The sled log is emptied, and `meta/vote` holds a value no build of the sled log reads,
    // so an older build refuses the directory instead of starting without its vote.
    let db = when_unlocked(|| sled::open(dir.path())).unwrap();
    assert!(db.open_tree("logs").unwrap().is_empty());
    let meta = db.open_tree("meta").unwrap();
    assert_eq!(meta.get("vote").unwrap().as_deref(), Some(&[0xfe][..]));
    assert!(meta.get("committed").unwrap().is_none());
    assert!(meta.get("last_purged").unwrap().is_none());
    assert!(dir.path().join("journal").is_dir());
}

#[tokio::test]
async fn a_moved_log_whose_journal_is_gone_is_refused() {
    let dir = TempDir::new().unwrap();
    {
        let (mut log, _sm) = open(dir.path());
        log.save_vote(&Vote::new(1, 1)).await.unwrap();
    }
    std::fs::remove_dir_all(dir.path().join("journal")).unwrap();
    let err = when_unlocked(|| raft::store::open(dir.path(), ListMachine::default()))
        .err()
        .unwrap();
    assert!(err.to_string().contains("which is missing"), "{err}");
}

#[tokio::test]
async fn an_unknown_snapshot_format_is_refused_at_open() {
    let dir = TempDir::new().unwrap();
    {
        let (_log, mut sm) = open(dir.path());
        sm.apply(vec![normal(1, 1)]).await.unwrap();
        sm.get_snapshot_builder()
            .await
            .build_snapshot()
            .await
            .unwrap();
    }
    {
        let db = when_unlocked(|| sled::open(dir.path())).unwrap();
        let tree = db.open_tree("sm").unwrap();
        let keys: Vec<_> = tree.iter().keys().map(|k| k.unwrap()).collect();
        let data_key = keys.iter().find(|k| k.ends_with(b"/data")).unwrap();
        let mut value = tree.get(data_key).unwrap().unwrap().to_vec();
        value[0] = 2;
        tree.insert(data_key, value).unwrap();
        db.flush().unwrap();
    }
    let err = when_unlocked(|| raft::store::open(dir.path(), ListMachine::default()))
        .err()
        .unwrap();
    assert!(
        matches!(err, RaftStoreError::UnknownFormat { found: 2, .. }),
        "{err}"
    );
}
