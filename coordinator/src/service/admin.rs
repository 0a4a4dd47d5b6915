//! The Admin and Join handlers of a member: every request of `protocol::admin` is registered
//! here, as a read (pure function of the state, linearizable unless it asks for stale), a write
//! (request → command at the leader's time → reply) or one of the few requests with their own
//! logic (status, tokens, membership). Each answer is counted by method and outcome.

use std::future::Future;
use std::sync::Arc;

use protocol::Role;
use protocol::admin::FleetApply;
use protocol::admin::{
    AdminAdd, AdminList, AdminRevoke, AllocateIp, AllocateVmid, ClusterStatus, ClusterStatusReply,
    Events, FleetGet, HostList, MemberList, MemberPromote, MemberRemove, MemberReportVersions,
    PoolApply, PoolDelete, PoolList, ReadMode, ReleaseIp, SettingsGet, SettingsPut, TokenCreate,
    TokenList, TokenRevoke, VipApply, VipDelete, VipList, VmApply, VmDelete, VmGet, VmList,
    VmidRangeApply, VmidRangeDelete, VmidRangeList,
};
use protocol::admin::{DashboardLoginCreate, DashboardLoginRedeem};
use protocol::admin::{Doctor, HostLabel, HostRemove, MemberFactsQuery};
use protocol::admin::{
    HostMaintenance, HostStatus, RebalancePlan, VipMove, VipStatus, VmExplain, VmMigrate,
    VmMigratePlan, VmPower, VmSnapshot,
};
use protocol::fleet::UnixMillis;
use protocol::join::JoinRequest;
use transport::{Caller, RemoteError, Router, Rpc, Service};

use super::status::cluster_status;
use super::{Ctx, admins, reads, writes};
use fleet::state::{Command, CommandReply, FleetState};
use protocol::time::Now;

type ReadFn<R> = fn(&FleetState, &R) -> Result<<R as Rpc>::Response, RemoteError>;
type BuildFn<R> = fn(&R, UnixMillis) -> Result<Command, RemoteError>;
type ReplyFn<R> = fn(&R, CommandReply) -> Result<<R as Rpc>::Response, RemoteError>;

/// Registers every Admin request and the Join request for `ctx`.
pub(crate) fn register(router: &mut Router, ctx: &Arc<Ctx>) {
    read::<MemberList>(router, ctx, |r| r.read, reads::member_list);
    read::<HostList>(router, ctx, |r| r.read, reads::host_list);
    read::<SettingsGet>(router, ctx, |r| r.read, reads::settings_get);
    read::<FleetGet>(router, ctx, |r| r.read, reads::fleet_get);
    read::<VmList>(router, ctx, |r| r.read, reads::vm_list);
    read::<VmGet>(router, ctx, |r| r.read, reads::vm_get);
    read::<PoolList>(router, ctx, |r| r.read, reads::pool_list);
    read::<VmidRangeList>(router, ctx, |r| r.read, reads::vmid_range_list);
    read::<VipList>(router, ctx, |r| r.read, reads::vip_list);
    read::<TokenList>(router, ctx, |r| r.read, reads::token_list);
    read::<Events>(router, ctx, |r| r.read, reads::events);
    read::<AdminList>(router, ctx, |r| r.read, admins::admin_list);
    write::<AdminRevoke>(
        router,
        ctx,
        admins::admin_revoke,
        admins::admin_revoke_reply,
    );
    custom::<AdminAdd, _, _>(router, ctx, |ctx, caller, req| async move {
        ctx.on_leader(&caller, req, |r| {
            let ctx = Arc::clone(&ctx);
            async move { ctx.admin_add(&r).await }
        })
        .await
    });

    write::<SettingsPut>(
        router,
        ctx,
        writes::settings_put,
        writes::settings_put_reply,
    );
    write::<VmApply>(router, ctx, writes::vm_apply, writes::vm_apply_reply);
    custom::<FleetApply, _, _>(router, ctx, |ctx, caller, req| async move {
        ctx.on_leader(&caller, req, |r| {
            let ctx = Arc::clone(&ctx);
            async move { ctx.fleet_apply(&r).await }
        })
        .await
    });
    write::<VmDelete>(router, ctx, writes::vm_delete, writes::vm_delete_reply);
    write::<AllocateVmid>(
        router,
        ctx,
        writes::allocate_vmid,
        writes::allocate_vmid_reply,
    );
    write::<PoolApply>(router, ctx, writes::pool_apply, writes::pool_apply_reply);
    write::<PoolDelete>(router, ctx, writes::pool_delete, writes::pool_delete_reply);
    write::<AllocateIp>(router, ctx, writes::allocate_ip, writes::allocate_ip_reply);
    write::<ReleaseIp>(router, ctx, writes::release_ip, writes::release_ip_reply);
    write::<VmidRangeApply>(
        router,
        ctx,
        writes::vmid_range_apply,
        writes::vmid_range_apply_reply,
    );
    write::<VmidRangeDelete>(
        router,
        ctx,
        writes::vmid_range_delete,
        writes::vmid_range_delete_reply,
    );
    write::<VipApply>(router, ctx, writes::vip_apply, writes::vip_apply_reply);
    write::<VipDelete>(router, ctx, writes::vip_delete, writes::vip_delete_reply);
    write::<TokenRevoke>(
        router,
        ctx,
        writes::token_revoke,
        writes::token_revoke_reply,
    );

    custom::<TokenCreate, _, _>(router, ctx, |ctx, caller, req| async move {
        ctx.on_leader(&caller, req, |r| {
            let ctx = Arc::clone(&ctx);
            async move { ctx.token_create(&r).await }
        })
        .await
    });
    custom::<MemberRemove, _, _>(router, ctx, |ctx, caller, req| async move {
        ctx.on_leader(&caller, req, |r| {
            let ctx = Arc::clone(&ctx);
            async move { ctx.member_remove(&r).await }
        })
        .await
    });
    custom::<MemberPromote, _, _>(router, ctx, |ctx, caller, req| async move {
        ctx.on_leader(&caller, req, |r| {
            let ctx = Arc::clone(&ctx);
            async move { ctx.member_promote(&r).await }
        })
        .await
    });
    custom::<MemberReportVersions, _, _>(router, ctx, |ctx, caller, req| async move {
        // A member speaks for itself only: its certificate names the id it reports.
        let own = caller
            .peer
            .is_some_and(|p| p.role == protocol::Role::Coordinator && p.node_id == req.id);
        if !own {
            return Err(RemoteError::unauthorized(format!(
                "only coordinator {} itself reports the versions of its build",
                req.id
            )));
        }
        ctx.on_leader(&caller, req, |r| {
            let ctx = Arc::clone(&ctx);
            async move { ctx.member_report_versions(&r).await }
        })
        .await
    });
    custom::<VmExplain, _, _>(router, ctx, |ctx, caller, req| async move {
        ctx.on_leader(&caller, req, |r| {
            let ctx = Arc::clone(&ctx);
            async move { ctx.vm_explain(&r).await }
        })
        .await
    });
    custom::<HostStatus, _, _>(router, ctx, |ctx, caller, req| async move {
        ctx.on_leader(&caller, req, |_| {
            let ctx = Arc::clone(&ctx);
            async move { ctx.host_status().await }
        })
        .await
    });
    custom::<VmPower, _, _>(router, ctx, |ctx, caller, req| async move {
        ctx.on_leader(&caller, req, |r| {
            let ctx = Arc::clone(&ctx);
            async move { ctx.vm_power(&r).await }
        })
        .await
    });
    custom::<VmSnapshot, _, _>(router, ctx, |ctx, caller, req| async move {
        ctx.on_leader(&caller, req, |r| {
            let ctx = Arc::clone(&ctx);
            async move { ctx.vm_snapshot(&r).await }
        })
        .await
    });
    custom::<RebalancePlan, _, _>(router, ctx, |ctx, caller, req| async move {
        ctx.on_leader(&caller, req, |r| {
            let ctx = Arc::clone(&ctx);
            async move { ctx.rebalance_plan(&r).await }
        })
        .await
    });
    custom::<HostMaintenance, _, _>(router, ctx, |ctx, caller, req| async move {
        ctx.on_leader(&caller, req, |r| {
            let ctx = Arc::clone(&ctx);
            async move { ctx.host_maintenance(&r).await }
        })
        .await
    });
    custom::<VmMigrate, _, _>(router, ctx, |ctx, caller, req| async move {
        ctx.on_leader(&caller, req, |r| {
            let ctx = Arc::clone(&ctx);
            async move { ctx.vm_migrate(&r).await }
        })
        .await
    });
    custom::<VmMigratePlan, _, _>(router, ctx, |ctx, caller, req| async move {
        ctx.on_leader(&caller, req, |r| {
            let ctx = Arc::clone(&ctx);
            async move { ctx.vm_migrate_plan(&r).await }
        })
        .await
    });
    custom::<VipStatus, _, _>(router, ctx, |ctx, caller, req| async move {
        ctx.on_leader(&caller, req, |r| {
            let ctx = Arc::clone(&ctx);
            async move { ctx.vip_status(&r).await }
        })
        .await
    });
    custom::<VipMove, _, _>(router, ctx, |ctx, caller, req| async move {
        ctx.on_leader(&caller, req, |r| {
            let ctx = Arc::clone(&ctx);
            async move { ctx.vip_move(&r).await }
        })
        .await
    });
    custom::<HostLabel, _, _>(router, ctx, |ctx, caller, req| async move {
        ctx.on_leader(&caller, req, |r| {
            let ctx = Arc::clone(&ctx);
            async move { ctx.host_label(&r).await }
        })
        .await
    });
    custom::<HostRemove, _, _>(router, ctx, |ctx, caller, req| async move {
        ctx.on_leader(&caller, req, |r| {
            let ctx = Arc::clone(&ctx);
            async move { ctx.host_remove(&r).await }
        })
        .await
    });
    custom::<Doctor, _, _>(router, ctx, |ctx, caller, req| async move {
        ctx.on_leader(&caller, req, |_| {
            let ctx = Arc::clone(&ctx);
            async move { ctx.doctor().await }
        })
        .await
    });
    custom::<DashboardLoginCreate, _, _>(router, ctx, |ctx, caller, mut req| async move {
        // The issuer is who called: an admin's certificate names it; a member forwarding the
        // call keeps what the first member set.
        match caller.peer {
            Some(p) if p.role == Role::Admin => req.issuer = Some(p.node_id),
            Some(p) if p.role == Role::Coordinator => {}
            _ => {
                return Err(RemoteError::unauthorized(
                    "a dashboard login is minted by an admin",
                ));
            }
        }
        ctx.on_leader(&caller, req, |r| {
            let ctx = Arc::clone(&ctx);
            async move { ctx.dashboard_login_create(&r).await }
        })
        .await
    });
    // Whoever shows the login's secret redeems it: a member's dashboard, for the browser
    // that opened the link.
    custom::<DashboardLoginRedeem, _, _>(router, ctx, |ctx, caller, req| async move {
        ctx.on_leader(&caller, req, |r| {
            let ctx = Arc::clone(&ctx);
            async move { ctx.dashboard_login_redeem(&r).await }
        })
        .await
    });
    // Answered by the member that receives it: the leader asks each member directly.
    custom::<MemberFactsQuery, _, _>(router, ctx, |ctx, _caller, _req| async move {
        Ok(ctx.member_facts())
    });
    custom::<ClusterStatus, _, _>(router, ctx, |ctx, caller, req| async move {
        ctx.status(&caller, req).await
    });

    let join = Arc::clone(ctx);
    router.handle(Service::Join, move |_caller: Caller, req: JoinRequest| {
        let ctx = Arc::clone(&join);
        async move {
            let outcome = ctx.join(&req).await;
            ctx.metrics.admin_call(JoinRequest::METHOD, &outcome);
            outcome
        }
    });
}

/// A read: local for `ReadMode::Stale`, else on the leader after a quorum check.
fn read<R: Rpc + Clone>(
    router: &mut Router,
    ctx: &Arc<Ctx>,
    mode: fn(&R) -> ReadMode,
    f: ReadFn<R>,
) {
    custom::<R, _, _>(router, ctx, move |ctx, caller, req| async move {
        if mode(&req) == ReadMode::Stale {
            return ctx.read_local(|s| f(s, &req))?;
        }
        ctx.on_leader(&caller, req, |r| {
            let ctx = Arc::clone(&ctx);
            async move {
                ctx.confirm_linearizable().await?;
                ctx.read_local(|s| f(s, &r))?
            }
        })
        .await
    });
}

/// A write: on the leader, the request becomes a command at the leader's time.
fn write<R: Rpc + Clone>(
    router: &mut Router,
    ctx: &Arc<Ctx>,
    build: BuildFn<R>,
    reply: ReplyFn<R>,
) {
    custom::<R, _, _>(router, ctx, move |ctx, caller, req| async move {
        ctx.on_leader(&caller, req, |r| {
            let ctx = Arc::clone(&ctx);
            async move {
                let cmd = build(&r, Now::read().millis)?;
                let committed = ctx.propose(&cmd).await?;
                #[cfg(feature = "fault-points")]
                crate::fault_point::after_commit(R::METHOD);
                reply(&r, committed)
            }
        })
        .await
    });
}

/// Registers `f` for `R` on the Admin service, counting each answer.
fn custom<R, F, Fut>(router: &mut Router, ctx: &Arc<Ctx>, f: F)
where
    R: Rpc + Clone,
    F: Fn(Arc<Ctx>, Caller, R) -> Fut + Send + Sync + Copy + 'static,
    Fut: Future<Output = Result<R::Response, RemoteError>> + Send + 'static,
{
    let ctx = Arc::clone(ctx);
    router.handle(Service::Admin, move |caller: Caller, req: R| {
        let ctx = Arc::clone(&ctx);
        async move {
            let outcome = f(Arc::clone(&ctx), caller, req).await;
            ctx.metrics.admin_call(R::METHOD, &outcome);
            outcome
        }
    });
}

impl Ctx {
    /// The Raft view of this member.
    pub(crate) async fn local_status(&self) -> Result<ClusterStatusReply, RemoteError> {
        let committed = self
            .raft
            .with_raft_state(|st| st.committed.map(|l| l.index))
            .await
            .map_err(|e| RemoteError::unavailable(format!("raft is not running: {e}")))?;
        let metrics = self.raft.metrics().borrow().clone();
        let (cluster, members) =
            self.read_local(|s| (s.cluster_version(), s.member_versions().clone()))?;
        Ok(cluster_status(
            &self.cluster_id,
            &metrics,
            committed,
            (cluster, &members),
        ))
    }

    /// The leader's view when it can be had (it alone knows replication progress), else this
    /// member's own: status must work without a quorum, when it is needed most.
    async fn status(
        &self,
        caller: &Caller,
        req: ClusterStatus,
    ) -> Result<ClusterStatusReply, RemoteError> {
        let from_member = caller.peer.is_some_and(|p| p.role == Role::Coordinator);
        if !from_member
            && let Some(leader) = self.known_leader()
            && leader.id != self.node_id
            && let Ok(view) = self.forwarder.call(&leader, &req).await
        {
            return Ok(view);
        }
        self.local_status().await
    }
}
