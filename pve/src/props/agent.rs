//! `agent`: the QEMU guest agent setting, `1,fstrim_cloned_disks=1,type=virtio`.
//!
//! `enabled` is the default key and is written bare, the rest sorted, as PVE prints it.
//! `freeze-fs` (PVE 9) is written under its older name `freeze-fs-on-backup`, which PVE 8.4
//! knows and PVE 9 accepts as an alias; `freeze-fs`, `freeze-fs-on-backup` and
//! `guest-fsfreeze` all read as `freeze_fs`.

use std::str::FromStr;

use crate::error::PveError;
use crate::props::kv::{self, invalid, parse_bool, split};
use crate::props::str_enum::str_enum;

str_enum! {
    /// Guest agent transport.
    pub enum AgentType: "type" {
        Virtio = "virtio",
        Isa = "isa",
    }
}

/// The `agent` setting of a VM.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AgentConfig {
    /// Talk to a QEMU guest agent in the VM.
    pub enabled: bool,
    /// Freeze guest filesystems for snapshots, backups and clones.
    pub freeze_fs: Option<bool>,
    /// Run fstrim after moving a disk or migrating.
    pub fstrim_cloned_disks: Option<bool>,
    /// Transport.
    pub kind: Option<AgentType>,
    /// Sub-keys this client does not model.
    pub extra: Vec<(String, String)>,
}

impl AgentConfig {
    /// Agent enabled, everything else default.
    pub fn enabled() -> Self {
        Self {
            enabled: true,
            ..Self::default()
        }
    }

    /// The validated property string.
    pub fn to_property_string(&self) -> Result<String, PveError> {
        kv::check_extras("agent", &self.extra, is_known_key)?;
        let mut w = kv::Writer::default();
        w.bare(if self.enabled { "1" } else { "0" });
        w.flag("freeze-fs-on-backup", self.freeze_fs);
        w.flag("fstrim_cloned_disks", self.fstrim_cloned_disks);
        w.opt("type", self.kind);
        for (k, v) in &self.extra {
            w.kv(k, v);
        }
        Ok(w.finish())
    }
}

fn is_known_key(key: &str) -> bool {
    matches!(
        key,
        "enabled"
            | "freeze-fs"
            | "freeze-fs-on-backup"
            | "guest-fsfreeze"
            | "fstrim_cloned_disks"
            | "type"
    )
}

impl FromStr for AgentConfig {
    type Err = PveError;

    fn from_str(text: &str) -> Result<Self, PveError> {
        let mut c = Self::default();
        let mut enabled = None;
        for (key, value) in split("agent", text)? {
            match key {
                None | Some("enabled") => {
                    if enabled.replace(parse_bool("enabled", value)?).is_some() {
                        return Err(invalid("enabled", format!("given twice in '{text}'")));
                    }
                }
                Some("freeze-fs" | "freeze-fs-on-backup" | "guest-fsfreeze") => {
                    if c.freeze_fs
                        .replace(parse_bool("freeze-fs", value)?)
                        .is_some()
                    {
                        return Err(invalid("freeze-fs", format!("given twice in '{text}'")));
                    }
                }
                Some("fstrim_cloned_disks") => {
                    c.fstrim_cloned_disks = Some(parse_bool("fstrim_cloned_disks", value)?);
                }
                Some("type") => c.kind = Some(value.parse()?),
                Some(k) => {
                    kv::check_extra("agent", k, value)?;
                    c.extra.push((k.to_string(), value.to_string()));
                }
            }
        }
        c.enabled = enabled.ok_or_else(|| invalid("enabled", format!("missing in '{text}'")))?;
        Ok(c)
    }
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
    fn builds_pve_spelling() {
        assert_eq!(AgentConfig::enabled().to_property_string().unwrap(), "1");
        assert_eq!(AgentConfig::default().to_property_string().unwrap(), "0");
        let full = AgentConfig {
            enabled: true,
            freeze_fs: Some(false),
            fstrim_cloned_disks: Some(true),
            kind: Some(AgentType::Virtio),
            extra: Vec::new(),
        };
        assert_eq!(
            full.to_property_string().unwrap(),
            "1,freeze-fs-on-backup=0,fstrim_cloned_disks=1,type=virtio"
        );
    }

    #[test]
    fn parses_keyed_bare_and_aliases() {
        let a: AgentConfig = "enabled=1,fstrim_cloned_disks=1".parse().unwrap();
        assert!(a.enabled && a.fstrim_cloned_disks == Some(true));
        let b: AgentConfig = "guest-fsfreeze=0,1,type=isa".parse().unwrap();
        assert_eq!((b.freeze_fs, b.kind), (Some(false), Some(AgentType::Isa)));
        let c: AgentConfig = "0".parse().unwrap();
        assert!(!c.enabled);
    }

    #[test]
    fn round_trips() {
        for text in [
            "1",
            "0,type=isa",
            "1,freeze-fs-on-backup=1,fstrim_cloned_disks=0,type=virtio",
            "1,new-knob=2",
        ] {
            let a: AgentConfig = text.parse().unwrap();
            assert_eq!(a.to_property_string().unwrap(), text);
        }
    }

    #[test]
    fn every_validation_error_names_its_field() {
        for (text, field) in [
            ("2", "enabled"),
            ("type=virtio", "enabled"),
            ("1,type=serial", "type"),
            ("1,freeze-fs=x", "freeze-fs"),
            ("1,freeze-fs=1,guest-fsfreeze=1", "freeze-fs"),
            ("1,fstrim_cloned_disks=yes please", "fstrim_cloned_disks"),
            ("1,enabled=1", "enabled"),
            ("1,Bad=1", "agent"),
        ] {
            assert_eq!(
                field_of(text.parse::<AgentConfig>().unwrap_err()),
                field,
                "{text}"
            );
        }
    }
}
