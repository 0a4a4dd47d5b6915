//! The leader's host watch (docs/design/fencing.md): every tick, while this member leads, it
//! decides from what this leadership heard of each agent (`fleet::liveness::plan`) which hosts
//! became unreachable and which are proven fenced, and commits each change as
//! `SetHostLiveness`, a compare-and-set on the host's state. A host that beats again is set
//! back online by the heartbeat itself (`service::agent`).
//!
//! ```text
//!  tick ─▶ leading? (new term: confirm the quorum and catch up first)
//!       ─▶ plan(hosts, sightings since this leadership, now) ─▶ SetHostLiveness ─▶ Raft
//! ```
//!
//! A member that cannot commit (no quorum) changes nothing: a minority never fences anyone.
//!
//! Hosts that left cleanly (the state's leaving records) count their hold as their lease; a
//! record of a host that is back is dropped (`EndLeaving`) once this leadership has seen it
//! back for longer than the hold's fence wait, so a hold granted before can no longer run.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use fleet::liveness::{LivenessConfig, Transition, plan};
use fleet::state::Command;
use protocol::NodeId;
use protocol::fleet::HostState;
use protocol::time::Now;
use protocol::version::HOST_LIVENESS;
use tokio_util::sync::CancellationToken;

use crate::leader_ticks::LeaderTicks;
use crate::service::Ctx;

/// How often the leader looks: a tenth of the agents' default beat, so a fence is committed
/// within this of the proof holding.
const TICK: Duration = Duration::from_millis(100);
/// An agent whose VIP renewal this member heard this recently is alive and connected (an agent
/// with nothing to hold renews every second; `node-agent::vip::keeper`'s `idle_every`).
const HEARD_WITHIN_MS: u64 = 1_500;

/// The host watch of one member (it acts only while the member leads).
pub(crate) struct HostWatch {
    ctx: Arc<Ctx>,
    cfg: LivenessConfig,
    /// When this leadership (term) first saw each leaving host back, on the monotonic clock.
    back_since: Mutex<(u64, BTreeMap<NodeId, u64>)>,
}

impl HostWatch {
    /// The watch over the member's shared context, with the timing of its control config.
    pub(crate) fn new(ctx: Arc<Ctx>) -> HostWatch {
        let cfg = ctx.control.config().liveness();
        HostWatch {
            ctx,
            cfg,
            back_since: Mutex::new((0, BTreeMap::new())),
        }
    }

    /// Runs until `shutdown`.
    pub(crate) async fn run(self, shutdown: CancellationToken) {
        // Synced at each tick: silence is counted from (just after) this election.
        let mut ticks = LeaderTicks::new(TICK, false, "host watch");
        while let Some(term) = ticks.next(&self.ctx, &shutdown).await {
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = self.step(term) => {}
            }
        }
    }

    async fn step(&self, term: u64) {
        let Some((seen, mut watch)) = self.ctx.control.sightings() else {
            return;
        };
        // Every agent renews its VIP leases with every member at least every second: an
        // agent heard so is alive and connected even before it finds this new leader.
        watch.heard_elsewhere = self.ctx.vip_sightings.heard_within(HEARD_WITHIN_MS);
        let now_ms = watch.now_ms;
        let planned = self.ctx.read_local(|state| {
            let holds: BTreeMap<NodeId, u64> = state
                .leaving()
                .iter()
                .map(|(id, l)| (*id, l.hold_ms))
                .collect();
            let back: Vec<(NodeId, u64)> = state
                .leaving()
                .iter()
                .filter(|(_, l)| l.returned)
                .map(|(id, l)| (*id, l.hold_ms))
                .collect();
            (
                plan(state.hosts(), &seen, &holds, &watch, &self.cfg),
                state.cluster_version() >= HOST_LIVENESS,
                back,
            )
        });
        let (transitions, with_reason, back) = match planned {
            Ok(planned) => planned,
            Err(e) => {
                tracing::warn!(error = %e, "host watch: cannot read the state");
                return;
            }
        };
        for t in transitions {
            self.commit(&t, with_reason).await;
        }
        self.end_holds(term, now_ms, &back).await;
    }

    /// Drops the leaving records of hosts back for longer than their hold's fence wait.
    async fn end_holds(&self, term: u64, now_ms: u64, back: &[(NodeId, u64)]) {
        let due: Vec<NodeId> = {
            let mut guard = self
                .back_since
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if guard.0 != term {
                *guard = (term, BTreeMap::new());
            }
            let since = &mut guard.1;
            since.retain(|id, _| back.iter().any(|(b, _)| b == id));
            back.iter()
                .filter(|(id, hold)| {
                    let first = *since.entry(*id).or_insert(now_ms);
                    let wait = LivenessConfig {
                        lease_ms: *hold,
                        ..self.cfg
                    }
                    .fence_wait_ms();
                    now_ms.saturating_sub(first) >= wait
                })
                .map(|(id, _)| *id)
                .collect()
        };
        for id in due {
            let cmd = Command::EndLeaving {
                id,
                now: Now::read().millis,
            };
            match self.ctx.propose_raw(&cmd).await {
                Ok(Ok(_)) => tracing::info!(host = id, "host back for longer than its hold"),
                Ok(Err(refusal)) => {
                    tracing::debug!(host = id, error = %refusal, "host watch: end of hold refused");
                }
                Err(e) => tracing::debug!(host = id, error = %e, "host watch: not proposed"),
            }
        }
    }

    /// Commits one transition: `SetHostLiveness` (with its reason) once the cluster reads v2.
    /// Before, only `unreachable` is committed (as `SetHostState`): without the
    /// compare-and-set, a fence decided just before a beat renewed the lease could land after
    /// it, so no host is fenced (and nothing recovered) until the cluster reads v2.
    async fn commit(&self, t: &Transition, with_reason: bool) {
        let now = Now::read().millis;
        let cmd = if with_reason {
            Command::SetHostLiveness {
                id: t.host,
                expected: t.expected,
                state: t.to,
                reason: t.reason.clone(),
                now,
            }
        } else if t.to == HostState::Unreachable {
            Command::SetHostState {
                id: t.host,
                state: t.to,
                now,
            }
        } else {
            return;
        };
        match self.ctx.propose_raw(&cmd).await {
            Ok(Ok(_)) => {
                if t.to == HostState::Fenced {
                    tracing::warn!(host = t.host, reason = %t.reason, "host fenced");
                } else {
                    tracing::warn!(host = t.host, state = %t.to, reason = %t.reason, "host state");
                }
                self.ctx.control.wake();
            }
            Ok(Err(refusal)) => {
                tracing::debug!(host = t.host, error = %refusal, "host watch: change refused");
            }
            Err(e) => tracing::debug!(host = t.host, error = %e, "host watch: not proposed"),
        }
    }
}
