//! Numbers and times as people read them in tables: sizes in binary units (`1.5 GiB`), ages
//! (`3h`), times to come (`in 23h`), and UTC timestamps. Pure functions of their inputs; the
//! current time is passed in, never read here.

use protocol::fleet::UnixMillis;

const KIB: u64 = 1024;

/// A size in MiB: `512 MiB`, `2 GiB`, `1.5 GiB`, `2 TiB`.
pub fn mib(value: u64) -> String {
    if value < KIB {
        format!("{value} MiB")
    } else if value < KIB * KIB {
        format!("{} GiB", one_decimal(value, KIB))
    } else {
        format!("{} TiB", one_decimal(value, KIB * KIB))
    }
}

/// A size in GiB: `20 GiB`, `1 TiB`, `1.5 TiB`.
pub fn gib(value: u32) -> String {
    let value = u64::from(value);
    if value < KIB {
        format!("{value} GiB")
    } else {
        format!("{} TiB", one_decimal(value, KIB))
    }
}

/// `value / unit` with at most one decimal, rounded half up, without a trailing `.0`.
fn one_decimal(value: u64, unit: u64) -> String {
    let tenths = (u128::from(value) * 10 + u128::from(unit) / 2) / u128::from(unit);
    if tenths % 10 == 0 {
        format!("{}", tenths / 10)
    } else {
        format!("{}.{}", tenths / 10, tenths % 10)
    }
}

/// A span in its largest sensible unit: `45s`, `12m`, `5h`, `3d`. The unit steps up only at
/// twice its size (`90m`, not `1h`), as precise as it needs to be.
pub fn span(millis: u64) -> String {
    let secs = millis / 1000;
    if secs < 120 {
        format!("{secs}s")
    } else if secs < 120 * 60 {
        format!("{}m", secs / 60)
    } else if secs < 48 * 3600 {
        format!("{}h", secs / 3600)
    } else {
        format!("{}d", secs / 86_400)
    }
}

/// How long ago `then` was at `now` (`0s` for a time in the future: clocks differ slightly).
pub fn age(now: UnixMillis, then: UnixMillis) -> String {
    span(now.saturating_sub(then))
}

/// `then` relative to `now`: `in 23h` or `2h ago`.
pub fn relative(now: UnixMillis, then: UnixMillis) -> String {
    if then > now {
        format!("in {}", span(then - now))
    } else {
        format!("{} ago", span(now - then))
    }
}

/// `-` for a missing value, else its text.
pub fn or_dash<T: ToString>(value: Option<T>) -> String {
    value.map_or_else(|| "-".to_string(), |v| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_use_binary_units_with_one_decimal() {
        assert_eq!(mib(512), "512 MiB");
        assert_eq!(mib(1024), "1 GiB");
        assert_eq!(mib(1536), "1.5 GiB");
        assert_eq!(mib(3000), "2.9 GiB");
        assert_eq!(mib(1024 * 1024 * 2), "2 TiB");
        assert_eq!(gib(20), "20 GiB");
        assert_eq!(gib(1536), "1.5 TiB");
    }

    #[test]
    fn spans_step_up_at_twice_the_unit() {
        assert_eq!(span(0), "0s");
        assert_eq!(span(119_999), "119s");
        assert_eq!(span(120_000), "2m");
        assert_eq!(span(90 * 60_000), "90m");
        assert_eq!(span(5 * 3_600_000), "5h");
        assert_eq!(span(3 * 86_400_000), "3d");
        assert_eq!(relative(10_000, 3_610_000), "in 60m");
        assert_eq!(relative(7_210_000, 10_000), "2h ago");
        assert_eq!(age(5, 10), "0s");
    }
}
