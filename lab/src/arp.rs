//! ARP frames of the VIP probers (the runner's [`crate::vip_probe`] and the VIP testbed's):
//! a request "who has the VIP?" from a prober's own MAC and sender address, and the reply
//! that answers it, naming the MAC that answered and the request's sender address. Pure.

use std::net::Ipv4Addr;

/// The length of an ARP frame on Ethernet (without padding).
pub const ARP_LEN: usize = 42;
/// The broadcast MAC.
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
