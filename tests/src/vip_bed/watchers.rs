//! The client's view of a bed's VIP, the same for both beds (pvefleet's and keepalived's): an
//! ARP probe and a TCP probe from the client namespace, and a sampler of which hosts hold the
//! address (each bed brings its own: pvefleet's marks its addresses, keepalived's does not).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use super::arp_probe;
use super::error::BedError;
use super::network::Network;
use super::options::BedOptions;
use super::record::Record;
use super::tcp_probe;
use super::worker::Worker;

/// Starts a holder sampler in the client namespace over the host namespaces.
pub(crate) type SamplerSpawn =
    fn(&str, Vec<String>, IpAddr, Arc<Record>, Duration) -> Result<Worker, BedError>;

/// Starts the probes and `sampler` on `network`, recording into `record`. A worker started
/// before a later one failed is stopped as it drops.
pub(crate) fn start(
    network: &Network,
    opts: &BedOptions,
    record: &Arc<Record>,
    sampler: SamplerSpawn,
) -> Result<Vec<Worker>, BedError> {
    let client = network.client.name().to_string();
    let addressing = network.addressing();
    let vip = addressing.vip();
    let arp = arp_probe::spawn(&client, addressing, Arc::clone(record), opts.arp_every)?;
    let tcp = tcp_probe::spawn(
        &client,
        SocketAddr::from((vip, opts.port)),
        Arc::clone(record),
        opts.tcp_every,
        opts.tcp_timeout,
    )?;
    let hosts = network
        .hosts
        .iter()
        .map(|h| h.netns.name().to_string())
        .collect();
    let holders = sampler(
        &client,
        hosts,
        IpAddr::V4(vip),
        Arc::clone(record),
        opts.sample_every,
    )?;
    Ok(vec![arp, tcp, holders])
}
