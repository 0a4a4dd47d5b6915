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
use fleet::state::{Command, CommandReply};
use protocol::time::Now;

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
            return Ok(());
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
            Ok(CommandReply::Done) => Ok(()),
            Ok(other) => Err(format!("unexpected reply {other:?}")),
            Err(e) => Err(e.to_string()),
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
