//! QUIC application codes pvefleet sends when it closes a connection or cancels a stream, and
//! the mapping of quinn's connection outcomes onto `TransportError`, so a caller can tell "the
//! peer refused me" from "the peer's certificate is bad" from "the network went away".

use std::net::SocketAddr;

use quinn::ConnectionError;

use crate::TransportError;

/// Connection closed by a client that has finished (graceful close).
pub const CLOSE_DONE: u32 = 0;
/// Connection refused after the handshake: the client's role does not fit the service, or the
/// client has no certificate on a service that needs one. The reason is sent along.
pub const CLOSE_REFUSED: u32 = 1;
/// Connection closed because the server is shutting down (after in-flight calls were answered).
pub const CLOSE_SHUTDOWN: u32 = 2;
/// Connection closed by a client that reached a different node than it dialed.
pub const CLOSE_WRONG_PEER: u32 = 3;
/// Connection closed by the server because a client without a certificate reached the end of
/// its lifetime (`JoinLimits::connection_lifetime`); its calls were answered first. Reconnect
/// to call again.
pub const CLOSE_EXPIRED: u32 = 4;

/// Stream reset by the server: the call's deadline expired before the reply was sent.
pub const STREAM_DEADLINE: u32 = 1;
/// Stream stopped by the reader: the announced frame is larger than the maximum.
pub const STREAM_TOO_LARGE: u32 = 2;
/// Stream reset by the server: the request stream ended or failed before a whole frame.
pub const STREAM_BAD_FRAME: u32 = 3;
/// Stream stopped by the server: it answered without reading the request (a client without
/// a certificate over its budget of join attempts).
pub const STREAM_REFUSED: u32 = 4;

/// TLS alerts travel as QUIC transport codes 0x100 + alert (RFC 9001 §4.8).
fn tls_alert(code: quinn::TransportErrorCode) -> Option<u8> {
    let raw = u64::from(code);
    (0x100..=0x1ff).contains(&raw).then_some((raw & 0xff) as u8)
}

/// What a dead connection means for the call or dial that noticed it (`addr` is the peer's).
pub(crate) fn classify(error: &ConnectionError, addr: SocketAddr) -> TransportError {
    match error {
        // The peer's TLS stack refused the handshake: our certificate, or no common ALPN.
        ConnectionError::ConnectionClosed(close) => match tls_alert(close.error_code) {
            Some(alert) => TransportError::Refused {
                reason: format!(
                    "TLS alert {alert}: {}",
                    String::from_utf8_lossy(&close.reason)
                ),
            },
            None => TransportError::ConnectionLost(error.to_string()),
        },
        // Our own TLS stack refused the peer's certificate.
        ConnectionError::TransportError(local) if tls_alert(local.code).is_some() => {
            TransportError::PeerCertificate {
                addr,
                reason: local.reason.clone(),
            }
        }
        ConnectionError::ApplicationClosed(close) => {
            let reason = String::from_utf8_lossy(&close.reason).into_owned();
            match u32::try_from(close.error_code.into_inner()) {
                Ok(CLOSE_REFUSED) => TransportError::Refused { reason },
                Ok(CLOSE_SHUTDOWN) => {
                    TransportError::ConnectionLost(format!("{addr} is shutting down"))
                }
                _ => TransportError::ConnectionLost(error.to_string()),
            }
        }
        ConnectionError::LocallyClosed => TransportError::Closed,
        ConnectionError::TimedOut => {
            TransportError::ConnectionLost(format!("{addr} sent nothing within the idle timeout"))
        }
        other => TransportError::ConnectionLost(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_alert_codes_are_recognised() {
        assert_eq!(tls_alert(quinn::TransportErrorCode::crypto(48)), Some(48));
        assert_eq!(
            tls_alert(quinn::TransportErrorCode::PROTOCOL_VIOLATION),
            None
        );
    }

    #[test]
    fn an_application_refusal_carries_its_reason() {
        let addr: SocketAddr = ([127, 0, 0, 1], 1).into();
        let close = quinn::ApplicationClose {
            error_code: CLOSE_REFUSED.into(),
            reason: "role agent is not allowed on pvefleet-raft/1".into(),
        };
        let e = classify(&ConnectionError::ApplicationClosed(close), addr);
        assert!(
            matches!(e, TransportError::Refused { ref reason } if reason.contains("role agent")),
            "{e:?}"
        );
        assert!(matches!(
            classify(&ConnectionError::LocallyClosed, addr),
            TransportError::Closed
        ));
    }
}
