//! What each coordinator member says of its VIP promises, read from its `/metrics` inside its
//! host's namespace (the member's HTTP port listens on that namespace's loopback): whom it
//! vouches for now and whether it sees a split (docs/design/vips.md, "Splits"). For the
//! record, so a round shows whether the split it means to provoke did form.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use super::VipBed;
use super::error::{BedError, io};
use super::netns::spawn_in;

/// One member's view of one VIP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemberPromise {
    /// The member's index.
    pub member: usize,
    /// The host id it vouches for (`None`: nobody).
    pub holder: Option<u64>,
    /// The epoch of that promise.
    pub epoch: u64,
    /// Whether it reports a split.
    pub split: bool,
}

/// The value of `name{vip="VIP"}` in an OpenMetrics text.
fn gauge(text: &str, name: &str, vip: &str) -> Option<u64> {
    let key = format!("{name}{{vip=\"{vip}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&key))
        .and_then(|v| v.trim().parse().ok())
}

fn get(addr: &str) -> Result<String, BedError> {
    let mut stream = TcpStream::connect(addr).map_err(io(format!("connect {addr}")))?;
    let timeout = Some(Duration::from_secs(2));
    stream
        .set_read_timeout(timeout)
        .map_err(io("set a read timeout"))?;
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .map_err(io(format!("ask {addr}")))?;
    let mut body = String::new();
    stream
        .read_to_string(&mut body)
        .map_err(io(format!("read {addr}")))?;
    Ok(body)
}

impl VipBed {
    /// Every running member's promise for the testbed's VIP (a member that does not answer
    /// is left out).
    pub fn member_promises(&self) -> Vec<MemberPromise> {
        let vip = self.opts.vip.clone();
        (0..self.opts.coordinators)
            .filter_map(|m| {
                let addr = self.lab.members().get(m)?.http.clone()?;
                let netns = self.network.hosts.get(m)?.netns.name().to_string();
                let text = spawn_in(&netns, "metrics", move || get(&addr))
                    .ok()?
                    .join()
                    .ok()?
                    .ok()?;
                let holder = gauge(&text, "pvefleet_vip_promise_holder", &vip)?;
                Some(MemberPromise {
                    member: m,
                    holder: (holder != 0).then_some(holder),
                    epoch: gauge(&text, "pvefleet_vip_promise_epoch", &vip).unwrap_or(0),
                    split: gauge(&text, "pvefleet_vip_split", &vip) == Some(1),
                })
            })
            .collect()
    }

    /// [`VipBed::member_promises`] in one line, host names for ids.
    pub fn describe_promises(&self) -> String {
        let name_of = |id: u64| {
            self.lab
                .agents()
                .iter()
                .position(|a| a.node_id == id)
                .map_or_else(|| format!("host {id}"), |i| self.name(i).to_string())
        };
        let all: Vec<String> = self
            .member_promises()
            .iter()
            .map(|p| {
                let whom = p.holder.map_or_else(
                    || "nobody".to_string(),
                    |h| format!("{}@{}", name_of(h), p.epoch),
                );
                let split = if p.split { " (split)" } else { "" };
                format!("coordinator {} vouches for {whom}{split}", p.member + 1)
            })
            .collect();
        all.join(", ")
    }
}
