//! The executor journal: makes every coordinator command run at most once across crashes and
//! restarts, and answers a repeated command id with the stored result (docs/design/architecture.md, safety rule 4).
//!
//! # Contract for callers
//!
//! 1. Call [`Journal::begin`] with the command id and a fingerprint of the command before doing
//!    anything. The "started" mark is on disk before `begin` returns, so a crash after that
//!    point can never lead to a silent second run.
//! 2. On [`Begin::Run`], execute, then record the outcome (success or failure, encoded by the
//!    caller) with [`Journal::finish`]; answer only after `finish` returned (it is durable).
//!    If execution is abandoned without an outcome, call [`Journal::abandon`]: the id becomes
//!    in doubt.
//! 3. On [`Begin::Done`], answer the stored result again; do not execute.
//! 4. On [`Begin::InProgress`], the same id is being executed or reconciled right now by this
//!    agent: do not execute; ask again later.
//! 5. On [`Begin::InDoubt`], an earlier run started but never recorded a result (the agent
//!    crashed or the run was abandoned): the effect may or may not have happened. The caller
//!    must NOT blindly re-run: it observes the host (does the VM, task or config exist?) and
//!    either records the observed outcome with [`Journal::resolve_in_doubt`], or, having seen
//!    that nothing happened, re-executes and records with [`Journal::finish`]. Only one caller
//!    gets `InDoubt` for an id at a time (the others get `InProgress`) until it resolves or
//!    abandons.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::error::JournalError;
use crate::record::{Record, State};

/// Longest accepted command id, in bytes.
pub const MAX_COMMAND_ID_LEN: usize = 128;

const COMMANDS_TREE: &str = "commands";

/// What the caller must do with a command id (see the module's contract).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Begin<T = Vec<u8>> {
    /// First time this id is seen: execute it, then [`Journal::finish`].
    Run,
    /// Executed before: answer this stored result again.
    Done(T),
    /// Being executed or reconciled right now by this agent: do not execute, ask again later.
    InProgress,
    /// Started before without a result: observe the host, then resolve (never re-run blindly).
    InDoubt,
}

/// The on-disk command journal; cheap to clone, all clones share one store.
#[derive(Debug, Clone)]
pub struct Journal {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    db: sled::Db,
    commands: sled::Tree,
    /// Ids executed or reconciled by this process right now. Serialises every state change,
    /// so "started on disk" and "claimed in memory" are decided together.
    active: Mutex<HashSet<String>>,
    /// sled 0.34's `flush_async` hung here when many tasks flushed at once: one at a time.
    flushing: tokio::sync::Mutex<()>,
}

impl Journal {
    /// sled 0.34's own background-flush period, named here so the journal does not silently
    /// follow a change of sled's default.
    pub const DEFAULT_PERIODIC_FLUSH: Option<Duration> = Some(Duration::from_millis(500));

    /// Opens (or creates) the journal stored in `dir`. Blocking: call it at start-up, or from
    /// `spawn_blocking`. Every entry found "started" is in doubt from now on.
    pub fn open(dir: impl AsRef<Path>) -> Result<Journal, JournalError> {
        Journal::open_with_periodic_flush(dir, Journal::DEFAULT_PERIODIC_FLUSH)
    }

    /// [`Journal::open`] with sled's background flusher running every `periodic_flush`
    /// (`None`: never).
    ///
    /// Durability never depends on it: `begin`, `finish`, `resolve_in_doubt` and `prune` flush
    /// explicitly before they return. Crash tests turn it off so that a missing explicit flush
    /// cannot be hidden by a background one that happened to run before the kill.
    pub fn open_with_periodic_flush(
        dir: impl AsRef<Path>,
        periodic_flush: Option<Duration>,
    ) -> Result<Journal, JournalError> {
        // sled takes whole milliseconds; a sub-millisecond period becomes 1 ms, not "never".
        let every_ms = periodic_flush
            .map(|period| u64::try_from(period.as_millis()).unwrap_or(u64::MAX).max(1));
        let db = sled::Config::new()
            .path(dir.as_ref())
            .flush_every_ms(every_ms)
            .open()?;
        let commands = db.open_tree(COMMANDS_TREE)?;
        Ok(Journal {
            inner: Arc::new(Inner {
                db,
                commands,
                active: Mutex::new(HashSet::new()),
                flushing: tokio::sync::Mutex::new(()),
            }),
        })
    }

    /// Records that command `id` with `fingerprint` starts, unless the id is known; see [`Begin`].
    /// Durable before it returns. Fails with [`JournalError::Conflict`] when the id was used
    /// for a command with another fingerprint.
    pub async fn begin(&self, id: &str, fingerprint: &[u8]) -> Result<Begin, JournalError> {
        validate_id(id)?;
        let outcome = {
            let mut active = self.lock_active();
            match self.load(id)? {
                None => {
                    let record = Record {
                        fingerprint: fingerprint.to_vec(),
                        state: State::Started,
                    };
                    self.inner.commands.insert(id, record.encode())?;
                    active.insert(id.to_owned());
                    Begin::Run
                }
                Some(record) if record.fingerprint != fingerprint => {
                    return Err(JournalError::Conflict { id: id.to_owned() });
                }
                Some(Record {
                    state: State::Done { result, .. },
                    ..
                }) => Begin::Done(result),
                Some(Record {
                    state: State::Started,
                    ..
                }) => {
                    if active.insert(id.to_owned()) {
                        Begin::InDoubt
                    } else {
                        Begin::InProgress
                    }
                }
            }
        };
        // Also when answering Done: the result may have been written by a `finish` that has
        // not flushed yet, and nothing is answered before it is durable.
        self.flush().await?;
        Ok(outcome)
    }

    /// Stores the result of a command that [`Journal::begin`] let run; durable before it
    /// returns. Repeating it with the same result is a no-op; a different result is refused.
    pub async fn finish(&self, id: &str, result: &[u8]) -> Result<(), JournalError> {
        self.complete(id, result).await
    }

    /// Stores the result the caller established by observing the host for an id that
    /// [`Journal::begin`] reported [`Begin::InDoubt`]. Same rules as [`Journal::finish`].
    pub async fn resolve_in_doubt(&self, id: &str, result: &[u8]) -> Result<(), JournalError> {
        tracing::info!(command_id = id, "in-doubt command resolved by observation");
        self.complete(id, result).await
    }

    /// Gives up this process's claim on `id` without a result (execution failed to produce
    /// an outcome, or reconciliation could not decide). The next `begin` reports it in doubt.
    pub fn abandon(&self, id: &str) {
        self.lock_active().remove(id);
    }

    /// Deletes all but the `keep_last` most recently finished entries. Started entries (in
    /// progress or in doubt) are never deleted. Returns how many entries were deleted.
    pub async fn prune(&self, keep_last: usize) -> Result<usize, JournalError> {
        let removed = {
            let _active = self.lock_active();
            let mut finished = Vec::new();
            for entry in self.inner.commands.iter() {
                let (key, value) = entry?;
                let id = String::from_utf8_lossy(&key);
                if let State::Done { seq, .. } = Record::decode(&id, &value)?.state {
                    finished.push((seq, key));
                }
            }
            finished.sort_unstable_by_key(|(seq, _)| std::cmp::Reverse(*seq));
            let stale = finished.split_off(keep_last.min(finished.len()));
            let mut batch = sled::Batch::default();
            for (_, key) in &stale {
                batch.remove(key.clone());
            }
            self.inner.commands.apply_batch(batch)?;
            stale.len()
        };
        self.flush().await?;
        Ok(removed)
    }

    /// Number of entries stored (started and finished).
    pub fn len(&self) -> usize {
        self.inner.commands.len()
    }

    /// Whether the journal holds no entry.
    pub fn is_empty(&self) -> bool {
        self.inner.commands.is_empty()
    }

    async fn complete(&self, id: &str, result: &[u8]) -> Result<(), JournalError> {
        validate_id(id)?;
        {
            let mut active = self.lock_active();
            let record = self
                .load(id)?
                .ok_or_else(|| JournalError::NotStarted { id: id.to_owned() })?;
            match record.state {
                State::Done { result: stored, .. } if stored == result => {}
                State::Done { .. } => {
                    return Err(JournalError::ResultMismatch { id: id.to_owned() });
                }
                State::Started => {
                    let done = Record {
                        fingerprint: record.fingerprint,
                        state: State::Done {
                            seq: self.inner.db.generate_id()?,
                            result: result.to_vec(),
                        },
                    };
                    self.inner.commands.insert(id, done.encode())?;
                }
            }
            active.remove(id);
        }
        self.flush().await
    }

    fn load(&self, id: &str) -> Result<Option<Record>, JournalError> {
        self.inner
            .commands
            .get(id)?
            .map(|value| Record::decode(id, &value))
            .transpose()
    }

    async fn flush(&self) -> Result<(), JournalError> {
        let _one_at_a_time = self.inner.flushing.lock().await;
        self.inner.db.flush_async().await?;
        Ok(())
    }

    fn lock_active(&self) -> MutexGuard<'_, HashSet<String>> {
        // The set only mirrors claims; a panic while holding it cannot leave it half-updated.
        self.inner
            .active
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    #[cfg(test)]
    pub(crate) fn raw_insert(&self, id: &str, value: &[u8]) {
        self.inner.commands.insert(id, value).unwrap();
    }
}

fn validate_id(id: &str) -> Result<(), JournalError> {
    let reason = if id.is_empty() {
        "empty"
    } else if id.len() > MAX_COMMAND_ID_LEN {
        "longer than 128 bytes"
    } else {
        return Ok(());
    };
    Err(JournalError::InvalidId {
        len: id.len(),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_journal() -> (tempfile::TempDir, Journal) {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::open(dir.path()).unwrap();
        (dir, journal)
    }

    #[tokio::test]
    async fn second_begin_after_finish_answers_the_stored_result() {
        let (_dir, journal) = temp_journal();
        assert_eq!(journal.begin("cmd-1", b"fp").await.unwrap(), Begin::Run);
        journal.finish("cmd-1", b"result bytes").await.unwrap();
        assert_eq!(
            journal.begin("cmd-1", b"fp").await.unwrap(),
            Begin::Done(b"result bytes".to_vec())
        );
    }

    #[tokio::test]
    async fn begin_while_running_reports_in_progress() {
        let (_dir, journal) = temp_journal();
        assert_eq!(journal.begin("cmd-1", b"fp").await.unwrap(), Begin::Run);
        assert_eq!(
            journal.begin("cmd-1", b"fp").await.unwrap(),
            Begin::InProgress
        );
    }

    #[tokio::test]
    async fn same_id_with_another_fingerprint_is_a_conflict() {
        let (_dir, journal) = temp_journal();
        journal.begin("cmd-1", b"create vm 100").await.unwrap();
        let err = journal.begin("cmd-1", b"delete vm 100").await.unwrap_err();
        assert!(
            matches!(err, JournalError::Conflict { ref id } if id == "cmd-1"),
            "{err}"
        );
        journal.finish("cmd-1", b"ok").await.unwrap();
        let err = journal.begin("cmd-1", b"delete vm 100").await.unwrap_err();
        assert!(matches!(err, JournalError::Conflict { .. }), "{err}");
    }

    #[tokio::test]
    async fn finish_is_idempotent_but_refuses_a_different_result() {
        let (_dir, journal) = temp_journal();
        journal.begin("cmd-1", b"fp").await.unwrap();
        journal.finish("cmd-1", b"ok").await.unwrap();
        journal.finish("cmd-1", b"ok").await.unwrap();
        let err = journal.finish("cmd-1", b"other").await.unwrap_err();
        assert!(matches!(err, JournalError::ResultMismatch { .. }), "{err}");
        assert_eq!(
            journal.begin("cmd-1", b"fp").await.unwrap(),
            Begin::Done(b"ok".to_vec())
        );
    }

    #[tokio::test]
    async fn finish_without_begin_is_refused() {
        let (_dir, journal) = temp_journal();
        let err = journal.finish("never", b"ok").await.unwrap_err();
        assert!(matches!(err, JournalError::NotStarted { .. }), "{err}");
    }

    #[tokio::test]
    async fn empty_and_overlong_ids_are_refused() {
        let (_dir, journal) = temp_journal();
        let longest = "x".repeat(MAX_COMMAND_ID_LEN);
        assert_eq!(journal.begin(&longest, b"fp").await.unwrap(), Begin::Run);
        for id in [String::new(), "x".repeat(MAX_COMMAND_ID_LEN + 1)] {
            let err = journal.begin(&id, b"fp").await.unwrap_err();
            assert!(matches!(err, JournalError::InvalidId { .. }), "{err}");
        }
    }

    #[tokio::test]
    async fn abandoned_run_becomes_in_doubt_for_exactly_one_caller() {
        let (_dir, journal) = temp_journal();
        assert_eq!(journal.begin("cmd-1", b"fp").await.unwrap(), Begin::Run);
        journal.abandon("cmd-1");
        assert_eq!(journal.begin("cmd-1", b"fp").await.unwrap(), Begin::InDoubt);
        assert_eq!(
            journal.begin("cmd-1", b"fp").await.unwrap(),
            Begin::InProgress
        );
        journal
            .resolve_in_doubt("cmd-1", b"observed")
            .await
            .unwrap();
        assert_eq!(
            journal.begin("cmd-1", b"fp").await.unwrap(),
            Begin::Done(b"observed".to_vec())
        );
    }

    #[tokio::test]
    async fn prune_keeps_the_newest_finished_and_every_started_entry() {
        let (_dir, journal) = temp_journal();
        journal.begin("doubt", b"fp").await.unwrap();
        journal.abandon("doubt");
        for i in 0..5 {
            let id = format!("done-{i}");
            journal.begin(&id, b"fp").await.unwrap();
            journal.finish(&id, id.as_bytes()).await.unwrap();
        }
        journal.begin("running", b"fp").await.unwrap();

        assert_eq!(journal.prune(2).await.unwrap(), 3);
        assert_eq!(journal.len(), 4);
        for (id, expected) in [
            ("done-3", Begin::Done(b"done-3".to_vec())),
            ("done-4", Begin::Done(b"done-4".to_vec())),
            ("running", Begin::InProgress),
            ("doubt", Begin::InDoubt),
        ] {
            assert_eq!(journal.begin(id, b"fp").await.unwrap(), expected, "{id}");
        }
        // A pruned id is forgotten: it would run again (retention bounds how late a retry may come).
        assert_eq!(journal.begin("done-0", b"fp").await.unwrap(), Begin::Run);

        assert_eq!(journal.prune(0).await.unwrap(), 2);
        assert_eq!(journal.len(), 3);
    }

    #[tokio::test]
    async fn entry_with_unknown_format_version_is_refused() {
        let (_dir, journal) = temp_journal();
        journal.raw_insert("future", &[2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        let err = journal.begin("future", b"fp").await.unwrap_err();
        assert!(
            matches!(err, JournalError::UnknownFormat { version: 2, ref id } if id == "future"),
            "{err}"
        );
        let err = journal.prune(0).await.unwrap_err();
        assert!(matches!(err, JournalError::UnknownFormat { .. }), "{err}");
    }
}
