//! Membership changes on the leader. Promotion: `add_learner`, a (bounded) wait until the new
//! member has replicated the log up to its addition, then `change_membership` to make it a voter, each step recorded in
//! the fleet state. Removal: `change_membership` without the member, then `RemoveMember` in the
//! state, which revokes its id (the transport gate refuses its certificate from then on).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use openraft::ChangeMembers;
use openraft::error::{ChangeMembershipError, ClientWriteError, RaftError};
use protocol::admin::{
    Done, MemberPromote, MemberPromoteReply, MemberRemove, MemberReportVersions,
};
use protocol::fleet::{Member, MemberRole, validate_member_addr};
use raft::{MemberNode, NodeId};
use transport::{RemoteCode, RemoteError, TransportError};

use super::Ctx;
use super::errors::{is_not_leader, unexpected, write_error};
use crate::forward::{ForwardError, Target};
use fleet::state::{Command, CommandReply};
use protocol::time::Now;

/// How long the leader waits for a new learner to catch up within one promote call (the
/// caller retries; the transport's call deadline must not expire first).
const CATCH_UP_WAIT: Duration = Duration::from_secs(8);
/// How long a membership change waits for one already in progress.
const CHANGE_WAIT: Duration = Duration::from_secs(4);
/// How long a leader that removed itself tries to have the removal recorded by the new one.
const HANDOVER_WAIT: Duration = Duration::from_secs(20);
const RETRY_PAUSE: Duration = Duration::from_millis(200);

/// The Raft membership as this member knows it: voters, and every node with its address.
struct Membership {
    voters: BTreeSet<NodeId>,
    nodes: BTreeMap<NodeId, MemberNode>,
    /// Index of the log entry that set this membership.
    log_index: u64,
}

impl Ctx {
    fn membership(&self) -> Membership {
        let metrics = self.raft.metrics();
        let m = metrics.borrow();
        let membership = m.membership_config.membership();
        Membership {
            voters: membership.voter_ids().collect(),
            nodes: membership.nodes().map(|(id, n)| (*id, n.clone())).collect(),
            log_index: m.membership_config.log_id().map_or(0, |l| l.index),
        }
    }

    async fn record_member(
        &self,
        id: NodeId,
        addr: &str,
        role: MemberRole,
    ) -> Result<(), RemoteError> {
        let member = Member {
            id,
            addr: addr.to_string(),
            role,
        };
        let now = Now::read().millis;
        match self.propose(&Command::AddMember { member, now }).await? {
            CommandReply::Done => Ok(()),
            other => Err(unexpected("admin.member_promote", &other)),
        }
    }

    /// `change_membership`, waiting (bounded) while another change is in progress.
    async fn change_membership(
        &self,
        change: ChangeMembers<NodeId, MemberNode>,
    ) -> Result<(), RemoteError> {
        let deadline = Instant::now() + CHANGE_WAIT;
        loop {
            match self.raft.change_membership(change.clone(), false).await {
                Ok(_) => return Ok(()),
                Err(RaftError::APIError(ClientWriteError::ChangeMembershipError(
                    ChangeMembershipError::InProgress(_),
                ))) if Instant::now() < deadline => tokio::time::sleep(RETRY_PAUSE).await,
                Err(e) => return Err(write_error(e)),
            }
        }
    }

    /// Makes member `req.id` a voter (this member leads). Idempotent.
    pub(crate) async fn member_promote(
        &self,
        req: &MemberPromote,
    ) -> Result<MemberPromoteReply, RemoteError> {
        validate_member_addr(&req.addr).map_err(|e| RemoteError::bad_request(e.to_string()))?;
        if self.read_local(|s| s.is_node_revoked(req.id))? {
            return Err(RemoteError::conflict(format!(
                "node {} was removed from the cluster: its id is refused for good; join a new \
                 node with a new token instead",
                req.id
            )));
        }
        let voter = MemberPromoteReply {
            role: MemberRole::Voter,
        };
        let membership = self.membership();
        if !membership.voters.contains(&req.id) {
            // A learner already known at this address (an earlier attempt that timed out) is
            // not added again: every addition is one more membership entry in the log.
            let since = match membership.nodes.get(&req.id) {
                Some(node) if node.addr == req.addr => membership.log_index,
                _ => {
                    let node = MemberNode {
                        addr: req.addr.clone(),
                    };
                    let added = self
                        .raft
                        .add_learner(req.id, node, false)
                        .await
                        .map_err(write_error)?;
                    added.log_id.index
                }
            };
            // openraft's own blocking add_learner only waits until the learner is within
            // `replication_lag_threshold` entries, which a small log always is: wait until it
            // holds the log up to its own addition instead.
            let caught_up = self
                .raft
                .wait(Some(CATCH_UP_WAIT))
                .metrics(
                    |m| {
                        m.replication.as_ref().is_some_and(|r| {
                            r.get(&req.id)
                                .is_some_and(|l| l.map(|l| l.index) >= Some(since))
                        })
                    },
                    "the new learner to catch up",
                )
                .await;
            if caught_up.is_err() {
                return Err(RemoteError::unavailable(format!(
                    "member {} was added as a learner and is still catching up (or the leader                      cannot reach it at {}); retry",
                    req.id, req.addr
                )));
            }
            self.record_member(req.id, &req.addr, MemberRole::Learner)
                .await?;
            self.change_membership(ChangeMembers::AddVoterIds([req.id].into()))
                .await?;
        }
        let addr = self
            .membership()
            .nodes
            .get(&req.id)
            .map_or_else(|| req.addr.clone(), |n| n.addr.clone());
        self.record_member(req.id, &addr, MemberRole::Voter).await?;
        Ok(voter)
    }

    /// Removes member `req.id` (this member leads). Refuses to remove the last voter.
    /// Records what a member's build reads (this member leads).
    pub(crate) async fn member_report_versions(
        &self,
        req: &MemberReportVersions,
    ) -> Result<Done, RemoteError> {
        let cmd = Command::ReportVersions {
            id: req.id,
            versions: req.versions,
            now: Now::read().millis,
        };
        match self.propose(&cmd).await? {
            CommandReply::Done => Ok(Done {}),
            other => Err(unexpected(
                <MemberReportVersions as transport::Rpc>::METHOD,
                &other,
            )),
        }
    }

    pub(crate) async fn member_remove(&self, req: &MemberRemove) -> Result<Done, RemoteError> {
        let id = req.id;
        let before = self.membership();
        if let Some(node) = before.nodes.get(&id) {
            if before.voters.len() == 1 && before.voters.contains(&id) {
                return Err(RemoteError::conflict(format!(
                    "member {id} is the only voter: removing it would leave no one to elect a \
                     leader; add another member first (`pvefleet member add`)"
                )));
            }
            let change = if before.voters.contains(&id) {
                ChangeMembers::RemoveVoters([id].into())
            } else {
                ChangeMembers::RemoveNodes([id].into())
            };
            self.change_membership(change).await?;
            tracing::info!(id, "member left the Raft membership");
            // A member unknown to the state (a learner never recorded) is recorded first, so
            // that removing it revokes its id like any other.
            let recorded = self.read_local(|s| s.members().contains_key(&id))?;
            if !recorded && id != self.node_id {
                self.record_member(id, &node.addr, MemberRole::Learner)
                    .await?;
            }
            if id == self.node_id {
                // This member stepped down with the change: the new leader must record it.
                let others = before
                    .voters
                    .iter()
                    .filter(|v| **v != id)
                    .filter_map(|v| {
                        before.nodes.get(v).map(|n| Target {
                            id: *v,
                            addr: n.addr.clone(),
                        })
                    })
                    .collect();
                return self.hand_over_removal(req, others).await;
            }
        }
        if !before.nodes.contains_key(&id) && self.read_local(|s| s.is_node_revoked(id))? {
            // Removed already (a retry, or a handover that was answered late).
            return Ok(Done {});
        }
        let now = Now::read().millis;
        match self.propose(&Command::RemoveMember { id, now }).await? {
            CommandReply::Done => Ok(Done {}),
            other => Err(unexpected("admin.member_remove", &other)),
        }
    }

    /// Sends the removal of this (former leader) member to the remaining voters, following
    /// their `NotLeader` hints, until the new leader has recorded it.
    async fn hand_over_removal(
        &self,
        req: &MemberRemove,
        others: Vec<Target>,
    ) -> Result<Done, RemoteError> {
        let deadline = Instant::now() + HANDOVER_WAIT;
        let mut queue: Vec<Target> = others.clone();
        let mut last = String::from("no other voter to ask");
        while Instant::now() < deadline {
            let Some(target) = queue.pop() else {
                tokio::time::sleep(RETRY_PAUSE).await;
                queue = others.clone();
                continue;
            };
            let outcome = self.forwarder.call(&target, req).await;
            tracing::debug!(
                target = target.id,
                ?outcome,
                "handing over the removal of this member"
            );
            match outcome {
                Ok(done) => return Ok(done),
                Err(ForwardError::Call(TransportError::Remote(e))) if is_not_leader(&e) => {
                    if let RemoteCode::NotLeader {
                        leader: Some((id, addr)),
                    } = &e.code
                        && *id != self.node_id
                    {
                        queue.push(Target {
                            id: *id,
                            addr: addr.clone(),
                        });
                    }
                    last = e.to_string();
                }
                // No leader yet (the election after this member left): ask again.
                Err(ForwardError::Call(TransportError::Remote(e)))
                    if e.code == RemoteCode::Unavailable =>
                {
                    last = e.to_string();
                }
                Err(ForwardError::Call(TransportError::Remote(e))) => return Err(e),
                Err(e) => last = e.to_string(),
            }
        }
        Err(RemoteError::unavailable(format!(
            "member {} left the Raft group, but the new leader did not record the removal in \
             time ({last}); run `pvefleet member remove {}` again",
            req.id, req.id
        )))
    }
}
