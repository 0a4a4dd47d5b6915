//! `RemoteError`: a handler's typed refusal, carried back to the caller in the response frame
//! (as the `Err` side of `Result<Vec<u8>, RemoteError>`), so callers can branch on the code
//! (e.g. redirect to the leader on `NotLeader`) instead of parsing messages.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::NodeId;

/// Why a handler refused a request. New codes are appended at the end (bincode encodes the
/// variant index).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum RemoteCode {
    /// The request could not be decoded or is invalid.
    BadRequest,
    /// The server has no handler for this method on this service.
    UnknownMethod,
    /// This coordinator is not the Raft leader; retry on the leader if one is known.
    NotLeader {
        /// The leader's node id and address (`host:port`), when known.
        leader: Option<(NodeId, String)>,
    },
    /// The caller may not do this.
    Unauthorized,
    /// The object named by the request does not exist.
    NotFound,
    /// The request conflicts with the current state (already exists, stale version, lock).
    Conflict,
    /// The server cannot serve now (no quorum, shutting down); retry later.
    Unavailable,
    /// The server failed; not the caller's fault.
    Internal,
    /// The request is written at an encoding version the server does not read; it reads
    /// `oldest..=newest` (the client sends it again at the newest both know).
    UnsupportedVersion {
        /// The oldest version the server reads.
        oldest: u16,
        /// The newest version the server reads.
        newest: u16,
    },
}

impl RemoteCode {
    /// A short lower-case name for messages and metrics.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::BadRequest => "bad-request",
            Self::UnknownMethod => "unknown-method",
            Self::NotLeader { .. } => "not-leader",
            Self::Unauthorized => "unauthorized",
            Self::NotFound => "not-found",
            Self::Conflict => "conflict",
            Self::Unavailable => "unavailable",
            Self::Internal => "internal",
            Self::UnsupportedVersion { .. } => "unsupported-version",
        }
    }
}

/// A handler's refusal with an operator-readable message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub struct RemoteError {
    /// What kind of refusal.
    pub code: RemoteCode,
    /// Why, for people.
    pub message: String,
}

impl fmt::Display for RemoteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "remote {}: {}", self.code.as_str(), self.message)?;
        if let RemoteCode::NotLeader {
            leader: Some((id, addr)),
        } = &self.code
        {
            write!(f, " (leader is node {id} at {addr})")?;
        }
        Ok(())
    }
}

impl RemoteError {
    /// A refusal with `code` and `message`.
    pub fn new(code: RemoteCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// The request is malformed or invalid.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(RemoteCode::BadRequest, message)
    }

    /// No handler for the method.
    pub fn unknown_method(message: impl Into<String>) -> Self {
        Self::new(RemoteCode::UnknownMethod, message)
    }

    /// Not the leader; `leader` is the hint, if known.
    pub fn not_leader(leader: Option<(NodeId, String)>) -> Self {
        let message = "this coordinator is not the Raft leader";
        Self::new(RemoteCode::NotLeader { leader }, message)
    }

    /// The caller may not do this.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(RemoteCode::Unauthorized, message)
    }

    /// The named object does not exist.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(RemoteCode::NotFound, message)
    }

    /// The request conflicts with the current state.
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(RemoteCode::Conflict, message)
    }

    /// The server cannot serve now.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(RemoteCode::Unavailable, message)
    }

    /// The request's encoding `found` is outside what this build reads.
    pub fn unsupported_version(found: protocol::Version) -> Self {
        let this = protocol::version::VersionRange::this_build();
        Self::new(
            RemoteCode::UnsupportedVersion {
                oldest: this.oldest.0,
                newest: this.newest.0,
            },
            format!(
                "the request is written at encoding {found}, this member reads {this}: \
                 upgrade (or downgrade) one of the two to a release of the same range"
            ),
        )
    }

    /// The server failed.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(RemoteCode::Internal, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_leader_message_names_the_leader_hint() {
        let e = RemoteError::not_leader(Some((2, "10.0.0.2:7400".into())));
        assert_eq!(
            e.to_string(),
            "remote not-leader: this coordinator is not the Raft leader \
             (leader is node 2 at 10.0.0.2:7400)"
        );
        assert_eq!(
            RemoteError::conflict("vmid 100 taken").to_string(),
            "remote conflict: vmid 100 taken"
        );
    }
}
