//! The client's decisions, as pure functions: which member to try first, how long to wait
//! between rounds and per attempt, and what each failure means (follow a leader hint, try
//! another member, or stop because the cluster decided).

use std::time::Duration;

use transport::{RemoteCode, TransportError};

use crate::error::ClientError;
use bootstrap::cli_config::CoordinatorAddr;

/// The first pause after a round in which no member answered; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(50);
/// The longest pause between rounds.
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// What one attempt on one member means for the call.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// The cluster decided: stop and report.
    Final(ClientError),
    /// This member is not the leader and named the one that is.
    Redirect(CoordinatorAddr),
    /// This member cannot answer now; try another or later. `untrusted`: TLS refused it.
    Retry { reason: String, untrusted: bool },
}

/// The members to try, in order: `preferred` (the leader or the last member that answered)
/// first, then the others as configured or learned.
pub(crate) fn attempt_order(
    known: &[CoordinatorAddr],
    preferred: Option<&CoordinatorAddr>,
) -> Vec<CoordinatorAddr> {
    let mut order: Vec<CoordinatorAddr> = preferred.into_iter().cloned().collect();
    order.extend(known.iter().filter(|k| Some(*k) != preferred).cloned());
    order
}

/// The pause after the `round`-th round in which no member answered.
pub(crate) fn backoff(round: u32) -> Duration {
    let factor = 1u32.checked_shl(round.min(16)).unwrap_or(u32::MAX);
    FIRST_BACKOFF.saturating_mul(factor).min(MAX_BACKOFF)
}

/// The deadline of one attempt: a third of the call's timeout, between 1 s and 2.5 s (a
/// little over the longest election timeout, 2 s), so a member that died mid-call costs about
/// one election before the others are tried, and never past the call's own deadline. A write
/// that really takes longer is reported lost and retried elsewhere: writes keyed by name are
/// idempotent; an allocation may then be made twice (never the same id twice).
pub(crate) fn attempt_timeout(total: Duration, remaining: Duration) -> Duration {
    (total / 3)
        .clamp(Duration::from_secs(1), ATTEMPT_MAX)
        .min(remaining)
}

/// Upper bound of one attempt.
const ATTEMPT_MAX: Duration = Duration::from_millis(2500);

/// What a failed attempt on `member` means for the call.
pub(crate) fn classify(error: TransportError, member: &CoordinatorAddr) -> Outcome {
    let retry = |reason: String| Outcome::Retry {
        reason,
        untrusted: false,
    };
    let untrusted = |reason: String| Outcome::Retry {
        reason,
        untrusted: true,
    };
    match error {
        TransportError::Remote(remote) => match remote.code {
            RemoteCode::NotLeader {
                leader: Some((id, addr)),
            } => Outcome::Redirect(CoordinatorAddr { addr, id }),
            RemoteCode::NotLeader { leader: None } => {
                retry("not the leader, and no leader is known (election in progress?)".into())
            }
            RemoteCode::Unavailable => retry(format!("unavailable: {}", remote.message)),
            RemoteCode::BadRequest => Outcome::Final(ClientError::Invalid(remote.message)),
            RemoteCode::Unauthorized => Outcome::Final(ClientError::Unauthorized(remote.message)),
            RemoteCode::NotFound => Outcome::Final(ClientError::NotFound(remote.message)),
            RemoteCode::Conflict => Outcome::Final(ClientError::Conflict(remote.message)),
            RemoteCode::UnknownMethod | RemoteCode::UnsupportedVersion { .. } => {
                Outcome::Final(ClientError::Unsupported(remote.message))
            }
            RemoteCode::Internal => Outcome::Final(ClientError::Internal(remote.message)),
        },
        e @ (TransportError::Connect { .. }
        | TransportError::ConnectTimeout { .. }
        | TransportError::ConnectionLost(_)
        | TransportError::Stream(_)
        | TransportError::Timeout { .. }
        | TransportError::Closed) => retry(e.to_string()),
        TransportError::Refused { reason } => {
            untrusted(format!("it refused this client's certificate: {reason}"))
        }
        e @ (TransportError::PeerCertificate { .. }
        | TransportError::WrongPeer { .. }
        | TransportError::Identity(_)) => untrusted(format!(
            "{e} (is {} the id of the member at {}?)",
            member.id, member.addr
        )),
        e @ (TransportError::Material(_) | TransportError::Tls(_)) => {
            Outcome::Final(ClientError::Material(e))
        }
        e => Outcome::Final(ClientError::Transport(e)),
    }
}

#[cfg(test)]
mod tests {
    use transport::RemoteError;

    use transport::PeerIdentity;

    use super::*;

    fn member(id: u64) -> CoordinatorAddr {
        CoordinatorAddr {
            addr: format!("127.0.0.1:{}", 7400 + id),
            id,
        }
    }

    #[test]
    fn the_preferred_member_is_tried_first_and_once() {
        let known = [member(1), member(2), member(3)];
        assert_eq!(attempt_order(&known, None), known.to_vec());
        assert_eq!(
            attempt_order(&known, Some(&member(2))),
            vec![member(2), member(1), member(3)]
        );
        assert_eq!(
            attempt_order(&known, Some(&member(9))),
            vec![member(9), member(1), member(2), member(3)]
        );
    }

    #[test]
    fn backoff_doubles_up_to_one_second() {
        assert_eq!(backoff(0), Duration::from_millis(50));
        assert_eq!(backoff(1), Duration::from_millis(100));
        assert_eq!(backoff(4), Duration::from_millis(800));
        assert_eq!(backoff(5), MAX_BACKOFF);
        assert_eq!(backoff(u32::MAX), MAX_BACKOFF);
    }

    #[test]
    fn an_attempt_leaves_time_for_other_members_but_not_past_the_deadline() {
        let s = Duration::from_secs;
        assert_eq!(attempt_timeout(s(6), s(6)), s(2));
        assert_eq!(attempt_timeout(s(10), s(10)), Duration::from_millis(2500));
        assert_eq!(attempt_timeout(s(60), s(60)), Duration::from_millis(2500));
        assert_eq!(attempt_timeout(s(1), s(1)), s(1));
        assert_eq!(
            attempt_timeout(s(10), Duration::from_millis(200)),
            Duration::from_millis(200)
        );
    }

    #[test]
    fn leader_hints_redirect_and_refusals_are_final() {
        let m = member(1);
        let hint = RemoteError::not_leader(Some((2, "10.0.0.2:7400".into())));
        assert!(matches!(
            classify(hint.into(), &m),
            Outcome::Redirect(CoordinatorAddr { id: 2, ref addr }) if addr == "10.0.0.2:7400"
        ));
        let no_hint = RemoteError::not_leader(None);
        assert!(matches!(
            classify(no_hint.into(), &m),
            Outcome::Retry {
                untrusted: false,
                ..
            }
        ));
        let unavailable = RemoteError::unavailable("no quorum");
        assert!(matches!(
            classify(unavailable.into(), &m),
            Outcome::Retry { ref reason, untrusted: false } if reason.contains("no quorum")
        ));
        let bad = RemoteError::bad_request("vm[0].cores = 0 is not allowed");
        assert!(matches!(
            classify(bad.into(), &m),
            Outcome::Final(ClientError::Invalid(ref msg)) if msg.contains("cores")
        ));
        assert!(matches!(
            classify(RemoteError::not_found("vm x").into(), &m),
            Outcome::Final(ClientError::NotFound(_))
        ));
    }

    #[test]
    fn unreachable_members_are_retried_and_bad_certificates_are_untrusted() {
        let m = member(3);
        let lost = TransportError::ConnectionLost("reset".into());
        assert!(matches!(
            classify(lost, &m),
            Outcome::Retry {
                untrusted: false,
                ..
            }
        ));
        let refused = TransportError::Refused {
            reason: "TLS alert 42".into(),
        };
        assert!(matches!(
            classify(refused, &m),
            Outcome::Retry { untrusted: true, ref reason } if reason.contains("TLS alert 42")
        ));
        let wrong = TransportError::WrongPeer {
            expected: PeerIdentity::coordinator(3),
            found: Some(PeerIdentity::coordinator(4)),
        };
        assert!(matches!(
            classify(wrong, &m),
            Outcome::Retry { untrusted: true, ref reason } if reason.contains("is 3 the id")
        ));
    }
}
