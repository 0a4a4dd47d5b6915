//! The agent's session with the coordinators: it follows the leader, beats every heartbeat
//! interval, keeps the lease, hands delivered commands to the [`CommandRunner`] and carries
//! their results back on the next beats until the leader acknowledges them.
//!
//! ```text
//!            ┌──────────── every heartbeat (sooner after a result) ────────────┐
//!            ▼                                                                 │
//!  Link::connect ─▶ Heartbeat{seq, inventory?, results unacked, running} ─▶ leader
//!      ▲   NotLeader{hint} ─▶ follow the hint now                              │
//!      └── other failure ─▶ next member after 100 ms … 5 s                    ▼
//!  HeartbeatAck ─▶ lease = send time + lease_ms ─▶ drop acked results ─▶ admit commands
//!  admitted ─▶ Dispatcher (per VM in order, 8 at once) ─▶ runner.run ─▶ CommandBook.finish
//! ```
//!
//! A delivered id already running or awaiting its ack is ignored; one that ran before and was
//! acknowledged is answered by the executor's journal (docs/design/architecture.md, safety rule 4). The
//! inventory goes on the first beat of each connection, when the leader changes or asks for
//! it, and when [`worth_sending`] says it changed.

pub mod book;
pub mod lease;
mod link;
pub mod renew;
pub mod runner;
pub mod targets;

use std::sync::Arc;
use std::time::Duration;

use protocol::NodeId;
use protocol::agent::{ClockOffset, Heartbeat, HeartbeatAck, Inventory, LeaveAnswer, LeaveKind};
use protocol::spec::Labels;
use protocol::time::Now;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use transport::Endpoint;

pub use book::CommandBook;
pub use lease::{Lease, LeaseEvent, LeaseKeeper};
pub use renew::{CertRenewal, RENEW_CHECK, RenewError};
pub use runner::{CommandRunner, MAX_CONCURRENT};
pub use targets::{Backoff, Target, Targets};

use crate::clock_watch::ClockWatch;
use crate::inventory::{InventoryFeed, SentInventory, worth_sending};
use crate::leave_probe::LeaveProbe;
pub(crate) use link::resolve;
use link::{Link, Miss};
use runner::{Dispatcher, Done};

/// A leaving agent goes anyway when no leader answered its leave for this long (a v1 leader,
/// no quorum): its lease runs out as it would have.
const LEAVE_UNANSWERED: Duration = Duration::from_secs(5);
/// The longest a drain before a shutdown is waited for (the unit's `TimeoutStopSec` covers it,
/// the grace and the teardown).
pub const LEAVE_DRAIN_MAX: Duration = Duration::from_secs(240);

/// Redirects followed at once before the back-off applies (two members naming each other).
const FREE_REDIRECTS: u32 = 3;
/// While beats fail, one warning per this many failures (the others are debug).
const WARN_EVERY: u32 = 10;

/// What a session needs to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionConfig {
    /// The host's PVE node name.
    pub host_name: String,
    /// The host's labels.
    pub labels: Labels,
    /// Time between beats.
    pub heartbeat: Duration,
    /// The coordinator members to try, in order.
    pub members: Vec<Target>,
    /// Commands running at once (across VMs).
    pub max_concurrent: usize,
    /// On shutdown, how long running commands may take to finish before they are aborted.
    pub shutdown_grace: Duration,
    /// Asked why the agent stops when it is told to leave (`None`: it goes without telling).
    pub leave_probe: Option<LeaveProbe>,
}

impl SessionConfig {
    /// Deadline of one beat: long enough for the leader's quorum check, short enough to fail
    /// over well inside a 10 s lease.
    pub fn beat_deadline(&self) -> Duration {
        (self.heartbeat * 3).clamp(
            Duration::from_secs(2),
            Duration::from_millis(protocol::timing::MAX_BEAT_WAIT_MS),
        )
    }

    /// The shortest gap between two beats when a result makes the next one come early.
    fn early_gap(&self) -> Duration {
        (self.heartbeat / 4).max(Duration::from_millis(20))
    }
}

/// What the session looks like now (for the ready line, health and tests).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionStatus {
    /// Acks received since the start.
    pub acks: u64,
    /// The leader and term of the last ack.
    pub leader: Option<(NodeId, u64)>,
    /// The lease in force (check it with [`Lease::is_valid`]).
    pub lease: Option<Lease>,
    /// Commands admitted and not finished.
    pub running: usize,
    /// Results waiting for the leader's ack.
    pub unacked: usize,
    /// The leader's last answer to this agent's leave.
    pub leave: Option<LeaveAnswer>,
}

/// The coordinator session of one agent process.
pub struct Session<R> {
    cfg: SessionConfig,
    endpoint: Endpoint,
    runner: Arc<R>,
    inventory: InventoryFeed,
    status: watch::Sender<SessionStatus>,
    leave: CancellationToken,
    clock: ClockWatch,
}

impl<R> std::fmt::Debug for Session<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

impl<R: CommandRunner> Session<R> {
    /// A session dialing from `endpoint` (a client endpoint with the agent's certificate),
    /// running commands with `runner` and reporting the inventory of `inventory`.
    pub fn new(
        cfg: SessionConfig,
        endpoint: Endpoint,
        runner: Arc<R>,
        inventory: InventoryFeed,
    ) -> Session<R> {
        Session {
            cfg,
            endpoint,
            runner,
            inventory,
            status: watch::Sender::new(SessionStatus::default()),
            leave: CancellationToken::new(),
            clock: ClockWatch::new(),
        }
    }

    /// Records each acknowledged beat's clock measurement in `clock` (a diagnosis reads it).
    pub fn with_clock(mut self, clock: ClockWatch) -> Session<R> {
        self.clock = clock;
        self
    }

    /// The token that makes the session leave: it tells the leader why the agent stops
    /// ([`SessionConfig::leave_probe`]), waits for its answer (a drain may take minutes), then
    /// ends as on shutdown.
    pub fn leave_token(&self) -> CancellationToken {
        self.leave.clone()
    }

    /// Follows the session's status.
    pub fn status(&self) -> watch::Receiver<SessionStatus> {
        self.status.subscribe()
    }

    /// Beats until `shutdown` or until it has left ([`Session::leave_token`]); then gives
    /// running commands the grace period, aborts the rest and closes the connection.
    pub async fn run(self, shutdown: CancellationToken) {
        let leave = self.leave.clone();
        let boot_id = rand::random::<u64>();
        tracing::info!(host = %self.cfg.host_name, boot_id, members = self.cfg.members.len(), "session started");
        let mut s = Beater {
            link: Link::new(self.endpoint, self.cfg.members.clone()),
            dispatcher: Dispatcher::new(self.runner, self.cfg.max_concurrent),
            book: CommandBook::new(),
            lease: LeaseKeeper::new(),
            backoff: Backoff::default(),
            inventory: self.inventory,
            sent_inventory: None,
            inventory_due: true,
            boot_id,
            seq: 0,
            leader: None,
            acks: 0,
            failures: 0,
            redirects: 0,
            healthy: false,
            next_beat: Instant::now(),
            last_sent: None,
            status: self.status,
            leaving: None,
            leave_answer: None,
            clock: self.clock,
            cfg: self.cfg,
        };
        loop {
            let lease_deadline = s.lease.next_deadline();
            tokio::select! {
                biased;
                () = shutdown.cancelled() => break,
                () = leave.cancelled() => {
                    if let Some(probe) = s.cfg.leave_probe.clone() {
                        tokio::select! {
                            () = shutdown.cancelled() => {}
                            () = s.leave(&probe) => {}
                        }
                    }
                    break;
                }
                done = s.dispatcher.next_done(), if !s.dispatcher.is_idle() => {
                    s.on_done(done);
                    continue;
                }
                () = sleep_until(lease_deadline) => {
                    s.check_lease();
                    continue;
                }
                // The leader waits for an inventory the collector has just published.
                () = s.inventory.changed(), if s.inventory_due && s.healthy => {
                    s.beat_soon();
                    continue;
                }
                () = tokio::time::sleep_until(s.next_beat) => {}
            }
            tokio::select! {
                biased;
                () = shutdown.cancelled() => break,
                () = s.beat_once() => {}
            }
        }
        s.stop().await;
    }
}

/// The running session's state.
struct Beater<R> {
    cfg: SessionConfig,
    link: Link,
    dispatcher: Dispatcher<R>,
    book: CommandBook,
    lease: LeaseKeeper,
    backoff: Backoff,
    inventory: InventoryFeed,
    sent_inventory: Option<SentInventory>,
    /// The next beat must carry the inventory (new connection, new leader, leader asked).
    inventory_due: bool,
    boot_id: u64,
    seq: u64,
    leader: Option<(NodeId, u64)>,
    acks: u64,
    failures: u32,
    redirects: u32,
    /// The last beat was acknowledged.
    healthy: bool,
    next_beat: Instant,
    last_sent: Option<Instant>,
    status: watch::Sender<SessionStatus>,
    /// Said on every beat once the agent leaves.
    leaving: Option<LeaveKind>,
    /// The leader's answer on the last ack, taken by [`Beater::leave`].
    leave_answer: Option<LeaveAnswer>,
    /// Where each ack's clock measurement goes.
    clock: ClockWatch,
}

impl<R: CommandRunner> Beater<R> {
    /// Tells the leader why the agent stops and waits for its answer: at once for a freeze or
    /// a failover, after the drain for the `migrate` policy (commands keep running meanwhile:
    /// the drain's migrations are this agent's). Goes anyway when nobody answers for
    /// [`LEAVE_UNANSWERED`] or the drain takes longer than [`LEAVE_DRAIN_MAX`].
    async fn leave(&mut self, probe: &LeaveProbe) {
        let kind = probe.kind().await;
        tracing::info!(?kind, "leaving: telling the leader why the agent stops");
        self.leaving = Some(kind);
        let start = Instant::now();
        let mut answered = start;
        loop {
            self.beat_once().await;
            if let Some(answer) = self.leave_answer.take() {
                answered = Instant::now();
                if answer.go {
                    tracing::info!(action = ?answer.action, lease = ?self.lease.current().map(|l| l.duration()), message = %answer.message, "leaving: the leader lets the agent go");
                    return;
                }
                tracing::info!(left = answer.left, message = %answer.message, "leaving: waiting for the drain");
            }
            let now = Instant::now();
            if now.duration_since(answered) > LEAVE_UNANSWERED {
                tracing::warn!("leaving: no leader answered; going (the lease runs out as before)");
                return;
            }
            if now.duration_since(start) > LEAVE_DRAIN_MAX {
                tracing::warn!(waited = ?LEAVE_DRAIN_MAX, "leaving: the drain is not over; going (what is left stays frozen)");
                return;
            }
            let next = self.next_beat;
            loop {
                tokio::select! {
                    done = self.dispatcher.next_done(), if !self.dispatcher.is_idle() => self.on_done(done),
                    () = tokio::time::sleep_until(next) => break,
                }
            }
        }
    }

    async fn beat_once(&mut self) {
        let fresh = match self.link.connect().await {
            Ok(fresh) => fresh,
            Err(miss) => return self.missed(miss),
        };
        if fresh {
            self.inventory_due = true;
        }
        let inventory = self.inventory_to_send();
        self.seq += 1;
        let hb = Heartbeat {
            host_name: self.cfg.host_name.clone(),
            labels: self.cfg.labels.clone(),
            boot_id: self.boot_id,
            seq: self.seq,
            inventory: inventory.clone(),
            results: self.book.unacked(),
            running: self.book.running(),
            leaving: self.leaving,
        };
        let sent_at = Instant::now();
        self.last_sent = Some(sent_at);
        let sent_wall = Now::read().millis;
        match self.link.beat(&hb, self.cfg.beat_deadline()).await {
            Ok((target, ack)) => {
                if let Some(leader_ms) = ack.leader_clock_ms {
                    let offset = ClockOffset::measure(sent_wall, leader_ms, Now::read().millis);
                    self.clock.record(offset);
                }
                self.acked(&target, ack, sent_at, inventory);
            }
            Err(miss) => self.missed(miss),
        }
        self.publish();
    }

    /// Brings the next beat forward, keeping a short gap after the last one.
    fn beat_soon(&mut self) {
        let now = Instant::now();
        let earliest = self.last_sent.map_or(now, |t| t + self.cfg.early_gap());
        self.next_beat = self.next_beat.min(earliest.max(now));
    }

    /// The inventory for this beat: the latest snapshot when it is due or worth sending.
    fn inventory_to_send(&mut self) -> Option<Inventory> {
        let snapshot = self.inventory.latest()?;
        let now = Instant::now().into_std();
        (self.inventory_due
            || worth_sending(self.sent_inventory.as_ref(), &snapshot.inventory, now))
        .then_some(snapshot.inventory)
    }

    fn acked(
        &mut self,
        target: &Target,
        ack: HeartbeatAck,
        sent_at: Instant,
        inventory: Option<Inventory>,
    ) {
        if !self.healthy {
            tracing::info!(%target, term = ack.term, lease_ms = ack.lease_ms, "beating the leader");
        }
        self.lease
            .grant(Lease::new(sent_at.into_std(), ack.lease_ms));
        self.book.ack(&ack.acked_results);
        if ack.leave.is_some() {
            self.leave_answer.clone_from(&ack.leave);
        }
        let sent = inventory.is_some();
        if let Some(inventory) = inventory {
            self.sent_inventory = Some(SentInventory {
                inventory,
                at: sent_at.into_std(),
            });
            self.inventory_due = false;
        }
        let leader = (ack.leader, ack.term);
        if self.leader != Some(leader) {
            if let Some((old, old_term)) = self.leader {
                tracing::info!(
                    old,
                    old_term,
                    new = ack.leader,
                    term = ack.term,
                    "the leader changed"
                );
            }
            self.leader = Some(leader);
            // A new leader (or term) holds no inventory of this boot unless this beat had it.
            self.inventory_due |= !sent;
        }
        if ack.need_inventory {
            self.inventory_due = true;
            self.inventory.refresh();
        }
        for cmd in ack.commands {
            if self.book.admit(&cmd.id) {
                tracing::info!(command_id = %cmd.id, op = cmd.op.kind().as_str(), vm = cmd.op.vm_name(), "command received");
                self.dispatcher.spawn(cmd);
            } else {
                tracing::debug!(command_id = %cmd.id, "command already running or awaiting its ack: ignored");
            }
        }
        self.acks += 1;
        self.backoff.reset();
        self.failures = 0;
        self.redirects = 0;
        self.healthy = true;
        let next = sent_at + self.cfg.heartbeat;
        self.next_beat = next.max(Instant::now());
    }

    fn missed(&mut self, miss: Miss) {
        let now = Instant::now();
        match miss {
            Miss::Redirected { from, to } => {
                self.redirects += 1;
                tracing::info!(%from, %to, "following the leader");
                self.next_beat = if self.redirects <= FREE_REDIRECTS {
                    now
                } else {
                    now + self.backoff.next_pause()
                };
            }
            Miss::Failed(reason) => {
                self.failures += 1;
                let pause = self.backoff.next_pause();
                if self.healthy || self.failures % WARN_EVERY == 1 {
                    tracing::warn!(%reason, failures = self.failures, retry_in = ?pause, "heartbeat failed");
                } else {
                    tracing::debug!(%reason, failures = self.failures, retry_in = ?pause, "heartbeat failed");
                }
                self.next_beat = now + pause;
            }
        }
        self.healthy = false;
    }

    fn on_done(&mut self, done: Done) {
        match done {
            Done::Result(result) => {
                tracing::info!(command_id = %result.id, ok = result.outcome.is_ok(), "command finished");
                self.book.finish(result);
                // The VM changed: look again, and carry the result back soon.
                self.inventory.refresh();
                if self.healthy {
                    self.beat_soon();
                }
            }
            Done::Lost(ids) => {
                for id in &ids {
                    self.book.forget(id);
                }
            }
            Done::Idle => {}
        }
        self.publish();
    }

    fn check_lease(&mut self) {
        if let Some(LeaseEvent::Lapsed { at }) = self.lease.check(Instant::now().into_std()) {
            let ago = std::time::Instant::now().saturating_duration_since(at);
            tracing::warn!(
                lapsed_ago = ?ago,
                "the lease lapsed: no leader acknowledged a beat in time (the fencer acts from \
                 lease end - lead on: HA guests stopped, VIPs dropped, no guest started)"
            );
        }
    }

    fn publish(&self) {
        self.status.send_replace(SessionStatus {
            acks: self.acks,
            leader: self.leader,
            lease: self.lease.current(),
            running: self.book.running().len(),
            unacked: self.book.unacked().len(),
            leave: self.leave_answer.clone(),
        });
    }

    async fn stop(mut self) {
        let grace = tokio::time::sleep(self.cfg.shutdown_grace);
        tokio::pin!(grace);
        while !self.dispatcher.is_idle() {
            tokio::select! {
                done = self.dispatcher.next_done() => self.on_done(done),
                () = &mut grace => break,
            }
        }
        if !self.dispatcher.is_idle() {
            tracing::warn!(running = ?self.book.running(), "aborting commands still running at shutdown (their journal entries stay in doubt)");
        }
        self.dispatcher.abort_all().await;
        self.link.drop_connection().await;
        tracing::info!(host = %self.cfg.host_name, "session stopped");
    }
}

/// Sleeps until `deadline`, or for ever without one.
async fn sleep_until(deadline: Option<std::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(Instant::from_std(at)).await,
        None => std::future::pending().await,
    }
}
