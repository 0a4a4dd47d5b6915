//! `GET /nodes/{node}/network`: the node's interfaces (bridges, bonds, NICs, VLANs).

use serde::Deserialize;

use crate::de;

/// One host network interface.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct NetworkInterface {
    /// Name (`vmbr0`, `eno1`).
    #[serde(default)]
    pub iface: String,
    /// `bridge`, `bond`, `eth`, `vlan`, `OVSBridge`, ...
    #[serde(rename = "type", default)]
    pub kind: String,
    /// Up.
    #[serde(default, deserialize_with = "de::opt_bool_lenient")]
    pub active: Option<bool>,
    /// Brought up at boot.
    #[serde(default, deserialize_with = "de::opt_bool_lenient")]
    pub autostart: Option<bool>,
    /// Exists in the kernel (not only in the config).
    #[serde(default, deserialize_with = "de::opt_bool_lenient")]
    pub exists: Option<bool>,
    /// IPv4 method (`static`, `manual`, `dhcp`).
    #[serde(default)]
    pub method: Option<String>,
    /// IPv6 method.
    #[serde(default)]
    pub method6: Option<String>,
    /// IPv4 address.
    #[serde(default)]
    pub address: Option<String>,
    /// IPv4 netmask.
    #[serde(default)]
    pub netmask: Option<String>,
    /// IPv4 CIDR.
    #[serde(default)]
    pub cidr: Option<String>,
    /// IPv4 gateway.
    #[serde(default)]
    pub gateway: Option<String>,
    /// IPv6 address.
    #[serde(default)]
    pub address6: Option<String>,
    /// IPv6 prefix length.
    #[serde(default, deserialize_with = "de::opt_u32_lenient")]
    pub netmask6: Option<u32>,
    /// IPv6 CIDR.
    #[serde(default)]
    pub cidr6: Option<String>,
    /// IPv6 gateway.
    #[serde(default)]
    pub gateway6: Option<String>,
    /// Bridge ports (space-separated).
    #[serde(default)]
    pub bridge_ports: Option<String>,
    /// Bridge is VLAN aware.
    #[serde(default, deserialize_with = "de::opt_bool_lenient")]
    pub bridge_vlan_aware: Option<bool>,
    /// Allowed VLAN ids of a VLAN-aware bridge.
    #[serde(default)]
    pub bridge_vids: Option<String>,
    /// Bond members.
    #[serde(default)]
    pub slaves: Option<String>,
    /// Bond mode.
    #[serde(default)]
    pub bond_mode: Option<String>,
    /// VLAN id.
    #[serde(rename = "vlan-id", default, deserialize_with = "de::opt_u32_lenient")]
    pub vlan_id: Option<u32>,
    /// VLAN parent device.
    #[serde(rename = "vlan-raw-device", default)]
    pub vlan_raw_device: Option<String>,
    /// MTU.
    #[serde(default, deserialize_with = "de::opt_u32_lenient")]
    pub mtu: Option<u32>,
    /// Comments.
    #[serde(default)]
    pub comments: Option<String>,
    /// Address families (`inet`, `inet6`).
    #[serde(default)]
    pub families: Vec<String>,
}

impl NetworkInterface {
    /// Whether this is a Linux or OVS bridge (a place for VM NICs).
    pub fn is_bridge(&self) -> bool {
        self.kind == "bridge" || self.kind == "OVSBridge"
    }
}
