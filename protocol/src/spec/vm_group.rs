//! VM groups for cattle (`[[vm_group]]` in a fleet file, encoding v2): `replicas` VMs named by
//! a pattern from one shared spec, spread over the hosts by default; and the fleet file's
//! `[vm_defaults]`, the keys every `[[vm]]` and `[[vm_group]]` starts from.
//!
//! ```toml
//! [vm_defaults]                 # any VM key but `name`; a key an entry gives replaces it
//! cores = 2
//! agent = true
//!
//! [[vm_group]]
//! name = "web"                  # the group
//! replicas = 4                  # web-1 .. web-4
//! name_pattern = "web-{n}"      # optional: "<name>-{n}"
//! spread = true                 # optional: members on as many hosts as they can
//! memory_mib = 2048             # ... and every other VM key, shared by the members
//! ```
//!
//! A group is expanded when the file is read (`file.rs`): each member is an ordinary VM whose
//! spec says which group it belongs to ([`GroupMember`]), so `pvefleet vm scale GROUP N` can
//! add members from that spec and remove the highest ones, and the scheduler can spread them.
//! A member's spec is checked with the others (`validate.rs`).

use serde::{Deserialize, Serialize};

/// The most members a group may have.
pub const MAX_REPLICAS: u32 = 1000;
/// The placeholder of a name pattern for the member's number.
pub const INDEX_PLACEHOLDER: &str = "{n}";

/// A VM's membership of a VM group (`VmSpec::group`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupMember {
    /// The group's name.
    pub group: String,
    /// The member's number, from 1.
    pub index: u32,
    /// The group's name pattern (with `{n}`).
    pub pattern: String,
    /// Spread the members over the hosts (a preference, never a reason to wait).
    pub spread: bool,
}

impl GroupMember {
    /// Member `index`'s name under `pattern`.
    pub fn name_of(pattern: &str, index: u32) -> String {
        pattern.replace(INDEX_PLACEHOLDER, &index.to_string())
    }
}

/// The keys of a `[[vm_group]]` table that are the group's own, not its members' spec.
pub const GROUP_KEYS: [&str; 4] = ["name", "replicas", "name_pattern", "spread"];
