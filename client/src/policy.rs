//! The client's decisions, as pure functions: which member to try first, how long to wait
//! between rounds and per attempt, and what each failure means (follow a leader hint, try
//! another member, or stop because the cluster decided).

use std::time::Duration;

use transport::{RemoteCode, TransportError};

use crate::error::ClientError;
use bootstrap::cli_config::CoordinatorAddr;

/// The first pause after a round in which no member answered; it doubles up to [`MAX_BACKOFF`].
/// Short: such a round usually means an election is under way, which takes a few hundred ms.
const FIRST_BACKOFF: Duration = Duration::from_millis(20);
/// The longest pause between rounds: a new leader is found within this of its election.
const MAX_BACKOFF: Duration = Duration::from_millis(250);

/// How long a handshake may take before the next member is dialed as well.
pub(crate) const STAGGER: Duration = Duration::from_millis(150);
/// How long a call may go without a single packet from its member (not even the QUIC
/// acknowledgement of the request, which a live member sends within a round trip and 25 ms)
/// before the next member is tried as well; three round trips on a slow link. A member that
/// heard the request is left alone however long it takes, so a slow call (a join waiting for
/// Raft) is not sent elsewhere.
pub(crate) const SILENCE: Duration = Duration::from_millis(200);

/// Where one running attempt of a round stands, as the round sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AttemptState {
    /// Handshaking since `for_`.
    Dialing { for_: Duration },
    /// Its call was sent `for_` ago on a connection with round-trip time `rtt`; `heard`: the
    /// member sent something since.
    Calling {
        for_: Duration,
        rtt: Duration,
        heard: bool,
    },
}

impl AttemptState {
    /// When this attempt stops holding the next member back (`None`: it never does on its own:
    /// the member is alive and working on the call).
    fn stalls_in(self) -> Option<Duration> {
        match self {
            AttemptState::Dialing { for_ } => Some(STAGGER.saturating_sub(for_)),
            AttemptState::Calling { heard: true, .. } => None,
            AttemptState::Calling {
                for_,
                rtt,
                heard: false,
            } => Some(SILENCE.max(rtt * 3).saturating_sub(for_)),
        }
    }
}

/// When to start the next member while `running` attempts are in flight: `Some(ZERO)` now,
/// `Some(d)` in `d` unless something changes, `None` not while these attempts run. Every
/// running attempt must be stalled (a slow handshake, or a call the member never acknowledged)
/// before another member is tried: a dead leader costs [`SILENCE`], not the attempt timeout.
pub(crate) fn next_member_in(running: &[AttemptState]) -> Option<Duration> {
    let mut latest = Duration::ZERO;
    for state in running {
        latest = latest.max(state.stalls_in()?);
    }
    Some(latest)
}

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

/// The deadline of one attempt: a third of the call's timeout, between 1 s and 2.5 s, and
/// never past the call's own deadline. A member that dies before it acknowledged the call is
/// left after [`SILENCE`] (the next member is tried meanwhile); this bounds the other case, a
/// member that died while working on the call, to about two failovers (one is about 1 s). A
/// write that really takes longer is reported lost and retried elsewhere with the same request
/// id, so it is applied once.
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
    fn backoff_doubles_up_to_a_quarter_second() {
        assert_eq!(backoff(0), Duration::from_millis(20));
        assert_eq!(backoff(1), Duration::from_millis(40));
        assert_eq!(backoff(3), Duration::from_millis(160));
        assert_eq!(backoff(4), MAX_BACKOFF);
        assert_eq!(backoff(u32::MAX), MAX_BACKOFF);
    }

    #[test]
    fn the_next_member_waits_until_every_attempt_is_stalled() {
        let ms = Duration::from_millis;
        // Nothing running: start one now.
        assert_eq!(next_member_in(&[]), Some(Duration::ZERO));
        // A handshake holds the next member back for the stagger.
        let dialing = AttemptState::Dialing { for_: ms(100) };
        assert_eq!(next_member_in(&[dialing]), Some(ms(50)));
        // A call the member never acknowledged: after the silence.
        let silent = AttemptState::Calling {
            for_: ms(50),
            rtt: ms(1),
            heard: false,
        };
        assert_eq!(next_member_in(&[silent]), Some(ms(150)));
        assert_eq!(next_member_in(&[dialing, silent]), Some(ms(150)));
        let long_silent = AttemptState::Calling {
            for_: ms(900),
            rtt: ms(1),
            heard: false,
        };
        assert_eq!(next_member_in(&[long_silent]), Some(Duration::ZERO));
        // On a slow link the silence is three round trips.
        let far = AttemptState::Calling {
            for_: ms(100),
            rtt: ms(150),
            heard: false,
        };
        assert_eq!(next_member_in(&[far]), Some(ms(350)));
        // A member that acknowledged the call is working on it: never sent elsewhere too.
        let heard = AttemptState::Calling {
            for_: ms(5000),
            rtt: ms(1),
            heard: true,
        };
        assert_eq!(next_member_in(&[heard]), None);
        assert_eq!(next_member_in(&[long_silent, heard]), None);
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
