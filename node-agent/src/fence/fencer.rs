//! The agent's fencer: it follows the lease the session publishes and the HA guests the
//! inventory finds, decides with [`decide`], and acts: the start gate, the VIP keeper's
//! flag, the fence record, and the stop of the HA guests.
//!
//! ```text
//!  session status (lease) ──┐
//!  inventory (HA running) ──┼─▶ decide ─▶ Idle:  gate open, VIPs allowed
//!  record of this boot ─────┘            Fence: gate closed, VIPs let go, stop HA guests ─▶ confirmed
//!  (lease of an earlier run)             Done:  gate closed, VIPs let go
//!                                  └──▶ fence.json {lease end, armed} when either changed
//! ```
//!
//! The lease read back from the record at start is the lease in force until a leader grants a
//! later one: an agent restarted while partitioned still fences at the old deadline.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::clock::MonoClock;
use super::guests::{GuestStopper, StopError};
use super::plan::{FenceInput, FenceStep, HaGuests, decide, effective_lead};
use super::record::{FenceRecord, RecordError, current_boot_id, record_path};
use super::start_gate::StartGate;
use crate::inventory::InventoryFeed;
use crate::session::SessionStatus;

/// Pause between two fence passes that could not show the guests stopped.
const RETRY: Duration = Duration::from_millis(100);
/// The least time a fence pass gets when the lease already ended (read back from the record).
const LATE_PASS: Duration = Duration::from_secs(2);

/// Why the fencer could not start or a fence pass failed.
#[derive(Debug, thiserror::Error)]
pub enum FenceError {
    /// The fence record or the boot id.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The HA guests could not be shown stopped.
    #[error(transparent)]
    Stop(#[from] StopError),
    /// A guest start admitted before the gate closed has not ended by the deadline.
    #[error("a guest start begun before fencing is still running")]
    StartInFlight,
}

/// What the fencer is made of.
#[derive(Debug, Clone)]
pub struct FencerConfig {
    /// The agent's data directory (the record is written there).
    pub data_dir: PathBuf,
    /// How long before the lease end fencing starts.
    pub lead: Duration,
}

/// The fencer of one agent process.
#[derive(Debug)]
pub struct Fencer {
    cfg: FencerConfig,
    stopper: GuestStopper,
    status: watch::Receiver<SessionStatus>,
    inventory: InventoryFeed,
    record: RecordWriter,
    vips: watch::Sender<bool>,
    gate: StartGate,
    recorded_end: Option<Instant>,
    /// The record of an earlier run of this boot was armed: its guests count as running
    /// until the first inventory says otherwise.
    recorded_armed: bool,
}

impl Fencer {
    /// Reads the record of an earlier run, takes its lease if it is of this boot, and writes
    /// the record as this process's (so a guard started next finds it); closes `gate` and
    /// raises the VIP flag at once if that lease is already running out.
    pub fn prepare(
        cfg: FencerConfig,
        stopper: GuestStopper,
        status: watch::Receiver<SessionStatus>,
        inventory: InventoryFeed,
        gate: StartGate,
    ) -> Result<Fencer, FenceError> {
        let boot_id = current_boot_id()?;
        let path = record_path(&cfg.data_dir);
        let clock = MonoClock::new();
        let earlier = match FenceRecord::read(&path) {
            Ok(r) => r,
            Err(e) => {
                // Unreadable: as if absent; the new record replaces it.
                tracing::warn!(error = %e, "fence: ignoring the fence record of an earlier run");
                None
            }
        };
        let recorded_end = earlier
            .as_ref()
            .and_then(|r| r.lease_end_in(&boot_id))
            .map(|ns| clock.instant_of(ns));
        let armed = earlier.as_ref().is_some_and(|r| r.armed_in(&boot_id));
        if let Some(end) = recorded_end {
            tracing::info!(
                lease_left = ?end.saturating_duration_since(Instant::now()),
                armed,
                "fence: the lease of an earlier run of this boot is in force until a leader grants one"
            );
        }
        let mut record = RecordWriter {
            path,
            boot_id,
            clock,
            last: None,
        };
        record.write_now(recorded_end, armed)?;
        // A record the previous run left armed stays armed until the guests are read: if its
        // lease ended, the guard must still reset the host.
        let first = decide(&FenceInput {
            lease_end: recorded_end,
            lead: cfg.lead,
            now: Instant::now(),
            ha: if armed {
                HaGuests::Running
            } else {
                HaGuests::Unknown
            },
        });
        let fencing = first.step != FenceStep::Idle;
        if fencing {
            gate.close();
        }
        Ok(Fencer {
            cfg,
            stopper,
            status,
            inventory,
            record,
            vips: watch::Sender::new(fencing),
            gate,
            recorded_end,
            recorded_armed: armed,
        })
    }

    /// The flag for the VIP keeper (`true`: let go of every VIP, claim none).
    pub fn vip_fence(&self) -> watch::Receiver<bool> {
        self.vips.subscribe()
    }

    /// The record's path.
    pub fn record_path(&self) -> &Path {
        &self.record.path
    }

    /// Follows the lease and the HA guests until `shutdown`.
    pub async fn run(mut self, shutdown: CancellationToken) {
        let mut ha = if self.recorded_armed {
            HaGuests::Running
        } else {
            HaGuests::Unknown
        };
        // When a fence pass last showed every HA guest stopped: older snapshots are stale.
        let mut confirmed_at: Option<Instant> = None;
        let mut episode = Episode::default();
        let mut session_alive = true;
        loop {
            let mut retry_at: Option<Instant> = None;
            if let Some(snap) = self.inventory.latest()
                && confirmed_at.is_none_or(|at| snap.collected_at > at)
            {
                ha = if snap.ha_running.is_empty() {
                    HaGuests::NoneRunning
                } else {
                    HaGuests::Running
                };
            }
            let lease = self.status.borrow_and_update().lease;
            let lease_end = match (self.recorded_end, lease.map(|l| l.expires_at())) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
            let lead = effective_lead(self.cfg.lead, lease.map(|l| l.duration()));
            let now = now();
            let d = decide(&FenceInput {
                lease_end,
                lead,
                now,
                ha,
            });
            self.apply(d.step);
            if let Err(e) = self.record.write(lease_end, d.armed).await {
                tracing::warn!(error = %e, "fence: cannot update the fence record");
            }
            match d.step {
                FenceStep::Idle => {
                    if episode.end() {
                        tracing::info!(
                            "fence: the lease is renewed: guests may start, VIPs may be held"
                        );
                    }
                }
                FenceStep::Done => {
                    if episode.begin() {
                        tracing::warn!(
                            lease_left = ?left(lease_end, now),
                            "fence: the lease ends without a renewal and no HA guest runs: VIPs \
                             let go; no guest starts until a leader acknowledges a beat"
                        );
                    }
                }
                FenceStep::Fence => {
                    episode.begin();
                    let deadline = lease_end.map_or(now, |e| e.max(now + LATE_PASS));
                    let pass = tokio::select! {
                        () = shutdown.cancelled() => break,
                        pass = self.pass(deadline) => pass,
                    };
                    match pass {
                        Ok(stopped) => {
                            confirmed_at = Some(Instant::now());
                            ha = HaGuests::NoneRunning;
                            if episode.fenced(&stopped) {
                                tracing::warn!(
                                    stopped = ?stopped,
                                    lease_left = ?left(lease_end, Instant::now()),
                                    "fence: the lease ends without a renewal: HA guests stopped, \
                                     VIPs let go; no guest starts until a leader acknowledges a beat"
                                );
                            }
                            // Decide again at once: the record is disarmed now.
                            continue;
                        }
                        Err(e) => {
                            if episode.failed() {
                                tracing::warn!(
                                    error = %e,
                                    lease_left = ?left(lease_end, Instant::now()),
                                    "fence: cannot show the HA guests stopped yet; retrying \
                                     (the guard resets the host at the lease end)"
                                );
                            } else {
                                tracing::debug!(error = %e, "fence: HA guests not shown stopped");
                            }
                            retry_at = Some(Instant::now() + RETRY);
                        }
                    }
                }
            }
            let wake = match (d.wake_at, retry_at) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            tokio::select! {
                biased;
                () = shutdown.cancelled() => break,
                changed = self.status.changed(), if session_alive => {
                    session_alive = changed.is_ok();
                }
                () = self.inventory.changed() => {}
                () = sleep_until(wake) => {}
            }
        }
        if let Some(last) = self.record.last.clone() {
            // The session's last lease (the hold a leaving agent was granted) may be later
            // than the record: written, so the guard and the next run count it.
            let recorded = self.record.clock.instant_of(last.lease_end_mono_ns);
            let granted = self.status.borrow().lease.map(|l| l.expires_at());
            if let Some(end) = granted.filter(|end| *end > recorded)
                && let Err(e) = self.record.write(Some(end), last.armed).await
            {
                tracing::warn!(error = %e, "fence: cannot record the last lease at exit");
            }
        }
    }

    /// The gate and the VIP flag for `step`.
    fn apply(&self, step: FenceStep) {
        let fencing = step != FenceStep::Idle;
        if fencing {
            self.gate.close();
        } else {
            self.gate.open();
        }
        self.vips
            .send_if_modified(|v| std::mem::replace(v, fencing) != fencing);
    }

    /// One fence pass: stop what runs, wait for any start admitted before the gate closed,
    /// then look once more (that start may have brought a guest up).
    async fn pass(&self, deadline: Instant) -> Result<Vec<u32>, FenceError> {
        let mut stopped: BTreeSet<u32> =
            self.stopper.stop_all(deadline).await?.into_iter().collect();
        tokio::time::timeout_at(deadline.into(), self.gate.drained())
            .await
            .map_err(|_| FenceError::StartInFlight)?;
        stopped.extend(self.stopper.stop_all(deadline).await?);
        Ok(stopped.into_iter().collect())
    }
}

/// The fence record as this process writes it: only when it changed.
#[derive(Debug)]
struct RecordWriter {
    path: PathBuf,
    boot_id: String,
    clock: MonoClock,
    last: Option<FenceRecord>,
}

impl RecordWriter {
    fn record(&self, lease_end: Option<Instant>, armed: bool) -> FenceRecord {
        FenceRecord {
            boot_id: self.boot_id.clone(),
            lease_end_mono_ns: lease_end.map_or(0, |e| self.clock.ns_of(e)),
            // No lease, nothing a guard could wait for.
            armed: armed && lease_end.is_some(),
            agent_pid: std::process::id(),
        }
    }

    /// Writes now, on this thread (at start, before anything runs).
    fn write_now(&mut self, lease_end: Option<Instant>, armed: bool) -> Result<(), RecordError> {
        let record = self.record(lease_end, armed);
        record.write(&self.path)?;
        self.last = Some(record);
        Ok(())
    }

    /// Writes if it differs from the last one written (off the async threads: it fsyncs).
    async fn write(&mut self, lease_end: Option<Instant>, armed: bool) -> Result<(), RecordError> {
        let record = self.record(lease_end, armed);
        if self.last.as_ref() == Some(&record) {
            return Ok(());
        }
        let path = self.path.clone();
        let written = record.clone();
        let outcome = tokio::task::spawn_blocking(move || written.write(&path)).await;
        match outcome {
            Ok(Ok(())) => {
                self.last = Some(record);
                Ok(())
            }
            Ok(Err(e)) => {
                self.last = None;
                Err(e)
            }
            Err(join) => {
                self.last = None;
                Err(RecordError::Write {
                    path: self.path.clone(),
                    step: "task",
                    source: std::io::Error::other(join.to_string()),
                })
            }
        }
    }
}

/// One stretch of fencing, for its log lines: one warning when it begins (or when guests were
/// stopped), one for the first failure, one line when it ends.
#[derive(Debug, Default)]
struct Episode {
    active: bool,
    warned_failure: bool,
    stopped_any: bool,
}

impl Episode {
    /// Marks it begun; `true` the first time.
    fn begin(&mut self) -> bool {
        !std::mem::replace(&mut self.active, true)
    }

    /// Ends it; `true` if one was going on.
    fn end(&mut self) -> bool {
        let was = self.active;
        *self = Episode::default();
        was
    }

    /// A pass confirmed `stopped`: worth a warning if it stopped guests, or if it is the
    /// episode's first confirmation.
    fn fenced(&mut self, stopped: &[u32]) -> bool {
        let first = !self.stopped_any;
        self.stopped_any = true;
        first || !stopped.is_empty()
    }

    /// A pass failed; `true` for the first failure of the episode.
    fn failed(&mut self) -> bool {
        !std::mem::replace(&mut self.warned_failure, true)
    }
}

/// Now, on the session's clock (tokio's: paused time in tests moves both).
fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

fn left(lease_end: Option<Instant>, now: Instant) -> Option<Duration> {
    lease_end.map(|e| e.saturating_duration_since(now))
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}
