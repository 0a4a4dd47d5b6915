//! [`ConfigPlan`]: what a configure plan changes (keys to set and delete, disks to grow, what
//! stays pending on a running VM) and how it becomes the PVE calls.

use std::collections::BTreeMap;

use pve::calls::ConfigChanges;

/// Grow a disk to a size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resize {
    /// The slot (`scsi0`).
    pub slot: String,
    /// Size now, bytes.
    pub from_bytes: u64,
    /// Size wanted, bytes.
    pub to_bytes: u64,
}

/// What to change.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConfigPlan {
    /// Keys to set, with the exact values to send.
    pub set: BTreeMap<String, String>,
    /// Keys to remove.
    pub delete: Vec<String>,
    /// Disks to grow (after the config update).
    pub resizes: Vec<Resize>,
    /// Keys of `set`/`delete` a running VM is expected to keep pending until a restart.
    pub needs_restart: Vec<String>,
}

impl ConfigPlan {
    /// Whether the config needs an update (set or delete).
    pub fn has_config_changes(&self) -> bool {
        !self.set.is_empty() || !self.delete.is_empty()
    }

    /// Whether nothing at all differs.
    pub fn is_empty(&self) -> bool {
        !self.has_config_changes() && self.resizes.is_empty()
    }

    /// The update for `PUT .../config`, guarded by `digest`.
    pub fn update(&self, digest: Option<&str>) -> ConfigChanges {
        let mut c = self.creation().delete(&self.delete);
        if let Some(d) = digest {
            c = c.digest(d);
        }
        c
    }

    /// The settings for `POST /nodes/{node}/qemu` (create sends only keys to set).
    pub fn creation(&self) -> ConfigChanges {
        self.set
            .iter()
            .fold(ConfigChanges::new(), |c, (k, v)| c.raw(k, v))
    }
}
