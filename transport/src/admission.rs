//! `Admission`: what a `Server` lets in before and after a handshake. Every connection attempt
//! needs one of `max_handshakes` handshake slots; a connection without a client certificate
//! then needs one of `join.max_connections` slots and must fit its source address's budget of
//! join attempts, and so must each of its calls. Authenticated peers never touch the budget or
//! the unauthenticated slots: a flood of certificate-less clients cannot starve them of
//! anything but handshake slots, which are held only for `connect_timeout`.

use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::address_budget::{AddressBudget, MAX_SOURCES};
use crate::config::TransportConfig;
use crate::join_limits::JoinLimits;

/// The server-wide admission state (one per `Server::run`).
#[derive(Debug)]
pub(crate) struct Admission {
    handshakes: Arc<Semaphore>,
    unauthenticated: Arc<Semaphore>,
    budget: Mutex<AddressBudget>,
    limits: JoinLimits,
}

/// The outcome of admitting a connection without a client certificate.
#[derive(Debug)]
pub(crate) enum Unauthenticated {
    /// Served under the Join limits; the slot is released when the permit is dropped.
    Admitted(OwnedSemaphorePermit),
    /// Its source is over budget: each of its calls is answered with this refusal (so a
    /// joiner learns to retry later) until its short lifetime ends. It holds a slot too, so
    /// throttled connections are bounded like the others.
    Throttled(OwnedSemaphorePermit, String),
    /// No slot is free: closed at once with this reason.
    Full(String),
}

impl Admission {
    pub(crate) fn new(cfg: &TransportConfig) -> Admission {
        let limits = cfg.join.clone();
        Admission {
            handshakes: Arc::new(Semaphore::new(cfg.max_handshakes)),
            unauthenticated: Arc::new(Semaphore::new(limits.max_connections)),
            budget: Mutex::new(AddressBudget::new(
                limits.attempts_per_sec,
                limits.attempt_burst,
                MAX_SOURCES,
            )),
            limits,
        }
    }

    /// A handshake slot, or `None` when `max_handshakes` are under way.
    pub(crate) fn handshake(&self) -> Option<OwnedSemaphorePermit> {
        Arc::clone(&self.handshakes).try_acquire_owned().ok()
    }

    /// Admits a connection from `ip` that presented no certificate.
    pub(crate) fn unauthenticated(&self, ip: IpAddr) -> Unauthenticated {
        let Ok(slot) = Arc::clone(&self.unauthenticated).try_acquire_owned() else {
            return Unauthenticated::Full(format!(
                "this server already serves its maximum of {} clients without a certificate \
                 (join.max_connections); retry in a few seconds",
                self.limits.max_connections
            ));
        };
        match self.spend(ip) {
            Ok(()) => Unauthenticated::Admitted(slot),
            Err(reason) => Unauthenticated::Throttled(slot, reason),
        }
    }

    /// Spends one join attempt of `ip`'s source; `Err` is the refusal to send.
    pub(crate) fn spend(&self, ip: IpAddr) -> Result<(), String> {
        // A bucket update cannot be left half-done by a panic elsewhere.
        let mut budget = self.budget.lock().unwrap_or_else(PoisonError::into_inner);
        budget.spend(ip, Instant::now()).map_err(|wait| {
            format!(
                "too many join attempts from {ip}: at most {} a second ({} in a burst) \
                 (join.attempts_per_sec, join.attempt_burst); retry in {:.1} s",
                self.limits.attempts_per_sec,
                self.limits.attempt_burst,
                wait.as_secs_f64().max(0.1)
            )
        })
    }

    /// Unauthenticated connections open now (admitted or throttled).
    #[cfg(test)]
    pub(crate) fn unauthenticated_open(&self) -> usize {
        self.limits.max_connections - self.unauthenticated.available_permits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admission(join: JoinLimits) -> Admission {
        Admission::new(&TransportConfig {
            max_handshakes: 2,
            join,
            ..TransportConfig::default()
        })
    }

    #[test]
    fn handshake_slots_are_bounded_and_come_back() {
        let a = admission(JoinLimits::default());
        let one = a.handshake().unwrap();
        let _two = a.handshake().unwrap();
        assert!(a.handshake().is_none());
        drop(one);
        assert!(a.handshake().is_some());
    }

    #[test]
    fn unauthenticated_connections_are_capped_then_throttled_per_source() {
        let a = admission(JoinLimits {
            max_connections: 3,
            attempt_burst: 2,
            attempts_per_sec: 1,
            ..JoinLimits::default()
        });
        let ip: IpAddr = [192, 0, 2, 1].into();
        let first = a.unauthenticated(ip);
        assert!(matches!(first, Unauthenticated::Admitted(_)), "{first:?}");
        // The call on it spends the last attempt of the burst.
        assert_eq!(a.spend(ip), Ok(()));
        let throttled = a.unauthenticated(ip);
        assert!(
            matches!(&throttled, Unauthenticated::Throttled(_, m) if m.contains("too many join attempts from 192.0.2.1")),
            "{throttled:?}"
        );
        // Another source still has its budget, until the slots run out.
        let other = a.unauthenticated([192, 0, 2, 2].into());
        assert!(matches!(other, Unauthenticated::Admitted(_)), "{other:?}");
        assert_eq!(a.unauthenticated_open(), 3);
        let full = a.unauthenticated([192, 0, 2, 3].into());
        assert!(
            matches!(&full, Unauthenticated::Full(m) if m.contains("join.max_connections")),
            "{full:?}"
        );
        drop((first, throttled, other));
        assert_eq!(a.unauthenticated_open(), 0);
    }
}
