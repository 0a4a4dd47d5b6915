//! UPIDs: PVE's task identifiers, `UPID:<node>:<pid>:<pstart>:<starttime>:<type>:<id>:<user>:`.
//!
//! Parsing follows pve-common's `PVE::UPID::decode` (hex either case, `pstart` 8 or 9 digits,
//! the trailing colon required); formatting follows `encode` (upper-case hex), so a parsed
//! UPID formats back to the same text.

// Parsing (`FromStr`) is its own file: it answers a `PveError`, and `PveError` carries UPIDs.
mod parse;

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A parsed task id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Upid {
    /// Node that runs the task: status and log must be read there.
    pub node: String,
    /// Worker PID.
    pub pid: u32,
    /// Worker start time in clock ticks since boot.
    pub pstart: u64,
    /// Unix time the task started.
    pub starttime: u64,
    /// Task type (`qmstart`, `qmclone`, ...).
    pub kind: String,
    /// Object id (usually the VMID; may be empty).
    pub id: String,
    /// `user@realm` or `user@realm!tokenid`.
    pub user: String,
    /// Whether `pstart` had 9 hex digits (kept so formatting round-trips).
    wide_pstart: bool,
}

impl Upid {
    /// Build a UPID (as the simulator or a test would).
    pub fn new(
        node: impl Into<String>,
        pid: u32,
        pstart: u64,
        starttime: u64,
        kind: impl Into<String>,
        id: impl Into<String>,
        user: impl Into<String>,
    ) -> Self {
        Self {
            node: node.into(),
            pid,
            pstart,
            starttime,
            kind: kind.into(),
            id: id.into(),
            user: user.into(),
            wide_pstart: pstart > 0xFFFF_FFFF,
        }
    }

    /// The VMID when the task's id is one.
    pub fn vmid(&self) -> Option<u32> {
        self.id.parse().ok()
    }
}

impl fmt::Display for Upid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = if self.wide_pstart { 9 } else { 8 };
        write!(
            f,
            "UPID:{}:{:08X}:{:0width$X}:{:08X}:{}:{}:{}:",
            self.node, self.pid, self.pstart, self.starttime, self.kind, self.id, self.user
        )
    }
}

impl Serialize for Upid {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Upid {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_pve_common_examples() {
        for text in [
            "UPID:example-node:0000C346:165A0CE4:68D7279C:aptupdate::root@pam:",
            "UPID:example-node:000934AF:0D015579:68BF3A41:vzdump:100:91a1da29-a47d-11f0-84e0-fafbfc944d00@pam!some-token:",
            "UPID:proxmox2:000D7AA2:08D5A17C:63DF62A5:vzclone:200:root@pam!api_token:",
            "UPID:pve1:00001234:1165A0CE4:68D7279C:qmstart:100:root@pam:",
        ] {
            let upid: Upid = text.parse().unwrap();
            assert_eq!(upid.to_string(), text);
        }
    }

    #[test]
    fn decodes_fields() {
        let u: Upid = "UPID:proxmox2:000D7AA2:08D5A17C:63DF62A5:vzclone:200:root@pam!api_token:"
            .parse()
            .unwrap();
        assert_eq!(u.node, "proxmox2");
        assert_eq!(u.pid, 0xD7AA2);
        assert_eq!(u.starttime, 0x63DF62A5);
        assert_eq!(u.kind, "vzclone");
        assert_eq!(u.vmid(), Some(200));
        assert_eq!(u.user, "root@pam!api_token");
    }

    #[test]
    fn lower_case_hex_is_accepted_and_formatted_upper() {
        let u: Upid = "UPID:n:0000c346:165a0ce4:68d7279c:x:1:root@pam:"
            .parse()
            .unwrap();
        assert_eq!(
            u.to_string(),
            "UPID:n:0000C346:165A0CE4:68D7279C:x:1:root@pam:"
        );
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "",
            "UPID:pve1:0000C346:165A0CE4:68D7279C:qmstart:100:root@pam",
            "UPID:-pve:0000C346:165A0CE4:68D7279C:qmstart:100:root@pam:",
            "UPID:pve1:C346:165A0CE4:68D7279C:qmstart:100:root@pam:",
            "UPID:pve1:0000C346:165A0CE4:68D7279C::100:root@pam:",
            "UPID:pve1:0000C346:165A0CE4:68D7279C:qm start:100:root@pam:",
            "UPID:pve1:0000C346:165A0CE4:68D7279C:qmstart:100::",
            "UPID:pve1:0000C34G:165A0CE4:68D7279C:qmstart:100:root@pam:",
        ] {
            assert!(bad.parse::<Upid>().is_err(), "{bad}");
        }
    }
}
