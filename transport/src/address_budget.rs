//! `AddressBudget`: a token bucket per source address, for attempts by clients without a
//! certificate. Pure: the caller passes the time, so the rules are tested as tables.
//!
//! An IPv4 address (or an IPv4-mapped IPv6 one) is one source; IPv6 sources count per /64,
//! because one host usually owns a whole /64 and could otherwise pick a fresh address per
//! attempt. The table is bounded: buckets that refilled completely carry no information and are
//! dropped first; if every tracked source is still in debt and the table is full, a new source
//! is refused (failing closed: only a flood from many sources fills it, and joiners retry).

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// The sources a budget tracks at most.
pub(crate) const MAX_SOURCES: usize = 16_384;

/// One source's bucket.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Per-source attempt budgets.
#[derive(Debug)]
pub(crate) struct AddressBudget {
    rate: f64,
    burst: f64,
    capacity: usize,
    buckets: HashMap<IpAddr, Bucket>,
}

impl AddressBudget {
    /// `rate` attempts per second on average per source, `burst` at once, at most `capacity`
    /// sources tracked.
    pub(crate) fn new(rate: u32, burst: u32, capacity: usize) -> AddressBudget {
        AddressBudget {
            rate: f64::from(rate.max(1)),
            burst: f64::from(burst.max(1)),
            capacity: capacity.max(1),
            buckets: HashMap::new(),
        }
    }

    /// Spends one attempt of `addr`'s source at `now`; `Err(wait)` if it has none left, with
    /// how long until it has one again.
    pub(crate) fn spend(&mut self, addr: IpAddr, now: Instant) -> Result<(), Duration> {
        let key = source_of(addr);
        if !self.buckets.contains_key(&key) && self.buckets.len() >= self.capacity {
            self.forget_refilled(now);
            if self.buckets.len() >= self.capacity {
                return Err(Duration::from_secs_f64(1.0 / self.rate));
            }
        }
        let (rate, burst) = (self.rate, self.burst);
        let bucket = self.buckets.entry(key).or_insert(Bucket {
            tokens: burst,
            at: now,
        });
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * rate).min(burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - bucket.tokens) / rate))
        }
    }

    /// Sources tracked now.
    #[cfg(test)]
    pub(crate) fn tracked(&self) -> usize {
        self.buckets.len()
    }

    fn forget_refilled(&mut self, now: Instant) {
        let (rate, burst) = (self.rate, self.burst);
        self.buckets.retain(|_, b| {
            let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
            b.tokens + elapsed * rate < burst
        });
    }
}

/// The unit a budget counts: the IPv4 address, or the /64 of an IPv6 one.
fn source_of(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                IpAddr::V6(prefix.into())
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn a_source_gets_its_burst_then_the_rate() {
        let t0 = Instant::now();
        let mut budget = AddressBudget::new(2, 3, 10);
        let a = ip("192.0.2.1");
        for _ in 0..3 {
            assert_eq!(budget.spend(a, t0), Ok(()));
        }
        let wait = budget.spend(a, t0).unwrap_err();
        assert_eq!(wait, Duration::from_millis(500));
        // Half a second later one attempt is back, not two.
        let t1 = t0 + Duration::from_millis(500);
        assert_eq!(budget.spend(a, t1), Ok(()));
        assert!(budget.spend(a, t1).is_err());
        // Another source has its own budget.
        assert_eq!(budget.spend(ip("192.0.2.2"), t1), Ok(()));
        // A long pause refills to the burst, never beyond.
        let t2 = t1 + Duration::from_secs(3600);
        for _ in 0..3 {
            assert_eq!(budget.spend(a, t2), Ok(()));
        }
        assert!(budget.spend(a, t2).is_err());
    }

    #[test]
    fn ipv6_sources_count_per_64_and_mapped_ipv4_as_ipv4() {
        let table = [
            ("2001:db8:1:2::1", "2001:db8:1:2:ffff::9", true),
            ("2001:db8:1:2::1", "2001:db8:1:3::1", false),
            ("::ffff:192.0.2.7", "192.0.2.7", true),
            ("192.0.2.7", "192.0.2.8", false),
        ];
        for (a, b, same) in table {
            assert_eq!(source_of(ip(a)) == source_of(ip(b)), same, "{a} {b}");
        }
    }

    #[test]
    fn a_full_table_drops_refilled_sources_then_refuses_new_ones() {
        let t0 = Instant::now();
        let mut budget = AddressBudget::new(1, 2, 2);
        assert_eq!(budget.spend(ip("192.0.2.1"), t0), Ok(()));
        assert_eq!(budget.spend(ip("192.0.2.2"), t0), Ok(()));
        // Both still in debt: a third source is refused, the known ones are not.
        assert!(budget.spend(ip("192.0.2.3"), t0).is_err());
        assert_eq!(budget.spend(ip("192.0.2.1"), t0), Ok(()));
        assert_eq!(budget.tracked(), 2);
        // Once they refilled they are forgotten and the newcomer fits.
        let t1 = t0 + Duration::from_secs(10);
        assert_eq!(budget.spend(ip("192.0.2.3"), t1), Ok(()));
        assert_eq!(budget.tracked(), 1);
    }
}
