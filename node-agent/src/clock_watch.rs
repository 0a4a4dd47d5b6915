//! The agent's wall clock against the leader's: each acknowledged heartbeat carries the
//! leader's clock, and the round trip around it bounds the offset (as NTP does). The session
//! records the latest measurement; a diagnosis reports it. Nothing else reads it: leases run
//! on monotonic clocks.

use std::sync::{Arc, Mutex, PoisonError};

use protocol::agent::ClockOffset;

/// The latest measurement, shared between the session and the diagnosis.
#[derive(Debug, Clone, Default)]
pub struct ClockWatch {
    latest: Arc<Mutex<Option<ClockOffset>>>,
}

impl ClockWatch {
    /// No measurement yet.
    pub fn new() -> ClockWatch {
        ClockWatch::default()
    }

    /// Keeps a measurement: the tighter of it and the last one is not kept on purpose (a
    /// clock that was stepped since must show at once).
    pub fn record(&self, offset: ClockOffset) {
        *self.latest.lock().unwrap_or_else(PoisonError::into_inner) = Some(offset);
    }

    /// The latest measurement, if a heartbeat was answered by a leader that sent its clock.
    pub fn latest(&self) -> Option<ClockOffset> {
        *self.latest.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
