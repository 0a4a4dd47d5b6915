//! PVE's own HA resources: `GET /cluster/ha/resources`.

use serde::Deserialize;

use crate::de;

/// One resource of PVE's HA manager (`/etc/pve/ha/resources.cfg`), as
/// `GET /cluster/ha/resources` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct HaResource {
    /// Resource id, `vm:<vmid>` or `ct:<vmid>`.
    #[serde(default, deserialize_with = "de::string_lenient")]
    pub sid: String,
    /// Resource type (`vm`, `ct`).
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    /// Requested state (`started`, `stopped`, `enabled`, `disabled`, `ignored`); absent means
    /// PVE's default, `started`.
    #[serde(default)]
    pub state: Option<String>,
}

impl HaResource {
    /// The requested state, PVE's default `started` when none is configured.
    pub fn requested_state(&self) -> &str {
        self.state.as_deref().unwrap_or("started")
    }

    /// The VMID when this resource is a QEMU VM (`vm:<vmid>`).
    pub fn vm_id(&self) -> Option<u32> {
        let (kind, name) = self.sid.split_once(':')?;
        if kind != "vm" || self.kind.as_deref().is_some_and(|k| k != "vm") {
            return None;
        }
        name.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: serde_json::Value) -> HaResource {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn entries_decode_and_name_their_vm() {
        let r = parse(serde_json::json!({
            "sid": "vm:100", "type": "vm", "state": "stopped", "digest": "ab", "max_restart": 1
        }));
        assert_eq!((r.vm_id(), r.requested_state()), (Some(100), "stopped"));
        let r = parse(serde_json::json!({"sid": "vm:101"}));
        assert_eq!((r.vm_id(), r.requested_state()), (Some(101), "started"));
        assert_eq!(parse(serde_json::json!({"sid": "ct:100"})).vm_id(), None);
        assert_eq!(parse(serde_json::json!({"sid": "vm:x"})).vm_id(), None);
    }
}
