//! The random phase of a benchmark round: a uniform delay between the moment the testbed is
//! settled and the fault, so that the faults fall at every point of the holder's cycle (a
//! pvefleet renewal every 100 ms, a VRRP advert every 0.1 or 1 s) instead of always at the
//! same distance from the settle check. The outage of an owner's death depends on that point
//! (docs/design/vips.md: 0.36–0.48 s), so a fixed phase would measure one value of a spread.
//!
//! A SplitMix64 generator: small, seeded, the same sequence for the same seed, so a run can be
//! replayed (`PVEFLEET_BENCH_SEED`). Not for anything but spreading test faults.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The delays of one benchmark run.
#[derive(Debug, Clone)]
pub struct Phase {
    seed: u64,
    state: u64,
    max: Duration,
}

impl Phase {
    /// Delays uniform in `[0, max]`, drawn from `seed`.
    pub fn new(seed: u64, max: Duration) -> Phase {
        Phase {
            seed,
            state: seed,
            max,
        }
    }

    /// A seed from the clock, for a run that was given none.
    pub fn clock_seed() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0x5eed, |d| {
                d.as_secs().wrapping_mul(1_000_000_007) ^ u64::from(d.subsec_nanos())
            })
    }

    /// The seed it started from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The longest delay.
    pub fn max(&self) -> Duration {
        self.max
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// The next delay, to the microsecond. (The modulo's bias over 2^64 is negligible.)
    pub fn next_delay(&mut self) -> Duration {
        let span = u64::try_from(self.max.as_micros())
            .unwrap_or(u64::MAX)
            .saturating_add(1);
        Duration::from_micros(self.next_u64() % span)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_delays_all_within_the_bound() {
        let max = Duration::from_millis(250);
        let mut a = Phase::new(42, max);
        let mut b = Phase::new(42, max);
        let drawn: Vec<Duration> = (0..1000).map(|_| a.next_delay()).collect();
        assert!(drawn.iter().all(|d| *d <= max));
        assert_eq!(drawn, (0..1000).map(|_| b.next_delay()).collect::<Vec<_>>());
        // Spread over the range, not stuck in a corner.
        assert!(drawn.iter().any(|d| *d < max / 4));
        assert!(drawn.iter().any(|d| *d > max * 3 / 4));
        assert_ne!(Phase::new(43, max).next_delay(), drawn[0]);
    }
}
