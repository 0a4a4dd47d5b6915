//! `cluster status` as a pure function of openraft's metrics and the fleet state's versions:
//! leader, term, commit and applied index, the cluster version, and every member with its role,
//! its build's encodings and, on the leader, how far replication has got.

use std::collections::{BTreeMap, BTreeSet};

use openraft::RaftMetrics;
use protocol::admin::{ClusterStatusReply, MemberStatus};
use protocol::fleet::MemberRole;
use protocol::version::{Version, VersionRange};
use raft::{MemberNode, NodeId};

/// The status as member `m.id` sees it. `committed` is its committed index (not part of
/// openraft's metrics, read from its Raft state). Matched index and lag are known only on the
/// leader, which tracks replication. `versions` is the cluster version and each member's
/// reported build, from the fleet state.
pub(crate) fn cluster_status(
    cluster_id: &str,
    m: &RaftMetrics<NodeId, MemberNode>,
    committed: Option<u64>,
    versions: (Version, &BTreeMap<NodeId, VersionRange>),
) -> ClusterStatusReply {
    let membership = m.membership_config.membership();
    let voters: BTreeSet<NodeId> = membership.voter_ids().collect();
    let last_log = m.last_log_index.unwrap_or(0);
    let leading = m.current_leader == Some(m.id);
    let members = membership
        .nodes()
        .map(|(id, node)| {
            let matched = if !leading {
                None
            } else if *id == m.id {
                Some(last_log)
            } else {
                m.replication
                    .as_ref()
                    .and_then(|r| r.get(id))
                    .map(|l| l.map_or(0, |l| l.index))
            };
            MemberStatus {
                id: *id,
                addr: node.addr.clone(),
                role: if voters.contains(id) {
                    MemberRole::Voter
                } else {
                    MemberRole::Learner
                },
                is_leader: m.current_leader == Some(*id),
                matched_index: matched,
                lag: matched.map(|i| last_log.saturating_sub(i)),
                versions: versions.1.get(id).copied(),
            }
        })
        .collect();
    ClusterStatusReply {
        cluster_id: cluster_id.to_string(),
        node_id: m.id,
        leader: m.current_leader,
        term: m.current_term,
        commit_index: committed.unwrap_or(0),
        applied_index: m.last_applied.map_or(0, |l| l.index),
        members,
        cluster_version: versions.0,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::sync::Arc;

    use openraft::{CommittedLeaderId, LogId, Membership, StoredMembership};

    use super::*;

    fn log(index: u64) -> Option<LogId<NodeId>> {
        Some(LogId::new(CommittedLeaderId::new(2, 1), index))
    }

    fn metrics(id: NodeId, leader: Option<NodeId>) -> RaftMetrics<NodeId, MemberNode> {
        let nodes: BTreeMap<NodeId, MemberNode> = (1..=4)
            .map(|i| {
                (
                    i,
                    MemberNode {
                        addr: format!("127.0.0.1:740{i}"),
                    },
                )
            })
            .collect();
        let voters: BTreeSet<NodeId> = [1, 2, 3].into();
        let membership = Membership::new(vec![voters], nodes);
        let mut m = RaftMetrics::new_initial(id);
        m.current_term = 2;
        m.current_leader = leader;
        m.last_log_index = Some(10);
        m.last_applied = log(9);
        m.membership_config = Arc::new(StoredMembership::new(log(1), membership));
        if leader == Some(id) {
            m.replication = Some([(2, log(10)), (3, log(7)), (4, None)].into());
        }
        m
    }

    #[test]
    fn the_leader_reports_every_members_progress_and_lag() {
        let s = cluster_status(
            "lab",
            &metrics(1, Some(1)),
            Some(10),
            (Version(1), &BTreeMap::new()),
        );
        assert_eq!(
            (s.leader, s.term, s.commit_index, s.applied_index),
            (Some(1), 2, 10, 9)
        );
        let by_id = |id| s.members.iter().find(|m| m.id == id).unwrap();
        assert!(by_id(1).is_leader);
        assert_eq!((by_id(1).matched_index, by_id(1).lag), (Some(10), Some(0)));
        assert_eq!((by_id(3).matched_index, by_id(3).lag), (Some(7), Some(3)));
        assert_eq!(by_id(4).role, MemberRole::Learner);
        assert_eq!((by_id(4).matched_index, by_id(4).lag), (Some(0), Some(10)));
        assert_eq!(by_id(2).addr, "127.0.0.1:7402");
    }

    #[test]
    fn a_follower_knows_the_members_but_not_their_progress() {
        let s = cluster_status(
            "lab",
            &metrics(2, Some(1)),
            Some(8),
            (Version(1), &BTreeMap::new()),
        );
        assert_eq!(s.node_id, 2);
        assert_eq!(s.members.len(), 4);
        assert!(
            s.members
                .iter()
                .all(|m| m.matched_index.is_none() && m.lag.is_none())
        );
        assert!(s.members.iter().any(|m| m.id == 1 && m.is_leader));
    }
}
