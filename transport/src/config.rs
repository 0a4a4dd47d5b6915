//! `TransportConfig`: timeouts and limits shared by both ends, and their translation into quinn's
//! transport parameters. Keep-alive must stay below the idle timeout, and both are set on every
//! endpoint (server and client), so a quiet but healthy connection is never timed out by
//! whichever side happens to be silent.

use std::sync::Arc;
use std::time::Duration;

use crate::TransportError;

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
    /// Concurrent calls (bidirectional streams) a peer may open on one connection. Default 256.
    pub max_concurrent_calls: u32,
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
        Ok(())
    }

    /// quinn's transport parameters for these settings (the same on servers and clients).
    pub(crate) fn quic(&self) -> Result<Arc<quinn::TransportConfig>, TransportError> {
        self.validate()?;
        let idle = quinn::IdleTimeout::try_from(self.idle_timeout)
            .map_err(|e| TransportError::Config(format!("idle_timeout: {e}")))?;
        let mut t = quinn::TransportConfig::default();
        t.max_idle_timeout(Some(idle));
        t.keep_alive_interval(Some(self.keep_alive));
        t.max_concurrent_bidi_streams(self.max_concurrent_calls.into());
        // Calls only use bidirectional streams; refuse anything else outright.
        t.max_concurrent_uni_streams(0u32.into());
        Ok(Arc::new(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_translate() {
        let cfg = TransportConfig::default();
        assert_eq!(cfg.validate().ok(), Some(()));
        assert!(cfg.quic().is_ok());
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
}
