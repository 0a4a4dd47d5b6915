//! `GET .../agent/network-get-interfaces`: the guest agent's raw
//! `guest-network-get-interfaces` output wrapped in `{"result": [...]}`, with a helper that
//! picks the addresses a fleet can reach (no loopback, no link-local).

use std::net::IpAddr;

use serde::Deserialize;

use crate::de;

/// One address of a guest interface.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct AgentIpAddress {
    /// `ipv4` or `ipv6`.
    #[serde(rename = "ip-address-type", default)]
    pub ip_address_type: String,
    /// The address.
    #[serde(rename = "ip-address", default)]
    pub ip_address: String,
    /// Prefix length.
    #[serde(default, deserialize_with = "de::opt_u32_lenient")]
    pub prefix: Option<u32>,
}

/// One guest network interface.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct AgentInterface {
    /// Interface name in the guest (`eth0`, `lo`).
    #[serde(default)]
    pub name: String,
    /// MAC address.
    #[serde(rename = "hardware-address", default)]
    pub hardware_address: Option<String>,
    /// Addresses.
    #[serde(rename = "ip-addresses", default)]
    pub ip_addresses: Vec<AgentIpAddress>,
}

/// The answer of `network-get-interfaces`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct AgentInterfaces {
    /// The interfaces.
    #[serde(default)]
    pub result: Vec<AgentInterface>,
}

/// An address a fleet manager can use to reach a guest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsableIp {
    /// Interface name in the guest.
    pub interface: String,
    /// Its MAC, when reported.
    pub mac: Option<String>,
    /// The address.
    pub addr: IpAddr,
    /// Prefix length, when reported.
    pub prefix: Option<u32>,
}

fn is_usable(addr: &IpAddr) -> bool {
    match addr {
        IpAddr::V4(a) => {
            !(a.is_loopback() || a.is_link_local() || a.is_unspecified() || a.is_multicast())
        }
        IpAddr::V6(a) => {
            let link_local = (a.segments()[0] & 0xffc0) == 0xfe80;
            !(a.is_loopback() || a.is_unspecified() || a.is_multicast() || link_local)
        }
    }
}

impl AgentInterfaces {
    /// Addresses other than loopback, link-local, unspecified and multicast, in the order the
    /// agent reported them (IPv4 and IPv6 alike). Unparsable addresses are skipped.
    pub fn usable_ips(&self) -> Vec<UsableIp> {
        let mut out = Vec::new();
        for iface in &self.result {
            for ip in &iface.ip_addresses {
                // Strip an IPv6 zone (`fe80::1%eth0`) before parsing.
                let text = ip.ip_address.split('%').next().unwrap_or_default();
                let Ok(addr) = text.parse::<IpAddr>() else {
                    continue;
                };
                if is_usable(&addr) {
                    out.push(UsableIp {
                        interface: iface.name.clone(),
                        mac: iface.hardware_address.clone(),
                        addr,
                        prefix: ip.prefix,
                    });
                }
            }
        }
        out
    }

    /// The first usable IPv4 address, the one most callers want.
    pub fn first_ipv4(&self) -> Option<std::net::Ipv4Addr> {
        self.usable_ips().into_iter().find_map(|u| match u.addr {
            IpAddr::V4(a) => Some(a),
            IpAddr::V6(_) => None,
        })
    }
}
