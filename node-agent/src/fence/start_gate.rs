//! The gate every guest start of the agent passes (a command's start, a restart, a rollback
//! to a snapshot with RAM): closed from the moment the agent begins fencing until a leader
//! acknowledges it again. Commands come only with acks, but one acknowledged earlier may still
//! run when the lease runs out; without the gate it could start a guest the fencing has just
//! stopped.
//!
//! ```text
//!  start: closed? ─▶ refuse │ read permit ─▶ closed? ─▶ refuse │ start, then drop the permit
//!  fencer: close() ─▶ drained() waits for the permits taken before ─▶ no start is in flight
//! ```
//!
//! Both checks are needed: a start that saw the gate open may take its permit only after the
//! fencer drained; it then sees the gate closed.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::{OwnedRwLockReadGuard, RwLock};

/// The gate (cheap to clone; every clone is the same gate). Open when made.
#[derive(Debug, Clone, Default)]
pub struct StartGate {
    closed: Arc<AtomicBool>,
    in_flight: Arc<RwLock<()>>,
}

/// Held while a start runs: the fencer's [`StartGate::drained`] waits for it.
#[derive(Debug)]
pub struct StartPermit {
    _held: OwnedRwLockReadGuard<()>,
}

/// The gate is closed: the agent is fencing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "the agent's lease is running out or lapsed: it starts no guest until a leader \
     acknowledges it again"
)]
pub struct GateClosed;

impl StartGate {
    /// An open gate.
    pub fn new() -> StartGate {
        StartGate::default()
    }

    /// A permit to start a guest, held until the start is over; [`GateClosed`] while fencing.
    pub async fn admit(&self) -> Result<StartPermit, GateClosed> {
        if self.is_closed() {
            return Err(GateClosed);
        }
        let held = Arc::clone(&self.in_flight).read_owned().await;
        if self.is_closed() {
            return Err(GateClosed);
        }
        Ok(StartPermit { _held: held })
    }

    /// Refuses every start from now on.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }

    /// Admits starts again.
    pub fn open(&self) {
        self.closed.store(false, Ordering::SeqCst);
    }

    /// Whether it is closed.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Resolves once no start admitted before the last [`StartGate::close`] still runs.
    pub async fn drained(&self) {
        drop(self.in_flight.write().await);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_closed_gate_refuses_and_an_open_one_admits() {
        let gate = StartGate::new();
        assert!(gate.admit().await.is_ok());
        gate.close();
        assert_eq!(gate.admit().await.unwrap_err(), GateClosed);
        gate.open();
        assert!(gate.admit().await.is_ok());
    }

    #[tokio::test]
    async fn draining_waits_for_the_start_admitted_before_the_close() {
        let gate = StartGate::new();
        let permit = gate.admit().await.unwrap();
        gate.close();
        let waiting = tokio::time::timeout(Duration::from_millis(50), gate.drained()).await;
        assert!(waiting.is_err(), "a start is still in flight");
        drop(permit);
        tokio::time::timeout(Duration::from_secs(5), gate.drained())
            .await
            .expect("drained once the start is over");
        assert!(gate.admit().await.is_err());
    }
}
