//! The leader's VIP manager (docs/design/vips.md): every tick, while this member leads, it
//! plans over the applied state and what the agents said in their renewals
//! (`fleet::vip::manage::plan`) and commits each ownership change as `MoveVip`, a
//! compare-and-set on the VIP's epoch. It only chooses: the members' promises decide when the
//! new owner may hold the address, so a choice on a stale view delays a move and never makes
//! a second holder.
//!
//! ```text
//!  tick ─▶ leading? (new term: confirm the quorum and catch up first)
//!       ─▶ plan(state, sightings, now) ─▶ MoveVip{name, owner, expected_epoch, reason} ─▶ Raft
//! ```

use std::sync::Arc;
use std::time::Duration;

use fleet::state::Command;
use fleet::vip::manage::{ManageConfig, plan, standbys};
use protocol::time::Now;
use tokio_util::sync::CancellationToken;

use crate::leader_ticks::LeaderTicks;
use crate::service::Ctx;

/// How often the leader plans: a quarter of a renewal interval, so a lost owner is replaced
/// within a few ms of `lost_after_ms`.
const TICK: Duration = Duration::from_millis(25);

/// The VIP manager of one member (it acts only while the member leads).
pub(crate) struct VipManager {
    ctx: Arc<Ctx>,
    cfg: ManageConfig,
}

impl VipManager {
    /// The manager over the member's shared context, with the default timing.
    pub(crate) fn new(ctx: Arc<Ctx>) -> VipManager {
        VipManager {
            ctx,
            cfg: ManageConfig::DEFAULT,
        }
    }

    /// Runs until `shutdown`.
    pub(crate) async fn run(self, shutdown: CancellationToken) {
        let mut ticks = LeaderTicks::new(TICK, false, "vip manager");
        while ticks.next(&self.ctx, &shutdown).await.is_some() {
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = self.step() => {}
            }
        }
    }

    async fn step(&self) {
        let planned = self.ctx.read_local(|state| {
            let (mut seen, now) = self.ctx.vip_sightings.view(state);
            seen.vouched = self.ctx.vip_promises.live();
            (
                plan(state, &seen, now, &self.cfg),
                standbys(state, &seen, now, &self.cfg),
            )
        });
        let (moves, standby_changes) = match planned {
            Ok(planned) => planned,
            Err(e) => {
                tracing::warn!(error = %e, "vip manager: cannot read the state");
                return;
            }
        };
        for c in standby_changes {
            let cmd = Command::SetVipStandby {
                name: c.vip.clone(),
                standby: c.standby,
                expected_epoch: c.expected_epoch,
            };
            if let Err(e) = self.ctx.propose(&cmd).await {
                tracing::debug!(vip = %c.vip, error = %e, "vip manager: standby not recorded");
            }
        }
        for m in moves {
            let cmd = Command::MoveVip {
                name: m.vip.clone(),
                owner: m.to,
                expected_epoch: m.expected_epoch,
                reason: m.reason.clone(),
                now: Now::read().millis,
            };
            match self.ctx.propose_raw(&cmd).await {
                Ok(Ok(_)) => {
                    tracing::info!(vip = %m.vip, owner = ?m.to, reason = %m.reason, "VIP moved");
                }
                Ok(Err(refusal)) => {
                    tracing::debug!(vip = %m.vip, error = %refusal, "vip manager: move refused");
                }
                Err(e) => tracing::debug!(vip = %m.vip, error = %e, "vip manager: not proposed"),
            }
        }
    }
}
