//! Who answers for each VIP, as a client on the hosts' network sees it: the scenario runner's
//! ground truth for rules 4 and 7 when its hosts hold VIPs for real
//! ([`crate::host_network`]). Every [`EVERY`] a thread sends, for each VIP, an ARP request
//! "who has the VIP?" on the prober's interface (a packet socket, `pnet_datalink`) and records
//! the MAC of every host that answers it. Each request of a run of [`SLOTS`] comes from its
//! own sender address, so a reply (sent to that address) names the request it answers: two
//! MACs answering one request are two hosts answering for the VIP at the same time. The
//! prober speaks from a MAC no interface has, so no kernel of the lab takes the replies.
//!
//! [`VipProbe::take`] answers, per VIP, the hosts that answered the latest request whose
//! answers are in (`now`) and the most hosts that answered any one request since the previous
//! take (`most`), so a double answer between two samples is not missed.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use pnet_datalink::{Channel, Config};

use crate::arp::{arp_reply, arp_request};
use crate::error::LabError;

/// How often each VIP is asked for.
pub const EVERY: Duration = Duration::from_millis(20);
/// How many sender addresses a VIP's requests rotate over (`.200` to `.249` of its /24).
pub const SLOTS: u8 = 50;
/// How long a read waits, so that requests go out on time and the stop flag is seen.
const READ_WAIT: Duration = Duration::from_millis(2);
/// The MAC the prober speaks from (locally administered, no interface's).
pub const PROBE_MAC: [u8; 6] = [0x02, 0x00, 0x0a, 0xd5, 0x00, 0xfe];

/// A VIP to probe: its name and address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbedVip {
    /// Its name.
    pub name: String,
    /// Its address.
    pub address: Ipv4Addr,
}

impl ProbedVip {
    /// The VIP of a spec's `address` (`10.20.0.10/24`); `None` for one the prober cannot ask
    /// for (not IPv4, or a network smaller than a /24, which has no room for the senders).
    pub fn parse(name: &str, address: &str) -> Option<ProbedVip> {
        let (ip, prefix) = address.split_once('/')?;
        let ip: Ipv4Addr = ip.parse().ok()?;
        let prefix: u8 = prefix.parse().ok()?;
        (prefix <= 24).then(|| ProbedVip {
            name: name.to_string(),
            address: ip,
        })
    }

    /// The sender address of the request in `slot`: `.200+slot` of the VIP's /24.
    fn sender(&self, slot: u8) -> Ipv4Addr {
        let [a, b, c, _] = self.address.octets();
        Ipv4Addr::new(a, b, c, 200 + slot % SLOTS)
    }

    /// The slot of a sender address of this VIP's, if it is one.
    fn slot_of(&self, ip: Ipv4Addr) -> Option<u8> {
        let [a, b, c, d] = ip.octets();
        let [va, vb, vc, _] = self.address.octets();
        ((a, b, c) == (va, vb, vc) && (200..200 + SLOTS).contains(&d)).then(|| d - 200)
    }
}

/// What the prober saw of one VIP.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answers {
    /// The MACs that answered the latest request whose answers are in.
    pub now: BTreeSet<[u8; 6]>,
    /// The most MACs that answered any one request since the previous take.
    pub most: BTreeSet<[u8; 6]>,
    /// Requests sent since the previous take.
    pub asked: u32,
}

#[derive(Debug, Default)]
struct Seen {
    /// Per slot, the MACs answering its latest request.
    slots: Vec<BTreeSet<[u8; 6]>>,
    answers: Answers,
}

type Shared = Arc<Mutex<BTreeMap<String, Seen>>>;

/// A running prober; it stops when dropped.
#[derive(Debug)]
pub struct VipProbe {
    seen: Shared,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<(), LabError>>>,
}

impl VipProbe {
    /// Starts asking for `vips` on `interface` (of the calling thread's namespace).
    ///
    /// # Errors
    /// [`LabError::NoSuchPart`] if the interface does not exist or is no Ethernet,
    /// [`LabError::Spawn`] if the packet socket or the thread cannot be made.
    pub fn start(interface: &str, vips: Vec<ProbedVip>) -> Result<VipProbe, LabError> {
        let iface = pnet_datalink::interfaces()
            .into_iter()
            .find(|i| i.name == interface)
            .ok_or_else(|| LabError::NoSuchPart(format!("no interface {interface} to probe on")))?;
        let config = Config {
            read_timeout: Some(READ_WAIT),
            ..Config::default()
        };
        let spawn = |source| LabError::Spawn {
            what: format!("the VIP prober on {interface}"),
            source,
        };
        let (tx, rx) = match pnet_datalink::channel(&iface, config).map_err(spawn)? {
            Channel::Ethernet(tx, rx) => (tx, rx),
            _ => {
                return Err(LabError::NoSuchPart(format!(
                    "{interface} is no Ethernet interface"
                )));
            }
        };
        let seen: Shared = Arc::new(Mutex::new(
            vips.iter()
                .map(|v| {
                    let seen = Seen {
                        slots: vec![BTreeSet::new(); usize::from(SLOTS)],
                        answers: Answers::default(),
                    };
                    (v.name.clone(), seen)
                })
                .collect(),
        ));
        let stop = Arc::new(AtomicBool::new(false));
        let (seen_t, stop_t) = (Arc::clone(&seen), Arc::clone(&stop));
        let thread = std::thread::Builder::new()
            .name("vip-probe".into())
            .spawn(move || run(tx, rx, &vips, &seen_t, &stop_t))
            .map_err(spawn)?;
        Ok(VipProbe {
            seen,
            stop,
            thread: Some(thread),
        })
    }

    /// Per VIP, what was seen since the previous take (`most` and `asked` start again).
    pub fn take(&self) -> BTreeMap<String, Answers> {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        seen.iter_mut()
            .map(|(name, s)| {
                let out = s.answers.clone();
                s.answers.most.clone_from(&s.answers.now);
                s.answers.asked = 0;
                (name.clone(), out)
            })
            .collect()
    }

    /// Whether the prober still runs (a failed socket ends it).
    pub fn running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }
}

impl Drop for VipProbe {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run(
    mut tx: Box<dyn pnet_datalink::DataLinkSender>,
    mut rx: Box<dyn pnet_datalink::DataLinkReceiver>,
    vips: &[ProbedVip],
    seen: &Shared,
    stop: &AtomicBool,
) -> Result<(), LabError> {
    let failed = |what: &str| {
        let what = format!("the VIP prober: {what}");
        move |source| LabError::Spawn { what, source }
    };
    let taken: BTreeSet<Ipv4Addr> = vips.iter().map(|v| v.address).collect();
    let mut n: u8 = 0;
    let mut next = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= next {
            let slot = n % SLOTS;
            let prev = (slot + SLOTS - 1) % SLOTS;
            n = (n + 1) % SLOTS;
            for vip in vips {
                let sender = vip.sender(slot);
                if taken.contains(&sender) {
                    continue;
                }
                {
                    let mut all = seen.lock().unwrap_or_else(PoisonError::into_inner);
                    if let Some(s) = all.get_mut(&vip.name) {
                        // The previous request's answers are in: the latest word on the VIP.
                        s.answers.now = s.slots[usize::from(prev)].clone();
                        s.slots[usize::from(slot)].clear();
                        s.answers.asked = s.answers.asked.saturating_add(1);
                    }
                }
                if let Some(sent) = tx.send_to(&arp_request(PROBE_MAC, sender, vip.address), None) {
                    sent.map_err(failed("send a request"))?;
                }
            }
            // After a stall (a busy machine), carry on from now rather than catch up.
            next = (next + EVERY).max(now);
        }
        match rx.next() {
            Ok(frame) => {
                for vip in vips {
                    if let Some((mac, to)) = arp_reply(frame, PROBE_MAC, vip.address)
                        && let Some(slot) = vip.slot_of(to)
                    {
                        let mut all = seen.lock().unwrap_or_else(PoisonError::into_inner);
                        if let Some(s) = all.get_mut(&vip.name) {
                            let set = &mut s.slots[usize::from(slot)];
                            set.insert(mac);
                            if set.len() > s.answers.most.len() {
                                s.answers.most = set.clone();
                            }
                        }
                    }
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(failed("receive")(e)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vip_is_asked_for_from_the_top_of_its_own_slash_24() {
        let v = ProbedVip::parse("front", "10.20.0.10/24").unwrap();
        assert_eq!(v.address, Ipv4Addr::new(10, 20, 0, 10));
        assert_eq!(v.sender(0), Ipv4Addr::new(10, 20, 0, 200));
        assert_eq!(v.sender(49), Ipv4Addr::new(10, 20, 0, 249));
        assert_eq!(v.slot_of(Ipv4Addr::new(10, 20, 0, 203)), Some(3));
        assert_eq!(v.slot_of(Ipv4Addr::new(10, 20, 1, 203)), None);
        assert_eq!(v.slot_of(Ipv4Addr::new(10, 20, 0, 250)), None);
        assert!(ProbedVip::parse("x", "10.20.0.10/16").is_some());
        assert_eq!(
            ProbedVip::parse("x", "10.20.0.10/28"),
            None,
            "no room for the senders"
        );
        assert_eq!(ProbedVip::parse("x", "fd00::10/64"), None);
        assert_eq!(ProbedVip::parse("x", "10.20.0.10"), None);
    }
}
