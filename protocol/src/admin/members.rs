//! Admin requests that change the Raft membership on behalf of a member itself: a coordinator
//! that joined with a token asks the leader to make it a voter once its server is up.

use serde::{Deserialize, Serialize};

use crate::fleet::MemberRole;
use crate::identity::NodeId;
use crate::rpc::Rpc;

/// A joined coordinator asks the leader to add it as a learner, wait until it has caught up,
/// then make it a voter. Sent by the member itself (its certificate must carry `id`) straight
/// to the leader: it is not forwarded, a follower answers `NotLeader` with the leader's address.
///
/// Idempotent: a member that is already a voter is answered at once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberPromote {
    /// The member's node id (the one in its certificate).
    pub id: NodeId,
    /// `host:port` where the member's QUIC endpoint listens (what the others dial).
    pub addr: String,
}

/// The member's part in Raft after the promotion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberPromoteReply {
    /// Voter once the promotion is complete.
    pub role: MemberRole,
}

impl Rpc for MemberPromote {
    const METHOD: &'static str = "admin.member_promote";
    type Response = MemberPromoteReply;
}

/// A member tells the leader which encoding versions its build reads, so that the leader can
/// raise the cluster version once every member reads a newer one. Sent by the member itself
/// (its certificate must carry `id`) at start and after the fleet state lost its report;
/// forwarded to the leader like any write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberReportVersions {
    /// The member's node id (the one in its certificate).
    pub id: NodeId,
    /// What its build reads.
    pub versions: crate::version::VersionRange,
}

impl Rpc for MemberReportVersions {
    const METHOD: &'static str = "admin.member_report_versions";
    type Response = super::Done;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_promote_round_trips_through_json() {
        let req = MemberPromote {
            id: 4,
            addr: "10.0.0.4:7400".into(),
        };
        let back: MemberPromote =
            serde_json::from_str(&serde_json::to_string(&req).unwrap()).unwrap();
        assert_eq!(back, req);
        let reply = MemberPromoteReply {
            role: MemberRole::Voter,
        };
        assert_eq!(
            serde_json::to_string(&reply).unwrap(),
            r#"{"role":"voter"}"#
        );
    }
}
