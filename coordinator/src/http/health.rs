//! Health and readiness as pure decisions: `/healthz` is 200 while the process serves;
//! `/readyz` is 200 when a leader is known and this member has applied every entry it knows to
//! be committed (so a stale read here is as fresh as this member can be), else 503 with why.

use raft::NodeId;

/// What readiness is decided from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Readiness {
    /// The leader this member knows of.
    pub(crate) leader: Option<NodeId>,
    /// The committed index this member was told.
    pub(crate) committed: Option<u64>,
    /// The index its state machine has applied.
    pub(crate) applied: Option<u64>,
}

impl Readiness {
    /// `Ok` with a short text when ready, else the reason.
    pub(crate) fn decide(&self) -> Result<String, String> {
        let Some(leader) = self.leader else {
            return Err("not ready: no Raft leader is known".to_string());
        };
        let committed = self.committed.unwrap_or(0);
        let applied = self.applied.unwrap_or(0);
        if applied < committed {
            return Err(format!(
                "not ready: applied index {applied} is behind commit index {committed}"
            ));
        }
        Ok(format!(
            "ready: leader {leader}, applied index {applied} (commit index {committed})"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_needs_a_leader_and_the_commit_index_applied() {
        let ready = Readiness {
            leader: Some(1),
            committed: Some(5),
            applied: Some(5),
        };
        assert!(ready.decide().is_ok());
        let no_leader = Readiness {
            leader: None,
            ..ready
        };
        assert!(no_leader.decide().unwrap_err().contains("no Raft leader"));
        let behind = Readiness {
            applied: Some(3),
            ..ready
        };
        let why = behind.decide().unwrap_err();
        assert!(
            why.contains("applied index 3") && why.contains("commit index 5"),
            "{why}"
        );
        let fresh = Readiness {
            leader: Some(1),
            committed: None,
            applied: None,
        };
        assert!(fresh.decide().is_ok());
    }
}
