//! The testbed's network, all of it inside namespaces it makes (nothing touches the machine's
//! own): a switch namespace with a bridge, hosts each with a veth whose host end `eth0` is a
//! port of the host's bridge `vmbr0`, which carries the host's address (as on a PVE host), and
//! a client namespace on the same switch.
//!
//! ```text
//!   PREFIX-h1: vmbr0 10.S.0.11/24 ─ eth0 ══ h1 ┐
//!   PREFIX-h2: vmbr0 10.S.0.12/24 ─ eth0 ══ h2 ┤
//!   ...                                       ├─ br0 (PREFIX-sw)
//!   PREFIX-cl: eth0 10.S.0.2/24          ══ cl ┘
//!   VIP 10.S.0.100/24 on a host's vmbr0; the ARP prober speaks as 10.S.0.200-249
//! ```
//!
//! Each `vmbr0` gets a fixed MAC naming its host, so a MAC answering ARP says which host
//! answered without asking the host.

use std::net::Ipv4Addr;

use super::error::BedError;
use super::netns::Netns;

/// The most hosts a testbed has (a sample keeps them as bits of a `u64`).
pub const MAX_HOSTS: u8 = 64;

/// How many addresses the ARP prober rotates its requests over (see
/// [`Addressing::probe_ip`]).
pub const PROBE_SLOTS: u8 = 50;

/// The fixed addresses of a testbed network on `10.SUBNET.0.0/24`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Addressing {
    /// The second octet.
    pub subnet: u8,
}

impl Addressing {
    /// The VIP's address (`10.S.0.100`).
    pub fn vip(self) -> Ipv4Addr {
        Ipv4Addr::new(10, self.subnet, 0, 100)
    }

    /// The prefix length of the network.
    pub fn prefix_len(self) -> u8 {
        24
    }

    /// The sender address of the ARP prober's request in `slot` (`10.S.0.200+slot`): each
    /// request of a run of [`PROBE_SLOTS`] has its own, so a reply (sent to it) says which
    /// request it answers.
    pub fn probe_ip(self, slot: u8) -> Ipv4Addr {
        Ipv4Addr::new(10, self.subnet, 0, 200 + slot % PROBE_SLOTS)
    }

    /// The slot of a probe address, if it is one.
    pub fn probe_slot(self, ip: Ipv4Addr) -> Option<u8> {
        let [a, b, c, d] = ip.octets();
        (a == 10 && b == self.subnet && c == 0 && (200..200 + PROBE_SLOTS).contains(&d))
            .then(|| d - 200)
    }

    /// The MAC the ARP prober speaks from: not the client's own, so the client's kernel
    /// ignores the replies and its neighbour cache is left to the VIP's own announcements.
    pub fn probe_mac(self) -> [u8; 6] {
        [0x02, 0x00, 0x0a, self.subnet, 0x00, 0xfe]
    }
}

/// One host namespace.
#[derive(Debug)]
pub struct BedHost {
    /// Its PVE node name (`h1`, `h2`, ...).
    pub name: String,
    /// Its namespace.
    pub netns: Netns,
    /// Its address on `vmbr0`.
    pub address: Ipv4Addr,
    /// The MAC of its `vmbr0`.
    pub mac: [u8; 6],
}

/// The namespaces and their links; every namespace is deleted on drop.
#[derive(Debug)]
pub struct Network {
    /// The hosts, `h1` first.
    pub hosts: Vec<BedHost>,
    /// The client namespace.
    pub client: Netns,
    /// The client's address on its `eth0`.
    pub client_address: Ipv4Addr,
    // Kept for its drop: the switch goes with the testbed.
    _switch: Netns,
    subnet: u8,
}

fn mac_text(mac: [u8; 6]) -> String {
    mac.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

impl Network {
    /// Makes the switch, `hosts` hosts and the client, in namespaces named `PREFIX-sw`,
    /// `PREFIX-h1`.., `PREFIX-cl`, on `10.SUBNET.0.0/24`.
    ///
    /// # Errors
    /// [`BedError::Lab`] (`ip` failed); what was made so far is deleted.
    pub fn create(prefix: &str, hosts: usize, subnet: u8) -> Result<Network, BedError> {
        let count = u8::try_from(hosts)
            .ok()
            .filter(|n| (1..=MAX_HOSTS).contains(n))
            .ok_or_else(|| {
                BedError::NoSuch(format!("{hosts} hosts: 1 to {MAX_HOSTS} are possible"))
            })?;
        let switch = Netns::create(format!("{prefix}-sw"))?;
        switch.ip(&["link", "add", "br0", "type", "bridge"])?;
        switch.ip(&["link", "set", "br0", "up"])?;
        let mut made = Vec::new();
        for i in 1..=count {
            let name = format!("h{i}");
            let netns = Netns::create(format!("{prefix}-{name}"))?;
            let address = Ipv4Addr::new(10, subnet, 0, 10 + i);
            let mac = [0x02, 0x00, 0x0a, subnet, 0x00, i];
            plug(&switch, &name, &netns)?;
            let mac_s = mac_text(mac);
            netns.ip(&["link", "add", "vmbr0", "address", &mac_s, "type", "bridge"])?;
            netns.ip(&["link", "set", "eth0", "master", "vmbr0"])?;
            netns.ip(&["link", "set", "eth0", "up"])?;
            netns.ip(&["link", "set", "vmbr0", "up"])?;
            netns.ip(&["address", "add", &format!("{address}/24"), "dev", "vmbr0"])?;
            made.push(BedHost {
                name,
                netns,
                address,
                mac,
            });
        }
        let client = Netns::create(format!("{prefix}-cl"))?;
        plug(&switch, "cl", &client)?;
        let client_address = Ipv4Addr::new(10, subnet, 0, 2);
        client.ip(&[
            "address",
            "add",
            &format!("{client_address}/24"),
            "dev",
            "eth0",
        ])?;
        client.ip(&["link", "set", "eth0", "up"])?;
        Ok(Network {
            hosts: made,
            client,
            client_address,
            _switch: switch,
            subnet,
        })
    }

    /// The addresses of this network.
    pub fn addressing(&self) -> Addressing {
        Addressing {
            subnet: self.subnet,
        }
    }

    /// The host whose `vmbr0` has `mac`.
    pub fn host_of_mac(&self, mac: [u8; 6]) -> Option<usize> {
        self.hosts.iter().position(|h| h.mac == mac)
    }

    /// The host named `name`.
    pub fn host_named(&self, name: &str) -> Option<usize> {
        self.hosts.iter().position(|h| h.name == name)
    }

    fn host(&self, i: usize) -> Result<&BedHost, BedError> {
        self.hosts
            .get(i)
            .ok_or_else(|| BedError::NoSuch(format!("no host {i}")))
    }

    /// Sets host `i`'s link to the switch (`eth0`) up or down: down, nothing goes in or out.
    ///
    /// # Errors
    /// [`BedError::Lab`] (`ip` failed).
    pub fn set_uplink(&self, i: usize, up: bool) -> Result<(), BedError> {
        let state = if up { "up" } else { "down" };
        Ok(self.host(i)?.netns.ip(&["link", "set", "eth0", state])?)
    }

    /// Sets host `i`'s bridge `vmbr0` (the VIP's interface) up or down.
    ///
    /// # Errors
    /// [`BedError::Lab`] (`ip` failed).
    pub fn set_bridge(&self, i: usize, up: bool) -> Result<(), BedError> {
        let state = if up { "up" } else { "down" };
        Ok(self.host(i)?.netns.ip(&["link", "set", "vmbr0", state])?)
    }
}

/// A veth pair: `port` on the switch's bridge, `eth0` in `ns`.
fn plug(switch: &Netns, port: &str, ns: &Netns) -> Result<(), BedError> {
    switch.ip(&[
        "link",
        "add",
        port,
        "type",
        "veth",
        "peer",
        "name",
        "eth0",
        "netns",
        ns.name(),
    ])?;
    switch.ip(&["link", "set", port, "master", "br0"])?;
    Ok(switch.ip(&["link", "set", port, "up"])?)
}
