//! A slow link: every UDP packet between one host and the others held for a while before it
//! goes on, in both directions, as `tc qdisc add dev eth0 root netem delay D` on the host's
//! link would. The kernels this runs on may lack `sch_netem` (and nftables' own `queue`), so
//! the packets go through an NFQUEUE instead: an `iptables` rule in the host's namespace
//! (iptables-nft's compatibility target) queues them, and a thread of the lab, moved into
//! that namespace, holds each for the delay and then lets it through. `--queue-bypass` lets
//! packets pass untouched whenever no thread listens, so ending the delay never cuts the
//! link.
//!
//! ```text
//!  host namespace: vmbr0 ─ mangle POSTROUTING/PREROUTING: UDP to/from 10.213.0.0/24
//!                          ─▶ NFQUEUE n ─▶ lab thread: held D, then ACCEPT (in order)
//! ```
//!
//! Only packets on the host's `vmbr0` between host addresses are delayed: a host's own
//! traffic (loopback: its agent and its member, its PVE API) and the runner's admin calls
//! (from the bridge's address, outside the hosts' /24 range of partitions) are not.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nfq::{Queue, Verdict};

use crate::error::LabError;
use crate::netns::{blocking_command_in, enter};

/// How long the thread sleeps when nothing is queued nor due (the delay's resolution).
const IDLE: Duration = Duration::from_millis(1);
/// How many packets the kernel queues before it drops (a slow link is not a lossy one).
const QUEUE_MAX: u32 = 65_536;
/// Where Debian puts `iptables` (tried first: a `PATH` without `/usr/sbin`).
const IPTABLES: &str = "/usr/sbin/iptables";

/// The `iptables` rules (table `mangle`) that queue a host's UDP packets to and from `net`,
/// all but those to and from `spared` (the runner's own address).
pub fn rules(queue: u16, net: &str, spared: &str) -> [Vec<String>; 4] {
    let q = queue.to_string();
    let rule = |chain: &str, dir: &str, addr: &str, to: &str, target: &[&str]| -> Vec<String> {
        [
            "-t", "mangle", "-A", chain, dir, "vmbr0", "-p", "udp", addr, to, "-j",
        ]
        .iter()
        .chain(target)
        .map(|s| (*s).to_string())
        .collect()
    };
    let queued = ["NFQUEUE", "--queue-num", q.as_str(), "--queue-bypass"];
    [
        rule("POSTROUTING", "-o", "-d", spared, &["RETURN"]),
        rule("POSTROUTING", "-o", "-d", net, &queued),
        rule("PREROUTING", "-i", "-s", spared, &["RETURN"]),
        rule("PREROUTING", "-i", "-s", net, &queued),
    ]
}

/// A delay on one host's link; it ends (rules removed, held packets let through) when
/// dropped.
#[derive(Debug)]
pub struct LinkDelay {
    netns: String,
    delay: Duration,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<(), LabError>>>,
}

impl LinkDelay {
    /// Delays the UDP packets of the host in namespace `netns` to and from the host network
    /// `net` (`10.213.0.0/24`), but not those of address `spared`, by `delay`, through
    /// NFQUEUE number `queue`.
    ///
    /// # Errors
    /// [`LabError::Enter`] or [`LabError::Spawn`] if the queue cannot be bound in the
    /// namespace, [`LabError::Step`] if `iptables` refuses the rules (nothing stays then).
    pub fn start(
        netns: &str,
        queue: u16,
        delay: Duration,
        net: &str,
        spared: &str,
    ) -> Result<LinkDelay, LabError> {
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (name, stop_t) = (netns.to_string(), Arc::clone(&stop));
        let thread = std::thread::Builder::new()
            .name(format!("link-delay-{queue}"))
            .spawn(move || hold(&name, queue, delay, &stop_t, &ready_tx))
            .map_err(|source| LabError::Spawn {
                what: format!("the link delay of {netns}"),
                source,
            })?;
        let mut this = LinkDelay {
            netns: netns.to_string(),
            delay,
            stop,
            thread: Some(thread),
        };
        // The queue is bound before any packet is sent to it.
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                return Err(this.end_thread().err().unwrap_or_else(|| {
                    LabError::NoSuchPart(format!("the link delay of {netns} ended at once"))
                }));
            }
        }
        for rule in rules(queue, net, spared) {
            if let Err(e) = iptables(netns, &rule) {
                this.remove_rules();
                return Err(e);
            }
        }
        Ok(this)
    }

    /// The namespace and the delay.
    pub fn delays(&self) -> (&str, Duration) {
        (&self.netns, self.delay)
    }

    fn remove_rules(&self) {
        for chain in ["POSTROUTING", "PREROUTING"] {
            let flush = ["-t", "mangle", "-F", chain].map(str::to_string);
            let _ = iptables(&self.netns, &flush);
        }
    }

    fn end_thread(&mut self) -> Result<(), LabError> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(LabError::NoSuchPart(format!(
                "the link delay of {} panicked",
                self.netns
            ))),
            None => Ok(()),
        }
    }
}

impl Drop for LinkDelay {
    fn drop(&mut self) {
        // Rules first: from then on packets bypass the queue; the thread lets the held ones go.
        self.remove_rules();
        let _ = self.end_thread();
    }
}

/// `iptables ARGS` in the namespace `netns`, which must succeed.
fn iptables(netns: &str, args: &[String]) -> Result<(), LabError> {
    let program = if std::path::Path::new(IPTABLES).exists() {
        IPTABLES
    } else {
        "iptables"
    };
    let out = blocking_command_in(netns, program)
        .arg("-w")
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|source| LabError::Spawn {
            what: format!("iptables in {netns} (a link delay needs the iptables package)"),
            source,
        })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(LabError::Step {
            what: format!("iptables {} in {netns}", args.join(" ")),
            status: out.status,
            output: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }
}

/// The thread: binds the queue in the namespace, says so on `ready`, then holds each packet
/// until `delay` after it came and lets it through, in arrival order, until `stop`.
fn hold(
    netns: &str,
    queue_num: u16,
    delay: Duration,
    stop: &AtomicBool,
    ready: &std::sync::mpsc::Sender<Result<(), LabError>>,
) -> Result<(), LabError> {
    let failed = |what: &str| {
        let what = format!("the link delay of {netns}: {what}");
        move |source: std::io::Error| LabError::Spawn { what, source }
    };
    let bound = (|| -> Result<Queue, LabError> {
        enter(netns)?;
        let mut queue = Queue::open().map_err(failed("open an NFQUEUE socket"))?;
        queue
            .bind(queue_num)
            .map_err(failed(&format!("bind queue {queue_num}")))?;
        queue
            .set_queue_max_len(queue_num, QUEUE_MAX)
            .map_err(failed("set the queue's length"))?;
        // Only the metadata: the verdict keeps the packet as it is.
        queue
            .set_copy_range(queue_num, 0)
            .map_err(failed("set the copy range"))?;
        queue.set_nonblocking(true);
        Ok(queue)
    })();
    let mut queue = match bound {
        Ok(q) => {
            let _ = ready.send(Ok(()));
            q
        }
        Err(e) => {
            let text = e.to_string();
            let _ = ready.send(Err(e));
            return Err(LabError::NoSuchPart(text));
        }
    };
    let mut held: VecDeque<(Instant, nfq::Message)> = VecDeque::new();
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        let mut got = false;
        loop {
            match queue.recv() {
                Ok(msg) => {
                    held.push_back((Instant::now() + delay, msg));
                    got = true;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(failed("receive")(e)),
            }
        }
        let now = Instant::now();
        while held.front().is_some_and(|(due, _)| stopping || *due <= now) {
            if let Some((_, mut msg)) = held.pop_front() {
                msg.set_verdict(Verdict::Accept);
                queue.verdict(msg).map_err(failed("let a packet through"))?;
            }
        }
        if stopping {
            // Whatever came between the rules' removal and now went through above.
            let _ = queue.unbind(queue_num);
            return Ok(());
        }
        if !got {
            std::thread::sleep(IDLE);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_directions_of_the_hosts_link_are_queued_and_bypass_when_nobody_listens() {
        let all = rules(7, "10.213.0.0/24", "10.213.0.254").map(|r| r.join(" "));
        assert_eq!(
            all,
            [
                "-t mangle -A POSTROUTING -o vmbr0 -p udp -d 10.213.0.254 -j RETURN",
                "-t mangle -A POSTROUTING -o vmbr0 -p udp -d 10.213.0.0/24 -j NFQUEUE \
                 --queue-num 7 --queue-bypass",
                "-t mangle -A PREROUTING -i vmbr0 -p udp -s 10.213.0.254 -j RETURN",
                "-t mangle -A PREROUTING -i vmbr0 -p udp -s 10.213.0.0/24 -j NFQUEUE \
                 --queue-num 7 --queue-bypass",
            ]
        );
    }
}
