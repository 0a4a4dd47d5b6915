//! The scenario's time syntax: a number and a unit, `500ms`, `5s`, `1.5s`, `2m`. Pure.

use std::time::Duration;

/// The longest time a scenario may name (five hours: a chaos campaign of four, with its
/// bring-up and calm).
pub const MAX: Duration = Duration::from_secs(5 * 3600);

/// Reads `text` (`500ms`, `5s`, `1.5s`, `2m`); the problem in words otherwise.
pub fn parse(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let scale_ms = match unit.trim() {
        "ms" => 1.0,
        "s" => 1000.0,
        "m" | "min" => 60_000.0,
        "" => return Err(format!("{text:?} has no unit: write 500ms, 5s or 2m")),
        other => {
            return Err(format!(
                "{text:?}: unknown unit {other:?}, expected ms, s or m"
            ));
        }
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a time: write 500ms, 5s, 1.5s or 2m"))?;
    let ms = value * scale_ms;
    if !ms.is_finite() || ms > MAX.as_millis() as f64 {
        return Err(format!("{text:?} is longer than five hours"));
    }
    Ok(Duration::from_micros((ms * 1000.0).round() as u64))
}

/// `12.345s` (three decimals), the timeline's way to write a time.
pub fn seconds(ms: i64) -> String {
    let sign = if ms < 0 { "-" } else { "" };
    let abs = ms.unsigned_abs();
    format!("{sign}{}.{:03}s", abs / 1000, abs % 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_take_a_number_and_a_unit() {
        let cases = [
            ("500ms", 500),
            ("5s", 5000),
            ("1.5s", 1500),
            ("2m", 120_000),
            (" 90s ", 90_000),
            ("0s", 0),
        ];
        for (text, ms) in cases {
            assert_eq!(parse(text), Ok(Duration::from_millis(ms)), "{text}");
        }
    }

    #[test]
    fn times_without_unit_or_number_or_too_long_are_refused() {
        for (text, says) in [
            ("5", "no unit"),
            ("5h", "unknown unit"),
            ("s", "not a time"),
            ("1.2.3s", "not a time"),
            ("301m", "longer than five hours"),
            ("-5s", "unknown unit"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn timeline_times_have_milliseconds() {
        assert_eq!(seconds(12_345), "12.345s");
        assert_eq!(seconds(5), "0.005s");
        assert_eq!(seconds(-1500), "-1.500s");
    }
}
