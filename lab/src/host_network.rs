//! The scenario runner's hosts each in a network namespace of their own, so that agents hold
//! VIPs for real: an address on the host's `vmbr0`, announced and answered for by the host's
//! kernel, silenced by the agent's gate. The caller's namespace (the runner's private one,
//! see [`crate::scenario`]) is the switch: a bridge with a port per host, one for the VIP
//! prober ([`crate::vip_probe`]), and the caller's own address, from which its admin calls
//! reach the members (never forwarded by the bridge, so never cut by
//! [`crate::partition::Wiring::Bridge`]).
//!
//! ```text
//!  caller's namespace: br0 10.213.0.254/24 ─┬─ h1 ══ eth0 ─ vmbr0 10.213.0.1/24 (PREFIX-h1)
//!                                           ├─ h2 ══ eth0 ─ vmbr0 10.213.0.2/24 (PREFIX-h2)
//!                                           ├─ ...
//!                                           └─ probe ══ probe0 (no address: the prober's)
//! ```
//!
//! Host `N` is `10.213.0.N` ([`crate::partition::Wiring::Bridge`]); its `vmbr0` has a MAC that
//! names it ([`host_mac`]), so an ARP answer says which host gave it. A host powered off has
//! its link down; powered on again it is wiped first, as a boot leaves it: no VIP on its
//! `vmbr0` and an empty nftables ruleset (the agent's gate was in memory). A host reset by its
//! agent's guard is wiped the same way when it boots ([`HostNetwork::wipe`]). Namespaces are
//! named `pvfs-PID-N-hI`, removed when the value drops (processes first: the lab is the
//! caller's to stop); those of a runner that died without removing them are removed by the
//! next one ([`sweep_stale`]).

use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::error::LabError;
use crate::netns::{Netns, ip};
use crate::partition::Wiring;

/// The bridge of the caller's namespace.
pub const BRIDGE: &str = "br0";
/// The interface the VIP prober speaks on (in the caller's namespace).
pub const PROBE_INTERFACE: &str = "probe0";
/// The caller's own address on the bridge.
pub const CALLER_ADDRESS: Ipv4Addr = Ipv4Addr::new(10, 213, 0, 254);
/// The prefix of every namespace a runner makes.
const PREFIX: &str = "pvfs";
/// The most hosts (their addresses end below the caller's).
pub const MAX_HOSTS: usize = 200;

/// The number of the next network in this process.
static NEXT: AtomicU32 = AtomicU32::new(0);

/// The MAC of host `n`'s `vmbr0` (`02:00:0a:d5:00:n`, locally administered).
pub fn host_mac(n: u8) -> [u8; 6] {
    [0x02, 0x00, 0x0a, 0xd5, 0x00, n]
}

fn mac_text(mac: [u8; 6]) -> String {
    mac.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// One host's namespace.
#[derive(Debug)]
pub struct NetHost {
    /// Its PVE node name.
    pub name: String,
    /// Its namespace.
    pub netns: Netns,
    /// Its address on `vmbr0`.
    pub address: Ipv4Addr,
    /// The MAC of its `vmbr0`.
    pub mac: [u8; 6],
}

/// The hosts' namespaces and their links.
#[derive(Debug)]
pub struct HostNetwork {
    hosts: Vec<NetHost>,
    /// The VIPs' addresses with their prefixes (`10.20.0.10/24`): what a boot wipes.
    vips: Vec<String>,
}

impl HostNetwork {
    /// Makes the bridge, the prober's port and a namespace for each of `names` (host `N` is
    /// `names[N-1]`), in the calling thread's namespace, which must be the caller's own
    /// (private: the interface names are fixed). `vips` are the addresses (with prefixes) the
    /// hosts' agents may hold: a boot wipes them.
    ///
    /// # Errors
    /// [`LabError::Ip`] (not root, no iproute2, interfaces already there); what was made so
    /// far is removed.
    pub fn create(names: &[String], vips: &[String]) -> Result<HostNetwork, LabError> {
        if names.is_empty() || names.len() > MAX_HOSTS {
            return Err(LabError::NoSuchPart(format!(
                "{} hosts: 1 to {MAX_HOSTS} can each have a namespace",
                names.len()
            )));
        }
        sweep_stale();
        let run = format!(
            "{PREFIX}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        ip(&["link", "add", BRIDGE, "type", "bridge"])?;
        let mut net = HostNetwork {
            hosts: Vec::new(),
            vips: vips.to_vec(),
        };
        ip(&["link", "set", BRIDGE, "up"])?;
        ip(&[
            "address",
            "add",
            &format!("{CALLER_ADDRESS}/24"),
            "dev",
            BRIDGE,
        ])?;
        ip(&[
            "link",
            "add",
            "probe",
            "type",
            "veth",
            "peer",
            "name",
            PROBE_INTERFACE,
        ])?;
        ip(&["link", "set", "probe", "master", BRIDGE])?;
        ip(&["link", "set", "probe", "up"])?;
        ip(&["link", "set", PROBE_INTERFACE, "up"])?;
        for (i, name) in names.iter().enumerate() {
            let n = u8::try_from(i + 1).unwrap_or(u8::MAX);
            let netns = Netns::create(format!("{run}-h{n}"))?;
            let IpAddr::V4(address) = Wiring::Bridge.host_address(u32::from(n)) else {
                return Err(LabError::NoSuchPart(format!(
                    "host {n} has no IPv4 address"
                )));
            };
            let mac = host_mac(n);
            let port = format!("h{n}");
            ip(&[
                "link",
                "add",
                &port,
                "type",
                "veth",
                "peer",
                "name",
                "eth0",
                "netns",
                netns.name(),
            ])?;
            ip(&["link", "set", &port, "master", BRIDGE])?;
            ip(&["link", "set", &port, "up"])?;
            netns.ip(&[
                "link",
                "add",
                "vmbr0",
                "address",
                &mac_text(mac),
                "type",
                "bridge",
            ])?;
            netns.ip(&["link", "set", "eth0", "master", "vmbr0"])?;
            netns.ip(&["link", "set", "eth0", "up"])?;
            netns.ip(&["link", "set", "vmbr0", "up"])?;
            netns.ip(&["address", "add", &format!("{address}/24"), "dev", "vmbr0"])?;
            net.hosts.push(NetHost {
                name: name.clone(),
                netns,
                address,
                mac,
            });
        }
        Ok(net)
    }

    /// The hosts, host 1 first.
    pub fn hosts(&self) -> &[NetHost] {
        &self.hosts
    }

    /// The host named `name`.
    pub fn host(&self, name: &str) -> Option<&NetHost> {
        self.hosts.iter().find(|h| h.name == name)
    }

    fn named(&self, name: &str) -> Result<&NetHost, LabError> {
        self.host(name)
            .ok_or_else(|| LabError::NoSuchPart(format!("no host {name} in the network")))
    }

    /// The host whose `vmbr0` has `mac`.
    pub fn host_of_mac(&self, mac: [u8; 6]) -> Option<&str> {
        self.hosts
            .iter()
            .find(|h| h.mac == mac)
            .map(|h| h.name.as_str())
    }

    /// Host `name` loses power: its link goes down (nothing in or out), what it held stays
    /// until [`HostNetwork::power_on`] wipes it.
    ///
    /// # Errors
    /// [`LabError::Ip`].
    pub fn power_off(&self, name: &str) -> Result<(), LabError> {
        self.named(name)?.netns.ip(&["link", "set", "eth0", "down"])
    }

    /// Host `name` boots: [`HostNetwork::wipe`], then its link is up.
    ///
    /// # Errors
    /// [`LabError::Ip`] or [`LabError::Nft`].
    pub fn power_on(&self, name: &str) -> Result<(), LabError> {
        self.wipe(name)?;
        self.named(name)?.netns.ip(&["link", "set", "eth0", "up"])
    }

    /// What a reboot leaves of host `name`'s VIP state: no VIP address on its `vmbr0` (its
    /// own address stays: a coordinator member of a host reset by its agent's guard keeps
    /// running in the lab), an empty nftables ruleset (the agent's gate was in memory).
    ///
    /// # Errors
    /// [`LabError::Nft`].
    pub fn wipe(&self, name: &str) -> Result<(), LabError> {
        let host = self.named(name)?;
        for vip in &self.vips {
            // Not there: nothing to wipe.
            let _ = host.netns.ip(&["address", "del", vip, "dev", "vmbr0"]);
        }
        host.netns.nft("flush ruleset\n")
    }
}

impl Drop for HostNetwork {
    fn drop(&mut self) {
        // The namespaces go with `hosts` (their veth ends with them); the bridge and the
        // prober's pair are the caller's namespace's, which is private and ends with the run,
        // but a test may make two networks in one.
        self.hosts.clear();
        let _ = ip(&["link", "del", "probe"]);
        let _ = ip(&["link", "del", BRIDGE]);
    }
}

/// Removes the namespaces of runners that died without removing them (`pvfs-PID-..` whose
/// process is gone). Best effort.
pub fn sweep_stale() {
    let Ok(entries) = std::fs::read_dir("/run/netns") else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = stale_owner(&name) else {
            continue;
        };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = ip(&["netns", "del", &name]);
        }
    }
}

/// The process that made the namespace `name`, if a runner did.
fn stale_owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?.strip_prefix('-')?;
    rest.split('-').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_namespace_names_the_runner_that_made_it() {
        assert_eq!(stale_owner("pvfs-4242-0-h3"), Some(4242));
        assert_eq!(
            stale_owner("pvf-4242-0-h3"),
            None,
            "the VIP testbed's are its own"
        );
        assert_eq!(stale_owner("pvfs-x-0-h3"), None);
    }

    #[test]
    fn a_hosts_mac_names_it() {
        assert_eq!(mac_text(host_mac(7)), "02:00:0a:d5:00:07");
    }
}
