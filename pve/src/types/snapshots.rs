//! `GET /nodes/{node}/qemu/{vmid}/snapshot`: the snapshot tree as a flat list, always ending
//! with the pseudo-entry `current` ("You are here!") that carries the config digest.

use serde::Deserialize;

use crate::de;

/// One snapshot (or the `current` pseudo-entry).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SnapshotEntry {
    /// Snapshot name, or `current`.
    #[serde(default, deserialize_with = "de::string_lenient")]
    pub name: String,
    /// Description (`""` if none).
    #[serde(default, deserialize_with = "de::string_lenient")]
    pub description: String,
    /// Parent snapshot.
    #[serde(default, deserialize_with = "de::opt_string_lenient")]
    pub parent: Option<String>,
    /// Creation time (unix; 0 if unknown).
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub snaptime: Option<u64>,
    /// Includes RAM state.
    #[serde(default, deserialize_with = "de::bool_lenient")]
    pub vmstate: bool,
    /// `prepare` or `delete` while a snapshot task is half done (not declared by the schema).
    #[serde(default)]
    pub snapstate: Option<String>,
    /// `current` entry: whether the VM runs (not declared by the schema).
    #[serde(default, deserialize_with = "de::opt_bool_lenient")]
    pub running: Option<bool>,
    /// `current` entry: the config digest (not declared by the schema).
    #[serde(default)]
    pub digest: Option<String>,
}

impl SnapshotEntry {
    /// Whether this is the `current` pseudo-entry rather than a snapshot.
    pub fn is_current(&self) -> bool {
        self.name == "current"
    }

    /// Whether a snapshot task left this snapshot half done.
    pub fn is_incomplete(&self) -> bool {
        self.snapstate.as_deref().is_some_and(|s| !s.is_empty())
    }
}
