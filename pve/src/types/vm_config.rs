//! VM configuration answers: `GET .../config` (also a snapshot's config) and `GET .../pending`.
//!
//! A config is an open set of keys (84 settable, indexed ones like `net0`, read-only ones like
//! `digest`), so [`VmConfig`] keeps the raw map and offers typed accessors that parse the
//! property strings on demand and tolerate PVE's output types (`memory` is a string since
//! qemu-server 8.0.8, counts may be strings, flags 0/1).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::de;
use crate::error::PveError;
use crate::props::{self, AgentConfig, BootOrder, Disk, DiskBus, IpConfig, NetDevice};

/// A VM configuration: key → value as PVE sent it.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(transparent)]
pub struct VmConfig(pub BTreeMap<String, Value>);

fn value_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(if *b { "1" } else { "0" }.to_string()),
        _ => None,
    }
}

fn parsed<T: std::str::FromStr<Err = PveError>>(key: &str, text: &str) -> Result<T, PveError> {
    text.parse().map_err(|e| props::kv::within(key, e))
}

impl VmConfig {
    /// The raw value of `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// The value of `key` as text (numbers and booleans rendered as PVE writes them).
    pub fn get_str(&self, key: &str) -> Option<String> {
        self.0.get(key).and_then(value_text)
    }

    fn get_u64(&self, key: &str) -> Result<Option<u64>, PveError> {
        let Some(text) = self.get_str(key) else {
            return Ok(None);
        };
        let text = text.trim();
        if text.is_empty() {
            return Ok(None);
        }
        text.parse().map(Some).map_err(|_| PveError::Decode {
            what: format!("config key {key}"),
            reason: format!("'{text}' is not a non-negative integer"),
        })
    }

    fn get_bool(&self, key: &str) -> bool {
        matches!(
            self.get_str(key).as_deref().map(str::trim),
            Some("1" | "true" | "yes" | "on")
        )
    }

    /// The SHA-1 `digest` to pass back for optimistic concurrency.
    pub fn digest(&self) -> Option<String> {
        self.get_str("digest")
    }

    /// The VM name.
    pub fn name(&self) -> Option<String> {
        self.get_str("name")
    }

    /// Memory in MiB: `memory` is `"2048"`, `2048` or `current=2048`; `None` when unset
    /// (PVE's default is 512).
    pub fn memory_mib(&self) -> Result<Option<u64>, PveError> {
        let Some(text) = self.get_str("memory") else {
            return Ok(None);
        };
        let bad = || PveError::Decode {
            what: "config key memory".into(),
            reason: format!("'{text}' is not [current=]<MiB>"),
        };
        for (key, value) in props::kv::split("memory", &text).map_err(|_| bad())? {
            if matches!(key, None | Some("current")) {
                return value.parse().map(Some).map_err(|_| bad());
            }
        }
        Err(bad())
    }

    /// Cores per socket (`None` = PVE default 1).
    pub fn cores(&self) -> Result<Option<u64>, PveError> {
        self.get_u64("cores")
    }

    /// Sockets (`None` = PVE default 1).
    pub fn sockets(&self) -> Result<Option<u64>, PveError> {
        self.get_u64("sockets")
    }

    /// Balloon target in MiB (`Some(0)` = ballooning disabled).
    pub fn balloon(&self) -> Result<Option<u64>, PveError> {
        self.get_u64("balloon")
    }

    /// `net<n>`, parsed.
    pub fn net(&self, n: u8) -> Option<Result<NetDevice, PveError>> {
        let key = format!("net{n}");
        self.get_str(&key).map(|t| parsed(&key, &t))
    }

    /// Every `net<n>` present, parsed, by index.
    pub fn nets(&self) -> Vec<(u8, Result<NetDevice, PveError>)> {
        (0..=31)
            .filter_map(|n| self.net(n).map(|r| (n, r)))
            .collect()
    }

    /// A drive (`scsi0`, `virtio1`, ...), parsed.
    pub fn disk(&self, bus: DiskBus, n: u8) -> Option<Result<Disk, PveError>> {
        let key = format!("{}{n}", bus.prefix());
        self.get_str(&key).map(|t| parsed(&key, &t))
    }

    /// Every drive present on every bus, parsed, in bus and index order.
    pub fn disks(&self) -> Vec<(DiskBus, u8, Result<Disk, PveError>)> {
        let mut out = Vec::new();
        for bus in DiskBus::ALL {
            for n in 0..=bus.max_index() {
                if let Some(d) = self.disk(bus, n) {
                    out.push((bus, n, d));
                }
            }
        }
        out
    }

    /// `ipconfig<n>`, parsed.
    pub fn ipconfig(&self, n: u8) -> Option<Result<IpConfig, PveError>> {
        let key = format!("ipconfig{n}");
        self.get_str(&key).map(|t| parsed(&key, &t))
    }

    /// `agent`, parsed.
    pub fn agent(&self) -> Option<Result<AgentConfig, PveError>> {
        self.get_str("agent").map(|t| parsed("agent", &t))
    }

    /// `boot`, parsed.
    pub fn boot(&self) -> Option<Result<BootOrder, PveError>> {
        self.get_str("boot").map(|t| parsed("boot", &t))
    }

    /// The config lock (`clone`, `migrate`, `backup`, ...).
    pub fn lock(&self) -> Option<String> {
        self.get_str("lock").filter(|l| !l.is_empty())
    }

    /// Whether the VM is a template.
    pub fn is_template(&self) -> bool {
        self.get_bool("template")
    }

    /// Whether the VM starts at boot.
    pub fn onboot(&self) -> bool {
        self.get_bool("onboot")
    }

    /// Whether removal is blocked.
    pub fn protection(&self) -> bool {
        self.get_bool("protection")
    }

    /// The tags (empty when unset).
    pub fn tags(&self) -> Result<Vec<String>, PveError> {
        match self.get_str("tags") {
            Some(t) => props::parse_tags(&t),
            None => Ok(Vec::new()),
        }
    }

    /// The description.
    pub fn description(&self) -> Option<String> {
        self.get_str("description")
    }
}

/// One key of `GET .../pending`: current value, pending value, pending deletion.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PendingEntry {
    /// Config key.
    #[serde(default)]
    pub key: String,
    /// Current value.
    #[serde(default, deserialize_with = "de::opt_string_lenient")]
    pub value: Option<String>,
    /// New value, applied at the next start (or hotplug).
    #[serde(default, deserialize_with = "de::opt_string_lenient")]
    pub pending: Option<String>,
    /// 1 = pending deletion, 2 = forced pending deletion.
    #[serde(default, deserialize_with = "de::opt_u32_lenient")]
    pub delete: Option<u32>,
}

impl PendingEntry {
    /// Whether this key has a change waiting (new value or deletion).
    pub fn has_pending_change(&self) -> bool {
        self.pending.is_some() || self.delete.is_some_and(|d| d > 0)
    }
}
