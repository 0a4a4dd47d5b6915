//! The journal against a simulated disk: random scripts of appends, votes, committed ids,
//! truncations and purges, with the power cut (or the process killed) at every I/O operation
//! in turn. After each cut the journal is reopened from what the disk kept and must hold
//! exactly the state after the last acknowledged operation, or after the one in flight; with
//! segments of a few hundred bytes, so segments are started and deleted throughout.

use std::collections::BTreeMap;
use std::sync::Arc;

use openraft::{CommittedLeaderId, EntryPayload, Vote};

use super::sim_disk::SimDisk;
use super::{Journal, make_durable, segment_name};
use crate::error::RaftStoreError;
use crate::types::{Command, Entry, LogId, NodeId};

/// Small segments: a script crosses many of them.
const SEGMENT: u64 = 300;

#[derive(Clone, Debug)]
enum Op {
    Append(Vec<Entry>),
    Vote(Vote<NodeId>),
    Committed(Option<LogId>),
    Truncate(u64),
    Purge(LogId),
}

/// What must survive: everything but the committed id (never claimed durable).
#[derive(Clone, Debug, Default, PartialEq)]
struct Model {
    vote: Option<Vote<NodeId>>,
    purged: Option<LogId>,
    entries: BTreeMap<u64, Entry>,
}

impl Model {
    fn apply(&mut self, op: &Op) {
        match op {
            Op::Append(entries) => {
                for e in entries {
                    self.entries.insert(e.log_id.index, e.clone());
                }
            }
            Op::Vote(v) => self.vote = Some(*v),
            Op::Committed(_) => {}
            Op::Truncate(index) => self.entries.retain(|i, _| i < index),
            Op::Purge(id) => {
                self.entries.retain(|i, _| *i > id.index);
                self.purged = Some(*id);
            }
        }
    }
}

/// xorshift64*: the scripts must be the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn log_id(term: u64, index: u64) -> LogId {
    LogId::new(CommittedLeaderId::new(term, 1), index)
}

fn entry(term: u64, index: u64, size: usize) -> Entry {
    Entry {
        log_id: log_id(term, index),
        payload: EntryPayload::Normal(Command(vec![(index % 251) as u8; size])),
    }
}

/// A script openraft could issue: appends continue the log, a truncation starts a new term,
/// purges only go forward.
fn script(seed: u64, len: usize) -> Vec<Op> {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut model = Model::default();
    let mut term = 1;
    let mut ops = Vec::new();
    for _ in 0..len {
        let last = model.entries.keys().next_back().copied();
        let first = model.entries.keys().next().copied();
        let purged = model.purged.map_or(0, |id| id.index);
        let op = match rng.below(10) {
            0..=3 => {
                let start = last.map_or(purged + 1, |l| l + 1);
                let n = 1 + rng.below(4);
                let size = rng.below(120) as usize;
                Op::Append((start..start + n).map(|i| entry(term, i, size)).collect())
            }
            4 => {
                term += 1;
                Op::Vote(Vote::new_committed(term, 1))
            }
            5 | 6 => Op::Committed(last.map(|l| log_id(term, l))),
            7 => match (first, last) {
                (Some(first), Some(last)) => {
                    term += 1;
                    Op::Truncate(first + rng.below(last - first + 1))
                }
                _ => Op::Committed(None),
            },
            _ => match last {
                Some(last) => {
                    let upto = purged + 1 + rng.below(last - purged);
                    let t = model
                        .entries
                        .get(&upto)
                        .map_or(term, |e| e.log_id.leader_id.term);
                    Op::Purge(log_id(t, upto))
                }
                None => Op::Committed(None),
            },
        };
        model.apply(&op);
        ops.push(op);
    }
    ops
}

async fn run(journal: &mut Journal, op: &Op) -> Result<(), RaftStoreError> {
    match op {
        Op::Append(entries) => {
            let file = journal.append(entries.clone())?;
            make_durable(file).await
        }
        Op::Vote(v) => journal.save_vote(*v).await,
        Op::Committed(c) => journal.save_committed(*c),
        Op::Truncate(index) => journal.truncate(*index).await,
        Op::Purge(id) => journal.purge(*id).await,
    }
}

fn observe(journal: &Journal) -> Model {
    Model {
        vote: journal.checkpoint().vote,
        purged: journal.checkpoint().purged,
        entries: super::read(&journal.entries).clone(),
    }
}

/// Runs `ops` on a disk that loses power at operation `cut`; returns what was acknowledged and
/// what the operation in flight would have made (the same if none was in flight).
async fn run_until_cut(disk: &SimDisk, ops: &[Op]) -> (Model, Model) {
    let mut acked = Model::default();
    let Ok(mut journal) = Journal::open_on(Arc::new(disk.clone()), SEGMENT) else {
        return (acked.clone(), acked);
    };
    for op in ops {
        let mut next = acked.clone();
        next.apply(op);
        if run(&mut journal, op).await.is_err() {
            return (acked, next);
        }
        acked = next;
    }
    (acked.clone(), acked)
}

/// Reopens `image` and checks it holds `acked` or `in_flight`, then that it takes a new entry.
async fn check_reopened(image: SimDisk, acked: &Model, in_flight: &Model, what: &str) {
    let mut journal = match Journal::open_on(Arc::new(image.clone()), SEGMENT) {
        Ok(j) => j,
        Err(e) => panic!("{what}: the journal does not reopen: {e}"),
    };
    let found = observe(&journal);
    assert!(
        found == *acked || found == *in_flight,
        "{what}: reopened {found:?}\nacknowledged {acked:?}\nin flight {in_flight:?}"
    );
    let next = found.entries.keys().next_back().map_or_else(
        || found.purged.map_or(1, |id| id.index + 1),
        |last| last + 1,
    );
    let file = journal.append(vec![entry(99, next, 10)]).unwrap();
    make_durable(file).await.unwrap();
    drop(journal);
    let again = Journal::open_on(Arc::new(image), SEGMENT).unwrap();
    let mut expected = found;
    expected.entries.insert(next, entry(99, next, 10));
    assert_eq!(observe(&again), expected, "{what}: after one more append");
}

#[tokio::test]
async fn a_power_cut_or_a_kill_at_any_io_operation_loses_nothing_acknowledged() {
    for seed in 0..6 {
        let ops = script(seed, 40);
        let total = {
            let disk = SimDisk::default();
            run_until_cut(&disk, &ops).await;
            disk.operations()
        };
        assert!(total > 100, "seed {seed}: only {total} I/O operations");
        for cut in 0..=total {
            let disk = SimDisk::failing_after(cut);
            let (acked, in_flight) = run_until_cut(&disk, &ops).await;
            let what = format!("seed {seed}, power cut at I/O operation {cut}");
            // Writes cut short: nothing of them, half of them, all of them landed.
            for (label, torn) in [
                ("nothing unsynced kept", 0_usize),
                ("half kept", 1),
                ("all kept", 2),
            ] {
                let image = disk.after_power_cut(|_, unsynced| unsynced * torn / 2);
                check_reopened(image, &acked, &in_flight, &format!("{what} ({label})")).await;
            }
            let killed = format!("seed {seed}, SIGKILL at I/O operation {cut}");
            check_reopened(disk.after_kill(), &acked, &in_flight, &killed).await;
        }
    }
}

#[tokio::test]
async fn purged_segments_are_deleted_and_a_truncated_tail_never_comes_back() {
    let disk = SimDisk::default();
    let mut journal = Journal::open_on(Arc::new(disk.clone()), SEGMENT).unwrap();
    for i in 1..=12 {
        let file = journal.append(vec![entry(1, i, 60)]).unwrap();
        make_durable(file).await.unwrap();
    }
    let segments = journal.segments.len();
    assert!(segments >= 3, "{segments} segments");
    // The truncation lands in a later segment than most of the entries it removes.
    journal.truncate(5).await.unwrap();
    for i in 5..=6 {
        let file = journal.append(vec![entry(2, i, 60)]).unwrap();
        make_durable(file).await.unwrap();
    }
    let listed = |disk: &SimDisk| {
        use super::disk::Disk;
        disk.list().unwrap()
    };
    journal.purge(log_id(1, 3)).await.unwrap();
    assert!(
        journal.segments[0].live_max >= Some(4),
        "only segments of purged entries are deleted"
    );
    let ids = |journal: &Journal| -> Vec<String> {
        observe(journal)
            .entries
            .values()
            .map(|e| e.log_id.to_string())
            .collect()
    };
    let reopened = Journal::open_on(Arc::new(disk.after_power_cut(|_, _| 0)), SEGMENT).unwrap();
    assert_eq!(ids(&reopened), ["T1-N1-4", "T2-N1-5", "T2-N1-6"]);
    journal.purge(log_id(1, 4)).await.unwrap();
    let names = listed(&disk);
    assert!(names.len() < segments, "{names:?}");
    drop(journal);
    let reopened = Journal::open_on(Arc::new(disk), SEGMENT).unwrap();
    assert_eq!(ids(&reopened), ["T2-N1-5", "T2-N1-6"]);
    assert_eq!(reopened.checkpoint().purged, Some(log_id(1, 4)));
}

#[tokio::test]
async fn damage_before_the_newest_segment_is_refused() {
    let disk = SimDisk::default();
    let mut journal = Journal::open_on(Arc::new(disk.clone()), SEGMENT).unwrap();
    for i in 1..=12 {
        let file = journal.append(vec![entry(1, i, 60)]).unwrap();
        make_durable(file).await.unwrap();
    }
    drop(journal);
    let first = segment_name(1);
    let damaged = {
        use super::disk::Disk;
        let mut bytes = disk.read(&first).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x10;
        let image = disk.after_kill();
        let file = image.open(&first, false).unwrap();
        file.write_at(0, &bytes).unwrap();
        image
    };
    let err = Journal::open_on(Arc::new(damaged), SEGMENT)
        .err()
        .expect("a damaged older segment is refused");
    assert!(err.to_string().contains(&first), "{err}");
}

#[tokio::test]
async fn a_segment_of_an_unknown_format_is_refused() {
    use super::disk::Disk;
    use super::record::{Checkpoint, Record, frame};
    let disk = SimDisk::default();
    let mut bytes = Vec::new();
    let header = Record::Header {
        format: super::JOURNAL_FORMAT + 1,
        segment: 1,
        checkpoint: Checkpoint::default(),
    };
    frame(&header, &mut bytes).unwrap();
    let file = disk.open(&segment_name(1), true).unwrap();
    file.write_at(0, &bytes).unwrap();
    let err = Journal::open_on(Arc::new(disk), SEGMENT)
        .err()
        .expect("an unknown format is refused");
    assert!(
        matches!(
            err,
            RaftStoreError::UnknownFormat {
                found: 2,
                supported: 1,
                ..
            }
        ),
        "{err}"
    );
}
