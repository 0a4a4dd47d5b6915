//! The admin API (ALPN `pvefleet-admin/1`): what the `pvefleet` CLI asks a coordinator. Each
//! request names its reply through [`Rpc`](crate::Rpc); refusals (bad spec, not found, not
//! leader...) travel as the transport's typed remote errors, so only successes are modelled here.
//!
//! Writes are forwarded to the leader; reads are linearizable unless they ask for
//! [`ReadMode::Stale`].

mod admins;
mod cluster;
mod dashboard;
mod doctor;
mod fleet_apply;
mod host_admin;
mod maintenance;
mod members;
mod methods;
mod migrate;
mod ops;
mod rebalance;
mod resources;
mod tokens;
mod vips;
mod vm;

use serde::{Deserialize, Serialize};

pub use admins::{AdminAdd, AdminAddReply, AdminList, AdminListReply, AdminRevoke};
pub use cluster::{
    ClusterStatus, ClusterStatusReply, FleetGet, HostList, HostListReply, MemberList,
    MemberListReply, MemberRemove, MemberStatus, SettingsGet, SettingsPut, SettingsReply,
};
pub use dashboard::{
    DashboardLoginCreate, DashboardLoginCreated, DashboardLoginRedeem, DashboardLoginRedeemed,
};
pub use doctor::{
    DIAGNOSE_WAIT, Doctor, DoctorReport, Finding, HostCheck, MemberCheck, MemberFacts,
    MemberFactsQuery, Severity,
};
pub use fleet_apply::{FleetApply, FleetApplyReply, MemberDeleted};
pub use host_admin::{HostChanged, HostLabel, HostRemove};
pub use maintenance::{GuestLeft, HostMaintenance, HostMaintenanceReply, MaintenanceAction};
pub use members::{MemberPromote, MemberPromoteReply, MemberReportVersions};
pub use methods::METHODS;
pub use migrate::{VmMigrate, VmMigratePlan, VmMigratePlanReply, VmMigrateReply};
pub use ops::{
    HostStatus, HostStatusEntry, HostStatusReply, PlacementScores, PlacementVerdict, RESTART_WAIT,
    SNAPSHOT_CHANGE_WAIT, SNAPSHOT_LIST_WAIT, VmExplain, VmExplainReply, VmPower, VmPowerAction,
    VmPowerReply, VmSnapshot, VmSnapshotReply,
};
pub use rebalance::{RebalanceMove, RebalancePlan, RebalancePlanReply};
pub use resources::{
    AllocateIp, AllocateIpReply, PoolApply, PoolDelete, PoolList, PoolListReply, ReleaseIp,
    VipApply, VipDelete, VipList, VipListReply, VmidRangeApply, VmidRangeDelete, VmidRangeList,
    VmidRangeListReply,
};
pub use tokens::{
    Events, EventsReply, TokenCreate, TokenCreateReply, TokenList, TokenListReply, TokenRevoke,
    UNLIMITED_USES,
};
pub use vips::{VipHostStatus, VipMove, VipMoveReply, VipStatus, VipStatusEntry, VipStatusReply};
pub use vm::{
    AllocateVmid, AllocateVmidReply, VmApply, VmApplyReply, VmDelete, VmDeleteReply, VmGet, VmList,
    VmListReply,
};

/// How fresh a read must be.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReadMode {
    /// Confirmed with a quorum through the leader: sees every acknowledged write.
    #[default]
    Linearizable,
    /// The answering member's local state, possibly behind (works without a quorum).
    Stale,
}

/// What an apply did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApplyOutcome {
    /// Nothing by that name existed: it was created.
    Created,
    /// It existed and differed: it was replaced.
    Updated,
    /// It existed and was identical: nothing was written.
    Unchanged,
}

impl ApplyOutcome {
    /// The lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            ApplyOutcome::Created => "created",
            ApplyOutcome::Updated => "updated",
            ApplyOutcome::Unchanged => "unchanged",
        }
    }
}

impl std::fmt::Display for ApplyOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The reply of an apply without a generation (pools, ranges, VIPs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApplyReply {
    /// What the apply did.
    pub outcome: ApplyOutcome,
}

/// The reply of a request that succeeded with nothing to report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Done {}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn admin_method_names_are_unique_and_namespaced() {
        let unique: BTreeSet<_> = METHODS.iter().collect();
        assert_eq!(
            unique.len(),
            METHODS.len(),
            "duplicate METHOD in {METHODS:?}"
        );
        for m in METHODS {
            assert!(m.starts_with("admin."), "{m} lacks the admin. prefix");
        }
    }
}
