//! Disk sizes as PVE writes and reads them: `format_size` picks the largest unit that divides
//! the size exactly (`32G`, `512M`, `1T`, plain bytes when odd), as qemu-server's
//! `format_size`; `parse_size` reads `32G`, `1.5G`, `512M` or plain bytes; [`SizeChange`] is
//! the `size` of a resize (`32G` = set to, `+1G` = grow by).

use std::fmt;
use std::str::FromStr;

use crate::error::PveError;
use crate::props::kv::invalid;

const UNITS: [(char, u64); 4] = [
    ('T', 1 << 40),
    ('G', 1 << 30),
    ('M', 1 << 20),
    ('K', 1 << 10),
];

/// The size in the largest unit that divides it exactly (`34359738368` → `32G`).
pub fn format_size(bytes: u64) -> String {
    if bytes == 0 {
        return "0".into();
    }
    for (unit, factor) in UNITS {
        if bytes.is_multiple_of(factor) {
            return format!("{}{unit}", bytes / factor);
        }
    }
    bytes.to_string()
}

/// Bytes from `32G`, `1.5G`, `512M`, `100K`, `1T` or plain bytes (`field` names errors).
pub fn parse_size_for(field: &str, text: &str) -> Result<u64, PveError> {
    let bad = || {
        invalid(
            field,
            format!("'{text}' is not a size (digits with optional decimals and unit K, M, G or T)"),
        )
    };
    let (number, factor) = match text.chars().last() {
        Some(c) if c.is_ascii_alphabetic() => {
            let factor = UNITS
                .iter()
                .find(|(u, _)| *u == c)
                .map(|(_, f)| *f)
                .ok_or_else(bad)?;
            (&text[..text.len() - 1], factor)
        }
        _ => (text, 1),
    };
    let (int, frac) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number, ""),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(int) || (number.contains('.') && !digits(frac)) {
        return Err(bad());
    }
    let whole: u64 = int.parse().map_err(|_| bad())?;
    let mut bytes = whole.checked_mul(factor).ok_or_else(bad)?;
    if !frac.is_empty() {
        // Fractions are exact for the digits given, then truncated to whole bytes like PVE's int().
        let scale = 10u128
            .checked_pow(u32::try_from(frac.len()).map_err(|_| bad())?)
            .ok_or_else(bad)?;
        let num: u128 = frac.parse().map_err(|_| bad())?;
        let extra = num * u128::from(factor) / scale;
        bytes = bytes
            .checked_add(u64::try_from(extra).map_err(|_| bad())?)
            .ok_or_else(bad)?;
    }
    Ok(bytes)
}

/// Bytes from `32G`, `512M`, plain bytes, ... (errors name the field `size`).
pub fn parse_size(text: &str) -> Result<u64, PveError> {
    parse_size_for("size", text)
}

/// The `size` parameter of a disk resize.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeChange {
    /// Set the disk to this many bytes (must not shrink it).
    Set(u64),
    /// Grow the disk by this many bytes (`+1G`).
    Grow(u64),
}

impl fmt::Display for SizeChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Set(b) => f.write_str(&format_size(*b)),
            Self::Grow(b) => write!(f, "+{}", format_size(*b)),
        }
    }
}

impl FromStr for SizeChange {
    type Err = PveError;

    fn from_str(s: &str) -> Result<Self, PveError> {
        match s.strip_prefix('+') {
            Some(rest) => parse_size(rest).map(Self::Grow),
            None => parse_size(s).map(Self::Set),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: u64 = 1 << 30;

    #[test]
    fn format_size_uses_the_largest_exact_unit() {
        for (bytes, text) in [
            (32 * G, "32G"),
            (512 << 20, "512M"),
            (1 << 40, "1T"),
            (1536 << 20, "1536M"),
            (4 << 10, "4K"),
            (1000, "1000"),
            (0, "0"),
        ] {
            assert_eq!(format_size(bytes), text, "{bytes}");
        }
    }

    #[test]
    fn parse_size_reads_units_decimals_and_bytes() {
        for (text, bytes) in [
            ("32G", 32 * G),
            ("512M", 512 << 20),
            ("1T", 1 << 40),
            ("1.5G", 3 * G / 2),
            ("4096", 4096),
            ("0.5K", 512),
        ] {
            assert_eq!(parse_size(text).unwrap(), bytes, "{text}");
        }
    }

    #[test]
    fn parse_size_refuses_garbage_naming_the_field() {
        for bad in [
            "",
            "G",
            "32g",
            "32X",
            "-1G",
            "1..5G",
            "1.G",
            "3 G",
            "99999999999999999999T",
        ] {
            let err = parse_size(bad).unwrap_err();
            assert!(
                matches!(err, PveError::Invalid { ref field, ref reason } if field == "size" && reason.contains(bad)),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn size_round_trips_through_format_and_parse() {
        for bytes in [1, 1023, 1024, 32 * G, 3 * G / 2, (1 << 40) + (1 << 20)] {
            assert_eq!(parse_size(&format_size(bytes)).unwrap(), bytes);
        }
    }

    #[test]
    fn size_change_formats_set_and_grow() {
        assert_eq!(SizeChange::Set(32 * G).to_string(), "32G");
        assert_eq!(SizeChange::Grow(G).to_string(), "+1G");
        assert_eq!("+1G".parse::<SizeChange>().unwrap(), SizeChange::Grow(G));
        assert_eq!(
            "40G".parse::<SizeChange>().unwrap(),
            SizeChange::Set(40 * G)
        );
        assert!("++1G".parse::<SizeChange>().is_err());
    }
}
