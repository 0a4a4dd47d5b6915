//! The holder sampler: every few milliseconds, whether each host has the VIP on its
//! interfaces, read through netlink inside its namespace (`VipAddresses::ours`, the agent's
//! own reading: only addresses carrying pvefleet's marker). One thread holds a netlink socket
//! in every host's namespace (made while the thread was inside it) and reads them one after
//! the other, so one sample covers every host within well under a millisecond and two hosts
//! seen holding in one sample held at nearly the same instant.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use node_agent::vip::addresses::VipAddresses;

use super::error::{BedError, io};
use super::netns::enter;
use super::record::Record;
use super::worker::{StopFlag, Worker};

/// Starts the sampler over the namespaces `hosts` (named; host `i` is bit `i` of a sample),
/// one sample every `every`. Its thread starts in `home` (any namespace of the testbed).
///
/// # Errors
/// [`BedError::Io`] if its thread cannot start; a failure to read a host ends the thread (see
/// [`Worker::check`]).
pub fn spawn(
    home: &str,
    hosts: Vec<String>,
    vip: IpAddr,
    record: Arc<Record>,
    every: Duration,
) -> Result<Worker, BedError> {
    Worker::spawn(home, "vip-holder-sampler", move |stop| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(io("the sampler's runtime"))?;
        rt.block_on(run(&hosts, vip, &record, every, &stop))
    })
}

async fn run(
    hosts: &[String],
    vip: IpAddr,
    record: &Record,
    every: Duration,
    stop: &StopFlag,
) -> Result<(), BedError> {
    let mut sockets = Vec::with_capacity(hosts.len());
    for host in hosts {
        enter(host)?;
        let vips = VipAddresses::connect().map_err(|source| BedError::Addresses {
            host: host.clone(),
            source,
        })?;
        sockets.push(vips);
    }
    let mut ticker = tokio::time::interval(every);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while !stop.stopped() {
        ticker.tick().await;
        let at = record.now();
        let mut holding = 0u64;
        for (i, (vips, host)) in sockets.iter().zip(hosts).enumerate() {
            let held = vips.ours().await.map_err(|source| BedError::Addresses {
                host: host.clone(),
                source,
            })?;
            if held.iter().any(|h| h.address == vip) {
                holding |= 1 << i;
            }
        }
        record.round(at, holding);
    }
    Ok(())
}
