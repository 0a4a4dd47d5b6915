//! The operators' host commands (encoding v2; a v1 member does not know the methods):
//! `pvefleet host label|unlabel HOST KEY[=VALUE]...` (labels placement, VIPs and rules match,
//! on top of the agent's) and `pvefleet host remove HOST` (decommission: refused while a VM is
//! placed on it or it holds a VIP; its certificate is refused from then on).

use serde::{Deserialize, Serialize};

use crate::fleet::Host;
use crate::rpc::Rpc;
use crate::spec::Labels;

/// `host label` / `host unlabel`: set `set`, then remove `unset`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostLabel {
    /// The host, by name.
    pub host: String,
    /// Labels to set.
    pub set: Labels,
    /// Keys to remove.
    pub unset: Vec<String>,
}

/// `host remove`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostRemove {
    /// The host, by name.
    pub host: String,
}

/// The host after the change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostChanged {
    /// Its record.
    pub host: Host,
}

impl Rpc for HostLabel {
    const METHOD: &'static str = "admin.host_label";
    type Response = HostChanged;
}

impl Rpc for HostRemove {
    const METHOD: &'static str = "admin.host_remove";
    type Response = HostChanged;
}
