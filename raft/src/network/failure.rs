//! How a failed Raft RPC is reported to openraft. The variant decides openraft's reaction:
//! `Unreachable` makes it back off before retrying (a peer that is down or refuses us), a
//! `NetworkError` is retried at once (one lost call on a live connection), `PayloadTooLarge`
//! makes replication send fewer entries.

use std::sync::Arc;

use openraft::error::{NetworkError, PayloadTooLarge, RPCError, Unreachable};
use transport::{RemoteCode, TransportError};

use crate::network::peers::DialError;
use crate::types::{MemberNode, NodeId};

/// What a failure means for openraft, decided from the error alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The peer cannot be reached or refuses us: back off.
    Unreachable,
    /// This call failed; the connection may be gone: retry (after redialing).
    Network,
    /// The request exceeds the frame limit: send fewer entries.
    TooLarge,
}

/// Classifies a failed call (the connection existed).
pub(crate) fn classify_call(error: &TransportError) -> Failure {
    match error {
        TransportError::FrameTooLarge { .. } => Failure::TooLarge,
        TransportError::Remote(remote)
            if matches!(
                remote.code,
                RemoteCode::Unavailable | RemoteCode::Unauthorized
            ) =>
        {
            Failure::Unreachable
        }
        TransportError::Refused { .. }
        | TransportError::WrongPeer { .. }
        | TransportError::PeerCertificate { .. }
        | TransportError::Connect { .. }
        | TransportError::ConnectTimeout { .. } => Failure::Unreachable,
        _ => Failure::Network,
    }
}

/// Whether the cached connection should be dropped after this failure (the next call redials).
pub(crate) fn connection_is_suspect(error: &TransportError) -> bool {
    !matches!(
        error,
        TransportError::Remote(_)
            | TransportError::FrameTooLarge { .. }
            | TransportError::Encode(_)
            | TransportError::Timeout { .. }
    )
}

/// A failed dial: always `Unreachable`, whatever the reason (down, wrong node, bad address).
pub(crate) fn dial_failed<E: std::error::Error>(
    error: &Arc<DialError>,
) -> RPCError<NodeId, MemberNode, E> {
    RPCError::Unreachable(Unreachable::new(error.as_ref()))
}

/// A failed call as openraft's error. `entries` is the number of log entries the request
/// carried (0 for votes and snapshot chunks): only a request with several can be split.
pub(crate) fn call_failed<E: std::error::Error>(
    error: &TransportError,
    entries: usize,
) -> RPCError<NodeId, MemberNode, E> {
    match classify_call(error) {
        Failure::Unreachable => RPCError::Unreachable(Unreachable::new(error)),
        Failure::TooLarge if entries > 1 => {
            RPCError::PayloadTooLarge(PayloadTooLarge::new_entries_hint((entries / 2) as u64))
        }
        Failure::TooLarge | Failure::Network => RPCError::Network(NetworkError::new(error)),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use transport::{PeerIdentity, RemoteError, Role};

    use super::*;

    type E = openraft::error::RaftError<NodeId>;

    #[test]
    fn refusals_and_wrong_peers_make_openraft_back_off() {
        let wrong = TransportError::WrongPeer {
            expected: PeerIdentity {
                role: Role::Coordinator,
                node_id: 2,
            },
            found: Some(PeerIdentity {
                role: Role::Coordinator,
                node_id: 3,
            }),
        };
        assert_eq!(classify_call(&wrong), Failure::Unreachable);
        let refused = TransportError::Refused {
            reason: "role".into(),
        };
        assert_eq!(classify_call(&refused), Failure::Unreachable);
        let closing = TransportError::Remote(RemoteError::unavailable("shutting down"));
        assert!(matches!(
            call_failed::<E>(&closing, 0),
            RPCError::Unreachable(_)
        ));
    }

    #[test]
    fn a_lost_call_is_retried_and_drops_the_connection() {
        let lost = TransportError::ConnectionLost("reset".into());
        assert!(matches!(call_failed::<E>(&lost, 3), RPCError::Network(_)));
        assert!(connection_is_suspect(&lost));
        let slow = TransportError::Timeout {
            method: "raft.vote",
            after: Duration::from_millis(200),
        };
        assert!(matches!(call_failed::<E>(&slow, 0), RPCError::Network(_)));
        assert!(!connection_is_suspect(&slow));
    }

    #[test]
    fn an_oversized_append_asks_for_fewer_entries() {
        let big = TransportError::FrameTooLarge {
            len: 100 << 20,
            max: 64 << 20,
        };
        match call_failed::<E>(&big, 300) {
            RPCError::PayloadTooLarge(p) => assert_eq!(p.entries_hint(), 150),
            other => panic!("{other:?}"),
        }
        assert!(matches!(call_failed::<E>(&big, 1), RPCError::Network(_)));
    }

    #[test]
    fn a_handler_refusal_is_not_a_reason_to_back_off() {
        let bad = TransportError::Remote(RemoteError::bad_request("garbage"));
        assert!(matches!(call_failed::<E>(&bad, 0), RPCError::Network(_)));
        assert!(!connection_is_suspect(&bad));
    }
}
