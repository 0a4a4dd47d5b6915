//! The agent's lease (docs/design/architecture.md, safety rule 3), pure: a lease is valid for `lease_ms` after
//! the *send* time of the acknowledged beat, on this process's monotonic clock. Counting from
//! the send time (not the answer's arrival) is what makes it safe: the leader granted it at some
//! instant after the send, so the agent's view never outlives the leader's.
//!
//! The [`LeaseKeeper`] keeps the latest expiry (an answer to an older beat arriving late never
//! shortens it) and reports a lapse once. The fencer (`crate::fence`) follows the lease the
//! session publishes and acts before it ends; the lapse itself is only logged here.

use std::time::{Duration, Instant};

/// The longest lease honoured ([`protocol::timing::MAX_HOST_LEASE_MS`], which a coordinator
/// refuses to configure beyond): a leader granting more is capped, which can only make the
/// agent consider itself unleased earlier (the safe direction).
pub const MAX_LEASE: Duration = Duration::from_millis(protocol::timing::MAX_HOST_LEASE_MS);

/// One granted lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    sent_at: Instant,
    duration: Duration,
}

impl Lease {
    /// The lease granted by the ack of a beat sent at `sent_at`, for `lease_ms` (capped at
    /// [`MAX_LEASE`]).
    pub fn new(sent_at: Instant, lease_ms: u64) -> Lease {
        Lease {
            sent_at,
            duration: Duration::from_millis(lease_ms).min(MAX_LEASE),
        }
    }

    /// The send time of the beat it was granted for.
    pub fn sent_at(&self) -> Instant {
        self.sent_at
    }

    /// How long it runs from [`Lease::sent_at`].
    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// When it ends (exclusive).
    pub fn expires_at(&self) -> Instant {
        // Cannot overflow for a duration of at most a minute on any sane clock; if it did, the
        // lease counts as already expired.
        self.sent_at
            .checked_add(self.duration)
            .unwrap_or(self.sent_at)
    }

    /// Whether it still holds at `now`.
    pub fn is_valid(&self, now: Instant) -> bool {
        now < self.expires_at()
    }

    /// How long it still holds at `now` (zero once expired).
    pub fn remaining(&self, now: Instant) -> Duration {
        self.expires_at().saturating_duration_since(now)
    }
}

/// What happened to the lease at a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseEvent {
    /// It expired at `at` without a renewal (reported once per lapse).
    Lapsed {
        /// When it expired.
        at: Instant,
    },
}

/// The current lease and whether its lapse was reported.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaseKeeper {
    current: Option<Lease>,
    lapse_reported: bool,
}

impl LeaseKeeper {
    /// No lease yet.
    pub fn new() -> LeaseKeeper {
        LeaseKeeper::default()
    }

    /// Records a grant; keeps whichever lease ends later. A zero-length grant changes nothing.
    /// Answers whether the lease now ends later than before.
    pub fn grant(&mut self, lease: Lease) -> bool {
        if lease.duration.is_zero() {
            return false;
        }
        let extends = self
            .current
            .is_none_or(|c| lease.expires_at() > c.expires_at());
        if extends {
            self.current = Some(lease);
            self.lapse_reported = false;
        }
        extends
    }

    /// The lease in force (possibly expired).
    pub fn current(&self) -> Option<Lease> {
        self.current
    }

    /// Whether a lease holds at `now`.
    pub fn is_valid(&self, now: Instant) -> bool {
        self.current.is_some_and(|l| l.is_valid(now))
    }

    /// When the lease in force expires, unless its lapse was already reported (the instant to
    /// check again at).
    pub fn next_deadline(&self) -> Option<Instant> {
        match self.current {
            Some(l) if !self.lapse_reported => Some(l.expires_at()),
            _ => None,
        }
    }

    /// Reports a lapse the first time a check finds the lease expired.
    pub fn check(&mut self, now: Instant) -> Option<LeaseEvent> {
        let lease = self.current?;
        if self.lapse_reported || lease.is_valid(now) {
            return None;
        }
        self.lapse_reported = true;
        Some(LeaseEvent::Lapsed {
            at: lease.expires_at(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn lease_arithmetic_table() {
        let t0 = Instant::now();
        // (lease_ms, ms after send, valid, remaining ms)
        let table = [
            (10_000, 0, true, 10_000),
            (10_000, 9_999, true, 1),
            (10_000, 10_000, false, 0),
            (10_000, 15_000, false, 0),
            (0, 0, false, 0),
            (120_000, 59_999, true, 1),
            (120_000, 60_000, false, 0),
        ];
        for (lease_ms, after, valid, remaining) in table {
            let lease = Lease::new(t0, lease_ms);
            let now = t0 + after * MS;
            assert_eq!(
                lease.is_valid(now),
                valid,
                "{lease_ms} ms lease at +{after} ms"
            );
            assert_eq!(
                lease.remaining(now),
                remaining * MS,
                "{lease_ms} at +{after}"
            );
        }
    }

    #[test]
    fn the_lease_counts_from_the_send_time_not_the_answer() {
        let sent = Instant::now();
        let answered = sent + 3000 * MS;
        let lease = Lease::new(sent, 10_000);
        assert_eq!(lease.remaining(answered), 7000 * MS);
        assert_eq!(lease.expires_at(), sent + 10_000 * MS);
    }

    #[test]
    fn a_late_answer_to_an_older_beat_never_shortens_the_lease() {
        let t0 = Instant::now();
        let mut keeper = LeaseKeeper::new();
        assert!(keeper.grant(Lease::new(t0 + 1000 * MS, 10_000)));
        assert!(!keeper.grant(Lease::new(t0, 10_000)));
        assert_eq!(keeper.current().map(|l| l.sent_at()), Some(t0 + 1000 * MS));
        assert!(!keeper.grant(Lease::new(t0 + 2000 * MS, 0)));
        assert!(keeper.grant(Lease::new(t0 + 2000 * MS, 10_000)));
    }

    #[test]
    fn a_lapse_is_reported_once_until_renewed() {
        let t0 = Instant::now();
        let mut keeper = LeaseKeeper::new();
        assert_eq!(keeper.check(t0), None);
        assert_eq!(keeper.next_deadline(), None);
        keeper.grant(Lease::new(t0, 1000));
        assert_eq!(keeper.next_deadline(), Some(t0 + 1000 * MS));
        assert_eq!(keeper.check(t0 + 999 * MS), None);
        assert!(keeper.is_valid(t0 + 999 * MS));
        let at = t0 + 1000 * MS;
        assert_eq!(keeper.check(at), Some(LeaseEvent::Lapsed { at }));
        assert_eq!(keeper.check(at + 5 * MS), None);
        assert_eq!(keeper.next_deadline(), None);
        assert!(!keeper.is_valid(at));
        keeper.grant(Lease::new(t0 + 2000 * MS, 1000));
        assert_eq!(keeper.check(t0 + 2500 * MS), None);
        assert!(keeper.check(t0 + 3000 * MS).is_some());
    }
}
