//! What a coordinator member tells systemd (the protocol is `daemon::notify`): ready once
//! the membership is settled (when `run` prints its ready line), STATUS= with the leader and
//! term, and serving only while Raft runs: a Raft core that stopped or hit a fatal error ends
//! the watchdog petting, and systemd kills and restarts the member (its Raft state is
//! durable, so nothing is lost).

use daemon::notify::{Health, Reading};
use openraft::ServerState;
use raft::NodeId;
use raft::types::Raft;
use tokio::sync::watch;

use super::ready_line::ReadyLine;

/// The STATUS= text: where the leadership stands, from this member's view.
pub(crate) fn status_text(
    node_id: NodeId,
    ready: bool,
    state: ServerState,
    leader: Option<NodeId>,
    term: u64,
) -> String {
    let role = match state {
        ServerState::Leader => "leader",
        ServerState::Follower => "follower",
        ServerState::Candidate => "candidate",
        ServerState::Learner => "learner",
        ServerState::Shutdown => "shut down",
    };
    let leader = leader.map_or_else(|| "no leader".to_string(), |l| format!("leader {l}"));
    let settling = if ready { "" } else { "settling membership; " };
    format!("{settling}{leader}, term {term}; this is node {node_id}, {role}")
}

/// A member's health, as the notifier reads it.
pub(crate) struct MemberHealth {
    pub(crate) node_id: NodeId,
    pub(crate) raft: Raft,
    pub(crate) ready: watch::Receiver<Option<ReadyLine>>,
}

impl Health for MemberHealth {
    async fn changed(&mut self) {
        // Readiness wakes the notifier; Raft's metrics change with every entry, so they are
        // read on the ticks only.
        if self.ready.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    fn read(&mut self) -> Reading {
        let metrics = self.raft.metrics();
        if metrics.has_changed().is_err() {
            return Reading::Ended {
                status: "Raft stopped; not serving".into(),
            };
        }
        let m = metrics.borrow();
        if let Err(fatal) = &m.running_state {
            return Reading::Ended {
                status: format!("Raft failed: {fatal}"),
            };
        }
        let ready = self.ready.borrow_and_update().is_some();
        Reading::Serving {
            ready,
            status: status_text(
                self.node_id,
                ready,
                m.state,
                m.current_leader,
                m.current_term,
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_names_the_leader_the_term_and_this_member() {
        assert_eq!(
            status_text(2, true, ServerState::Follower, Some(1), 3),
            "leader 1, term 3; this is node 2, follower"
        );
        assert_eq!(
            status_text(1, true, ServerState::Leader, Some(1), 4),
            "leader 1, term 4; this is node 1, leader"
        );
        assert_eq!(
            status_text(3, false, ServerState::Learner, None, 0),
            "settling membership; no leader, term 0; this is node 3, learner"
        );
    }
}
