//! The client's ARP prober: every few milliseconds an ARP request "who has the VIP?" on the
//! client's `eth0` (a packet socket, `pnet_datalink`), and every reply recorded with the MAC it
//! gives. Each request of a run of [`PROBE_SLOTS`] comes from its own sender address, so a
//! reply, sent to that address, names the request it answers: two MACs answering one request
//! are two hosts answering for the VIP at the same time. The prober speaks from a MAC that is
//! not the client's, so the client's own kernel ignores the replies and keeps learning the
//! VIP's MAC only from the hosts' announcements, as any client does.

use std::sync::Arc;
use std::time::{Duration, Instant};

use lab::arp::{arp_reply, arp_request};
use pnet_datalink::{Channel, Config};

use super::error::BedError;
use super::network::{Addressing, PROBE_SLOTS};
use super::record::Record;
use super::worker::{StopFlag, Worker};

/// The interface the prober speaks on.
const INTERFACE: &str = "eth0";
/// How long a read waits, so that requests go out on time and the stop flag is seen.
const READ_WAIT: Duration = Duration::from_millis(1);
/// Starts the prober in the client namespace `netns`, one request every `every`.
///
/// # Errors
/// [`BedError::Io`] if its thread cannot start; a failure to open the socket ends the thread
/// (see [`Worker::check`]).
pub fn spawn(
    netns: &str,
    addressing: Addressing,
    record: Arc<Record>,
    every: Duration,
) -> Result<Worker, BedError> {
    Worker::spawn(netns, "vip-arp-probe", move |stop| {
        run(addressing, &record, every, &stop)
    })
}

fn run(
    addressing: Addressing,
    record: &Record,
    every: Duration,
    stop: &StopFlag,
) -> Result<(), BedError> {
    let io = |what: &str| {
        let what = format!("ARP prober: {what}");
        move |source| BedError::Io { what, source }
    };
    let interface = pnet_datalink::interfaces()
        .into_iter()
        .find(|i| i.name == INTERFACE)
        .ok_or_else(|| BedError::NoSuch(format!("the client has no {INTERFACE}")))?;
    let config = Config {
        read_timeout: Some(READ_WAIT),
        ..Config::default()
    };
    let (mut tx, mut rx) =
        match pnet_datalink::channel(&interface, config).map_err(io("open a packet socket"))? {
            Channel::Ethernet(tx, rx) => (tx, rx),
            _ => return Err(BedError::NoSuch("not an Ethernet channel".into())),
        };
    let (vip, mac) = (addressing.vip(), addressing.probe_mac());
    // The latest request sent from each slot's address.
    let mut slots: Vec<Option<usize>> = vec![None; usize::from(PROBE_SLOTS)];
    let mut n: u8 = 0;
    let mut next = Instant::now();
    while !stop.stopped() {
        let now = Instant::now();
        if now >= next {
            let slot = n % PROBE_SLOTS;
            n = n.wrapping_add(1) % PROBE_SLOTS;
            let frame = arp_request(mac, addressing.probe_ip(slot), vip);
            slots[usize::from(slot)] = Some(record.arp_sent(record.now()));
            if let Some(sent) = tx.send_to(&frame, None) {
                sent.map_err(io("send a request"))?;
            }
            // After a stall (a busy machine), carry on from now rather than catch up in a
            // burst.
            next = (next + every).max(now);
        }
        match rx.next() {
            Ok(frame) => {
                let at = record.now();
                if let Some((answer, to)) = arp_reply(frame, mac, vip)
                    && let Some(slot) = addressing.probe_slot(to)
                    && let Some(request) = slots[usize::from(slot)]
                {
                    record.arp_answer(request, at, answer);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io("receive")(e)),
        }
    }
    Ok(())
}
