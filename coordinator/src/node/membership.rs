//! Settling a member's place in the Raft group when it starts. A founder initializes the group
//! (exactly once: its stage then becomes `member`, so a later start never initializes again)
//! and records itself; a joined member asks the leader to promote it (learner, catch up,
//! voter). Both retry until done or cancelled; the member is ready when this returns.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use openraft::error::{InitializeError, RaftError};
use protocol::admin::MemberPromote;
use protocol::fleet::{Member, MemberRole};
use raft::{MemberNode, NodeId};
use tokio_util::sync::CancellationToken;
use transport::{RemoteCode, TransportError};

use crate::config::{MembershipStage, NodeSettings};
use crate::forward::{ForwardError, Target};
use crate::service::Ctx;
use bootstrap::NodeDir;
use fleet::state::{Command, CommandReply};
use protocol::time::{Now, secs_to_millis};
use protocol::version::{ADMINS, VersionRange};

const RETRY_PAUSE: Duration = Duration::from_millis(500);

/// What one member needs to settle.
pub(crate) struct Settle {
    pub(crate) ctx: Arc<Ctx>,
    pub(crate) data_dir: PathBuf,
    pub(crate) settings: NodeSettings,
    /// Members to ask first (from `cluster.toml`), the joining member excluded.
    pub(crate) seeds: Vec<Target>,
}

impl Settle {
    /// Retries until the membership is settled (`true`) or `cancel` fires (`false`).
    pub(crate) async fn run(mut self, cancel: CancellationToken) -> bool {
        loop {
            let stage = self.settings.membership;
            let attempt = async {
                match stage {
                    MembershipStage::Member => Ok(()),
                    MembershipStage::Founder => self.found().await,
                    MembershipStage::Pending => self.promote().await,
                }
            };
            let attempt = tokio::select! {
                () = cancel.cancelled() => return false,
                attempt = attempt => attempt,
            };
            if stage == MembershipStage::Member {
                return true;
            }
            match attempt {
                Ok(()) => {
                    self.settings.membership = MembershipStage::Member;
                    if let Err(e) = self.settings.store(&self.data_dir) {
                        tracing::error!(error = %e, "cannot record that this member has joined");
                    }
                    return true;
                }
                Err(why) => tracing::info!(%why, "membership not settled yet; retrying"),
            }
            tokio::select! {
                () = cancel.cancelled() => return false,
                () = tokio::time::sleep(RETRY_PAUSE) => {}
            }
        }
    }

    fn node_id(&self) -> NodeId {
        self.ctx.node_id
    }

    /// Initializes the group with this member alone, then records it in the fleet state.
    async fn found(&self) -> Result<(), String> {
        let ctx = &self.ctx;
        let addr = self.settings.listen.to_string();
        let initialized = ctx.raft.is_initialized().await.map_err(|e| e.to_string())?;
        if !initialized {
            let members = [(self.node_id(), MemberNode { addr: addr.clone() })];
            match ctx
                .raft
                .initialize(std::collections::BTreeMap::from(members))
                .await
            {
                Ok(()) | Err(RaftError::APIError(InitializeError::NotAllowed(_))) => {}
                Err(e) => return Err(format!("initialize raft: {e}")),
            }
        }
        let leader = ctx.leader().await.map_err(|e| e.message)?;
        if ctx
            .read_local(|s| s.members().contains_key(&self.node_id()))
            .map_err(|e| e.message)?
        {
            return self.record_first_admin().await;
        }
        if leader.id != self.node_id() {
            return Err(format!(
                "member {} leads; waiting to see this member recorded",
                leader.id
            ));
        }
        let member = Member {
            id: self.node_id(),
            addr,
            role: MemberRole::Voter,
        };
        let now = Now::read().millis;
        match ctx.propose(&Command::AddMember { member, now }).await {
            Ok(CommandReply::Done) => self.record_first_admin().await,
            Ok(other) => Err(format!("unexpected reply {other:?}")),
            Err(e) => Err(e.to_string()),
        }
    }

    /// The founder, alone in its new cluster, starts it at this build's encoding version and
    /// records the admin identity `init` made, with the renewal allowance given to `init`.
    /// (A cluster founded by an older release records its admins at their first renewal.)
    async fn record_first_admin(&self) -> Result<(), String> {
        let ctx = &self.ctx;
        let id = self.node_id();
        let err = |e: transport::RemoteError| e.to_string();
        let (alone, cluster) = ctx
            .read_local(|s| (s.members().len() == 1, s.cluster_version()))
            .map_err(err)?;
        let now = Now::read().millis;
        if cluster < ADMINS {
            if !alone {
                return Ok(()); // the members raise it together (node::versions)
            }
            let versions = VersionRange::this_build();
            ctx.propose(&Command::ReportVersions { id, versions, now })
                .await
                .map_err(err)?;
            ctx.propose(&Command::SetClusterVersion {
                version: versions.newest,
                now,
            })
            .await
            .map_err(err)?;
        }
        let cert = NodeDir::new(&self.data_dir).admin_cert();
        let Ok(pem) = std::fs::read_to_string(&cert) else {
            return Ok(()); // no admin certificate here: nothing to record
        };
        let admin =
            bootstrap::cert_identity(&pem).map_err(|e| format!("{}: {e}", cert.display()))?;
        if ctx
            .read_local(|s| s.admin(admin.node_id).is_some())
            .map_err(err)?
        {
            return Ok(());
        }
        let days = u64::from(self.settings.admin_renewal_days);
        ctx.propose(&Command::SetAdminRenewal {
            renewal_ms: days * 86_400_000,
            now,
        })
        .await
        .map_err(err)?;
        let add = Command::AddAdmin {
            id: Some(admin.node_id),
            name: "init".to_string(),
            issued_at: secs_to_millis(admin.not_before),
            expires_at: secs_to_millis(admin.not_after),
            now,
        };
        match ctx.propose(&add).await.map_err(err)? {
            CommandReply::AdminAdded { record } => {
                tracing::info!(
                    admin = record.id,
                    renew_until = record.renew_until,
                    "recorded the admin identity init made"
                );
                Ok(())
            }
            other => Err(format!("unexpected reply {other:?}")),
        }
    }

    /// Asks the leader (found through the seeds and their hints) to make this member a voter.
    async fn promote(&self) -> Result<(), String> {
        let req = MemberPromote {
            id: self.node_id(),
            addr: self.settings.listen.to_string(),
        };
        let mut last = "no member to ask".to_string();
        let mut queue: Vec<Target> = self.seeds.clone();
        // Once Raft has reached this member, the leader it knows of comes first.
        if let Some(leader) = self.ctx.known_leader()
            && leader.id != self.node_id()
        {
            queue.push(leader);
        }
        let mut asked = 0;
        while let Some(target) = queue.pop() {
            asked += 1;
            if asked > 8 {
                break;
            }
            match self.ctx.forwarder.call(&target, &req).await {
                Ok(reply) => {
                    tracing::info!(role = %reply.role, leader = target.id, "promoted");
                    return Ok(());
                }
                Err(ForwardError::Call(TransportError::Remote(e))) => {
                    if let RemoteCode::NotLeader {
                        leader: Some((id, addr)),
                    } = &e.code
                        && *id != self.node_id()
                    {
                        queue.push(Target {
                            id: *id,
                            addr: addr.clone(),
                        });
                    }
                    last = format!("member {}: {e}", target.id);
                }
                Err(e) => last = e.to_string(),
            }
        }
        Err(last)
    }
}
