//! The syntax rules spec fields follow (names, ids, addresses, keys), each a pure predicate with
//! the operator-readable text of what it allows. They follow PVE's own formats where the value
//! ends up in PVE (`pve-storage-id`, `pve-tag`, `pve-bridge-id`, the `machine` pattern).

/// A rule's predicate and the text [`SpecError`](super::SpecError) shows as "allowed".
pub(crate) struct Rule {
    pub(crate) allowed: &'static str,
    pub(crate) check: fn(&str) -> bool,
}

pub(crate) const DNS_LABEL: Rule = Rule {
    allowed: "a DNS label: 1-63 characters a-z, 0-9 and '-', not starting or ending with '-'",
    check: is_dns_label,
};

pub(crate) const DNS_NAME: Rule = Rule {
    allowed: "a DNS name: dot-separated labels of letters, digits and '-', at most 253 characters",
    check: is_dns_name,
};

pub(crate) const HOST_NAME: Rule = Rule {
    allowed: "a PVE node name: 1-63 characters letters, digits and '-', not starting or ending with '-'",
    check: is_host_name,
};

pub(crate) const TAG: Rule = Rule {
    allowed: "a PVE tag: 1-64 characters a-z, 0-9, '_', '-', '+', '.', not starting with '-', '+' or '.'",
    check: is_tag,
};

pub(crate) const GUEST_SELECTOR: Rule = Rule {
    allowed: "a VM name (a DNS label) or tag:<tag> for every VM with that PVE tag",
    check: is_guest_selector,
};

pub(crate) const STORAGE_ID: Rule = Rule {
    allowed: "a PVE storage id: a letter, then letters, digits, '-', '_' or '.', ending with a letter or digit (at most 64)",
    check: is_storage_id,
};

pub(crate) const INTERFACE: Rule = Rule {
    allowed: "a Linux interface name: 1-15 characters letters, digits, '-', '_' or '.'",
    check: is_interface,
};

pub(crate) const CPU_MODEL: Rule = Rule {
    allowed: "a QEMU CPU model such as host, kvm64, x86-64-v2-AES, EPYC-v4 or custom-<name> (letters, digits, '-', '_', '.', '+'; at most 64)",
    check: is_cpu_model,
};

pub(crate) const MACHINE: Rule = Rule {
    allowed: "a QEMU machine type: pc, q35, virt, pc-i440fx-<version>, pc-q35-<version> or virt-<version> (optionally +pve<n>, .pxe)",
    check: is_machine,
};

pub(crate) const MAC: Rule = Rule {
    allowed: "a unicast MAC address XX:XX:XX:XX:XX:XX (hex; the first octet even, not all zero)",
    check: is_unicast_mac,
};

pub(crate) const DISK_SLOT: Rule = Rule {
    allowed: "scsi0-scsi30, virtio0-virtio15, sata0-sata5 or ide0-ide3",
    check: is_disk_slot,
};

pub(crate) const UNIX_USER: Rule = Rule {
    allowed: "a Unix user name: a-z or '_' first, then a-z, 0-9, '_' or '-' (at most 32)",
    check: is_unix_user,
};

pub(crate) const SSH_KEY: Rule = Rule {
    allowed: "one OpenSSH public key line: ssh-ed25519, ssh-rsa, ecdsa-sha2-nistp256/384/521, sk-ssh-ed25519@openssh.com or sk-ecdsa-sha2-nistp256@openssh.com, then base64, then an optional comment",
    check: is_ssh_key,
};

pub(crate) const LABEL_KEY: Rule = Rule {
    allowed: "a label key: 1-63 characters a-z, 0-9, '.', '_', '/', '-', starting and ending with a-z or 0-9",
    check: is_label_key,
};

pub(crate) const LABEL_VALUE: Rule = Rule {
    allowed: "a label value: 0-63 characters letters, digits, '.', '_' or '-'",
    check: is_label_value,
};

pub(crate) const TOKEN_ID: Rule = Rule {
    allowed: "1-64 characters letters, digits, '_' or '-'",
    check: is_token_id,
};

fn is_dns_label(s: &str) -> bool {
    (1..=63).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn is_host_name(s: &str) -> bool {
    is_dns_label(&s.to_ascii_lowercase())
}

fn is_dns_name(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_host_name)
}

fn is_tag(s: &str) -> bool {
    let ok_first = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_';
    (1..=64).contains(&s.len())
        && s.bytes().next().is_some_and(ok_first)
        && s.bytes()
            .all(|b| ok_first(b) || matches!(b, b'-' | b'+' | b'.'))
}

fn is_guest_selector(s: &str) -> bool {
    match s.strip_prefix("tag:") {
        Some(tag) => is_tag(tag),
        None => is_dns_label(s),
    }
}

fn is_storage_id(s: &str) -> bool {
    let b = s.as_bytes();
    let (Some(first), Some(last)) = (b.first(), b.last()) else {
        return false;
    };
    b.len() <= 64
        && first.is_ascii_alphabetic()
        && last.is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

fn is_interface(s: &str) -> bool {
    (1..=15).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn is_cpu_model(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'+'))
}

/// PVE's pattern: `pc|pc(-i440fx)?-V(+pveN)?(.pxe)?|q35|pc-q35-V(+pveN)?(.pxe)?|virt(-V)?(+pveN)?`
/// where V is `\d+(\.\d+)+`.
fn is_machine(s: &str) -> bool {
    if matches!(s, "pc" | "q35" | "virt") {
        return true;
    }
    if s.len() > 40 {
        return false;
    }
    if let Some(rest) = s.strip_prefix("virt") {
        let rest = match rest.strip_prefix('-') {
            Some(versioned) => match split_version(versioned) {
                Some(after) => after,
                None => return false,
            },
            None => rest,
        };
        return rest.is_empty() || rest.strip_prefix("+pve").is_some_and(is_digits);
    }
    let Some(versioned) = ["pc-i440fx-", "pc-q35-", "pc-"]
        .iter()
        .find_map(|p| s.strip_prefix(p))
    else {
        return false;
    };
    let Some(mut rest) = split_version(versioned) else {
        return false;
    };
    if let Some(after) = rest.strip_prefix("+pve") {
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return false;
        }
        rest = &after[digits..];
    }
    rest.is_empty() || rest == ".pxe"
}

/// Consumes `\d+(\.\d+)+` (at least two components) and returns what follows.
fn split_version(s: &str) -> Option<&str> {
    let mut parts = 0;
    let mut rest = s;
    loop {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        parts += 1;
        rest = &rest[digits..];
        match rest.strip_prefix('.') {
            Some(after) if after.bytes().next().is_some_and(|b| b.is_ascii_digit()) => rest = after,
            _ => break,
        }
    }
    (parts >= 2).then_some(rest)
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn is_unicast_mac(s: &str) -> bool {
    let octets: Vec<&str> = s.split(':').collect();
    if octets.len() != 6
        || !octets
            .iter()
            .all(|o| o.len() == 2 && o.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return false;
    }
    let first = u8::from_str_radix(octets[0], 16).unwrap_or(1);
    first & 1 == 0 && octets.iter().any(|o| *o != "00")
}

fn is_disk_slot(s: &str) -> bool {
    let max = |bus: &str| -> Option<u32> {
        match bus {
            "scsi" => Some(30),
            "virtio" => Some(15),
            "sata" => Some(5),
            "ide" => Some(3),
            _ => None,
        }
    };
    let split = s.find(|c: char| c.is_ascii_digit()).unwrap_or(s.len());
    let (bus, index) = s.split_at(split);
    let canonical = index == "0" || !index.starts_with('0');
    match (max(bus), index.parse::<u32>()) {
        (Some(max), Ok(n)) => is_digits(index) && canonical && n <= max,
        _ => false,
    }
}

fn is_unix_user(s: &str) -> bool {
    (1..=32).contains(&s.len())
        && s.bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b == b'_')
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-'))
}

fn is_ssh_key(s: &str) -> bool {
    const TYPES: [&str; 7] = [
        "ssh-ed25519",
        "ssh-rsa",
        "ecdsa-sha2-nistp256",
        "ecdsa-sha2-nistp384",
        "ecdsa-sha2-nistp521",
        "sk-ssh-ed25519@openssh.com",
        "sk-ecdsa-sha2-nistp256@openssh.com",
    ];
    if s.contains(['\n', '\r']) {
        return false;
    }
    let mut fields = s.split_ascii_whitespace();
    let (Some(kind), Some(body)) = (fields.next(), fields.next()) else {
        return false;
    };
    let body_ok = body.len() >= 16
        && body
            .trim_end_matches('=')
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/');
    TYPES.contains(&kind) && body_ok
}

fn is_label_key(s: &str) -> bool {
    let edge = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    (1..=63).contains(&s.len())
        && s.bytes().next().is_some_and(edge)
        && s.bytes().last().is_some_and(edge)
        && s.bytes()
            .all(|b| edge(b) || matches!(b, b'.' | b'_' | b'/' | b'-'))
}

fn is_label_value(s: &str) -> bool {
    s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

fn is_token_id(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rule_accepts_good_and_refuses_bad_values() {
        let table: &[(&Rule, &[&str], &[&str])] = &[
            (
                &DNS_LABEL,
                &["web-1", "a", "x9"],
                &["", "-a", "a-", "Web", "a.b", "a_b"],
            ),
            (
                &DNS_NAME,
                &["example.com", "Debian-12"],
                &["a..b", "-x.com", ""],
            ),
            (&HOST_NAME, &["pve1", "PVE-2"], &["pve_1", "pve.1"]),
            (
                &TAG,
                &["prod", "a+b.c", "_x"],
                &["", "-x", "Prod", "a b", "a;b"],
            ),
            (
                &STORAGE_ID,
                &["local-lvm", "ceph.pool", "z"],
                &["1local", "local-", "lo cal"],
            ),
            (
                &INTERFACE,
                &["vmbr0", "bond0.20"],
                &["", "vmbr0-too-long-name", "vm br"],
            ),
            (
                &CPU_MODEL,
                &["host", "x86-64-v2-AES", "custom-mine", "EPYC-v4"],
                &["", "-x", "a b"],
            ),
            (
                &MACHINE,
                &[
                    "q35",
                    "pc",
                    "virt",
                    "pc-i440fx-9.0",
                    "pc-q35-8.1+pve1",
                    "pc-7.2.pxe",
                    "virt-9.0+pve2",
                ],
                &[
                    "q36",
                    "pc-i440fx-9",
                    "pc-q35-9.0+pve",
                    "virt-9.0.pxe",
                    "pc-q35-9.0.pxe.x",
                    "",
                ],
            ),
            (
                &MAC,
                &["BC:24:11:AA:BB:CC", "02:00:00:00:00:01"],
                &[
                    "01:00:5e:00:00:01",
                    "00:00:00:00:00:00",
                    "BC:24:11:AA:BB",
                    "BC-24-11-AA-BB-CC",
                ],
            ),
            (
                &DISK_SLOT,
                &["scsi0", "scsi30", "virtio15", "sata5", "ide3"],
                &["scsi31", "ide4", "nvme0", "scsi", "scsi01", "scsi-1"],
            ),
            (
                &UNIX_USER,
                &["ops", "_svc", "deploy-1"],
                &["Ops", "1ops", "", "a:b"],
            ),
            (
                &SSH_KEY,
                &[
                    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGb8 ops@laptop",
                    "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAB==",
                ],
                &[
                    "ssh-dss AAAAB3NzaC1kc3MAAACBAP",
                    "ssh-ed25519",
                    "ssh-ed25519 short",
                    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAA\nx",
                ],
            ),
            (
                &LABEL_KEY,
                &["zone", "pvefleet.io/rack"],
                &["", "Zone", "-zone", "zone-"],
            ),
            (&LABEL_VALUE, &["", "eu-west.1", "A_b"], &["a b", "a/b"]),
            (&TOKEN_ID, &["abc123", "a_b-c"], &["", "a.b"]),
        ];
        for (rule, good, bad) in table {
            for g in *good {
                assert!(
                    (rule.check)(g),
                    "{g:?} refused by rule allowing {}",
                    rule.allowed
                );
            }
            for b in *bad {
                assert!(
                    !(rule.check)(b),
                    "{b:?} accepted by rule allowing {}",
                    rule.allowed
                );
            }
        }
    }
}
