//! Indexed options: the schema dump writes `net[n]` where the real server registers `net0` ..
//! `net31` as separate properties. A concrete key matches when its prefix has an `[n]` entry
//! and the index is within the range PVE registers.

use serde_json::Value;

/// Highest index PVE registers per indexed option (`$MAX_NETS - 1`, ...). The descriptions
/// only state some ranges ("n is 0 to 30"), so the rest comes from the qemu-server,
/// pve-container and pve-manager sources.
const MAX_INDEX: &[(&str, u32)] = &[
    ("acmedomain", 4),
    ("dev", 255),
    ("hostpci", 15),
    ("ide", 3),
    ("ipconfig", 31),
    ("link", 7),
    ("mp", 255),
    ("net", 31),
    ("numa", 7),
    ("parallel", 2),
    ("sata", 5),
    ("scsi", 30),
    ("serial", 3),
    ("unused", 255),
    ("usb", 14),
    ("virtio", 15),
    ("virtiofs", 9),
];

/// Split `net12` into (`net`, 12). Leading zeros are not valid keys (`net01` does not exist).
pub(crate) fn split_key(key: &str) -> Option<(&str, u32)> {
    let digits_at = key.find(|c: char| c.is_ascii_digit())?;
    let (prefix, digits) = key.split_at(digits_at);
    if prefix.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    if digits.len() > 1 && digits.starts_with('0') {
        return None;
    }
    Some((prefix, digits.parse().ok()?))
}

/// The highest index of `prefix[n]`: the table, else the description's "(n is A to B)" or
/// "prefix0..prefixN", else unbounded.
pub(crate) fn max_index(prefix: &str, schema: &Value) -> u32 {
    if let Some((_, max)) = MAX_INDEX.iter().find(|(p, _)| *p == prefix) {
        return *max;
    }
    let description = schema
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("");
    if let Some(rest) = description.split("(n is ").nth(1)
        && let Some(max) = rest
            .split(" to ")
            .nth(1)
            .and_then(|t| t.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|t| t.parse().ok())
    {
        return max;
    }
    let marker = format!("{prefix}0..{prefix}");
    if let Some(max) = description
        .split(&marker)
        .nth(1)
        .and_then(|t| t.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|t| t.parse().ok())
    {
        return max;
    }
    u32::MAX
}

/// The schema of a concrete key such as `scsi7`, through its `scsi[n]` entry.
pub(crate) fn lookup<'a>(
    properties: &'a serde_json::Map<String, Value>,
    key: &str,
) -> Option<&'a Value> {
    let (prefix, index) = split_key(key)?;
    let schema = properties.get(&format!("{prefix}[n]"))?;
    (index <= max_index(prefix, schema)).then_some(schema)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_split_into_prefix_and_index() {
        assert_eq!(split_key("net0"), Some(("net", 0)));
        assert_eq!(split_key("scsi30"), Some(("scsi", 30)));
        assert_eq!(split_key("net01"), None);
        assert_eq!(split_key("net"), None);
        assert_eq!(split_key("0net"), None);
        assert_eq!(split_key("net0x"), None);
    }

    #[test]
    fn ranges_come_from_the_table_or_the_description() {
        let props = json!({
            "scsi[n]": {"description": "Use volume as SCSI hard disk (n is 0 to 30)."},
            "foo[n]": {"description": "Foo (n is 0 to 2)."},
            "bar[n]": {"description": "Bars (bar0..bar3)."},
        });
        let props = props.as_object().unwrap();
        assert!(lookup(props, "scsi30").is_some());
        assert!(lookup(props, "scsi31").is_none());
        assert!(lookup(props, "foo2").is_some());
        assert!(lookup(props, "foo3").is_none());
        assert!(lookup(props, "bar3").is_some());
        assert!(lookup(props, "bar4").is_none());
        assert!(lookup(props, "baz0").is_none());
    }
}
