//! The holder sampler for a VIP that something other than pvefleet holds (keepalived): every
//! few milliseconds, whether each host has the VIP on any of its interfaces, whoever added it.
//! The testbed's own [`sampler`](crate::vip_bed::sampler) counts only addresses carrying pvefleet's
//! marker, which keepalived's addresses do not carry.
//!
//! One thread keeps every host's namespace open and, for each sample, moves into each in turn
//! and lists its addresses (`getifaddrs`, through `pnet_datalink`: its netlink socket belongs
//! to the namespace the thread is in), so one sample covers every host within about a
//! millisecond, as the pvefleet sampler's does.

use std::fs::File;
use std::net::IpAddr;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::thread::{LinkNameSpaceType, move_into_link_name_space};

use crate::vip_bed::error::{BedError, io};
use crate::vip_bed::record::Record;
use crate::vip_bed::worker::{StopFlag, Worker};

/// The interface every host of the testbed has: a listing without it is a failed listing
/// (`getifaddrs` gives an empty list on error).
const BRIDGE: &str = "vmbr0";

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
    Worker::spawn(home, "vip-any-sampler", move |stop| {
        run(&hosts, vip, &record, every, &stop)
    })
}

fn run(
    hosts: &[String],
    vip: IpAddr,
    record: &Record,
    every: Duration,
    stop: &StopFlag,
) -> Result<(), BedError> {
    let files = hosts
        .iter()
        .map(|h| File::open(format!("/run/netns/{h}")).map_err(io(format!("open netns {h}"))))
        .collect::<Result<Vec<File>, BedError>>()?;
    let mut next = Instant::now();
    while !stop.stopped() {
        let at = record.now();
        let mut holding = 0u64;
        for (i, (file, host)) in files.iter().zip(hosts).enumerate() {
            move_into_link_name_space(file.as_fd(), Some(LinkNameSpaceType::Network)).map_err(
                |e| BedError::Enter {
                    netns: host.clone(),
                    source: e.into(),
                },
            )?;
            let interfaces = pnet_datalink::interfaces();
            if !interfaces.iter().any(|i| i.name == BRIDGE) {
                return Err(BedError::NoSuch(format!(
                    "listing the addresses of {host} failed (no {BRIDGE} in it)"
                )));
            }
            if interfaces
                .iter()
                .flat_map(|i| &i.ips)
                .any(|net| net.ip() == vip)
            {
                holding |= 1 << i;
            }
        }
        record.round(at, holding);
        // As the pvefleet sampler's ticker: after a stall, carry on from now.
        next = (next + every).max(Instant::now());
        if let Some(rest) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(rest);
        }
    }
    Ok(())
}
