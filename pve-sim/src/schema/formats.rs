//! Named string formats (`format: "pve-vmid"`), with the verifier texts of PVE's
//! `JSONSchema.pm` (and of qemu-server / pve-storage for their formats). A verifier's error is
//! the Perl `die` text including its trailing newline, because PVE puts `$@` verbatim into the
//! `invalid format - ...` message.
//!
//! `<name>-list` checks each element of a comma/semicolon/space (or NUL) separated list,
//! `<name>-opt` allows the empty string. Formats the simulator does not know are accepted.

use std::net::{Ipv4Addr, Ipv6Addr};

use serde_json::{Value, json};

use super::pattern::full_match;
use super::perl_truth::perl_true;

/// PVE's `split_list`: NUL separated if there is a NUL, else `,`, `;` and whitespace.
pub(crate) fn split_list(text: &str) -> Vec<String> {
    if text.contains('\0') {
        let mut parts: Vec<String> = text.split('\0').map(str::to_string).collect();
        // Perl's split drops trailing empty fields.
        while parts.last().is_some_and(String::is_empty) {
            parts.pop();
        }
        return parts;
    }
    text.replace([',', ';'], " ")
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// `check_format` for a named format (`pve-vmid`, `<name>-list`, `<name>-opt`); property-string
/// formats are the schema checker's (they check sub-values against a schema). `Err` carries
/// the `$@` text (with trailing newline).
pub(crate) fn check_named(name: &str, value: &str) -> Result<(), String> {
    if name == "regex" {
        return Ok(());
    }
    let (base, kind) = if let Some(base) = name.strip_suffix("-list") {
        (base, Kind::List)
    } else if let Some(base) = name.strip_suffix("-opt") {
        (base, Kind::Opt)
    } else {
        (name, Kind::Plain)
    };
    match kind {
        Kind::List => {
            for item in split_list(value) {
                verify(base, &item)?;
            }
            Ok(())
        }
        Kind::Opt if !perl_true(value) => Ok(()),
        _ => verify(base, value),
    }
}

#[derive(PartialEq, Eq)]
enum Kind {
    Plain,
    List,
    Opt,
}

/// Property-string formats registered by name (the dump shows only their name).
pub(crate) fn hash_format(name: &str) -> Option<Value> {
    Some(match name {
        "pve-qm-ipconfig" => json!({
            "ip": {"type": "string", "format": "pve-ipv4-config", "optional": 1},
            "gw": {"type": "string", "format": "ipv4", "optional": 1, "requires": "ip"},
            "ip6": {"type": "string", "format": "pve-ipv6-config", "optional": 1},
            "gw6": {"type": "string", "format": "ipv6", "optional": 1, "requires": "ip6"},
        }),
        "pve-qm-boot" => json!({
            "legacy": {"type": "string", "optional": 1, "default_key": 1, "pattern": "[acdn]{1,4}"},
            "order": {"type": "string", "optional": 1, "format": "pve-qm-bootdev-list"},
        }),
        // pve-common's `$remote_format` (`target-endpoint` of remote migration).
        "proxmox-remote" => json!({
            "host": {"type": "string", "format_description": "ADDRESS"},
            "port": {"type": "integer", "optional": 1, "format_description": "PORT"},
            "apitoken": {"type": "string",
                         "format_description": "PVEAPIToken=user@realm!token=SECRET"},
            "fingerprint": {"type": "string", "optional": 1,
                            "pattern": "([A-Fa-f0-9]{2}:){31}[A-Fa-f0-9]{2}",
                            "format_description": "FINGERPRINT"},
        }),
        "pve-qm-watchdog" => json!({
            "model": {"type": "string", "optional": 1, "default_key": 1,
                      "enum": ["i6300esb", "ib700"]},
            "action": {"type": "string", "optional": 1,
                       "enum": ["reset", "shutdown", "poweroff", "pause", "debug", "none"]},
        }),
        _ => return None,
    })
}

fn fail(message: String) -> Result<(), String> {
    Err(format!("{message}\n"))
}

fn check(ok: bool, message: impl FnOnce() -> String) -> Result<(), String> {
    if ok { Ok(()) } else { fail(message()) }
}

fn is_ipv4(v: &str) -> bool {
    v.parse::<Ipv4Addr>().is_ok()
}

fn is_ipv6(v: &str) -> bool {
    v.parse::<Ipv6Addr>().is_ok()
}

fn is_cidr(v: &str, ip: fn(&str) -> bool, max: u32) -> bool {
    let Some((addr, mask)) = v.split_once('/') else {
        return false;
    };
    let mask_ok = !mask.is_empty()
        && mask.chars().all(|c| c.is_ascii_digit())
        && mask.parse::<u32>().is_ok_and(|m| m > 7 && m <= max);
    ip(addr) && mask_ok
}

fn is_dns_name(v: &str) -> bool {
    full_match(
        "([a-zA-Z0-9]([a-zA-Z0-9\\-]*[a-zA-Z0-9])?\\.)*([a-zA-Z0-9]([a-zA-Z0-9\\-]*[a-zA-Z0-9])?)",
        v,
    )
}

fn is_storage_id(v: &str) -> bool {
    full_match("(?i:[a-z][a-z0-9\\-_.]*[a-z0-9])", v)
}

fn is_volume_id(v: &str) -> bool {
    full_match("(?i:[a-z][a-z0-9\\-_.]*[a-z0-9]):.+", v)
}

/// `is_valid_drivename` of qemu-server.
fn is_drive_name(v: &str) -> bool {
    let limits = [("ide", 3), ("sata", 5), ("scsi", 30), ("virtio", 15)];
    v == "efidisk0"
        || v == "tpmstate0"
        || super::indexed::split_key(v)
            .is_some_and(|(p, i)| limits.iter().any(|(lp, max)| *lp == p && i <= *max))
}

fn is_size(v: &str) -> bool {
    full_match("\\d+(\\.\\d+)?[KMGT]?", v)
}

/// One value of a named format; unknown names pass.
fn verify(name: &str, v: &str) -> Result<(), String> {
    match name {
        "string" => Ok(()),
        "pve-vmid" => check(full_match("[1-9][0-9]{2,8}", v), || {
            "value does not look like a valid VM ID".into()
        }),
        "pve-node" => check(
            full_match("[a-zA-Z0-9]([a-zA-Z0-9\\-]*[a-zA-Z0-9])?", v),
            || "value does not look like a valid node name".into(),
        ),
        "pve-configid" => check(full_match("(?i:[a-z][a-z0-9_-]+)", v), || {
            format!("invalid configuration ID '{v}'")
        }),
        "pve-storage-id" => check(is_storage_id(v), || {
            format!("storage ID '{v}' contains illegal characters")
        }),
        "pve-bridge-id" => check(full_match("[-_.\\w\\d]+", v), || {
            format!("invalid bridge ID '{v}'")
        }),
        "pve-iface" => check(
            full_match("(?i:[a-z][a-z0-9_]{1,20}([:.]\\d+)?)", v),
            || format!("invalid network interface name '{v}'"),
        ),
        "dns-name" => check(is_dns_name(v), || {
            "value does not look like a valid DNS name".into()
        }),
        "pve-tag" => check(full_match("(?i:[a-z0-9_][a-z0-9_\\-+.]*)", v), || {
            "invalid characters in tag".into()
        }),
        "mac-addr" => check(
            full_match("(?i:[a-f0-9][02468ace](?::[a-f0-9]{2}){5})", v),
            || "value does not look like a valid unicast MAC address".into(),
        ),
        "ipv4" => check(is_ipv4(v), || {
            "value does not look like a valid IPv4 address".into()
        }),
        "ipv6" => check(is_ipv6(v), || {
            "value does not look like a valid IPv6 address".into()
        }),
        "ip" => check(is_ipv4(v) || is_ipv6(v), || {
            "value does not look like a valid IP address".into()
        }),
        "CIDRv4" => check(is_cidr(v, is_ipv4, 32), || {
            "value does not look like a valid IPv4 CIDR network".into()
        }),
        "CIDRv6" => check(is_cidr(v, is_ipv6, 128), || {
            "value does not look like a valid IPv6 CIDR network".into()
        }),
        "CIDR" => check(is_cidr(v, is_ipv4, 32) || is_cidr(v, is_ipv6, 128), || {
            "value does not look like a valid CIDR network".into()
        }),
        "IPorCIDR" => check(
            is_ipv4(v) || is_ipv6(v) || is_cidr(v, is_ipv4, 32) || is_cidr(v, is_ipv6, 128),
            || "value does not look like a valid IP address or CIDR network".into(),
        ),
        "pve-ipv4-config" => check(
            v == "dhcp" || v == "manual" || is_cidr(v, is_ipv4, 32),
            || "value does not look like a valid ipv4 network configuration".into(),
        ),
        "pve-ipv6-config" => check(
            v == "auto" || v == "dhcp" || v == "manual" || is_cidr(v, is_ipv6, 128),
            || "value does not look like a valid ipv6 network configuration".into(),
        ),
        "address" => check(is_ipv4(v) || is_ipv6(v) || is_dns_name(v), || {
            format!("value does not look like a valid address: {v}")
        }),
        "email" => check(
            full_match(
                "[\\w+\\-~]+(\\.[\\w+\\-~]+)*@[a-zA-Z0-9\\-]+(\\.[a-zA-Z0-9\\-]+)*",
                v,
            ),
            || "value does not look like a valid email address".into(),
        ),
        "urlencoded" => check(full_match("[-%a-zA-Z0-9_.!~*'()]*", v), || {
            format!("invalid urlencoded string: {v}")
        }),
        "disk-size" => check(is_size(v), || {
            format!("value does not look like a valid disk size: {v}")
        }),
        "pve-volume-id" => check(is_volume_id(v), || {
            format!("unable to parse volume ID '{v}'")
        }),
        "pve-volume-id-or-qm-path" => check(
            v == "none" || v == "cdrom" || v.starts_with('/') || is_volume_id(v),
            || format!("unable to parse volume ID '{v}'"),
        ),
        "pve-volume-id-or-absolute-path" => check(v.starts_with('/') || is_volume_id(v), || {
            format!("unable to parse volume ID '{v}'")
        }),
        "pve-userid" => verify_userid(v),
        "pve-realm" => check(full_match("[A-Za-z][A-Za-z0-9.\\-_]+", v), || {
            "value does not look like a valid realm".into()
        }),
        "pve-startup-order" => check(is_startup_order(v), || {
            "unable to parse startup options".into()
        }),
        "pve-task-status-type" => check(full_match("(?i:ok|error|warning|unknown)", v), || {
            format!("invalid status '{v}'")
        }),
        "pve-storage-content" => check(
            matches!(
                v,
                "images" | "rootdir" | "vztmpl" | "iso" | "backup" | "snippets" | "import" | "none"
            ),
            || format!("invalid content type '{v}'"),
        ),
        "pve-qm-bootdisk" => check(is_drive_name(v), || format!("invalid boot disk '{v}'")),
        "pve-qm-bootdev" => check(is_boot_device(v), || format!("invalid boot device '{v}'")),
        "pve-hotplug-features" => verify_hotplug(v),
        "storage-pair" => verify_id_pair(v, "pve-storage-id"),
        "bridge-pair" => verify_id_pair(v, "pve-bridge-id"),
        "pve-priv" => check(crate::access::privileges::is_privilege(v), || {
            format!("invalid privilege '{v}'")
        }),
        "pve-roleid" => check(full_match("[A-Za-z0-9\\.\\-_]+", v), || {
            format!("role name '{v}' contains invalid characters")
        }),
        "pve-groupid" => check(full_match("[A-Za-z0-9\\.\\-_]+", v), || {
            format!("group name '{v}' contains invalid characters")
        }),
        "pve-tokenid" => check(
            full_match(
                "[^\\s:/]+@[A-Za-z][A-Za-z0-9\\.\\-_]+![A-Za-z][A-Za-z0-9\\.\\-_]+",
                v,
            ),
            || format!("value '{v}' does not look like a valid token ID"),
        ),
        "pve-ha-resource-or-vm-id" => check(full_match("([a-z]+:\\S+|\\d+)", v), || {
            "value does not look like a valid ha resource id".into()
        }),
        _ => Ok(()),
    }
}

fn verify_userid(v: &str) -> Result<(), String> {
    let len = v.chars().count();
    if len < 3 {
        return fail(format!("user name '{v}' is too short"));
    }
    if len > 64 {
        return fail(format!("user name '{v}' is too long ({len} > 64)"));
    }
    check(full_match("[^\\s:/]+@[A-Za-z][A-Za-z0-9.\\-_]+", v), || {
        format!("value '{v}' does not look like a valid user name")
    })
}

fn is_startup_order(v: &str) -> bool {
    perl_true(v)
        && v.split(',').filter(|p| !p.trim().is_empty()).all(|p| {
            full_match("(order=)?\\d+", p) || full_match("up=\\d+", p) || full_match("down=\\d+", p)
        })
}

/// `verify_bootdev`: a disk (not efidisk/tpmstate), `netN`, `usbN` or `hostpciN`.
fn is_boot_device(v: &str) -> bool {
    if v.starts_with("efidisk") || v.starts_with("tpmstate") {
        return false;
    }
    let limits = [("net", 31), ("usb", 14), ("hostpci", 15)];
    is_drive_name(v)
        || super::indexed::split_key(v)
            .is_some_and(|(p, i)| limits.iter().any(|(lp, max)| *lp == p && i <= *max))
}

fn verify_hotplug(v: &str) -> Result<(), String> {
    if v == "0" || v == "1" {
        return Ok(());
    }
    for feature in split_list(v) {
        if !matches!(
            feature.as_str(),
            "network" | "disk" | "cpu" | "memory" | "usb" | "cloudinit"
        ) {
            return fail(format!("invalid hotplug feature '{feature}'"));
        }
    }
    Ok(())
}

/// `parse_idmap($entry, $id_format)` through `$verify_idpair`, which appends one more
/// newline to the inner `die` text.
fn verify_id_pair(entry: &str, id_format: &str) -> Result<(), String> {
    if entry == "1" {
        return Ok(());
    }
    let ids: Vec<&str> = match entry.split_once(':') {
        Some((s, t)) if !s.is_empty() && !t.is_empty() && !t.contains(':') => vec![s, t],
        _ => vec![entry],
    };
    for id in ids {
        if let Err(e) = verify(id_format, id) {
            return Err(format!("entry '{entry}' contains invalid ID - {e}\n\n"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(name: &str, v: &str) -> Result<(), String> {
        check_named(name, v)
    }

    #[test]
    fn named_formats_use_pves_texts() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            ("pve-vmid", "100", None),
            (
                "pve-vmid",
                "99",
                Some("value does not look like a valid VM ID\n"),
            ),
            ("pve-node", "pve-1", None),
            (
                "pve-node",
                "pve_1",
                Some("value does not look like a valid node name\n"),
            ),
            ("pve-configid", "before-upgrade", None),
            (
                "pve-configid",
                "1st",
                Some("invalid configuration ID '1st'\n"),
            ),
            ("pve-ha-resource-or-vm-id", "vm:100", None),
            ("pve-ha-resource-or-vm-id", "100", None),
            (
                "pve-ha-resource-or-vm-id",
                "VM:100",
                Some("value does not look like a valid ha resource id\n"),
            ),
            ("pve-storage-id", "local-lvm", None),
            (
                "pve-storage-id",
                "bad!",
                Some("storage ID 'bad!' contains illegal characters\n"),
            ),
            ("dns-name", "web-1.example.com", None),
            (
                "dns-name",
                "web_1",
                Some("value does not look like a valid DNS name\n"),
            ),
            ("mac-addr", "BC:24:11:00:00:01", None),
            (
                "mac-addr",
                "01:24:11:00:00:01",
                Some("value does not look like a valid unicast MAC address\n"),
            ),
            ("ipv4", "192.0.2.1", None),
            (
                "ipv4",
                "192.0.2.256",
                Some("value does not look like a valid IPv4 address\n"),
            ),
            ("ipv6", "2001:db8::1", None),
            ("CIDR", "10.0.0.0/8", None),
            (
                "CIDR",
                "10.0.0.0/7",
                Some("value does not look like a valid CIDR network\n"),
            ),
            ("urlencoded", "ssh-ed25519%20AAAA", None),
            (
                "urlencoded",
                "a b",
                Some("invalid urlencoded string: a b\n"),
            ),
            ("disk-size", "32G", None),
            (
                "disk-size",
                "32X",
                Some("value does not look like a valid disk size: 32X\n"),
            ),
            ("pve-volume-id-or-qm-path", "local-lvm:32", None),
            ("pve-volume-id-or-qm-path", "none", None),
            (
                "pve-volume-id-or-qm-path",
                "nocolon",
                Some("unable to parse volume ID 'nocolon'\n"),
            ),
            ("unknown-format-name", "anything", None),
        ];
        for (name, value, want) in cases {
            assert_eq!(fmt(name, value).err().as_deref(), *want, "{name} {value}");
        }
    }

    #[test]
    fn list_formats_split_on_commas_semicolons_spaces_and_nul() {
        assert_eq!(split_list("a,b;c d\te"), vec!["a", "b", "c", "d", "e"]);
        assert_eq!(split_list("a b\0c"), vec!["a b", "c"]);
        assert!(fmt("pve-vmid-list", "100,101;102 103").is_ok());
        assert!(fmt("pve-vmid-list", "").is_ok());
        assert_eq!(
            fmt("pve-vmid-list", "100,5").err().as_deref(),
            Some("value does not look like a valid VM ID\n")
        );
        assert!(fmt("pve-tag-list", "web;prod,Env.x").is_ok());
        assert_eq!(
            fmt("pve-tag-list", "ok;b@d").err().as_deref(),
            Some("invalid characters in tag\n")
        );
        assert!(fmt("pve-configid-list", "net1,scsi2").is_ok());
        assert!(fmt("pve-configid-opt", "").is_ok());
    }

    #[test]
    fn storage_pairs_accept_maps_single_ids_and_identity() {
        assert!(fmt("storage-pair-list", "local:ceph,local-lvm:ceph").is_ok());
        assert!(fmt("storage-pair-list", "ceph").is_ok());
        assert!(fmt("storage-pair-list", "1").is_ok());
        assert_eq!(
            fmt("storage-pair-list", "lo!cal:ceph").err().as_deref(),
            Some(
                "entry 'lo!cal:ceph' contains invalid ID - storage ID 'lo!cal' contains illegal characters\n\n\n"
            )
        );
        assert!(fmt("bridge-pair-list", "vmbr0:vmbr1,vmbr2").is_ok());
        assert_eq!(
            fmt("bridge-pair-list", "vm/br0").err().as_deref(),
            Some("entry 'vm/br0' contains invalid ID - invalid bridge ID 'vm/br0'\n\n\n")
        );
    }

    #[test]
    fn access_formats_use_pves_texts() {
        assert!(fmt("pve-priv-list", "VM.Allocate,Sys.Incoming SDN.Use").is_ok());
        assert_eq!(
            fmt("pve-priv-list", "VM.Allocate,VM.Fly").err().as_deref(),
            Some("invalid privilege 'VM.Fly'\n")
        );
        assert_eq!(
            fmt("pve-roleid", "bad role").err().as_deref(),
            Some("role name 'bad role' contains invalid characters\n")
        );
        assert!(fmt("pve-tokenid-list", "mig@pve!t1,root@pam!fleet").is_ok());
        assert_eq!(
            fmt("pve-tokenid", "mig@pve").err().as_deref(),
            Some("value 'mig@pve' does not look like a valid token ID\n")
        );
    }
}
