//! `TransportConfig`: timeouts and limits shared by both ends, and their translation into quinn's
//! transport parameters. Keep-alive must stay below the idle timeout, and both are set on every
//! endpoint (server and client), so a quiet but healthy connection is never timed out by
//! whichever side happens to be silent.
//!
//! A server announces the small limits of clients without a certificate ([`JoinLimits`]) to
//! every client, because QUIC sends its limits in the handshake, before the server knows who
//! the client is; `Server` raises them to this configuration's own for a client whose
//! certificate it verified. Lowering limits after the fact is not possible, raising them is.

use std::sync::Arc;
use std::time::Duration;

use crate::TransportError;
use crate::join_limits::JoinLimits;

/// Timeouts and limits of an endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransportConfig {
    /// A connection with no packets for this long is dead (QUIC max idle timeout). Default 30 s.
    pub idle_timeout: Duration,
    /// Send a keep-alive after this long without traffic; must be below `idle_timeout`.
    /// Default 5 s.
    pub keep_alive: Duration,
    /// The deadline of a call, both for the caller (`Connection::call`) and for the server
    /// (reading the request, running the handler, writing the reply). Default 10 s.
    pub call_timeout: Duration,
    /// The largest frame accepted or sent, in bytes; larger announced lengths are refused before
    /// anything is allocated. Default 64 MiB.
    pub max_frame: usize,
    /// The deadline of a QUIC + TLS handshake. Default 5 s.
    pub connect_timeout: Duration,
    /// Concurrent calls (bidirectional streams) a peer with a verified certificate may open on
    /// one connection. Default 256.
    pub max_concurrent_calls: u32,
    /// Handshakes a server runs at once; further connection attempts are refused at once (the
    /// client sees the connection refused and may retry). Bounds what peers that start
    /// handshakes and never finish them can hold, for up to `connect_timeout` each.
    /// Default 256; allowed 1 to 65 536.
    pub max_handshakes: usize,
    /// What a client without a certificate (the Join service) may cost a server.
    pub join: JoinLimits,
}

impl Default for TransportConfig {
    fn default() -> Self {
        Self {
            idle_timeout: Duration::from_secs(30),
            keep_alive: Duration::from_secs(5),
            call_timeout: Duration::from_secs(10),
            max_frame: 64 * 1024 * 1024,
            connect_timeout: Duration::from_secs(5),
            max_concurrent_calls: 256,
            max_handshakes: 256,
            join: JoinLimits::default(),
        }
    }
}

impl TransportConfig {
    /// Checks the settings against each other; every constructor calls it.
    pub fn validate(&self) -> Result<(), TransportError> {
        let bad = |m: String| Err(TransportError::Config(m));
        if self.keep_alive.is_zero() || self.keep_alive >= self.idle_timeout {
            return bad(format!(
                "keep_alive ({:?}) must be non-zero and below idle_timeout ({:?})",
                self.keep_alive, self.idle_timeout
            ));
        }
        if self.call_timeout.is_zero() || self.connect_timeout.is_zero() {
            return bad("call_timeout and connect_timeout must be non-zero".to_string());
        }
        // The length prefix is a u32.
        if self.max_frame == 0 || u32::try_from(self.max_frame).is_err() {
            return bad(format!(
                "max_frame ({}) must be between 1 and {}",
                self.max_frame,
                u32::MAX
            ));
        }
        if self.max_concurrent_calls == 0 {
            return bad("max_concurrent_calls must be at least 1".to_string());
        }
        if !(1..=65_536).contains(&self.max_handshakes) {
            return bad(format!(
                "max_handshakes is {}; it must be between 1 and 65536",
                self.max_handshakes
            ));
        }
        self.join.validate()
    }

    /// quinn's transport parameters of a dialing client: this configuration's own limits.
    pub(crate) fn quic_client(&self) -> Result<Arc<quinn::TransportConfig>, TransportError> {
        let mut t = self.quic_common()?;
        t.max_concurrent_bidi_streams(self.max_concurrent_calls.into());
        Ok(Arc::new(t))
    }

    /// quinn's transport parameters of a server: the Join limits, which every client sees
    /// until its certificate is verified (then `Server` raises the stream limit and the
    /// receive window with [`TransportConfig::authenticated_streams`]).
    pub(crate) fn quic_server(&self) -> Result<Arc<quinn::TransportConfig>, TransportError> {
        let mut t = self.quic_common()?;
        t.max_concurrent_bidi_streams(self.join.max_concurrent_calls.into());
        t.receive_window(self.join.receive_window().into());
        Ok(Arc::new(t))
    }

    /// The stream limit and connection receive window of a client with a verified
    /// certificate (quinn's own default window: unlimited, each stream keeps its own).
    pub(crate) fn authenticated_streams(&self) -> (quinn::VarInt, quinn::VarInt) {
        (self.max_concurrent_calls.into(), quinn::VarInt::MAX)
    }

    fn quic_common(&self) -> Result<quinn::TransportConfig, TransportError> {
        self.validate()?;
        let idle = quinn::IdleTimeout::try_from(self.idle_timeout)
            .map_err(|e| TransportError::Config(format!("idle_timeout: {e}")))?;
        let mut t = quinn::TransportConfig::default();
        t.max_idle_timeout(Some(idle));
        t.keep_alive_interval(Some(self.keep_alive));
        // Calls only use bidirectional streams; refuse anything else outright.
        t.max_concurrent_uni_streams(0u32.into());
        // Nor datagrams: quinn would otherwise buffer up to 1.25 MB of them per connection for
        // a reader that never comes.
        t.datagram_receive_buffer_size(None);
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_translate() {
        let cfg = TransportConfig::default();
        assert_eq!(cfg.validate().ok(), Some(()));
        assert!(cfg.quic_client().is_ok());
        assert!(cfg.quic_server().is_ok());
    }

    #[test]
    fn keep_alive_at_or_above_idle_is_refused() {
        let cfg = TransportConfig {
            keep_alive: Duration::from_secs(30),
            ..TransportConfig::default()
        };
        assert!(
            matches!(cfg.validate(), Err(TransportError::Config(m)) if m.contains("keep_alive"))
        );
    }

    #[test]
    fn frame_limits_outside_the_u32_prefix_are_refused() {
        for max_frame in [0, u32::MAX as usize + 1] {
            let cfg = TransportConfig {
                max_frame,
                ..TransportConfig::default()
            };
            assert!(cfg.validate().is_err(), "{max_frame}");
        }
    }

    #[test]
    fn bad_handshake_caps_and_join_limits_are_refused_by_name() {
        let cfg = TransportConfig {
            max_handshakes: 0,
            ..TransportConfig::default()
        };
        assert!(
            matches!(cfg.validate(), Err(TransportError::Config(m)) if m.starts_with("max_handshakes"))
        );
        let cfg = TransportConfig {
            join: JoinLimits {
                max_frame: 0,
                ..JoinLimits::default()
            },
            ..TransportConfig::default()
        };
        assert!(
            matches!(cfg.validate(), Err(TransportError::Config(m)) if m.starts_with("join.max_frame"))
        );
    }
}
