//! Group commit on the leader: concurrent writes share one Raft entry.
//!
//! openraft 0.9 appends, and waits for the flush of, one entry per `client_write` on the
//! leader before it replicates that entry (docs/design/raft-log.md §1): 64 clients' writes made
//! 64 appends in a row, each a `fdatasync`, an AppendEntries round and an apply pass. Here a
//! write that arrives while [`MAX_IN_FLIGHT`] entries are already on their way waits in a
//! queue, and everything that waited goes together as one [`Command::Batch`] of one-command
//! chains: one append, one flush, one replication round for all of them. A write that finds
//! the queue idle goes at once, so a lone client waits for nothing but its own entry.
//!
//! What each write keeps: a chain of one command is applied exactly as an entry of its own
//! would be (refused alone; remembered under its request id by [`Command::Once`], a retry
//! answered from that memory), and no caller gets its reply before the shared entry is
//! committed (durable on a majority) and applied. Writes go into a group only when they are
//! at the same cluster version and small ([`MAX_GROUP_WRITE_BYTES`]); batches (the
//! reconciler's, already grouped) and whole fleet files go alone.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use protocol::version::{BATCHES, Version};
use tokio::sync::oneshot;
use transport::RemoteError;

use super::errors::write_error;
use fleet::state::{Command, CommandReply, decode_reply, encode_command};

/// Entries of grouped writes on their way at once. Two keeps the leader appending one while
/// the other replicates; more only splits the queue into smaller groups.
pub(crate) const MAX_IN_FLIGHT: usize = 2;
/// Writes in one group at most.
pub(crate) const MAX_GROUP: usize = 512;
/// Encoded bytes of one group at most (well under a Raft message's size).
pub(crate) const MAX_GROUP_BYTES: usize = 1 << 20;
/// A write larger than this goes alone.
pub(crate) const MAX_GROUP_WRITE_BYTES: usize = 64 << 10;

/// What the state machine answered (a refusal included), or why nothing is known.
pub(crate) type Written = Result<CommandReply, RemoteError>;

/// Commits one encoded command through Raft and returns the encoded reply: the leader's
/// `client_write`, or a stand-in in tests.
pub(crate) trait Commit: Clone + Send + Sync + 'static {
    /// Proposes `bytes` and waits until the entry is committed and applied.
    fn commit(&self, bytes: Vec<u8>) -> impl Future<Output = Result<Vec<u8>, RemoteError>> + Send;
}

impl Commit for raft::types::Raft {
    async fn commit(&self, bytes: Vec<u8>) -> Result<Vec<u8>, RemoteError> {
        self.client_write(raft::Command(bytes))
            .await
            .map(|written| written.data.0)
            .map_err(write_error)
    }
}

/// The leader's write queue (one per member; idle while it follows).
pub(crate) struct GroupCommit<C> {
    committer: C,
    queue: Arc<Mutex<Queue>>,
}

#[derive(Default)]
struct Queue {
    waiting: VecDeque<Pending>,
    /// Drain tasks running (each has one entry on its way at a time).
    in_flight: usize,
}

struct Pending {
    command: Command,
    bytes: Vec<u8>,
    cluster: Version,
    reply: oneshot::Sender<Written>,
}

impl<C: Commit> GroupCommit<C> {
    /// A queue committing through `committer`.
    pub(crate) fn new(committer: C) -> GroupCommit<C> {
        GroupCommit {
            committer,
            queue: Arc::default(),
        }
    }

    /// Commits `command`, already encoded as `bytes` at `cluster`, alone or in a group, and
    /// returns the state machine's reply to it.
    pub(crate) async fn write(
        &self,
        command: Command,
        bytes: Vec<u8>,
        cluster: Version,
    ) -> Written {
        if !groupable(&command, bytes.len(), cluster) {
            return commit_one(&self.committer, bytes).await;
        }
        let (reply, replied) = oneshot::channel();
        let start = {
            let mut queue = lock(&self.queue);
            queue.waiting.push_back(Pending {
                command,
                bytes,
                cluster,
                reply,
            });
            let start = queue.in_flight < MAX_IN_FLIGHT;
            if start {
                queue.in_flight += 1;
            }
            start
        };
        if start {
            tokio::spawn(drain(self.committer.clone(), Arc::clone(&self.queue)));
        }
        replied.await.unwrap_or_else(|_| {
            Err(RemoteError::unavailable(
                "the write was dropped before it was committed (the coordinator is stopping); \
                 the request may or may not have been applied: check before retrying",
            ))
        })
    }
}

/// Whether a write may share an entry: small, not a batch itself, at a version that reads
/// batches.
fn groupable(command: &Command, len: usize, cluster: Version) -> bool {
    cluster >= BATCHES && len <= MAX_GROUP_WRITE_BYTES && !nests(command)
}

/// Batches do not nest, and a whole fleet file is an entry's worth on its own.
fn nests(command: &Command) -> bool {
    match command {
        Command::Batch { .. } | Command::ApplyFleet { .. } => true,
        Command::Once { command, .. } => nests(command),
        _ => false,
    }
}

/// Commits groups from the queue, one entry at a time, until it is empty.
async fn drain<C: Commit>(committer: C, queue: Arc<Mutex<Queue>>) {
    loop {
        let group = {
            let mut queue = lock(&queue);
            let group = take_group(&mut queue.waiting);
            if group.is_empty() {
                queue.in_flight -= 1;
                return;
            }
            group
        };
        commit_group(&committer, group).await;
    }
}

/// The writes at the head of the queue that fit in one entry (at least one): same cluster
/// version, at most [`MAX_GROUP`] writes and [`MAX_GROUP_BYTES`].
fn take_group(waiting: &mut VecDeque<Pending>) -> Vec<Pending> {
    let mut group: Vec<Pending> = Vec::new();
    let mut bytes = 0;
    while let Some(next) = waiting.front() {
        let fits = group.first().is_none_or(|first| {
            first.cluster == next.cluster
                && group.len() < MAX_GROUP
                && bytes + next.bytes.len() <= MAX_GROUP_BYTES
        });
        if !fits {
            break;
        }
        bytes += next.bytes.len();
        if let Some(next) = waiting.pop_front() {
            group.push(next);
        }
    }
    group
}

/// One write as its own entry.
async fn commit_one<C: Commit>(committer: &C, bytes: Vec<u8>) -> Written {
    let reply = committer.commit(bytes).await?;
    decode_reply(&reply).map_err(|e| RemoteError::internal(format!("decode reply: {e}")))
}

/// Commits `group` (one write as itself, several as a batch of one-command chains) and
/// answers each write's caller with its own reply.
async fn commit_group<C: Commit>(committer: &C, mut group: Vec<Pending>) {
    if group.len() == 1 {
        if let Some(one) = group.pop() {
            let written = commit_one(committer, one.bytes).await;
            // The caller may have gone (its client hung up); the write stands.
            let _ = one.reply.send(written);
        }
        return;
    }
    let cluster = group.first().map_or(BATCHES, |p| p.cluster);
    let (chains, replies): (Vec<Vec<Command>>, Vec<oneshot::Sender<Written>>) = group
        .into_iter()
        .map(|p| (vec![p.command], p.reply))
        .unzip();
    let count = chains.len();
    let written = match encode_command(&Command::Batch { chains }, cluster) {
        Ok(bytes) => commit_one(committer, bytes).await,
        Err(e) => Err(RemoteError::internal(format!(
            "encode a group of writes: {e}"
        ))),
    };
    for (reply, written) in replies.into_iter().zip(split(written, count)) {
        let _ = reply.send(written);
    }
}

/// The reply of each of a group's `count` writes, in order, from the group's reply.
fn split(written: Written, count: usize) -> Vec<Written> {
    match written {
        Ok(CommandReply::Batch(chains)) if chains.len() == count => chains
            .into_iter()
            .map(|chain| {
                chain.into_iter().next().ok_or_else(|| {
                    RemoteError::internal("a group's reply has an empty chain".to_string())
                })
            })
            .collect(),
        Ok(CommandReply::Batch(chains)) => {
            let e = RemoteError::internal(format!(
                "a group of {count} writes was answered with {} replies",
                chains.len()
            ));
            vec![Err(e); count]
        }
        // The entry as a whole was refused (a replayed index) or its fate is unknown (no
        // longer leader, Raft stopped): the same for every write in it.
        Ok(other) => vec![Ok(other); count],
        Err(e) => vec![Err(e); count],
    }
}

/// The queue, even if a holder panicked (it holds no invariant a panic could break halfway).
fn lock(queue: &Mutex<Queue>) -> MutexGuard<'_, Queue> {
    queue.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
#[path = "group_commit_tests.rs"]
mod tests;
