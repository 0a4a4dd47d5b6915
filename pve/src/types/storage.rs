//! Storage answers: `GET /nodes/{node}/storage`, `.../storage/{storage}/status`,
//! `.../storage/{storage}/content`.

use serde::Deserialize;

use crate::de;

fn split_content(content: &str) -> Vec<&str> {
    content
        .split([',', ';', ' '])
        .filter(|c| !c.is_empty())
        .collect()
}

/// One storage of a node.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct StorageEntry {
    /// Storage id.
    #[serde(default)]
    pub storage: String,
    /// Plugin type (`lvmthin`, `dir`, `rbd`, ...).
    #[serde(rename = "type", default)]
    pub kind: String,
    /// Allowed content types (`images,rootdir`).
    #[serde(default)]
    pub content: String,
    /// Storage is active on the node.
    #[serde(default, deserialize_with = "de::opt_bool_lenient")]
    pub active: Option<bool>,
    /// Storage is enabled.
    #[serde(default, deserialize_with = "de::opt_bool_lenient")]
    pub enabled: Option<bool>,
    /// Shared between nodes.
    #[serde(default, deserialize_with = "de::opt_bool_lenient")]
    pub shared: Option<bool>,
    /// Size (bytes).
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub total: Option<u64>,
    /// Used (bytes).
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub used: Option<u64>,
    /// Available (bytes).
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub avail: Option<u64>,
    /// Used fraction.
    #[serde(default, deserialize_with = "de::opt_f64_lenient")]
    pub used_fraction: Option<f64>,
}

impl StorageEntry {
    /// The content types, split.
    pub fn contents(&self) -> Vec<&str> {
        split_content(&self.content)
    }

    /// Whether the storage holds `content` (`images`, `iso`, ...).
    pub fn holds(&self, content: &str) -> bool {
        self.contents().contains(&content)
    }
}

/// `GET /nodes/{node}/storage/{storage}/status`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct StorageStatus {
    /// Plugin type.
    #[serde(rename = "type", default)]
    pub kind: String,
    /// Allowed content types.
    #[serde(default)]
    pub content: String,
    /// Active on the node.
    #[serde(default, deserialize_with = "de::opt_bool_lenient")]
    pub active: Option<bool>,
    /// Enabled.
    #[serde(default, deserialize_with = "de::opt_bool_lenient")]
    pub enabled: Option<bool>,
    /// Shared between nodes.
    #[serde(default, deserialize_with = "de::opt_bool_lenient")]
    pub shared: Option<bool>,
    /// Size (bytes).
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub total: Option<u64>,
    /// Used (bytes).
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub used: Option<u64>,
    /// Available (bytes).
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub avail: Option<u64>,
}

impl StorageStatus {
    /// The content types, split.
    pub fn contents(&self) -> Vec<&str> {
        split_content(&self.content)
    }
}

/// One volume of `GET .../storage/{storage}/content`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct StorageVolume {
    /// Volume id (`local-lvm:vm-100-disk-0`).
    #[serde(default)]
    pub volid: String,
    /// Format (`raw`, `qcow2`, `iso`, `subvol`, ...).
    #[serde(default)]
    pub format: String,
    /// Size (bytes; was sometimes a string).
    #[serde(default, deserialize_with = "de::u64_lenient")]
    pub size: u64,
    /// Used (bytes).
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub used: Option<u64>,
    /// Owner VMID.
    #[serde(default, deserialize_with = "de::opt_u32_lenient")]
    pub vmid: Option<u32>,
    /// Creation time (unix).
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub ctime: Option<u64>,
    /// Base volume of a linked clone.
    #[serde(default)]
    pub parent: Option<String>,
    /// Notes.
    #[serde(default)]
    pub notes: Option<String>,
    /// Protected from removal.
    #[serde(default, deserialize_with = "de::opt_bool_lenient")]
    pub protected: Option<bool>,
}
