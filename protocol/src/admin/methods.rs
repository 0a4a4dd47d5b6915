//! [`METHODS`]: every admin method name, in one table. Its own file because it names every
//! request of the admin API, while those requests use the shared replies and read modes of
//! `admin.rs`.

use super::FleetApply;
use super::{
    AdminAdd, AdminList, AdminRevoke, AllocateIp, AllocateVmid, ClusterStatus, Events, FleetGet,
    HostList, HostMaintenance, HostStatus, MemberList, MemberPromote, MemberRemove,
    MemberReportVersions, PoolApply, PoolDelete, PoolList, RebalancePlan, ReleaseIp, SettingsGet,
    SettingsPut, TokenCreate, TokenList, TokenRevoke, VipApply, VipDelete, VipList, VipMove,
    VipStatus, VmApply, VmDelete, VmExplain, VmGet, VmList, VmMigrate, VmMigratePlan, VmPower,
    VmSnapshot, VmidRangeApply, VmidRangeDelete, VmidRangeList,
};
use super::{DashboardLoginCreate, DashboardLoginRedeem};
use super::{Doctor, HostLabel, HostRemove, MemberFactsQuery};
use crate::Rpc;

/// Every admin method name, for uniqueness checks and routing tables.
pub const METHODS: &[&str] = &[
    <ClusterStatus as Rpc>::METHOD,
    <DashboardLoginCreate as Rpc>::METHOD,
    <DashboardLoginRedeem as Rpc>::METHOD,
    <Doctor as Rpc>::METHOD,
    <HostLabel as Rpc>::METHOD,
    <HostRemove as Rpc>::METHOD,
    <MemberFactsQuery as Rpc>::METHOD,
    <AdminList as Rpc>::METHOD,
    <AdminAdd as Rpc>::METHOD,
    <AdminRevoke as Rpc>::METHOD,
    <MemberList as Rpc>::METHOD,
    <MemberRemove as Rpc>::METHOD,
    <MemberPromote as Rpc>::METHOD,
    <MemberReportVersions as Rpc>::METHOD,
    <HostList as Rpc>::METHOD,
    <SettingsGet as Rpc>::METHOD,
    <SettingsPut as Rpc>::METHOD,
    <FleetGet as Rpc>::METHOD,
    <VmApply as Rpc>::METHOD,
    <VmList as Rpc>::METHOD,
    <VmGet as Rpc>::METHOD,
    <VmDelete as Rpc>::METHOD,
    <AllocateVmid as Rpc>::METHOD,
    <PoolApply as Rpc>::METHOD,
    <PoolList as Rpc>::METHOD,
    <PoolDelete as Rpc>::METHOD,
    <AllocateIp as Rpc>::METHOD,
    <ReleaseIp as Rpc>::METHOD,
    <VmidRangeApply as Rpc>::METHOD,
    <VmidRangeList as Rpc>::METHOD,
    <VmidRangeDelete as Rpc>::METHOD,
    <VipApply as Rpc>::METHOD,
    <VipList as Rpc>::METHOD,
    <VipDelete as Rpc>::METHOD,
    <TokenCreate as Rpc>::METHOD,
    <TokenList as Rpc>::METHOD,
    <TokenRevoke as Rpc>::METHOD,
    <Events as Rpc>::METHOD,
    <VmExplain as Rpc>::METHOD,
    <VmPower as Rpc>::METHOD,
    <VmSnapshot as Rpc>::METHOD,
    <HostStatus as Rpc>::METHOD,
    <VipStatus as Rpc>::METHOD,
    <VipMove as Rpc>::METHOD,
    <VmMigrate as Rpc>::METHOD,
    <VmMigratePlan as Rpc>::METHOD,
    <HostMaintenance as Rpc>::METHOD,
    <RebalancePlan as Rpc>::METHOD,
    <FleetApply as Rpc>::METHOD,
];
