//! The client's TCP prober: every few milliseconds a connection to the VIP's port, with a
//! short timeout, reading the name of the host that answered (each host's responder writes
//! its own). It goes through the client's kernel, neighbour cache included, so it sees the
//! VIP as a client does: moved only once the new holder's announcement (or the cache's own
//! expiry) points the client at it.

use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::error::BedError;
use super::record::{Record, TcpProbe};
use super::worker::{StopFlag, Worker};

/// Starts the prober in the client namespace `netns`: one connection to `target` every
/// `every`, each given up after `timeout`.
///
/// # Errors
/// [`BedError::Io`] if its thread cannot start.
pub fn spawn(
    netns: &str,
    target: SocketAddr,
    record: Arc<Record>,
    every: Duration,
    timeout: Duration,
) -> Result<Worker, BedError> {
    Worker::spawn(netns, "vip-tcp-probe", move |stop| {
        run(target, &record, every, timeout, &stop);
        Ok(())
    })
}

/// The name the host at `target` answers with, if one answers within `timeout`.
pub fn ask(target: SocketAddr, timeout: Duration) -> Option<String> {
    let stream = TcpStream::connect_timeout(&target, timeout).ok()?;
    stream.set_read_timeout(Some(timeout)).ok()?;
    let mut name = String::new();
    // The responder writes its name and closes.
    stream.take(64).read_to_string(&mut name).ok()?;
    let name = name.trim();
    (!name.is_empty()).then(|| name.to_string())
}

fn run(target: SocketAddr, record: &Record, every: Duration, timeout: Duration, stop: &StopFlag) {
    while !stop.stopped() {
        let started = Instant::now();
        let sent = record.now();
        let answer = ask(target, timeout).and_then(|name| record.host_named(&name));
        record.tcp(TcpProbe {
            sent,
            done: record.now(),
            answer,
        });
        if let Some(rest) = every.checked_sub(started.elapsed()) {
            std::thread::sleep(rest);
        }
    }
}
