//! Wall-clock helpers: unix time for UPIDs, `ctime`/`snaptime` and task lists, and the
//! `YYYY-MM-DD HH:MM:SS` stamps PVE puts in front of migration log lines.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the unix epoch.
pub(super) fn now_unix() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Fractional seconds since the unix epoch (for process start ticks).
pub(super) fn now_unix_f64() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// `2025-01-31 12:34:56` (UTC; the simulated hosts run in UTC).
pub(super) fn log_stamp(unix: i64) -> String {
    let days = unix.div_euclid(86_400);
    let secs = unix.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    )
}

/// `HH:MM:SS` for a duration in seconds, as `render_duration` in migration logs.
pub(super) fn hms(seconds: i64) -> String {
    let s = seconds.max(0);
    format!("{:02}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
}

/// Howard Hinnant's days-to-civil conversion.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    (
        y,
        u32::try_from(m).unwrap_or(1),
        u32::try_from(d).unwrap_or(1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_stamp_formats_known_instants() {
        assert_eq!(log_stamp(0), "1970-01-01 00:00:00");
        assert_eq!(log_stamp(1_700_000_000), "2023-11-14 22:13:20");
        assert_eq!(log_stamp(951_782_400), "2000-02-29 00:00:00");
        assert_eq!(hms(3725), "01:02:05");
    }
}
