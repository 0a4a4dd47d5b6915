//! The client's ARP prober: every few milliseconds an ARP request "who has the VIP?" on the
//! client's `eth0` (a packet socket, `pnet_datalink`), and every reply recorded with the MAC it
//! gives. Each request of a run of [`PROBE_SLOTS`] comes from its own sender address, so a
//! reply, sent to that address, names the request it answers: two MACs answering one request
//! are two hosts answering for the VIP at the same time. The prober speaks from a MAC that is
//! not the client's, so the client's own kernel ignores the replies and keeps learning the
//! VIP's MAC only from the hosts' announcements, as any client does.

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pnet_datalink::{Channel, Config};

use super::error::BedError;
use super::network::{Addressing, PROBE_SLOTS};
use super::record::Record;
use super::worker::{StopFlag, Worker};

/// The interface the prober speaks on.
const INTERFACE: &str = "eth0";
/// How long a read waits, so that requests go out on time and the stop flag is seen.
const READ_WAIT: Duration = Duration::from_millis(1);
const ARP_LEN: usize = 42;
const BROADCAST: [u8; 6] = [0xff; 6];

/// An ARP request from `mac`/`sender` for `target`, to broadcast.
pub fn arp_request(mac: [u8; 6], sender: Ipv4Addr, target: Ipv4Addr) -> [u8; ARP_LEN] {
    let mut frame = [0; ARP_LEN];
    frame[0..6].copy_from_slice(&BROADCAST);
    frame[6..12].copy_from_slice(&mac);
    frame[12..14].copy_from_slice(&[0x08, 0x06]);
    // Ethernet, IPv4, address lengths 6 and 4, operation 1 (request).
    frame[14..22].copy_from_slice(&[0, 1, 0x08, 0x00, 6, 4, 0, 1]);
    frame[22..28].copy_from_slice(&mac);
    frame[28..32].copy_from_slice(&sender.octets());
    // Target MAC unknown: zeros.
    frame[38..42].copy_from_slice(&target.octets());
    frame
}

/// An ARP reply to `to` saying where `vip` is: the MAC given and the address it was sent to
/// (the request's sender). Anything else (our own requests, announcements, other traffic) is
/// `None`.
pub fn arp_reply(frame: &[u8], to: [u8; 6], vip: Ipv4Addr) -> Option<([u8; 6], Ipv4Addr)> {
    if frame.len() < ARP_LEN
        || frame[0..6] != to
        || frame[12..14] != [0x08, 0x06]
        || frame[20..22] != [0, 2]
        || frame[28..32] != vip.octets()
    {
        return None;
    }
    let mut mac = [0; 6];
    mac.copy_from_slice(&frame[22..28]);
    let target = Ipv4Addr::new(frame[38], frame[39], frame[40], frame[41]);
    Some((mac, target))
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_names_the_mac_and_the_request_it_answers_and_nothing_else_is_one() {
        let me = [2, 0, 0, 0, 0, 0xfe];
        let host = [2, 0, 0, 0, 0, 1];
        let vip = Ipv4Addr::new(10, 9, 0, 100);
        let from = Ipv4Addr::new(10, 9, 0, 203);
        let request = arp_request(me, from, vip);
        assert_eq!(arp_reply(&request, me, vip), None, "our own request");
        // The reply: to us, operation 2, sender = the host's MAC and the VIP, target = us.
        let mut reply = [0u8; ARP_LEN];
        reply[0..6].copy_from_slice(&me);
        reply[6..12].copy_from_slice(&host);
        reply[12..14].copy_from_slice(&[0x08, 0x06]);
        reply[14..22].copy_from_slice(&[0, 1, 0x08, 0x00, 6, 4, 0, 2]);
        reply[22..28].copy_from_slice(&host);
        reply[28..32].copy_from_slice(&vip.octets());
        reply[32..38].copy_from_slice(&me);
        reply[38..42].copy_from_slice(&from.octets());
        assert_eq!(arp_reply(&reply, me, vip), Some((host, from)));
        assert_eq!(arp_reply(&reply, host, vip), None, "to someone else");
        assert_eq!(arp_reply(&reply[..41], me, vip), None, "short");
    }
}
