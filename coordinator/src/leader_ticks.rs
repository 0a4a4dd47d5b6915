//! The loop the leader's periodic parts share (the reconciler, the host watch, the VIP
//! manager): wait for a tick (or a wake-up), act only while this member leads, and in each
//! term only once it has confirmed its quorum, since a new leader may not have applied what its
//! predecessor committed (plans over that state would repeat or undo work).

use std::time::Duration;

use tokio::time::{Interval, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

use crate::service::Ctx;

/// The ticks of one periodic part.
pub(crate) struct LeaderTicks {
    ticker: Interval,
    caught_up: Option<u64>,
    /// Also wake when the control plane is woken (a result or an inventory arrived).
    wakeable: bool,
    what: &'static str,
}

impl LeaderTicks {
    /// Ticks every `period` for the part named `what` (in logs); `wakeable` also wakes it
    /// on `Control::wake`.
    pub(crate) fn new(period: Duration, wakeable: bool, what: &'static str) -> LeaderTicks {
        let mut ticker = tokio::time::interval(period);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        LeaderTicks {
            ticker,
            caught_up: None,
            wakeable,
            what,
        }
    }

    /// Waits for the next tick at which this member leads with its quorum confirmed in this
    /// term, and answers the term; `None` once `shutdown` is cancelled. The control plane's
    /// leadership is synced at every tick, so its soft state belongs to this term.
    pub(crate) async fn next(&mut self, ctx: &Ctx, shutdown: &CancellationToken) -> Option<u64> {
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return None,
                _ = self.ticker.tick() => {}
                () = ctx.control.woken(), if self.wakeable => {}
            }
            let term = ctx.leading_term();
            ctx.control.sync_leadership(term);
            let Some(term) = term else {
                self.caught_up = None;
                continue;
            };
            if self.caught_up != Some(term) {
                let confirmed = tokio::select! {
                    () = shutdown.cancelled() => return None,
                    confirmed = ctx.confirm_linearizable() => confirmed,
                };
                if let Err(e) = confirmed {
                    tracing::debug!(part = self.what, error = %e, "leadership not confirmed yet");
                    continue;
                }
                self.caught_up = Some(term);
            }
            return Some(term);
        }
    }
}
