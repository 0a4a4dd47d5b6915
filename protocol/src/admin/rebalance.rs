//! `pvefleet rebalance plan`: the moves that would even out the memory load of the hosts of
//! each PVE cluster, computed by the leader under the fleet's `[settings.rebalance]` and shown,
//! not carried out (encoding v2).

use serde::{Deserialize, Serialize};

use crate::fleet::Rebalancing;
use crate::rpc::Rpc;

/// Ask for a rebalancing plan.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RebalancePlan {}

/// One planned move.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RebalanceMove {
    /// The VM.
    pub vm: String,
    /// From this host.
    pub from: String,
    /// To this host.
    pub to: String,
    /// The spread of its cluster's memory utilization before the move, in percent points.
    pub spread_before: f64,
    /// And after it.
    pub spread_after: f64,
}

/// The plan, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RebalancePlanReply {
    /// The moves, each the best single move left after those before it.
    pub moves: Vec<RebalanceMove>,
    /// The fleet's rebalancing settings the plan was made with (its threshold and margin);
    /// when `enabled`, the leader makes these moves itself, one at a time, after the hold.
    pub settings: Rebalancing,
}

impl Rpc for RebalancePlan {
    const METHOD: &'static str = "admin.rebalance_plan";
    type Response = RebalancePlanReply;
}
