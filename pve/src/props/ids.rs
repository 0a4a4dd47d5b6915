//! Identifiers PVE validates with fixed patterns (`pve-node`, `pve-vmid`, `pve-configid`,
//! `pve-storage-id`, `pve-poolid`, `dns-name`, volume ids), checked before anything is sent so
//! the error names the field and the rule instead of coming back as a 400.

use std::sync::LazyLock;

use regex::Regex;

use crate::error::PveError;
use crate::props::kv::invalid;

/// Smallest VMID PVE accepts.
pub const VMID_MIN: u32 = 100;
/// Largest VMID PVE accepts.
pub const VMID_MAX: u32 = 999_999_999;

type Pattern = LazyLock<Option<Regex>>;

// A pattern that fails to compile matches nothing: every value is refused, which the tests catch.
static NODE: Pattern =
    LazyLock::new(|| Regex::new(r"^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$").ok());
static CONFIGID: Pattern = LazyLock::new(|| Regex::new(r"^[a-zA-Z][a-zA-Z0-9_-]+$").ok());
static STORAGE: Pattern =
    LazyLock::new(|| Regex::new(r"^[a-zA-Z][a-zA-Z0-9_.-]*[a-zA-Z0-9]$").ok());
static POOL: Pattern = LazyLock::new(|| Regex::new(r"^[A-Za-z0-9_-]+$").ok());
static DNS_NAME: Pattern = LazyLock::new(|| {
    Regex::new(
        r"^([a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?\.)*[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$",
    )
    .ok()
});
static BRIDGE: Pattern = LazyLock::new(|| Regex::new(r"^[-_.A-Za-z0-9]+$").ok());
static REALM: Pattern = LazyLock::new(|| Regex::new(r"^[A-Za-z][A-Za-z0-9._-]+$").ok());

fn matches(pattern: &Pattern, value: &str) -> bool {
    pattern.as_ref().is_some_and(|re| re.is_match(value))
}

/// A node name (`pve-node`): letters, digits and inner dashes.
pub fn check_node(field: &str, node: &str) -> Result<(), PveError> {
    if matches(&NODE, node) && node.len() <= 63 {
        return Ok(());
    }
    Err(invalid(
        field,
        format!("'{node}' is not a node name (letters, digits, '-' inside, at most 63 characters)"),
    ))
}

/// A VMID in `100..=999999999`.
pub fn check_vmid(field: &str, vmid: u32) -> Result<(), PveError> {
    if (VMID_MIN..=VMID_MAX).contains(&vmid) {
        return Ok(());
    }
    Err(invalid(
        field,
        format!("{vmid} is out of range; allowed {VMID_MIN}..={VMID_MAX}"),
    ))
}

/// A snapshot name (`pve-configid`, at most 40 characters, not `current` or `pending`).
pub fn check_snapname(field: &str, name: &str) -> Result<(), PveError> {
    if name.eq_ignore_ascii_case("current") || name.eq_ignore_ascii_case("pending") {
        return Err(invalid(
            field,
            format!("'{name}' is a reserved name (current, pending)"),
        ));
    }
    if matches(&CONFIGID, name) && name.len() <= 40 {
        return Ok(());
    }
    Err(invalid(
        field,
        format!(
            "'{name}' is not a snapshot name (a letter, then letters, digits, '_' or '-'; 2 to 40 characters)"
        ),
    ))
}

/// A storage id (`pve-storage-id`: `local-lvm`, `ceph.pool`).
pub fn check_storage(field: &str, storage: &str) -> Result<(), PveError> {
    if matches(&STORAGE, storage) {
        return Ok(());
    }
    Err(invalid(
        field,
        format!(
            "'{storage}' is not a storage id (a letter, then letters, digits, '-', '_', '.'; not ending in '-', '_', '.')"
        ),
    ))
}

/// A pool id (`pve-poolid`).
pub fn check_pool(field: &str, pool: &str) -> Result<(), PveError> {
    if matches(&POOL, pool) {
        return Ok(());
    }
    Err(invalid(
        field,
        format!("'{pool}' is not a pool id (letters, digits, '_', '-')"),
    ))
}

/// A DNS name (`dns-name`), as VM names must be.
pub fn check_dns_name(field: &str, name: &str) -> Result<(), PveError> {
    if matches(&DNS_NAME, name) && name.len() <= 255 {
        return Ok(());
    }
    Err(invalid(
        field,
        format!(
            "'{name}' is not a DNS name (dot-separated labels of letters, digits and inner '-')"
        ),
    ))
}

/// A bridge name (`^[-_.\w\d]+$`).
pub fn check_bridge(field: &str, bridge: &str) -> Result<(), PveError> {
    if matches(&BRIDGE, bridge) {
        return Ok(());
    }
    Err(invalid(
        field,
        format!("'{bridge}' is not a bridge name (letters, digits, '-', '_', '.')"),
    ))
}

/// An authentication realm (`pve-realm`, at most 32 characters).
pub fn check_realm(field: &str, realm: &str) -> Result<(), PveError> {
    if matches(&REALM, realm) && realm.len() <= 32 {
        return Ok(());
    }
    Err(invalid(
        field,
        format!(
            "'{realm}' is not a realm (a letter, then letters, digits, '.', '_', '-'; at most 32)"
        ),
    ))
}

/// A volume id `STORAGE:VOLNAME` (`local-lvm:vm-100-disk-0`, `local:iso/debian.iso`).
pub fn check_volume_id(field: &str, volid: &str) -> Result<(), PveError> {
    let bad = || {
        invalid(
            field,
            format!("'{volid}' is not a volume id (STORAGE:VOLUME, no ',', '=' or whitespace)"),
        )
    };
    let (storage, volname) = volid.split_once(':').ok_or_else(bad)?;
    if !matches(&STORAGE, storage) || volname.is_empty() {
        return Err(bad());
    }
    if volid
        .chars()
        .any(|c| c == ',' || c == '=' || c.is_whitespace() || c.is_control())
    {
        return Err(bad());
    }
    Ok(())
}

/// An absolute path usable inside a property string (`/dev/sdb`, `/mnt/images/a.qcow2`).
pub fn check_abs_path(field: &str, path: &str) -> Result<(), PveError> {
    let ok = path.starts_with('/')
        && path.len() > 1
        && !path
            .chars()
            .any(|c| c == ',' || c == '=' || c.is_whitespace() || c.is_control());
    if ok {
        return Ok(());
    }
    Err(invalid(
        field,
        format!("'{path}' is not an absolute path without ',', '=' or whitespace"),
    ))
}

/// A config digest (SHA-1 hex from `GET .../config`; the schema allows at most 40 characters).
pub fn check_digest(field: &str, digest: &str) -> Result<(), PveError> {
    if !digest.is_empty() && digest.len() <= 40 && digest.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(());
    }
    Err(invalid(
        field,
        format!("'{digest}' is not a config digest (1 to 40 hex digits)"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(e: PveError) -> String {
        e.invalid_field()
            .map(str::to_string)
            .unwrap_or_else(|| panic!("not Invalid"))
    }

    #[test]
    fn node_names_follow_pve_node() {
        for ok in ["pve1", "a", "node-2", "PVE"] {
            check_node("node", ok).unwrap();
        }
        for bad in ["", "-pve", "pve-", "pve_1", "pve.lan", "p ve"] {
            assert_eq!(
                field_of(check_node("node", bad).unwrap_err()),
                "node",
                "{bad}"
            );
        }
    }

    #[test]
    fn vmids_are_100_to_999999999() {
        check_vmid("vmid", 100).unwrap();
        check_vmid("vmid", 999_999_999).unwrap();
        let e = check_vmid("newid", 99).unwrap_err();
        assert!(e.to_string().contains("newid") && e.to_string().contains("99"));
        assert!(check_vmid("vmid", 1_000_000_000).is_err());
    }

    #[test]
    fn snapshot_names_refuse_reserved_and_malformed() {
        for ok in ["before-upgrade", "s1", "Daily_2024"] {
            check_snapname("snapname", ok).unwrap();
        }
        let too_long = "a".repeat(41);
        for bad in [
            "current",
            "PENDING",
            "a",
            "1abc",
            "with space",
            "x.y",
            too_long.as_str(),
        ] {
            assert_eq!(
                field_of(check_snapname("snapname", bad).unwrap_err()),
                "snapname",
                "{bad}"
            );
        }
    }

    #[test]
    fn storage_pool_dns_bridge_realm_patterns() {
        check_storage("storage", "local-lvm").unwrap();
        assert!(check_storage("storage", "1local").is_err());
        assert!(check_storage("storage", "local-").is_err());
        check_pool("pool", "prod_1").unwrap();
        assert!(check_pool("pool", "a/b").is_err());
        check_dns_name("name", "web-1.example.com").unwrap();
        assert!(check_dns_name("name", "web_1").is_err());
        assert!(check_dns_name("name", "-web").is_err());
        check_bridge("bridge", "vmbr0").unwrap();
        assert!(check_bridge("bridge", "vmbr 0").is_err());
        check_realm("realm", "pam").unwrap();
        assert!(check_realm("realm", "p").is_err());
    }

    #[test]
    fn digests_are_hex_up_to_40() {
        check_digest("digest", "0123456789abcdef0123456789abcdef01234567").unwrap();
        for bad in ["", "xyz", &"a".repeat(41)] {
            assert_eq!(
                field_of(check_digest("digest", bad).unwrap_err()),
                "digest",
                "{bad}"
            );
        }
    }

    #[test]
    fn volume_ids_and_paths() {
        check_volume_id("file", "local-lvm:vm-100-disk-0").unwrap();
        check_volume_id("file", "local:iso/debian-12.iso").unwrap();
        for bad in ["local-lvm", ":x", "local-lvm:", "a:b,c", "9x:y"] {
            assert!(check_volume_id("file", bad).is_err(), "{bad}");
        }
        check_abs_path("import-from", "/var/tmp/a.qcow2").unwrap();
        assert!(check_abs_path("import-from", "relative").is_err());
    }
}
