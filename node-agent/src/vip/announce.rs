//! Announcing a VIP when this host takes it over, so that the hosts and switches of its network
//! send its traffic here at once instead of to the old holder's MAC until their caches expire
//! (docs/design/vips.md, "Owner host death"). As keepalived does: for IPv4 a gratuitous ARP
//! *request* (sender and target IP both the VIP, sender MAC the interface's, to broadcast), for
//! IPv6 an unsolicited neighbour advertisement to all nodes (`ff02::1`) with the Override flag,
//! so that a neighbour entry that still names the old holder is replaced; a burst of them on
//! takeover and a second burst a few seconds later ([`Timing`], keepalived's defaults).
//!
//! The frames are pure functions of the interface's MAC and the VIP ([`gratuitous_arp`],
//! [`unsolicited_na`]). The [`Announcer`] sends them on a packet socket (`pnet_datalink`,
//! which needs `CAP_NET_RAW`), each system call on tokio's blocking pool, never on the async
//! runtime's threads.
//!
//! Announcing an address tells the network to send its traffic here: the caller announces only
//! a VIP it holds, and stops an announcement (drops its future) the moment it lets go.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use pnet_datalink::{Channel, DataLinkSender};
use tokio::task::JoinError;
use tokio::time::Instant;

/// The length of a gratuitous ARP frame: Ethernet header (14) and ARP for IPv4 over Ethernet
/// (28). Shorter than Ethernet's 60-byte minimum, like keepalived's and arping's: the driver
/// pads it.
pub const GARP_LEN: usize = 42;

/// The length of an unsolicited neighbour advertisement frame: Ethernet header (14), IPv6
/// header (40), the advertisement (24) and its target link-layer address option (8).
pub const NA_LEN: usize = 86;

const BROADCAST: [u8; 6] = [0xff; 6];
/// `ff02::1` mapped to Ethernet (RFC 2464 section 7).
const ALL_NODES_MAC: [u8; 6] = [0x33, 0x33, 0, 0, 0, 1];
const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
const ETHERTYPE_IPV4: [u8; 2] = [0x08, 0x00];
const ETHERTYPE_ARP: [u8; 2] = [0x08, 0x06];
const ETHERTYPE_IPV6: [u8; 2] = [0x86, 0xdd];
const ICMPV6: u8 = 58;
/// The length of the ICMPv6 part of an advertisement: the IPv6 payload length.
const NA_ICMP_LEN: usize = 32;
const NEIGHBOUR_ADVERTISEMENT: u8 = 136;
/// The advertisement's flags: Router (0x80) and Solicited (0x40) clear, Override (0x20) set.
const FLAG_OVERRIDE: u8 = 0x20;
const OPTION_TARGET_LINK_LAYER_ADDRESS: u8 = 2;
/// A packet socket's send waits at most this long for room in its buffer: an announcement that
/// cannot go out is reported, not waited for.
const SEND_TIMEOUT: Duration = Duration::from_secs(1);

/// Why a VIP could not be announced.
#[derive(Debug, thiserror::Error)]
pub enum AnnounceError {
    /// The address is not one a host can hold (unspecified, loopback, broadcast or multicast).
    #[error("{0} cannot be announced: a VIP must be a unicast address")]
    NotUnicast(IpAddr),
    /// The interface does not exist.
    #[error("interface {0} does not exist on this host")]
    NoInterface(String),
    /// The interface has no Ethernet address (loopback, a tunnel).
    #[error(
        "interface {0} has no Ethernet address: a VIP is announced on an Ethernet interface or \
         bridge such as vmbr0"
    )]
    NotEthernet(String),
    /// The interface is down.
    #[error("interface {0} is down: bring it up (ip link set {0} up) to announce a VIP on it")]
    InterfaceDown(String),
    /// No permission to open a packet socket.
    #[error(
        "cannot open a packet socket on {interface} to announce a VIP: the agent needs \
         CAP_NET_RAW (run it as root, or add CAP_NET_RAW to its unit's AmbientCapabilities \
         and CapabilityBoundingSet)"
    )]
    NoPermission {
        /// The interface.
        interface: String,
        /// The kernel's answer.
        #[source]
        source: io::Error,
    },
    /// The packet socket could not be opened for another reason.
    #[error("cannot open a packet socket on {interface}: {source}")]
    Socket {
        /// The interface.
        interface: String,
        /// The kernel's answer.
        #[source]
        source: io::Error,
    },
    /// The kernel refused a frame.
    #[error("sending the announcement of {address} on {interface} failed: {source}")]
    Send {
        /// The interface.
        interface: String,
        /// The VIP.
        address: IpAddr,
        /// The kernel's answer.
        #[source]
        source: io::Error,
    },
    /// The blocking task that opened the socket or sent a frame did not finish (it panicked,
    /// or the runtime is shutting down).
    #[error("the announcement of {address} on {interface} was cut short: {source}")]
    Task {
        /// The interface.
        interface: String,
        /// The VIP.
        address: IpAddr,
        /// Why the task did not finish.
        #[source]
        source: JoinError,
    },
}

/// The gratuitous ARP that announces `vip` at `mac`: an ARP request to broadcast whose sender
/// and target IP are both `vip`, sender MAC `mac` and target MAC broadcast (as keepalived's
/// `send_gratuitous_arp_immediate`). A request rather than a reply because every host
/// processes a broadcast request, and Linux updates an existing entry from one (RFC 5227's ARP
/// announcement is a request too).
#[must_use]
pub fn gratuitous_arp(mac: [u8; 6], vip: Ipv4Addr) -> [u8; GARP_LEN] {
    let mut frame = [0; GARP_LEN];
    frame[0..6].copy_from_slice(&BROADCAST);
    frame[6..12].copy_from_slice(&mac);
    frame[12..14].copy_from_slice(&ETHERTYPE_ARP);
    // Hardware type Ethernet, protocol IPv4, address lengths 6 and 4, operation request.
    frame[14..16].copy_from_slice(&[0, 1]);
    frame[16..18].copy_from_slice(&ETHERTYPE_IPV4);
    frame[18] = 6;
    frame[19] = 4;
    frame[20..22].copy_from_slice(&[0, 1]);
    frame[22..28].copy_from_slice(&mac);
    frame[28..32].copy_from_slice(&vip.octets());
    frame[32..38].copy_from_slice(&BROADCAST);
    frame[38..42].copy_from_slice(&vip.octets());
    frame
}

/// The unsolicited neighbour advertisement that announces `vip` at `mac` (RFC 4861 section
/// 7.2.6; as keepalived's `ndisc_send_unsolicited_na_immediate`): from `vip` to all nodes
/// (`ff02::1`, Ethernet `33:33:00:00:00:01`), hop limit 255 (receivers drop any other),
/// Override set so that existing entries take the new MAC, Solicited clear (it answers no
/// solicitation, and a multicast advertisement with it set is invalid), Router clear (a VIP is
/// a service address), target `vip`, and the target link-layer address option `mac`.
#[must_use]
pub fn unsolicited_na(mac: [u8; 6], vip: Ipv6Addr) -> [u8; NA_LEN] {
    let mut frame = [0; NA_LEN];
    frame[0..6].copy_from_slice(&ALL_NODES_MAC);
    frame[6..12].copy_from_slice(&mac);
    frame[12..14].copy_from_slice(&ETHERTYPE_IPV6);
    // IPv6: version 6, traffic class and flow label 0, payload length, next header, hop limit.
    frame[14] = 0x60;
    frame[18..20].copy_from_slice(&[0, 32]);
    frame[20] = ICMPV6;
    frame[21] = 255;
    frame[22..38].copy_from_slice(&vip.octets());
    frame[38..54].copy_from_slice(&ALL_NODES.octets());
    // ICMPv6: type, code 0, checksum (below), flags and reserved, target, option.
    frame[54] = NEIGHBOUR_ADVERTISEMENT;
    frame[58] = FLAG_OVERRIDE;
    frame[62..78].copy_from_slice(&vip.octets());
    frame[78] = OPTION_TARGET_LINK_LAYER_ADDRESS;
    frame[79] = 1; // in units of 8 octets
    frame[80..86].copy_from_slice(&mac);
    let mut message = [0; NA_ICMP_LEN];
    message.copy_from_slice(&frame[54..86]);
    let checksum = icmpv6_checksum(vip, ALL_NODES, &message);
    frame[56..58].copy_from_slice(&checksum.to_be_bytes());
    frame
}

/// The frame that announces `vip` at `mac`: [`gratuitous_arp`] or [`unsolicited_na`].
#[must_use]
pub fn announcement(mac: [u8; 6], vip: IpAddr) -> Vec<u8> {
    match vip {
        IpAddr::V4(vip) => gratuitous_arp(mac, vip).to_vec(),
        IpAddr::V6(vip) => unsolicited_na(mac, vip).to_vec(),
    }
}

/// Whether `address` is one a host can hold and announce: not unspecified, loopback,
/// broadcast or multicast.
#[must_use]
pub fn is_announceable(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(a) => {
            !(a.is_unspecified() || a.is_loopback() || a.is_broadcast() || a.is_multicast())
        }
        IpAddr::V6(a) => !(a.is_unspecified() || a.is_loopback() || a.is_multicast()),
    }
}

/// The ICMPv6 checksum (RFC 4443 section 2.3) of `message`, whose checksum field is zero: the
/// one's complement of the one's complement sum of the pseudo-header (RFC 8200 section 8.1:
/// source, destination, upper-layer length, next header) and the message.
fn icmpv6_checksum(source: Ipv6Addr, destination: Ipv6Addr, message: &[u8; NA_ICMP_LEN]) -> u16 {
    let length = (NA_ICMP_LEN as u32).to_be_bytes();
    let next_header = [0, 0, 0, ICMPV6];
    let words = source
        .octets()
        .into_iter()
        .chain(destination.octets())
        .chain(length)
        .chain(next_header)
        .chain(message.iter().copied())
        .collect::<Vec<u8>>();
    // Every part has an even length, so the words pair up exactly; 36 words of at most 0xffff
    // cannot overflow a u32.
    let mut sum: u32 = words
        .chunks_exact(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    // Folded, it fits in 16 bits.
    !(sum as u16)
}

/// When the frames of an announcement go out. The defaults are keepalived's: a burst of 5
/// (`garp_master_repeat`) on takeover and a second one 5 s later (`garp_master_delay`), with
/// the frames of a burst a few milliseconds apart (keepalived sends them back to back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// Frames per burst; at least one is sent.
    pub repeat: u32,
    /// Between two frames of a burst, so that a queue overflowing for an instant in a switch
    /// loses one frame, not the burst.
    pub interval: Duration,
    /// From the takeover to the second burst, for the hosts and switches that missed the first
    /// (a switch port still coming up, a busy host); `None` for no second burst.
    pub second_burst: Option<Duration>,
}

impl Default for Timing {
    fn default() -> Timing {
        Timing {
            repeat: 5,
            interval: Duration::from_millis(5),
            second_burst: Some(Duration::from_secs(5)),
        }
    }
}

impl Timing {
    /// When each frame of one burst goes out, from its start.
    #[must_use]
    pub fn burst(&self) -> Vec<Duration> {
        (0..self.repeat.max(1))
            .map(|i| self.interval.saturating_mul(i))
            .collect()
    }

    /// When each frame of a takeover goes out, from the takeover: the first burst, then the
    /// second one if any.
    #[must_use]
    pub fn takeover(&self) -> Vec<Duration> {
        let burst = self.burst();
        let second = self.second_burst.into_iter().flat_map(|start| {
            burst
                .iter()
                .map(move |offset| start.saturating_add(*offset))
        });
        burst.iter().copied().chain(second).collect()
    }
}

/// Sends VIP announcements on this host's interfaces. Cheap: holds no socket; each burst opens
/// one on its interface (reading the interface's MAC anew, since a bridge's changes with its
/// ports) and closes it when the burst ends.
#[derive(Debug, Clone, Default)]
pub struct Announcer {
    timing: Timing,
}

/// A packet socket on one interface, with the frame it sends. Moved into each blocking task
/// and back, so that a dropped announcement closes the socket when its task ends.
struct Link {
    sender: Box<dyn DataLinkSender>,
    frame: Vec<u8>,
}

/// Opens a packet socket on `interface` and builds the frame announcing `address` from the
/// interface's MAC. Blocking (it lists the interfaces).
fn open(interface: &str, address: IpAddr) -> Result<Link, AnnounceError> {
    let Some(found) = pnet_datalink::interfaces()
        .into_iter()
        .find(|i| i.name == interface)
    else {
        return Err(AnnounceError::NoInterface(interface.to_string()));
    };
    // getifaddrs reports an interface without a hardware address (a tunnel) as all zeros;
    // a group address cannot be a sender.
    let mac = match found.mac {
        Some(mac) if !found.is_loopback() && !mac.is_zero() && !mac.is_multicast() => mac.octets(),
        _ => return Err(AnnounceError::NotEthernet(interface.to_string())),
    };
    if !found.is_up() {
        return Err(AnnounceError::InterfaceDown(interface.to_string()));
    }
    let config = pnet_datalink::Config {
        write_timeout: Some(SEND_TIMEOUT),
        // Only sending: promiscuous mode would make the interface (a bridge, a NIC) take in
        // every frame on its wire for the burst's duration.
        promiscuous: false,
        ..pnet_datalink::Config::default()
    };
    let socket_error = |source: io::Error| {
        let interface = interface.to_string();
        if source.kind() == io::ErrorKind::PermissionDenied {
            AnnounceError::NoPermission { interface, source }
        } else {
            AnnounceError::Socket { interface, source }
        }
    };
    match pnet_datalink::channel(&found, config) {
        // The receiving half is dropped at once: the socket sees the interface's traffic only
        // for the few milliseconds of a burst, and nothing reads it.
        Ok(Channel::Ethernet(sender, _)) => Ok(Link {
            sender,
            frame: announcement(mac, address),
        }),
        Ok(_) => Err(AnnounceError::NotEthernet(interface.to_string())),
        Err(source) => Err(socket_error(source)),
    }
}

/// Sends the link's frame once. Blocking (at most [`SEND_TIMEOUT`]).
fn send(link: &mut Link, interface: &str, address: IpAddr) -> Result<(), AnnounceError> {
    let result = link
        .sender
        .send_to(&link.frame, None)
        .unwrap_or_else(|| Err(io::Error::other("the packet socket sent nothing")));
    result.map_err(|source| {
        if source.kind() == io::ErrorKind::NetworkDown {
            AnnounceError::InterfaceDown(interface.to_string())
        } else {
            AnnounceError::Send {
                interface: interface.to_string(),
                address,
                source,
            }
        }
    })
}

impl Announcer {
    /// An announcer with keepalived's timing ([`Timing::default`]).
    #[must_use]
    pub fn new() -> Announcer {
        Announcer::default()
    }

    /// An announcer with another timing (tests, a site's switches).
    #[must_use]
    pub fn with_timing(timing: Timing) -> Announcer {
        Announcer { timing }
    }

    /// Its timing.
    #[must_use]
    pub fn timing(&self) -> Timing {
        self.timing
    }

    /// Sends one burst announcing `address` on `interface` at the interface's MAC, at the
    /// offsets of [`Timing::burst`]; returns when its last frame is sent. Must run inside a
    /// tokio runtime (with its time driver). Dropping the future sends no further frame (one
    /// already handed to the blocking pool still goes out) and closes the socket.
    ///
    /// # Errors
    /// [`AnnounceError::NotUnicast`] before anything is sent; [`AnnounceError::NoInterface`],
    /// [`AnnounceError::NotEthernet`], [`AnnounceError::InterfaceDown`],
    /// [`AnnounceError::NoPermission`], [`AnnounceError::Socket`] when the socket cannot be
    /// opened; [`AnnounceError::Send`] or [`AnnounceError::InterfaceDown`] for a frame the
    /// kernel refuses (the rest of the burst is not sent); [`AnnounceError::Task`].
    pub async fn announce(&self, interface: &str, address: IpAddr) -> Result<(), AnnounceError> {
        if !is_announceable(address) {
            return Err(AnnounceError::NotUnicast(address));
        }
        let cut_short = |source| AnnounceError::Task {
            interface: interface.to_string(),
            address,
            source,
        };
        let name = interface.to_string();
        let mut link = tokio::task::spawn_blocking(move || open(&name, address))
            .await
            .map_err(cut_short)??;
        let start = Instant::now();
        for offset in self.timing.burst() {
            tokio::time::sleep_until(start + offset).await;
            let name = interface.to_string();
            let (back, sent) = tokio::task::spawn_blocking(move || {
                let sent = send(&mut link, &name, address);
                (link, sent)
            })
            .await
            .map_err(cut_short)?;
            sent?;
            link = back;
        }
        tracing::debug!(%address, interface, frames = self.timing.repeat.max(1), "announced");
        Ok(())
    }

    /// Announces a VIP this host has just taken over: a burst now, and a second one after
    /// [`Timing::second_burst`] (at the offsets of [`Timing::takeover`]); returns when the last
    /// is sent. The caller drops this future the moment it lets go of the VIP, so that the
    /// second burst never announces an address another host may hold by then.
    ///
    /// # Errors
    /// As [`Announcer::announce`]; a first burst that fails is not repeated.
    pub async fn takeover(&self, interface: &str, address: IpAddr) -> Result<(), AnnounceError> {
        let start = Instant::now();
        self.announce(interface, address).await?;
        if let Some(after) = self.timing.second_burst {
            tokio::time::sleep_until(start + after).await;
            self.announce(interface, address).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    const MAC: [u8; 6] = [0x02, 0x5a, 0, 0, 0, 1];

    // The reference frames were built with scapy 2.6.1, an independent implementation:
    // Ether(dst="ff:ff:ff:ff:ff:ff", src=MAC)/ARP(op=1, hwsrc=MAC, psrc=VIP,
    // hwdst="ff:ff:ff:ff:ff:ff", pdst=VIP), and Ether(dst="33:33:00:00:00:01", src=MAC)/
    // IPv6(src=VIP, dst="ff02::1", hlim=255)/ICMPv6ND_NA(R=0, S=0, O=1, tgt=VIP)/
    // ICMPv6NDOptDstLLAddr(lladdr=MAC) (scapy's name for the target link-layer option, type 2).

    #[test]
    fn a_gratuitous_arp_is_a_broadcast_request_from_and_for_the_vip() {
        let frame = gratuitous_arp(MAC, "192.0.2.10".parse().unwrap());
        let reference = hex(concat!(
            "ffffffffffff", // to broadcast
            "025a00000001", // from the interface
            "0806",         // ARP
            "0001080006040001",
            "025a00000001c000020a", // sender: MAC, VIP
            "ffffffffffffc000020a", // target: broadcast, VIP
        ));
        assert_eq!(frame.as_slice(), reference.as_slice());
        assert_eq!(announcement(MAC, "192.0.2.10".parse().unwrap()), reference);
    }

    #[test]
    fn an_unsolicited_na_overrides_from_the_vip_to_all_nodes() {
        let frame = unsolicited_na(MAC, "2001:db8::10".parse().unwrap());
        let reference = hex(concat!(
            "333300000001",
            "025a00000001",
            "86dd",
            "6000000000203aff", // version 6, payload 32, ICMPv6, hop limit 255
            "20010db8000000000000000000000010",
            "ff020000000000000000000000000001",
            "8800f8b2",                         // type 136, code 0, checksum
            "20000000",                         // Override only
            "20010db8000000000000000000000010", // target
            "0201025a00000001",                 // target link-layer address
        ));
        assert_eq!(frame.as_slice(), reference.as_slice());
        assert_eq!(
            announcement(MAC, "2001:db8::10".parse().unwrap()),
            reference
        );
    }

    #[test]
    fn the_checksum_matches_the_reference_for_a_link_local_vip_too() {
        let mac = [0x52, 0x54, 0x00, 0x12, 0x34, 0x56];
        let frame = unsolicited_na(mac, "fe80::5054:ff:fe12:3456".parse().unwrap());
        let reference = hex(concat!(
            "333300000001525400123456",
            "86dd6000000000203aff",
            "fe80000000000000505400fffe123456",
            "ff020000000000000000000000000001",
            "8800cb6820000000",
            "fe80000000000000505400fffe123456",
            "0201525400123456",
        ));
        assert_eq!(frame.as_slice(), reference.as_slice());
    }

    #[test]
    fn a_receiver_verifying_the_checksum_gets_all_ones() {
        // The receiver's check: the sum over the pseudo-header and the message with its
        // checksum in place is 0xffff, i.e. the complement is zero.
        for (vip, mac) in [
            ("2001:db8::10", MAC),
            ("fd00:77::100", [0xfe, 0xff, 0xff, 0xff, 0xff, 0xff]),
            ("fe80::1", [0, 0, 0, 0, 0, 1]),
        ] {
            let vip: Ipv6Addr = vip.parse().unwrap();
            let frame = unsolicited_na(mac, vip);
            let mut message = [0; NA_ICMP_LEN];
            message.copy_from_slice(&frame[54..86]);
            assert_eq!(icmpv6_checksum(vip, ALL_NODES, &message), 0, "{vip}");
        }
    }

    #[test]
    fn only_unicast_addresses_are_announced() {
        for yes in ["10.0.0.1", "192.0.2.255", "2001:db8::1", "fe80::1"] {
            assert!(is_announceable(yes.parse().unwrap()), "{yes}");
        }
        for no in [
            "0.0.0.0",
            "127.0.0.1",
            "255.255.255.255",
            "224.0.0.1",
            "::",
            "::1",
            "ff02::1",
        ] {
            assert!(!is_announceable(no.parse().unwrap()), "{no}");
        }
    }

    #[test]
    fn the_default_timing_is_keepalived_s_five_now_and_five_after_five_seconds() {
        let timing = Timing::default();
        let ms = Duration::from_millis;
        assert_eq!(timing.burst(), [ms(0), ms(5), ms(10), ms(15), ms(20)]);
        assert_eq!(
            timing.takeover(),
            [
                ms(0),
                ms(5),
                ms(10),
                ms(15),
                ms(20),
                ms(5000),
                ms(5005),
                ms(5010),
                ms(5015),
                ms(5020)
            ]
        );
        assert_eq!(Announcer::new().timing(), timing);
    }

    #[test]
    fn a_burst_sends_at_least_one_frame_and_the_second_burst_can_be_off() {
        let timing = Timing {
            repeat: 0,
            interval: Duration::from_millis(5),
            second_burst: None,
        };
        assert_eq!(timing.burst(), [Duration::ZERO]);
        assert_eq!(timing.takeover(), [Duration::ZERO]);
    }

    #[test]
    fn errors_say_what_to_do() {
        let permission = AnnounceError::NoPermission {
            interface: "vmbr0".into(),
            source: io::Error::from(io::ErrorKind::PermissionDenied),
        };
        assert!(
            permission.to_string().contains("CAP_NET_RAW"),
            "{permission}"
        );
        let down = AnnounceError::InterfaceDown("vmbr0".into());
        assert!(down.to_string().contains("ip link set vmbr0 up"), "{down}");
    }
}
