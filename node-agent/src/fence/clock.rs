//! The system-wide monotonic clock (`CLOCK_MONOTONIC`) the fence record is written in. The
//! agent keeps its lease on `std::time::Instant`s, which are private to the process; the guard
//! is another process, and a restarted agent is a new one, so the record needs a clock that
//! every process of this boot reads alike. `CLOCK_MONOTONIC` is that clock: it starts at boot,
//! never jumps with the wall clock, and the boot id says which boot it belongs to.
//!
//! [`MonoClock`] converts between the two through one anchor taken at the same moment (std
//! happens to use `CLOCK_MONOTONIC` on Linux, but does not promise it).

use std::time::{Duration, Instant};

use rustix::time::{ClockId, clock_gettime};

/// `CLOCK_MONOTONIC` now, in nanoseconds.
pub fn now_mono_ns() -> u64 {
    let ts = clock_gettime(ClockId::Monotonic);
    let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(ts.tv_nsec).unwrap_or(0);
    secs.saturating_mul(1_000_000_000).saturating_add(nanos)
}

/// Converts `Instant`s of this process to `CLOCK_MONOTONIC` nanoseconds and back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MonoClock {
    instant: Instant,
    ns: u64,
}

impl MonoClock {
    /// A converter anchored now.
    pub fn new() -> MonoClock {
        MonoClock::anchored(Instant::now(), now_mono_ns())
    }

    /// A converter for which `instant` is `ns` (tests pick both).
    pub fn anchored(instant: Instant, ns: u64) -> MonoClock {
        MonoClock { instant, ns }
    }

    /// `at` on the monotonic clock.
    pub fn ns_of(&self, at: Instant) -> u64 {
        match at.checked_duration_since(self.instant) {
            Some(after) => self.ns.saturating_add(nanos(after)),
            None => self.ns.saturating_sub(nanos(self.instant - at)),
        }
    }

    /// The `Instant` of monotonic time `ns` (the anchor itself if it cannot be represented,
    /// which only a clock near its origin could cause).
    pub fn instant_of(&self, ns: u64) -> Instant {
        if ns >= self.ns {
            self.instant
                .checked_add(Duration::from_nanos(ns - self.ns))
                .unwrap_or(self.instant)
        } else {
            self.instant
                .checked_sub(Duration::from_nanos(self.ns - ns))
                .unwrap_or(self.instant)
        }
    }
}

impl Default for MonoClock {
    fn default() -> Self {
        MonoClock::new()
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_and_monotonic_nanoseconds_convert_both_ways() {
        let t0 = Instant::now() + Duration::from_secs(100);
        let clock = MonoClock::anchored(t0, 5_000_000_000);
        let table = [
            (t0, 5_000_000_000),
            (t0 + Duration::from_millis(1500), 6_500_000_000),
            (t0 - Duration::from_secs(2), 3_000_000_000),
        ];
        for (at, ns) in table {
            assert_eq!(clock.ns_of(at), ns);
            assert_eq!(clock.instant_of(ns), at);
        }
    }

    #[test]
    fn the_real_clock_moves_forward_with_instants() {
        let clock = MonoClock::new();
        let a = now_mono_ns();
        let later = clock.ns_of(Instant::now());
        // Anchored within a few ms of each other: the two readings agree closely.
        assert!(later + 50_000_000 >= a && later <= now_mono_ns() + 50_000_000);
        assert!(now_mono_ns() >= a);
    }
}
