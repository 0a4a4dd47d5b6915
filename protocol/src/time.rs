//! Time as the fleet counts it: wall-clock Unix milliseconds ([`UnixMillis`]), the
//! conversions to and from the Unix seconds certificates and join tokens use, the one place
//! the wall clock is read ([`Now::read`]; the pure core never calls it: times come inside
//! commands), and the RFC 3339 form people read.

use std::time::{SystemTime, UNIX_EPOCH};

pub use crate::fleet::UnixMillis;

/// Milliseconds in a second.
pub const MILLIS_PER_SECOND: u64 = 1000;

/// Unix seconds as milliseconds (saturating far in the future).
pub fn secs_to_millis(secs: u64) -> UnixMillis {
    secs.saturating_mul(MILLIS_PER_SECOND)
}

/// Unix milliseconds as whole seconds, rounded down.
pub fn millis_to_secs(millis: UnixMillis) -> u64 {
    millis / MILLIS_PER_SECOND
}

/// The wall clock now, in unix milliseconds, and the same instant in unix seconds. The leader
/// reads it before proposing; applying a command never does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    /// Milliseconds since the epoch.
    pub millis: UnixMillis,
}

impl Now {
    /// The current time (the epoch if the clock is set before it).
    pub fn read() -> Now {
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        Now { millis }
    }

    /// The same instant in whole seconds.
    pub fn secs(self) -> u64 {
        millis_to_secs(self.millis)
    }
}

/// A UTC timestamp, RFC 3339 to the second: `2025-03-01T12:00:00Z`.
pub fn timestamp(millis: UnixMillis) -> String {
    let secs = millis / 1000;
    let (days, day_secs) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        day_secs / 3600,
        day_secs % 3600 / 60,
        day_secs % 60
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01 (H. Hinnant's `civil_from_days`, for
/// non-negative day counts).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_utc_rfc3339() {
        assert_eq!(timestamp(0), "1970-01-01T00:00:00Z");
        assert_eq!(timestamp(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(timestamp(1_740_830_405_999), "2025-03-01T12:00:05Z");
    }

    #[test]
    fn seconds_and_milliseconds_convert_both_ways() {
        assert_eq!(secs_to_millis(3), 3_000);
        assert_eq!(secs_to_millis(u64::MAX), u64::MAX);
        assert_eq!(millis_to_secs(3_999), 3);
    }

    #[test]
    fn now_in_seconds_is_now_in_milliseconds_rounded_down() {
        let now = Now {
            millis: 1_800_000_000_999,
        };
        assert_eq!(now.secs(), 1_800_000_000);
        assert!(Now::read().millis > secs_to_millis(1_700_000_000));
    }
}
