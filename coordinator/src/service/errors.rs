//! How refusals reach the caller: the state machine's `StateError` and openraft's errors as the
//! transport's typed `RemoteError`, so the CLI can branch on the code (retry on the leader,
//! exit 3 for an invalid spec, 4 for not found, 5 for unavailable).

use openraft::error::{
    ChangeMembershipError, CheckIsLeaderError, ClientWriteError, ForwardToLeader, RaftError,
};
use raft::{MemberNode, NodeId};
use transport::RemoteError;

use fleet::state::{CommandReply, StateError};

/// A refusal of the state machine. `Invalid` carries the spec error's own text (field, value,
/// allowed values); a refused entry of a whole-file apply keeps its refusal's code, its text
/// naming the entry first.
pub(crate) fn state_error(e: StateError) -> RemoteError {
    match e {
        StateError::Invalid(spec) => RemoteError::bad_request(spec.to_string()),
        e @ StateError::NotFound { .. } => RemoteError::not_found(e.to_string()),
        e @ (StateError::Conflict(_)
        | StateError::VmidsExhausted { .. }
        | StateError::IpsExhausted { .. }) => RemoteError::conflict(e.to_string()),
        StateError::Token(refusal) => RemoteError::unauthorized(refusal.to_string()),
        StateError::DashboardLogin(refusal) => RemoteError::unauthorized(refusal.to_string()),
        e @ StateError::AlreadyApplied { .. } => RemoteError::internal(e.to_string()),
        StateError::Entry { kind, name, error } => {
            let mut named = state_error(*error);
            named.message = format!("{kind} {name}: {}", named.message);
            named
        }
    }
}

/// `NotLeader` with openraft's hint (id and address), if it has one.
pub(crate) fn not_leader(f: &ForwardToLeader<NodeId, MemberNode>) -> RemoteError {
    let hint = f
        .leader_id
        .zip(f.leader_node.as_ref().map(|n| n.addr.clone()));
    RemoteError::not_leader(hint)
}

/// A failed `client_write` (or membership change).
pub(crate) fn write_error(
    e: RaftError<NodeId, ClientWriteError<NodeId, MemberNode>>,
) -> RemoteError {
    match e {
        RaftError::APIError(ClientWriteError::ForwardToLeader(f)) => not_leader(&f),
        RaftError::APIError(ClientWriteError::ChangeMembershipError(c)) => membership_error(c),
        RaftError::Fatal(f) => RemoteError::unavailable(format!("raft is not running: {f}")),
    }
}

/// A refused membership change.
pub(crate) fn membership_error(e: ChangeMembershipError<NodeId>) -> RemoteError {
    match e {
        ChangeMembershipError::InProgress(p) => RemoteError::unavailable(format!(
            "another membership change is in progress ({p}); retry in a moment"
        )),
        other => RemoteError::conflict(other.to_string()),
    }
}

/// A failed leadership check before a linearizable read.
pub(crate) fn read_error(
    e: RaftError<NodeId, CheckIsLeaderError<NodeId, MemberNode>>,
) -> RemoteError {
    match e {
        RaftError::APIError(CheckIsLeaderError::ForwardToLeader(f)) => not_leader(&f),
        RaftError::APIError(CheckIsLeaderError::QuorumNotEnough(q)) => RemoteError::unavailable(
            format!("the leader cannot reach a quorum to confirm a linearizable read: {q}"),
        ),
        RaftError::Fatal(f) => RemoteError::unavailable(format!("raft is not running: {f}")),
    }
}

/// A reply of another kind than the command can produce: a bug, reported instead of guessed at.
pub(crate) fn unexpected(method: &str, reply: &CommandReply) -> RemoteError {
    RemoteError::internal(format!(
        "{method}: unexpected state machine reply {reply:?}"
    ))
}

/// Whether a refusal says "not the leader": the request was not applied anywhere.
pub(crate) fn is_not_leader(e: &RemoteError) -> bool {
    matches!(e.code, transport::RemoteCode::NotLeader { .. })
}

#[cfg(test)]
mod tests {
    use protocol::fleet::{EventKind, TokenRefusal};
    use protocol::spec::SpecError;
    use transport::RemoteCode;

    use super::*;

    #[test]
    fn state_errors_map_to_the_codes_the_cli_exits_on() {
        let spec = SpecError::new("memory_mib", 1, "64 to 4194304");
        let bad = state_error(StateError::Invalid(spec.clone()));
        assert_eq!(bad.code, RemoteCode::BadRequest);
        assert_eq!(bad.message, spec.to_string());
        assert!(bad.message.contains("memory_mib"), "{}", bad.message);
        let missing = state_error(StateError::NotFound {
            kind: EventKind::Vm,
            name: "web".into(),
        });
        assert_eq!(missing.code, RemoteCode::NotFound);
        assert_eq!(
            state_error(StateError::Conflict("taken".into())).code,
            RemoteCode::Conflict
        );
        let exhausted = StateError::VmidsExhausted {
            range: "r".into(),
            start: 100,
            end: 100,
            size: 1,
        };
        assert_eq!(state_error(exhausted).code, RemoteCode::Conflict);
        assert_eq!(
            state_error(StateError::Token(TokenRefusal::Expired)).code,
            RemoteCode::Unauthorized
        );
        // An entry of a whole-file apply: its refusal's code, the entry named first.
        let entry = state_error(StateError::Entry {
            kind: "vm".into(),
            name: "web-3".into(),
            error: Box::new(StateError::Invalid(spec.clone())),
        });
        assert_eq!(entry.code, RemoteCode::BadRequest);
        assert_eq!(entry.message, format!("vm web-3: {spec}"));
    }

    #[test]
    fn a_forward_hint_becomes_the_not_leader_hint() {
        let f = ForwardToLeader {
            leader_id: Some(2),
            leader_node: Some(MemberNode {
                addr: "10.0.0.2:7400".into(),
            }),
        };
        let e = not_leader(&f);
        assert!(is_not_leader(&e));
        assert_eq!(
            e.code,
            RemoteCode::NotLeader {
                leader: Some((2, "10.0.0.2:7400".into()))
            }
        );
        let unknown = not_leader(&ForwardToLeader::empty());
        assert_eq!(unknown.code, RemoteCode::NotLeader { leader: None });
    }
}
