//! The VIP announcer, for real, between two network namespaces the tests make themselves (root:
//! CI runs as root; nothing leaves them, and they are deleted even when a test fails): a "host"
//! whose bridge `vmbr0` (as on PVE) has a veth port, and a "client" on the other end of it. The
//! host announces on `vmbr0`; the client captures what arrives and its kernel shows the effect:
//! a stale neighbour entry that still names the old holder's MAC names the host's afterwards.
//! The host never holds the VIP here, so no kernel sends anything about it on its own: what the
//! client sees and learns comes from the announcer alone.

use crate::netns_support;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use netns_support::{CLIENT_IF, Pair, block_on, neighbour_macs};
use node_agent::vip::announce::{AnnounceError, Announcer, Timing};

/// The MAC of the host's `vmbr0`, set by the test so that it is known without asking.
const HOST_MAC: [u8; 6] = [0x02, 0x5a, 0x0a, 0x00, 0x00, 0x01];
const HOST_MAC_TEXT: &str = "02:5a:0a:00:00:01";
/// The MAC of the VIP's previous holder, in the client's stale neighbour entries.
const OLD_MAC: [u8; 6] = [0x02, 0x5a, 0x0a, 0x00, 0x00, 0x99];
const OLD_MAC_TEXT: &str = "02:5a:0a:00:00:99";
/// How long anything the test waits for may take.
const PATIENCE: Duration = Duration::from_secs(5);

/// The host and the client, `vmbr0` with [`HOST_MAC`].
fn new_pair() -> Pair {
    Pair::new("ann", HOST_MAC_TEXT)
}

/// Gives the client an address in the VIP's network and a stale neighbour entry for the VIP
/// naming the old holder's MAC, which its kernel then holds.
#[track_caller]
fn client_knows_old_holder(pair: &Pair, client_cidr: &str, vip: IpAddr) {
    let mut add = vec!["address", "add", client_cidr, "dev", CLIENT_IF];
    if vip.is_ipv6() {
        add.push("nodad");
    }
    pair.client.ip(&add);
    let vip_text = vip.to_string();
    pair.client.ip(&[
        "neigh",
        "add",
        &vip_text,
        "lladdr",
        OLD_MAC_TEXT,
        "dev",
        CLIENT_IF,
        "nud",
        "stale",
    ]);
    assert_eq!(
        pair.client.run(async || neighbour_mac(vip).await),
        Some(OLD_MAC.to_vec())
    );
}

/// Runs `announce` in the host while the client captures, for at most `window`, the frames
/// `keep` accepts, until `want` have come; what `announce` returned and those frames.
fn announce_and_capture<R: Send>(
    pair: &Pair,
    want: usize,
    window: Duration,
    keep: impl Fn(&[u8]) -> bool + Send,
    announce: impl AsyncFnOnce() -> R + Send,
) -> (R, Vec<Vec<u8>>) {
    std::thread::scope(|s| {
        let (ready, is_ready) = mpsc::channel();
        let capture = s.spawn(move || {
            pair.client
                .enter(move || capture(CLIENT_IF, &ready, want, window, keep))
        });
        is_ready
            .recv_timeout(PATIENCE)
            .expect("the capture is listening");
        let announced = pair.host.run(announce);
        (announced, capture.join().expect("the capture thread"))
    })
}

/// How long `announcing` took, which must succeed.
async fn timed(announcing: impl Future<Output = Result<(), AnnounceError>>) -> Duration {
    let start = Instant::now();
    announcing.await.unwrap();
    start.elapsed()
}

/// Captures on `interface` the frames `keep` accepts, until `want` have come or `window` has
/// passed since it started listening (said on `ready`).
fn capture(
    interface: &str,
    ready: &mpsc::Sender<()>,
    want: usize,
    window: Duration,
    keep: impl Fn(&[u8]) -> bool,
) -> Vec<Vec<u8>> {
    let found = pnet_datalink::interfaces()
        .into_iter()
        .find(|i| i.name == interface)
        .expect("the client's interface");
    let config = pnet_datalink::Config {
        read_timeout: Some(Duration::from_millis(50)),
        ..pnet_datalink::Config::default()
    };
    let pnet_datalink::Channel::Ethernet(_, mut rx) =
        pnet_datalink::channel(&found, config).expect("a capture socket")
    else {
        panic!("not an Ethernet channel");
    };
    ready.send(()).unwrap();
    let deadline = Instant::now() + window;
    let mut frames = Vec::new();
    while frames.len() < want && Instant::now() < deadline {
        match rx.next() {
            Ok(frame) if keep(frame) => frames.push(frame.to_vec()),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(e) => panic!("capture: {e}"),
        }
    }
    frames
}

fn is_garp_for(vip: Ipv4Addr) -> impl Fn(&[u8]) -> bool {
    move |f| f.len() >= 42 && f[12..14] == [0x08, 0x06] && f[28..32] == vip.octets()
}

fn is_na_for(vip: Ipv6Addr) -> impl Fn(&[u8]) -> bool {
    move |f| {
        f.len() >= 86
            && f[12..14] == [0x86, 0xdd]
            && f[20] == 58
            && f[54] == 136
            && f[62..78] == vip.octets()
    }
}

/// The client kernel's neighbour entry for `vip`: its MAC, if there is one.
async fn neighbour_mac(vip: IpAddr) -> Option<Vec<u8>> {
    neighbour_macs(vip).await.into_iter().next()
}

/// Asserts that the client's entry for `vip` comes (boundedly) to name the host's MAC.
#[track_caller]
fn assert_client_moves_to_host(pair: &Pair, vip: IpAddr) {
    assert_eq!(
        pair.client
            .run(async || neighbour_becomes(vip, HOST_MAC).await),
        Some(HOST_MAC.to_vec())
    );
}

/// Waits (boundedly) until the client's entry for `vip` names `mac`; the MAC it names last.
async fn neighbour_becomes(vip: IpAddr, mac: [u8; 6]) -> Option<Vec<u8>> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let now = neighbour_mac(vip).await;
        if now.as_deref() == Some(mac.as_slice()) || Instant::now() >= deadline {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The receiver's check of an ICMPv6 checksum (RFC 4443 2.3): the one's complement sum over
/// the pseudo-header and the message, checksum included, is all ones.
fn icmpv6_checksum_holds(frame: &[u8]) -> bool {
    let (source, destination, message) = (&frame[22..38], &frame[38..54], &frame[54..]);
    let length = u32::try_from(message.len()).unwrap().to_be_bytes();
    let mut bytes = [source, destination, &length, &[0, 0, 0, 58]].concat();
    bytes.extend_from_slice(message);
    if bytes.len() % 2 == 1 {
        bytes.push(0);
    }
    let mut sum: u32 = bytes
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum == 0xffff
}

#[test]
fn a_gratuitous_arp_burst_reaches_the_client_and_moves_its_stale_entry() {
    let pair = new_pair();
    let vip: Ipv4Addr = "10.82.0.100".parse().unwrap();
    client_knows_old_holder(&pair, "10.82.0.2/24", vip.into());

    let announcer = Announcer::new();
    let timing = announcer.timing();
    let (took, frames) = announce_and_capture(&pair, 5, PATIENCE, is_garp_for(vip), async || {
        timed(announcer.announce("vmbr0", vip.into())).await
    });

    // keepalived's burst: five frames, spaced by the interval.
    assert_eq!(frames.len(), 5, "{frames:02x?}");
    assert!(took >= timing.interval * 4, "{took:?}");
    for frame in &frames {
        assert_eq!(frame.len(), 42, "{frame:02x?}");
        assert_eq!(frame[0..6], [0xff; 6], "to broadcast");
        assert_eq!(frame[6..12], HOST_MAC, "from vmbr0's MAC");
        assert_eq!(frame[14..22], [0, 1, 8, 0, 6, 4, 0, 1], "an ARP request");
        assert_eq!(frame[22..28], HOST_MAC, "sender MAC");
        assert_eq!(frame[28..32], vip.octets(), "sender IP");
        assert_eq!(frame[32..38], [0xff; 6], "target MAC, as keepalived");
        assert_eq!(frame[38..42], vip.octets(), "target IP");
    }

    // The kernel updates an existing entry from a gratuitous ARP.
    assert_client_moves_to_host(&pair, vip.into());
}

#[test]
fn an_unsolicited_na_burst_reaches_the_client_and_moves_its_stale_entry() {
    let pair = new_pair();
    let vip: Ipv6Addr = "fd00:82::100".parse().unwrap();
    client_knows_old_holder(&pair, "fd00:82::2/64", vip.into());

    let (announced, frames) =
        announce_and_capture(&pair, 5, PATIENCE, is_na_for(vip), async || {
            Announcer::new().announce("vmbr0", vip.into()).await
        });
    announced.unwrap();

    assert_eq!(frames.len(), 5, "{frames:02x?}");
    let all_nodes: Ipv6Addr = "ff02::1".parse().unwrap();
    for frame in &frames {
        assert_eq!(frame.len(), 86, "{frame:02x?}");
        assert_eq!(frame[0..6], [0x33, 0x33, 0, 0, 0, 1], "to all nodes");
        assert_eq!(frame[6..12], HOST_MAC, "from vmbr0's MAC");
        assert_eq!(frame[14] >> 4, 6, "IPv6");
        assert_eq!(frame[18..20], [0, 32], "payload length");
        assert_eq!(frame[20], 58, "ICMPv6");
        assert_eq!(frame[21], 255, "hop limit");
        assert_eq!(frame[22..38], vip.octets(), "from the VIP");
        assert_eq!(frame[38..54], all_nodes.octets(), "to ff02::1");
        assert_eq!(frame[54..56], [136, 0], "a neighbour advertisement");
        assert!(icmpv6_checksum_holds(frame), "checksum: {frame:02x?}");
        assert_eq!(frame[58..62], [0x20, 0, 0, 0], "Override only");
        assert_eq!(frame[62..78], vip.octets(), "target");
        assert_eq!(frame[78..80], [2, 1], "target link-layer address option");
        assert_eq!(frame[80..86], HOST_MAC, "at vmbr0's MAC");
    }

    // An advertisement with Override replaces the MAC of an existing entry.
    assert_client_moves_to_host(&pair, vip.into());
}

#[test]
fn a_takeover_repeats_the_burst_later_unless_it_is_dropped_first() {
    let pair = new_pair();
    let timing = Timing {
        repeat: 2,
        interval: Duration::from_millis(10),
        second_burst: Some(Duration::from_millis(1000)),
    };
    let announcer = Announcer::with_timing(timing);

    let vip: Ipv4Addr = "10.83.0.100".parse().unwrap();
    let (took, frames) = announce_and_capture(&pair, 4, PATIENCE, is_garp_for(vip), async || {
        timed(announcer.takeover("vmbr0", vip.into())).await
    });
    assert_eq!(frames.len(), 4, "two bursts of two: {frames:02x?}");
    assert!(took >= Duration::from_millis(1000), "{took:?}");

    // Let go between the bursts (the caller drops the future half-way to the second one, the
    // first having taken some 10 ms): the second never goes out, though the runtime lives on
    // past the moment it was due and the capture listens until well after it.
    let vip: Ipv4Addr = "10.83.0.101".parse().unwrap();
    let window = Duration::from_millis(2000);
    let (timed_out, frames) =
        announce_and_capture(&pair, usize::MAX, window, is_garp_for(vip), async || {
            let dropped = tokio::time::timeout(
                Duration::from_millis(500),
                announcer.takeover("vmbr0", vip.into()),
            )
            .await
            .is_err();
            tokio::time::sleep(Duration::from_millis(1000)).await;
            dropped
        });
    assert!(timed_out, "the takeover ended before its second burst");
    assert_eq!(frames.len(), 2, "only the first burst: {frames:02x?}");
}

#[test]
fn what_cannot_be_announced_is_said() {
    let pair = new_pair();
    // A second bridge, left down (the kernels we test on may lack the dummy driver).
    pair.host.ip(&["link", "add", "vmbr1", "type", "bridge"]);
    let vip: IpAddr = "10.84.0.100".parse().unwrap();
    let announcer = Announcer::new();
    pair.host.run(async || {
        let missing = announcer.announce("vmbr9", vip).await.unwrap_err();
        assert!(
            matches!(missing, AnnounceError::NoInterface(ref i) if i == "vmbr9"),
            "{missing}"
        );
        let loopback = announcer.announce("lo", vip).await.unwrap_err();
        assert!(
            matches!(loopback, AnnounceError::NotEthernet(ref i) if i == "lo"),
            "{loopback}"
        );
        let down = announcer.announce("vmbr1", vip).await.unwrap_err();
        assert!(
            matches!(down, AnnounceError::InterfaceDown(ref i) if i == "vmbr1"),
            "{down}"
        );
        assert!(down.to_string().contains("ip link set vmbr1 up"), "{down}");
        let multicast: IpAddr = "224.0.0.18".parse().unwrap();
        let group = announcer.announce("vmbr0", multicast).await.unwrap_err();
        assert!(
            matches!(group, AnnounceError::NotUnicast(a) if a == multicast),
            "{group}"
        );
    });

    // Without CAP_NET_RAW (capabilities are per thread; the runtime's blocking threads are
    // spawned from this one and inherit its sets).
    let refused = pair.host.enter(|| {
        use rustix::thread::{CapabilitySet, capabilities, set_capabilities};
        let mut sets = capabilities(None).unwrap();
        sets.effective.remove(CapabilitySet::NET_RAW);
        sets.permitted.remove(CapabilitySet::NET_RAW);
        set_capabilities(None, sets).unwrap();
        block_on(announcer.announce("vmbr0", vip)).unwrap_err()
    });
    assert!(
        matches!(refused, AnnounceError::NoPermission { ref interface, .. } if interface == "vmbr0"),
        "{refused}"
    );
    assert!(refused.to_string().contains("CAP_NET_RAW"), "{refused}");
}
