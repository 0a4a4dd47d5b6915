//! The guard: the backstop for a hung or killed agent. A separate process reads the fence
//! record every [`CHECK_EVERY`] and resets the host once an armed record's lease ended:
//! the agent should have stopped its HA guests and disarmed the record `lead` before that.
//!
//! ```text
//!  every 50 ms: fence.json ─▶ judge(record, boot id, CLOCK_MONOTONIC, agent alive?)
//!     armed, this boot, now ≥ lease_end ─▶ Reset ─▶ HostReset ─▶ log ─▶ record disarmed
//!     not armed, agent gone, --exit-with-agent ─▶ Exit
//!     otherwise ─▶ Wait
//! ```
//!
//! While the record is armed it keeps guarding even after the agent died: an agent killed with
//! SIGKILL leaves its guests running, and only the guard fences them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::agent_process::ProcessProbe;
use super::record::{FenceRecord, RecordError};
use super::reset::{HostReset, ResetError};

/// How often the record is read.
pub const CHECK_EVERY: Duration = Duration::from_millis(50);

/// What the guard does at a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuardStep {
    /// Nothing now.
    Wait,
    /// Reset the host now.
    Reset,
    /// Nothing left to guard: exit.
    Exit,
}

/// The decision at monotonic time `now_ns`, for the guard of boot `boot_id`; `exit_with_agent`
/// for a guard that ends when its agent is gone and nothing is armed (the agent's child; the
/// systemd unit keeps guarding for the next agent).
pub fn judge(
    record: Option<&FenceRecord>,
    boot_id: &str,
    now_ns: u64,
    agent_alive: bool,
    exit_with_agent: bool,
) -> GuardStep {
    match record.filter(|r| r.armed_in(boot_id)) {
        Some(r) if now_ns >= r.lease_end_mono_ns => GuardStep::Reset,
        Some(_) => GuardStep::Wait,
        None if exit_with_agent && !agent_alive => GuardStep::Exit,
        None => GuardStep::Wait,
    }
}

/// Why the guard stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    /// The record could not be rewritten after a reset.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// A reset failed.
    #[error(transparent)]
    Reset(#[from] ResetError),
    /// Resets kept failing; the record was disarmed so the guard does not linger.
    #[error("gave up resetting the host after {after:?}: {last}")]
    GaveUp {
        /// How long it tried.
        after: Duration,
        /// The last failure.
        last: ResetError,
    },
}

/// The guard of one agent's record.
#[derive(Debug)]
pub struct Guard<R, P> {
    path: PathBuf,
    boot_id: String,
    reset: R,
    probe: P,
    exit_with_agent: bool,
    /// Resets done (tests count them).
    resets: u32,
    /// The last record read error shown (each different one is shown once).
    shown_error: Option<String>,
}

impl<R: HostReset, P: ProcessProbe> Guard<R, P> {
    /// Guards the record at `path` for boot `boot_id`, resetting through `reset`.
    pub fn new(
        path: impl Into<PathBuf>,
        boot_id: impl Into<String>,
        reset: R,
        probe: P,
        exit_with_agent: bool,
    ) -> Guard<R, P> {
        Guard {
            path: path.into(),
            boot_id: boot_id.into(),
            reset,
            probe,
            exit_with_agent,
            resets: 0,
            shown_error: None,
        }
    }

    /// The record guarded.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Resets done so far.
    pub fn resets(&self) -> u32 {
        self.resets
    }

    /// The reset (tests look at their fake).
    pub fn reset_ref(&self) -> &R {
        &self.reset
    }

    /// One check at monotonic time `now_ns`: reads the record, decides, and resets (then
    /// disarms the record so the reset is not repeated).
    pub async fn tick(&mut self, now_ns: u64) -> Result<GuardStep, GuardError> {
        let record = match FenceRecord::read(&self.path) {
            Ok(r) => {
                self.shown_error = None;
                r
            }
            Err(e) => {
                // Written atomically, so this is not a torn write: someone else's file. Not
                // armed as far as anyone can tell; said once.
                let text = e.to_string();
                if self.shown_error.as_deref() != Some(&text) {
                    tracing::warn!(error = %text, "fence guard: unreadable record");
                    self.shown_error = Some(text);
                }
                None
            }
        };
        let alive = record
            .as_ref()
            .is_some_and(|r| self.probe.alive(r.agent_pid));
        let step = judge(
            record.as_ref(),
            &self.boot_id,
            now_ns,
            alive,
            self.exit_with_agent,
        );
        if let (GuardStep::Reset, Some(record)) = (step, record) {
            let late_ms = now_ns.saturating_sub(record.lease_end_mono_ns) / 1_000_000;
            self.reset.reset(&record).await?;
            self.resets += 1;
            tracing::error!(
                reset = self.reset.kind(),
                agent_pid = record.agent_pid,
                late_ms,
                "fence guard: reset the host: the agent's lease ended with HA guests armed"
            );
            FenceRecord {
                armed: false,
                ..record
            }
            .write(&self.path)?;
        }
        Ok(step)
    }

    /// Checks every `every` (monotonic time from `clock`) until `shutdown` or
    /// [`GuardStep::Exit`]. A failing reset is retried at every check, for ever on a real
    /// host; a simulated one gives up after a while and disarms the record.
    pub async fn run(
        mut self,
        clock: impl Fn() -> u64,
        every: Duration,
        shutdown: CancellationToken,
    ) -> Result<(), GuardError> {
        tracing::info!(record = %self.path.display(), reset = self.reset.kind(), "fence guard running");
        let mut failing_since: Option<u64> = None;
        loop {
            let now = clock();
            match self.tick(now).await {
                Ok(GuardStep::Exit) => {
                    tracing::info!("fence guard: the agent is gone and nothing is armed: exiting");
                    return Ok(());
                }
                Ok(_) => failing_since = None,
                Err(GuardError::Reset(e)) => {
                    let since = *failing_since.get_or_insert(now);
                    let after = Duration::from_nanos(now.saturating_sub(since));
                    if since == now {
                        tracing::error!(error = %e, "fence guard: the reset failed; retrying");
                    }
                    if let Some(limit) = self.reset.give_up_after()
                        && after >= limit
                    {
                        self.disarm()?;
                        return Err(GuardError::GaveUp { after, last: e });
                    }
                }
                Err(e) => return Err(e),
            }
            tokio::select! {
                () = shutdown.cancelled() => return Ok(()),
                () = tokio::time::sleep(every) => {}
            }
        }
    }

    fn disarm(&self) -> Result<(), GuardError> {
        if let Ok(Some(record)) = FenceRecord::read(&self.path) {
            FenceRecord {
                armed: false,
                ..record
            }
            .write(&self.path)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::{Arc, Mutex};

    use super::*;

    const BOOT: &str = "boot-a";

    fn record(armed: bool, end: u64, pid: u32) -> FenceRecord {
        FenceRecord {
            boot_id: BOOT.into(),
            lease_end_mono_ns: end,
            armed,
            agent_pid: pid,
        }
    }

    #[test]
    fn judge_table() {
        let armed = record(true, 1_000, 7);
        let disarmed = record(false, 1_000, 7);
        let other_boot = FenceRecord {
            boot_id: "boot-b".into(),
            ..armed.clone()
        };
        // (record, now, agent alive, exit with agent, step)
        let table = [
            (Some(&armed), 999, true, true, GuardStep::Wait),
            (Some(&armed), 1_000, true, true, GuardStep::Reset),
            (Some(&armed), 5_000, false, true, GuardStep::Reset),
            // Armed and the agent dead (SIGKILL): it keeps guarding.
            (Some(&armed), 999, false, true, GuardStep::Wait),
            (Some(&disarmed), 5_000, true, true, GuardStep::Wait),
            (Some(&disarmed), 5_000, false, true, GuardStep::Exit),
            (Some(&disarmed), 5_000, false, false, GuardStep::Wait),
            (Some(&other_boot), 5_000, true, true, GuardStep::Wait),
            (Some(&other_boot), 5_000, false, true, GuardStep::Exit),
            (None, 5_000, false, true, GuardStep::Exit),
            (None, 5_000, false, false, GuardStep::Wait),
        ];
        for (i, (rec, now, alive, exit, step)) in table.into_iter().enumerate() {
            assert_eq!(judge(rec, BOOT, now, alive, exit), step, "row {i}");
        }
    }

    /// Counts resets; never touches a host.
    #[derive(Debug, Default)]
    struct FakeReset {
        calls: Arc<Mutex<Vec<FenceRecord>>>,
        fail: bool,
    }

    impl HostReset for FakeReset {
        async fn reset(&mut self, record: &FenceRecord) -> Result<(), ResetError> {
            if self.fail {
                return Err(ResetError::Reboot(std::io::Error::other("refused")));
            }
            self.calls.lock().unwrap().push(record.clone());
            Ok(())
        }
        fn kind(&self) -> &'static str {
            "fake"
        }
        fn give_up_after(&self) -> Option<Duration> {
            Some(Duration::from_nanos(300))
        }
    }

    #[derive(Debug, Clone, Default)]
    struct FakeProcesses(Arc<Mutex<BTreeSet<u32>>>);

    impl ProcessProbe for FakeProcesses {
        fn alive(&self, pid: u32) -> bool {
            self.0.lock().unwrap().contains(&pid)
        }
    }

    fn guard(
        dir: &Path,
        exit_with_agent: bool,
        fail: bool,
    ) -> (Guard<FakeReset, FakeProcesses>, FakeProcesses) {
        let procs = FakeProcesses::default();
        procs.0.lock().unwrap().insert(7);
        let reset = FakeReset {
            fail,
            ..FakeReset::default()
        };
        let g = Guard::new(
            dir.join("fence.json"),
            BOOT,
            reset,
            procs.clone(),
            exit_with_agent,
        );
        (g, procs)
    }

    #[tokio::test]
    async fn it_resets_exactly_once_only_when_armed_and_past_the_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let (mut g, procs) = guard(dir.path(), true, false);
        record(true, 1_000, 7).write(g.path()).unwrap();
        for now in [0, 500, 999] {
            assert_eq!(g.tick(now).await.unwrap(), GuardStep::Wait, "at {now}");
        }
        assert_eq!(g.resets(), 0, "not before the deadline");
        assert_eq!(g.tick(1_000).await.unwrap(), GuardStep::Reset);
        assert_eq!(g.resets(), 1);
        // Disarmed by the reset: never again, however late.
        let back = FenceRecord::read(g.path()).unwrap().unwrap();
        assert_eq!(back, record(false, 1_000, 7));
        for now in [1_001, 2_000, 1_000_000] {
            assert_eq!(g.tick(now).await.unwrap(), GuardStep::Wait);
        }
        assert_eq!(g.resets(), 1);
        assert_eq!(g.reset_ref().calls.lock().unwrap().len(), 1);
        // The agent is gone and nothing is armed: the guard ends.
        procs.0.lock().unwrap().clear();
        assert_eq!(g.tick(2_000_000).await.unwrap(), GuardStep::Exit);
    }

    #[tokio::test]
    async fn a_disarmed_or_foreign_record_is_never_reset_and_renewals_move_the_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let (mut g, procs) = guard(dir.path(), true, false);
        record(false, 1_000, 7).write(g.path()).unwrap();
        assert_eq!(g.tick(10_000).await.unwrap(), GuardStep::Wait);
        FenceRecord {
            boot_id: "boot-b".into(),
            ..record(true, 1_000, 7)
        }
        .write(g.path())
        .unwrap();
        assert_eq!(g.tick(10_000).await.unwrap(), GuardStep::Wait);
        // The agent renews: each rewrite moves the deadline ahead of the clock.
        for now in [10_000, 11_000, 12_000] {
            record(true, now + 900, 7).write(g.path()).unwrap();
            assert_eq!(g.tick(now).await.unwrap(), GuardStep::Wait);
        }
        assert_eq!(g.resets(), 0);
        // Killed while armed: the guard still waits for the deadline, then resets.
        procs.0.lock().unwrap().clear();
        assert_eq!(g.tick(12_899).await.unwrap(), GuardStep::Wait);
        assert_eq!(g.tick(12_900).await.unwrap(), GuardStep::Reset);
        assert_eq!(g.resets(), 1);
        assert_eq!(g.tick(12_901).await.unwrap(), GuardStep::Exit);
    }

    #[tokio::test]
    async fn a_failing_simulated_reset_is_retried_then_given_up_and_disarmed() {
        let dir = tempfile::tempdir().unwrap();
        let (g, _procs) = guard(dir.path(), true, true);
        let path = g.path().to_path_buf();
        record(true, 0, 7).write(&path).unwrap();
        let now = Arc::new(Mutex::new(0u64));
        let clock = {
            let now = Arc::clone(&now);
            move || {
                let mut t = now.lock().unwrap();
                *t += 100;
                *t
            }
        };
        let run = tokio::time::timeout(
            Duration::from_secs(10),
            g.run(clock, Duration::from_millis(1), CancellationToken::new()),
        )
        .await
        .expect("bounded");
        assert!(matches!(run, Err(GuardError::GaveUp { .. })), "{run:?}");
        assert!(!FenceRecord::read(&path).unwrap().unwrap().armed);
    }
}
