//! Keeping the cluster version current, on every member: a member reports what its build reads
//! whenever the fleet state does not say so (at its first start, after an upgrade), and the
//! leader raises the cluster version as soon as every member reads a newer one
//! ([`fleet::state::next_cluster_version`]; the state machine checks the rule again when the
//! command is applied). Reports and raises are plain writes: retried on the next round when
//! there is no leader or quorum.
//!
//! ```text
//!  every ROUND:  member recorded with a range ≠ this build's ─▶ MemberReportVersions ─▶ leader
//!                this member leads ∧ next_cluster_version = Some(v) ─▶ SetClusterVersion(v)
//! ```

use std::sync::Arc;
use std::time::Duration;

use fleet::state::{Command, CommandReply, next_cluster_version};
use protocol::admin::MemberReportVersions;
use protocol::time::Now;
use protocol::version::VersionRange;
use tokio_util::sync::CancellationToken;

use crate::service::Ctx;

/// How often the task looks: a rolling upgrade reaches the new version within a round of the
/// last member's restart.
const ROUND: Duration = Duration::from_secs(2);

/// The task of one member.
pub(crate) struct VersionKeeper {
    pub(crate) ctx: Arc<Ctx>,
}

impl VersionKeeper {
    /// Runs until `shutdown`.
    pub(crate) async fn run(self, shutdown: CancellationToken) {
        loop {
            if let Err(why) = self.round().await {
                tracing::debug!(%why, "cluster version round not done; retrying");
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(ROUND) => {}
            }
        }
    }

    async fn round(&self) -> Result<(), String> {
        let ctx = &self.ctx;
        let id = ctx.node_id;
        let own = VersionRange::this_build();
        let (member, recorded) = ctx
            .read_local(|s| {
                (
                    s.members().contains_key(&id),
                    s.member_versions().get(&id).copied(),
                )
            })
            .map_err(|e| e.message)?;
        if !member {
            return Ok(()); // not settled yet: the membership task records it first
        }
        let leader = ctx.leader().await.map_err(|e| e.message)?;
        let leads = leader.id == id;
        if recorded != Some(own) {
            let req = MemberReportVersions { id, versions: own };
            if leads {
                ctx.member_report_versions(&req)
                    .await
                    .map_err(|e| e.to_string())?;
            } else {
                ctx.forwarder
                    .call(&leader, &req)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            tracing::info!(versions = %own, "reported the encodings this build reads");
        }
        if !leads {
            return Ok(());
        }
        let Some(version) = ctx
            .read_local(next_cluster_version)
            .map_err(|e| e.message)?
        else {
            return Ok(());
        };
        let now = Now::read().millis;
        match ctx
            .propose(&Command::SetClusterVersion { version, now })
            .await
            .map_err(|e| e.to_string())?
        {
            CommandReply::Done => {
                tracing::info!(%version, "raised the cluster version: every member reads it");
                Ok(())
            }
            other => Err(format!("unexpected reply {other:?}")),
        }
    }
}
