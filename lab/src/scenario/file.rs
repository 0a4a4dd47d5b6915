//! The scenario file: TOML, unknown keys refused, every entry deserialized on its own so a
//! problem names it (`event[3]: unknown field "hots"`); [`super::read`] then has it checked
//! as a whole (`validate`). Pure.
//!
//! ```toml
//! name = "host-power-off"
//! timeout = "90s"
//! [fleet]
//! coordinators = ["pve-a", "pve-b", "pve-c"]
//! [[pve_cluster]]
//! name = "alpha"
//! nodes = ["pve-a", "pve-b", "pve-c"]
//! [[host]]
//! name = "pve-a"
//! [settings.ha]                # optional: the fleet's settings, as `pvefleet settings apply`
//! recovery = "relocate"
//! [[vm]]                       # exactly `pvefleet vm apply -f`'s tables
//! name = "web-1"
//! memory_mib = 512
//! [[event]]
//! at = "5s"
//! action = "power-off"
//! host = "@vm:web-1"
//! [[expect]]
//! vm = "web-1"
//! phase = "running"
//! on_host_not = ["@event[0]"]
//! ```
//!
//! Every key is described in `docs/scenarios.md`.

use std::collections::BTreeMap;

use protocol::fleet::{HostState, VmPhase};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::error::ScenarioError;
use super::model::PveState;

/// The file's top level. The arrays stay TOML values until each entry is read on its own.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFile {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) description: String,
    #[serde(default)]
    pub(crate) timeout: Option<String>,
    #[serde(default)]
    pub(crate) hold: Option<String>,
    #[serde(default)]
    pub(crate) fleet: Option<toml::Value>,
    #[serde(default)]
    pub(crate) pve_cluster: Vec<toml::Value>,
    #[serde(default)]
    pub(crate) host: Vec<toml::Value>,
    #[serde(default)]
    pub(crate) vm: Vec<toml::Value>,
    #[serde(default)]
    pub(crate) pool: Vec<toml::Value>,
    #[serde(default)]
    pub(crate) vmid_range: Vec<toml::Value>,
    #[serde(default)]
    pub(crate) vip: Vec<toml::Value>,
    #[serde(default)]
    pub(crate) settings: Option<toml::Value>,
    #[serde(default)]
    pub(crate) start_on: BTreeMap<String, String>,
    #[serde(default)]
    pub(crate) event: Vec<toml::Value>,
    #[serde(default)]
    pub(crate) expect: Vec<toml::Value>,
}

/// `[fleet]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFleet {
    pub(crate) coordinators: Vec<String>,
    #[serde(default)]
    pub(crate) lease: Option<String>,
    #[serde(default)]
    pub(crate) clients: Option<u32>,
    #[serde(default)]
    pub(crate) boot_after_reset: Option<String>,
}

/// `[[pve_cluster]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCluster {
    pub(crate) name: String,
    pub(crate) nodes: Vec<String>,
    #[serde(default = "yes")]
    pub(crate) shared_storage: bool,
}

fn yes() -> bool {
    true
}

fn default_cpus() -> u32 {
    16
}

fn default_memory_gib() -> u64 {
    64
}

/// `[[host]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawHost {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) pve_cluster: Option<String>,
    #[serde(default = "default_cpus")]
    pub(crate) cpus: u32,
    #[serde(default = "default_memory_gib")]
    pub(crate) memory_gib: u64,
    #[serde(default)]
    pub(crate) labels: BTreeMap<String, String>,
}

/// `[[event]]`: every key any action takes; which ones an action needs is checked after.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawEvent {
    pub(crate) at: String,
    pub(crate) action: String,
    #[serde(default)]
    pub(crate) host: Option<String>,
    #[serde(default)]
    pub(crate) vm: Option<String>,
    #[serde(default)]
    pub(crate) count: Option<u32>,
    #[serde(default)]
    pub(crate) lock: Option<String>,
    #[serde(default)]
    pub(crate) state: Option<String>,
    #[serde(default)]
    pub(crate) peer: Option<String>,
    #[serde(default)]
    pub(crate) loss: Option<u8>,
    #[serde(default)]
    pub(crate) refusal: Option<String>,
    #[serde(default)]
    pub(crate) by: Option<String>,
    #[serde(default)]
    pub(crate) delay: Option<String>,
}

/// `[[expect]]`: every key any expectation takes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawExpect {
    #[serde(default)]
    pub(crate) at: Option<String>,
    #[serde(default)]
    pub(crate) vm: Option<String>,
    #[serde(default)]
    pub(crate) phase: Option<VmPhase>,
    #[serde(default)]
    pub(crate) pve: Option<PveState>,
    #[serde(default)]
    pub(crate) on_host: Option<String>,
    #[serde(default)]
    pub(crate) on_host_not: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) pve_node: Option<String>,
    #[serde(default)]
    pub(crate) recovering: Option<bool>,
    #[serde(default)]
    pub(crate) moved: Option<bool>,
    #[serde(default)]
    pub(crate) host: Option<String>,
    #[serde(default)]
    pub(crate) state: Option<HostState>,
    #[serde(default)]
    pub(crate) min_vms: Option<usize>,
    #[serde(default)]
    pub(crate) max_vms: Option<usize>,
    #[serde(default)]
    pub(crate) event_contains: Option<String>,
    #[serde(default)]
    pub(crate) count_min: Option<usize>,
    #[serde(default)]
    pub(crate) count_max: Option<usize>,
    #[serde(default)]
    pub(crate) before: Option<String>,
    #[serde(default)]
    pub(crate) leader: Option<String>,
    #[serde(default)]
    pub(crate) leader_not: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) vip: Option<String>,
    #[serde(default)]
    pub(crate) holder: Option<String>,
    #[serde(default)]
    pub(crate) held: Option<bool>,
    #[serde(default)]
    pub(crate) during: Option<String>,
}

/// Entry `kind[i]` as `T`, or an error naming it.
pub(crate) fn entry<T: DeserializeOwned>(
    kind: &str,
    i: usize,
    value: toml::Value,
) -> Result<T, ScenarioError> {
    value
        .try_into::<T>()
        .map_err(|e| ScenarioError::invalid(format!("{kind}[{i}]"), e.message().trim()))
}

/// Every entry of an array.
pub(crate) fn entries<T: DeserializeOwned>(
    kind: &str,
    values: Vec<toml::Value>,
) -> Result<Vec<T>, ScenarioError> {
    values
        .into_iter()
        .enumerate()
        .map(|(i, v)| entry(kind, i, v))
        .collect()
}
