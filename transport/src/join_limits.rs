//! `JoinLimits`: what a client without a certificate may cost a server. Such a client can only
//! reach the Join service, whose one request (a token, a CSR and an address) is a few KiB, so
//! everything it may hold is small and short-lived: frames in KiB, a couple of streams, a
//! request that must arrive within seconds, a connection that ends after a fixed lifetime, a cap
//! on how many such connections exist at once and a per-address budget of attempts.
//!
//! QUIC announces stream and flow-control limits in the handshake, before the server knows
//! whether the client has a certificate, so the server announces these small limits to every
//! client and raises them for a client whose certificate it verified (`Server`).

use std::time::Duration;

use crate::TransportError;

/// Limits of unauthenticated (Join service) clients on a server. Part of
/// [`TransportConfig`](crate::TransportConfig); only servers serving
/// [`Service::Join`](crate::Service::Join) meet such clients, but every server announces the
/// stream limits below until a client's certificate is verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinLimits {
    /// The largest request frame an unauthenticated client may send, in bytes (replies use it
    /// too). Default 16 KiB; allowed 1 KiB to 1 MiB.
    pub max_frame: usize,
    /// Calls (bidirectional streams) an unauthenticated client may have open at once; further
    /// streams wait for QUIC stream credit. Default 2; allowed 1 to 16.
    pub max_concurrent_calls: u32,
    /// The whole request frame must arrive within this, or the stream is reset (a peer that
    /// sends slowly or stalls mid-frame holds nothing longer). Default 3 s; allowed 100 ms to
    /// `call_timeout`.
    pub request_timeout: Duration,
    /// The deadline of a whole call: request, handler (a join waits for a quorum and a Raft
    /// write) and reply. Default 10 s; allowed `request_timeout` to 60 s.
    pub call_timeout: Duration,
    /// An unauthenticated connection is closed this long after its handshake, busy or not
    /// (calls in flight are answered first); keep-alives do not extend it. Default 20 s;
    /// allowed `call_timeout` to 10 min.
    pub connection_lifetime: Duration,
    /// Unauthenticated connections a server keeps at once; more are closed right after their
    /// handshake with a refusal saying the server is busy. Default 128; allowed 1 to 65 536.
    pub max_connections: usize,
    /// Join attempts (new unauthenticated connections and calls) one source address may make
    /// per second, on average; IPv6 sources count per /64. Default 10; allowed 1 to 10 000.
    pub attempts_per_sec: u32,
    /// Attempts one source address may make in a burst above that rate. Default 40; allowed
    /// 1 to 100 000.
    pub attempt_burst: u32,
}

impl Default for JoinLimits {
    fn default() -> Self {
        Self {
            max_frame: 16 * 1024,
            max_concurrent_calls: 2,
            request_timeout: Duration::from_secs(3),
            call_timeout: Duration::from_secs(10),
            connection_lifetime: Duration::from_secs(20),
            max_connections: 128,
            attempts_per_sec: 10,
            attempt_burst: 40,
        }
    }
}

/// Ranges the validation allows (inclusive).
const MAX_FRAME: (usize, usize) = (1024, 1024 * 1024);
const CALLS: (u32, u32) = (1, 16);
const MIN_REQUEST_TIMEOUT: Duration = Duration::from_millis(100);
const MAX_CALL_TIMEOUT: Duration = Duration::from_secs(60);
const MAX_LIFETIME: Duration = Duration::from_secs(600);
const CONNECTIONS: (usize, usize) = (1, 65_536);
const RATE: (u32, u32) = (1, 10_000);
const BURST: (u32, u32) = (1, 100_000);

impl JoinLimits {
    /// Checks each limit against its allowed range (see the fields); the error names the field
    /// as `join.<field>`.
    pub fn validate(&self) -> Result<(), TransportError> {
        fn range<T: PartialOrd + std::fmt::Debug>(
            field: &str,
            value: T,
            (low, high): (T, T),
        ) -> Result<(), TransportError> {
            if value < low || value > high {
                return Err(TransportError::Config(format!(
                    "join.{field} is {value:?}; it must be between {low:?} and {high:?}"
                )));
            }
            Ok(())
        }
        range("max_frame", self.max_frame, MAX_FRAME)?;
        range("max_concurrent_calls", self.max_concurrent_calls, CALLS)?;
        range(
            "request_timeout",
            self.request_timeout,
            (MIN_REQUEST_TIMEOUT, self.call_timeout),
        )?;
        range(
            "call_timeout",
            self.call_timeout,
            (self.request_timeout, MAX_CALL_TIMEOUT),
        )?;
        range(
            "connection_lifetime",
            self.connection_lifetime,
            (self.call_timeout, MAX_LIFETIME),
        )?;
        range("max_connections", self.max_connections, CONNECTIONS)?;
        range("attempts_per_sec", self.attempts_per_sec, RATE)?;
        range("attempt_burst", self.attempt_burst, BURST)?;
        Ok(())
    }

    /// The connection-level receive window announced to every client before its certificate
    /// is known: enough for each allowed call's request frame, so a legitimate join never
    /// waits for credit, while an unauthenticated client can park at most this many unread
    /// bytes in the server's QUIC buffers.
    pub(crate) fn receive_window(&self) -> u32 {
        let per_call = self.max_frame + crate::frame::HEADER_LEN;
        let window = per_call.saturating_mul(self.max_concurrent_calls as usize);
        // Validated: at most 16 × (1 MiB + 4), far below u32::MAX.
        u32::try_from(window).unwrap_or(u32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_small() {
        let limits = JoinLimits::default();
        assert_eq!(limits.validate().ok(), Some(()));
        assert_eq!(limits.receive_window(), 2 * (16 * 1024 + 4));
    }

    #[test]
    fn each_limit_outside_its_range_is_refused_by_name() {
        let d = JoinLimits::default;
        let table: Vec<(&str, JoinLimits)> = vec![
            (
                "join.max_frame",
                JoinLimits {
                    max_frame: 100,
                    ..d()
                },
            ),
            (
                "join.max_frame",
                JoinLimits {
                    max_frame: 64 * 1024 * 1024,
                    ..d()
                },
            ),
            (
                "join.max_concurrent_calls",
                JoinLimits {
                    max_concurrent_calls: 0,
                    ..d()
                },
            ),
            (
                "join.request_timeout",
                JoinLimits {
                    request_timeout: Duration::from_secs(11),
                    ..d()
                },
            ),
            (
                "join.request_timeout",
                JoinLimits {
                    request_timeout: Duration::ZERO,
                    ..d()
                },
            ),
            (
                "join.call_timeout",
                JoinLimits {
                    call_timeout: Duration::from_secs(61),
                    connection_lifetime: Duration::from_secs(120),
                    ..d()
                },
            ),
            (
                "join.connection_lifetime",
                JoinLimits {
                    connection_lifetime: Duration::from_secs(5),
                    ..d()
                },
            ),
            (
                "join.max_connections",
                JoinLimits {
                    max_connections: 0,
                    ..d()
                },
            ),
            (
                "join.attempts_per_sec",
                JoinLimits {
                    attempts_per_sec: 0,
                    ..d()
                },
            ),
            (
                "join.attempt_burst",
                JoinLimits {
                    attempt_burst: 1_000_000,
                    ..d()
                },
            ),
        ];
        for (field, limits) in table {
            match limits.validate() {
                Err(TransportError::Config(m)) => {
                    assert!(m.starts_with(field), "{field}: {m}");
                    assert!(m.contains("must be between"), "{m}");
                }
                other => panic!("{field}: {other:?}"),
            }
        }
    }
}
