//! `rebalance plan` on the leader: [`fleet::rebalance::plan`] over the hosts as the scheduler
//! sees them now, with the fleet's threshold and margin (`[settings.rebalance]`), so it shows
//! what automatic rebalancing would do. Nothing is moved.

use protocol::admin::{RebalanceMove, RebalancePlan, RebalancePlanReply};
use transport::RemoteError;

use super::Ctx;
use fleet::rebalance::{RebalanceConfig, plan};

impl Ctx {
    /// `rebalance plan` (this member leads).
    pub(crate) async fn rebalance_plan(
        &self,
        _req: &RebalancePlan,
    ) -> Result<RebalancePlanReply, RemoteError> {
        self.confirm_linearizable().await?;
        self.read_local(|s| {
            let settings = s.settings().rebalance.clone();
            let cfg = RebalanceConfig {
                threshold_pct: f64::from(settings.threshold_pct),
                min_gain_pct: f64::from(settings.min_gain_pct),
                ..RebalanceConfig::default()
            };
            RebalancePlanReply {
                moves: plan(s, self.control.host_views(s), &cfg)
                    .into_iter()
                    .map(|m| RebalanceMove {
                        vm: m.vm,
                        from: m.from,
                        to: m.to,
                        spread_before: m.spread_before,
                        spread_after: m.spread_after,
                    })
                    .collect(),
                settings,
            }
        })
    }
}
