//! `rebalance plan` on the leader: [`fleet::rebalance::plan`] over the hosts as the scheduler
//! sees them now, with the default thresholds. Nothing is moved.

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
        self.read_local(|s| RebalancePlanReply {
            moves: plan(s, self.control.host_views(s), &RebalanceConfig::default())
                .into_iter()
                .map(|m| RebalanceMove {
                    vm: m.vm,
                    from: m.from,
                    to: m.to,
                    spread_before: m.spread_before,
                    spread_after: m.spread_after,
                })
                .collect(),
        })
    }
}
