//! What a testbed is made of and how often its probes look (both beds: pvefleet's and
//! keepalived's).

use std::time::Duration;

/// How a testbed is laid out and how often it looks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BedOptions {
    /// Host namespaces (at least 3).
    pub hosts: usize,
    /// Coordinators, one in each of the first hosts (3 or 5, at most `hosts`).
    pub coordinators: usize,
    /// The network is `10.SUBNET.0.0/24`.
    pub subnet: u8,
    /// The members' QUIC port, on their host's address.
    pub member_port: u16,
    /// The responders' TCP port.
    pub port: u16,
    /// The VIP's name.
    pub vip: String,
    /// One ARP request every this long.
    pub arp_every: Duration,
    /// One TCP probe every this long.
    pub tcp_every: Duration,
    /// A TCP probe is given up after this long.
    pub tcp_timeout: Duration,
    /// One holder sample every this long.
    pub sample_every: Duration,
    /// How long a fault's effect (or a restore) may take to settle: generous, the machines
    /// are noisy and this is no timing check.
    pub settle: Duration,
    /// How long starting the fleet may take.
    pub start: Duration,
}

impl Default for BedOptions {
    fn default() -> BedOptions {
        BedOptions {
            hosts: 4,
            coordinators: 3,
            subnet: 61,
            member_port: 7400,
            port: 8080,
            vip: "web".into(),
            arp_every: Duration::from_millis(5),
            tcp_every: Duration::from_millis(10),
            tcp_timeout: Duration::from_millis(50),
            sample_every: Duration::from_millis(5),
            settle: Duration::from_secs(20),
            start: Duration::from_secs(120),
        }
    }
}
