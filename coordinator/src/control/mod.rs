//! The leader's control plane soft state: agent sessions (heartbeats, leases, inventory), the
//! command dispatcher, and what the reconciler loop (`crate::reconciler`) reads and remembers.
//!
//! ```text
//!  agent ── Heartbeat ──▶ service::agent ──▶ Control::record_beat (live) ──▶ RegisterHost / SetHostFacts
//!                                  │        Control::record_results ──▶ waiters │ reconciler queue
//!                                  └─ quorum confirmed ─▶ HeartbeatAck{lease, commands from the outbox}
//!  reconciler loop (leader only): results ─▶ status::on_result ─┐
//!                                 state + live + inflight ─▶ plan ─┴─▶ Raft proposals │ outbox
//! ```
//!
//! Soft state only (docs/design/architecture.md, "Data flow"): heartbeat times, inventories, commands in flight, the
//! reconciler's back-offs. It belongs to one leadership (one term): when this member stops
//! leading, or leads again in a new term, it is dropped and rebuilt from the agents' next beats;
//! everything decided is replicated.

mod dispatch;
mod live;
mod reconciler_inputs;
pub(crate) mod session;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use protocol::NodeId;
use protocol::agent::{CommandFailure, CommandOutput, HostResources, Op};
use tokio::sync::{Notify, oneshot};
use transport::RemoteError;

use self::dispatch::{Origin, Outbox};
use self::live::Live;
use crate::config::ControlConfig;
use fleet::liveness::{Sighting, Watch};
use fleet::reconcile::status::ResultMeta;
use fleet::reconcile::{Clock, Policy, VmMemory};
use fleet::scheduler::HostView;
use fleet::state::FleetState;
use protocol::time::Now;

/// What the leader knows live about a host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostLiveView {
    /// Milliseconds since the last heartbeat.
    pub(crate) last_seen_ms: u64,
    /// Live resources of the last inventory, if any.
    pub(crate) resources: Option<HostResources>,
}

type Outcome = Result<CommandOutput, CommandFailure>;

/// A result of a reconciler command, waiting for the loop.
#[derive(Debug, Clone)]
pub(crate) struct Arrived {
    /// The command's id.
    pub(crate) id: String,
    /// Which command.
    pub(crate) meta: ResultMeta,
    /// What it produced.
    pub(crate) outcome: Outcome,
}

/// Everything soft, behind one lock (held briefly, never across an await).
#[derive(Debug, Default)]
struct Inner {
    /// The term this member leads in; `None` when it does not lead.
    term: Option<u64>,
    /// When it started leading (control-plane milliseconds).
    leading_since_ms: u64,
    live: Live,
    outbox: Outbox,
    waiters: HashMap<String, oneshot::Sender<Outcome>>,
    results: Vec<Arrived>,
    memory: BTreeMap<String, VmMemory>,
    /// Each VM's current generation, for the ids of commands the callers send.
    generations: HashMap<String, u64>,
}

impl Inner {
    /// Drops the soft state of a leadership that ended. Callers waiting for results see their
    /// channel close.
    fn reset(&mut self) {
        self.live.clear();
        self.outbox.clear();
        self.waiters.clear();
        self.results.clear();
        self.memory.clear();
    }
}

/// The leader's soft state and dispatcher, shared by the agent service, the reconciler loop
/// and the admin handlers.
#[derive(Debug)]
pub(crate) struct Control {
    config: ControlConfig,
    /// The origin of the control-plane clock.
    base: Instant,
    inner: Mutex<Inner>,
    wake: Notify,
}

impl Control {
    /// An empty control plane (no hosts heard from, nothing in flight).
    pub(crate) fn new(config: ControlConfig) -> Control {
        Control {
            config,
            base: Instant::now(),
            inner: Mutex::new(Inner::default()),
            wake: Notify::new(),
        }
    }

    /// The knobs.
    pub(crate) fn config(&self) -> &ControlConfig {
        &self.config
    }

    /// The reconciler's knobs.
    pub(crate) fn policy(&self) -> Policy {
        Policy {
            lease_ms: millis(self.config.lease),
            resync_ms: millis(self.config.resync),
            ip_wait_secs: self.config.ip_wait_secs,
        }
    }

    /// Now on the control-plane clock and the wall clock.
    pub(crate) fn now(&self) -> Clock {
        Clock {
            mono_ms: millis(self.base.elapsed()),
            unix_ms: Now::read().millis,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves soft state that is at worst stale.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Tells the control plane whether this member leads, and in which term. A change (lost,
    /// gained, or a new term) drops the soft state. `true` when a leadership just began.
    pub(crate) fn sync_leadership(&self, term: Option<u64>) -> bool {
        let now = self.now();
        let mut inner = self.lock();
        if inner.term == term {
            return false;
        }
        inner.reset();
        inner.term = term;
        inner.leading_since_ms = now.mono_ms;
        if let Some(term) = term {
            tracing::info!(term, "leading: control plane started");
        } else {
            tracing::info!("not leading: control plane state dropped");
        }
        term.is_some()
    }

    /// Wakes the reconciler loop (a result or an inventory arrived).
    pub(crate) fn wake(&self) {
        self.wake.notify_one();
    }

    /// Resolves when [`Control::wake`] was called since the last wake-up.
    pub(crate) async fn woken(&self) {
        self.wake.notified().await;
    }

    /// Sends `op` to `host`'s agent and waits up to `timeout` for its result. `Ok(Err(_))` is
    /// the agent's failure; `Err(_)` means no result (not leader, host silent, timeout).
    pub(crate) async fn run_command(
        &self,
        host: NodeId,
        op: Op,
        timeout: Duration,
    ) -> Result<Result<CommandOutput, CommandFailure>, RemoteError> {
        let now = self.now();
        let lease_ms = millis(self.config.lease);
        let (id, rx) = {
            let mut inner = self.lock();
            let Some(term) = inner.term else {
                return Err(RemoteError::unavailable(
                    "this member is not the leader (or has just become it): retry the request",
                ));
            };
            let seen = inner.live.host(host).map(|h| h.last_beat_ms);
            let led_a_lease = now.mono_ms.saturating_sub(inner.leading_since_ms) > lease_ms;
            let silent = match seen {
                Some(at) => now.mono_ms.saturating_sub(at) > lease_ms,
                None => led_a_lease,
            };
            if silent {
                return Err(RemoteError::unavailable(format!(
                    "host {host}'s agent has not reported within the lease ({} s): the command \
                     was not sent; check the agent (pvefleet host ls) and retry",
                    lease_ms / 1000
                )));
            }
            let generation = match &op {
                Op::Ensure(e) => e.generation,
                other => inner.generations.get(other.vm_name()).copied().unwrap_or(0),
            };
            let id = inner
                .outbox
                .enqueue(host, op, generation, term, Origin::Caller);
            let (tx, rx) = oneshot::channel();
            inner.waiters.insert(id.clone(), tx);
            (id, rx)
        };
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(outcome)) => Ok(outcome),
            Ok(Err(_)) => Err(RemoteError::unavailable(format!(
                "command {id}: this member stopped leading before host {host} answered; the \
                 command may or may not have run: check before retrying"
            ))),
            Err(_) => {
                let withdrawn = {
                    let mut inner = self.lock();
                    inner.waiters.remove(&id);
                    inner.outbox.withdraw(host, &id)
                };
                Err(RemoteError::unavailable(if withdrawn {
                    format!(
                        "command {id}: host {host}'s agent did not pick it up within {timeout:?}; \
                         it was withdrawn and will not run"
                    )
                } else {
                    format!(
                        "command {id}: host {host}'s agent did not answer within {timeout:?}; it \
                         may still complete (see pvefleet events)"
                    )
                }))
            }
        }
    }

    /// The live view of `host`, if its agent beat since this member leads.
    pub(crate) fn host_live(&self, host: NodeId) -> Option<HostLiveView> {
        let now = self.now();
        let inner = self.lock();
        let h = inner.live.host(host)?;
        Some(HostLiveView {
            last_seen_ms: now.mono_ms.saturating_sub(h.last_beat_ms),
            resources: h.inventory.as_ref().map(|i| i.resources.clone()),
        })
    }

    /// Records that one beat of `host` was answered now (acknowledged or refused): see
    /// [`live::Live::note_answered`].
    pub(crate) fn note_answered(&self, host: NodeId) {
        let now = self.now();
        self.lock().live.note_answered(host, now.mono_ms);
    }

    /// Records that `host`'s beat was acknowledged now (a lease was granted).
    pub(crate) fn note_ack(&self, host: NodeId) {
        let now = self.now();
        self.lock().live.note_ack(host, now.mono_ms);
    }

    /// What this leadership heard of every host, for the liveness decisions; `None` when this
    /// member does not lead.
    pub(crate) fn sightings(&self) -> Option<(BTreeMap<NodeId, Sighting>, Watch)> {
        let now = self.now();
        let inner = self.lock();
        inner.term?;
        let seen = inner
            .live
            .hosts()
            .iter()
            .map(|(id, h)| {
                (
                    *id,
                    Sighting {
                        last_beat_ms: h.heard_ms(now.mono_ms),
                        last_ack_ms: h.last_ack_ms,
                    },
                )
            })
            .collect();
        Some((
            seen,
            Watch {
                leading_since_ms: inner.leading_since_ms,
                now_ms: now.mono_ms,
                heard_elsewhere: Default::default(),
            },
        ))
    }

    /// Every host as the scheduler sees it: replicated facts, committed usage of the VMs
    /// placed on it.
    pub(crate) fn host_views(&self, state: &FleetState) -> Vec<HostView> {
        fleet::views::host_views(state)
    }

    /// Every host with only the VMs that are to run counted as load, as PVE's HA manager
    /// chooses where a guest recovers or moves (drains, failback, gathering).
    pub(crate) fn running_host_views(&self, state: &FleetState) -> Vec<HostView> {
        fleet::views::running_host_views(state)
    }
}

/// A duration in whole milliseconds (saturating).
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
