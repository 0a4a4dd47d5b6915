//! The `key=value,key=value` syntax shared by every PVE property string, read the way
//! `PVE::JSONSchema::parse_property_string` reads it: empty parts skipped, one bare value for
//! the default key (anywhere in the list), duplicate keys refused.

use crate::error::PveError;

/// A [`PveError::Invalid`] for `field`.
pub(crate) fn invalid(field: impl Into<String>, reason: impl Into<String>) -> PveError {
    PveError::Invalid {
        field: field.into(),
        reason: reason.into(),
    }
}

/// Prefix the field of an `Invalid` error with the config key it belongs to (`net0.tag`).
pub(crate) fn within(key: &str, err: PveError) -> PveError {
    match err {
        PveError::Invalid { field, reason } if field != key => PveError::Invalid {
            field: format!("{key}.{field}"),
            reason,
        },
        other => other,
    }
}

/// The parts of a property string: `(None, v)` for the bare default-key value, `(Some(k), v)`
/// otherwise. `field` names the whole property in errors.
pub(crate) fn split<'a>(
    field: &str,
    text: &'a str,
) -> Result<Vec<(Option<&'a str>, &'a str)>, PveError> {
    let mut parts: Vec<(Option<&str>, &str)> = Vec::new();
    for part in text.split(',') {
        if part.trim().is_empty() {
            continue;
        }
        let entry = match part.split_once('=') {
            Some((k, v)) if !k.is_empty() && !v.is_empty() => (Some(k), v),
            Some(_) => {
                return Err(invalid(
                    field,
                    format!("'{part}' in '{text}' has no key or no value"),
                ));
            }
            None => (None, part),
        };
        if parts.iter().any(|(k, _)| *k == entry.0) {
            let which = entry.0.unwrap_or("default key");
            return Err(invalid(field, format!("duplicate {which} in '{text}'")));
        }
        parts.push(entry);
    }
    Ok(parts)
}

/// A property-string boolean: PVE writes `1`/`0` and also reads `true/false/yes/no/on/off`.
pub(crate) fn parse_bool(field: &str, value: &str) -> Result<bool, PveError> {
    match value.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(invalid(
            field,
            format!("'{value}' is not a boolean (1 or 0)"),
        )),
    }
}

/// An unsigned integer in `min..=max`.
pub(crate) fn parse_u32_in(field: &str, value: &str, min: u32, max: u32) -> Result<u32, PveError> {
    let n: u32 = value.parse().map_err(|_| {
        invalid(
            field,
            format!("'{value}' is not an integer in {min}..={max}"),
        )
    })?;
    check_range(field, n, min, max)
}

/// `n` when it lies in `min..=max`.
pub(crate) fn check_range<T: PartialOrd + std::fmt::Display + Copy>(
    field: &str,
    n: T,
    min: T,
    max: T,
) -> Result<T, PveError> {
    if n < min || n > max {
        return Err(invalid(
            field,
            format!("{n} is out of range; allowed {min}..={max}"),
        ));
    }
    Ok(n)
}

/// A value that can sit inside a property string: non-empty, no `,`, no `=`, no whitespace
/// or control characters.
pub(crate) fn check_plain(field: &str, value: &str) -> Result<(), PveError> {
    if value.is_empty() {
        return Err(invalid(field, "must not be empty"));
    }
    if let Some(c) = value
        .chars()
        .find(|c| *c == ',' || *c == '=' || c.is_whitespace() || c.is_control())
    {
        return Err(invalid(
            field,
            format!(
                "'{value}' contains {c:?}; property-string values cannot hold ',', '=' or whitespace"
            ),
        ));
    }
    Ok(())
}

/// An unknown sub-key kept for round trips: key `[a-z0-9_-]+`, value plain.
pub(crate) fn check_extra(field: &str, key: &str, value: &str) -> Result<(), PveError> {
    let key_ok = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if !key_ok {
        return Err(invalid(
            field,
            format!("'{key}' is not a property key ([a-z0-9_-]+)"),
        ));
    }
    check_plain(&format!("{field}.{key}"), value)
}

/// Check the unmodelled sub-keys kept in a property's `extra`: none may be one the type
/// models as a field (`is_known`), and each must be a well-formed key with a plain value.
pub(crate) fn check_extras(
    field: &str,
    extra: &[(String, String)],
    is_known: impl Fn(&str) -> bool,
) -> Result<(), PveError> {
    for (k, v) in extra {
        if is_known(k) {
            return Err(invalid(
                k.as_str(),
                "is a modelled key; set the field instead of extra",
            ));
        }
        check_extra(field, k, v)?;
    }
    Ok(())
}

/// Builds `head,key=value,...`: leading parts in the order given, then the keyed parts sorted
/// by key, as `PVE::JSONSchema::print_property_string` orders them.
#[derive(Debug, Default)]
pub(crate) struct Writer {
    head: Vec<String>,
    pairs: Vec<(String, String)>,
}

impl Writer {
    /// A leading bare value (the default key).
    pub(crate) fn bare(&mut self, value: impl std::fmt::Display) {
        self.head.push(value.to_string());
    }

    /// A leading `key=value` (e.g. `virtio=<MAC>`).
    pub(crate) fn lead(&mut self, key: &str, value: impl std::fmt::Display) {
        self.head.push(format!("{key}={value}"));
    }

    pub(crate) fn kv(&mut self, key: &str, value: impl std::fmt::Display) {
        self.pairs.push((key.to_string(), value.to_string()));
    }

    pub(crate) fn opt(&mut self, key: &str, value: Option<impl std::fmt::Display>) {
        if let Some(v) = value {
            self.kv(key, v);
        }
    }

    pub(crate) fn flag(&mut self, key: &str, value: Option<bool>) {
        if let Some(v) = value {
            self.kv(key, if v { "1" } else { "0" });
        }
    }

    pub(crate) fn finish(mut self) -> String {
        self.pairs.sort_by(|a, b| a.0.cmp(&b.0));
        let mut parts = self.head;
        parts.extend(self.pairs.into_iter().map(|(k, v)| format!("{k}={v}")));
        parts.join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_reads_bare_and_keyed_parts_in_any_order() {
        let parts = split("net0", "bridge=vmbr0,virtio,,tag=5").unwrap();
        assert_eq!(
            parts,
            vec![
                (Some("bridge"), "vmbr0"),
                (None, "virtio"),
                (Some("tag"), "5")
            ]
        );
    }

    #[test]
    fn split_refuses_duplicates_and_empty_values() {
        for bad in ["a=1,a=2", "x,y", "a=", "=b"] {
            let err = split("f", bad).unwrap_err();
            assert!(
                matches!(err, PveError::Invalid { ref field, .. } if field == "f"),
                "{bad}"
            );
        }
    }

    #[test]
    fn booleans_accept_perl_spellings() {
        assert!(parse_bool("f", "on").unwrap());
        assert!(!parse_bool("f", "0").unwrap());
        assert!(parse_bool("f", "maybe").is_err());
    }

    #[test]
    fn within_prefixes_the_config_key() {
        let e = within("net0", invalid("tag", "bad"));
        assert!(matches!(e, PveError::Invalid { ref field, .. } if field == "net0.tag"));
        let e = within("net0", invalid("net0", "bad"));
        assert!(matches!(e, PveError::Invalid { ref field, .. } if field == "net0"));
    }
}
