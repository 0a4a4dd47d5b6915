//! The testbed's timeline: every ARP request of the prober with the MACs that answered it,
//! every TCP probe with the host that answered, and every holder sample (which hosts had the
//! VIP on `vmbr0`), all timed from the testbed's start on one monotonic clock; and what is
//! read from it: the invariant over a window (most answerers of one ARP request, most holders
//! in one sample) with the outage (the longest time without an answer), and whether exactly
//! one host holds and answers now.
//!
//! A host a fault left unable to act (its agent killed or frozen, the host dead) is
//! *excused*: an address it still has is stale, counted apart from the holders, because the
//! agent cannot remove it; what matters for such a host is that it does not answer, which the
//! ARP requests check. An excuse lifted by a restore lasts until the host is seen without the
//! address.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// How long an ARP request is given to be answered before it counts as unanswered.
const ANSWER_WAIT: Duration = Duration::from_millis(50);
/// How many of the latest samples must agree for a holder to be settled.
const AGREE_ROUNDS: usize = 3;
const AGREE_ARP: usize = 5;
const AGREE_TCP: usize = 3;

/// One ARP request and the answers attributed to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArpProbe {
    /// When it was sent.
    pub sent: Duration,
    /// When each answer came, and the MAC it gave.
    pub answers: Vec<(Duration, [u8; 6])>,
}

/// One TCP probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpProbe {
    /// When the connection was started.
    pub sent: Duration,
    /// When it ended (answered or given up).
    pub done: Duration,
    /// The host that answered, if one did.
    pub answer: Option<usize>,
}

/// One holder sample: which hosts had the VIP, read one after the other in well under a
/// millisecond.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Round {
    /// When the reading started.
    pub at: Duration,
    /// The hosts holding it (bit `i`: host `i`), excused hosts left out.
    pub holders: u64,
    /// The excused hosts that still had the address.
    pub stale: u64,
}

/// Whether a host's address counts as held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Excuse {
    /// It counts.
    None,
    /// The host cannot act (agent killed or frozen, host dead): an address is stale.
    Yes,
    /// Restored: stale until the host is seen without the address.
    UntilGone,
}

#[derive(Debug)]
struct Inner {
    arp: Vec<ArpProbe>,
    tcp: Vec<TcpProbe>,
    rounds: Vec<Round>,
    excuses: Vec<Excuse>,
    marks: Vec<(Duration, String)>,
}

/// What one window of the timeline shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// The longest time without a TCP answer.
    pub tcp_gap: Duration,
    /// The longest time without an answered ARP request.
    pub arp_gap: Duration,
    /// The most distinct MACs that answered one ARP request.
    pub max_answerers: usize,
    /// The most hosts holding the VIP in one sample (excused hosts left out).
    pub max_holders: usize,
    /// Samples in which an excused host still had the address.
    pub stale_rounds: usize,
    /// ARP requests, TCP probes and holder samples in the window.
    pub probes: (usize, usize, usize),
    /// The hosts that answered a TCP probe.
    pub answered_by: BTreeSet<usize>,
    /// The first moment the invariant was broken, said.
    pub first_violation: Option<String>,
}

/// The timeline of one testbed, shared by its probes, its sampler and its faults.
#[derive(Debug)]
pub struct Record {
    start: Instant,
    names: Vec<String>,
    macs: Vec<[u8; 6]>,
    inner: Mutex<Inner>,
}

fn secs(d: Duration) -> String {
    format!("{:.3} s", d.as_secs_f64())
}

impl Record {
    /// An empty timeline of the hosts named `names` whose `vmbr0` has `macs`.
    pub fn new(names: Vec<String>, macs: Vec<[u8; 6]>) -> Record {
        let excuses = vec![Excuse::None; names.len()];
        Record {
            start: Instant::now(),
            names,
            macs,
            inner: Mutex::new(Inner {
                arp: Vec::new(),
                tcp: Vec::new(),
                rounds: Vec::new(),
                excuses,
                marks: Vec::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The time since the testbed started.
    pub fn now(&self) -> Duration {
        self.start.elapsed()
    }

    /// The hosts' names.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The host named `name`.
    pub fn host_named(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    fn describe(&self, mask: u64) -> String {
        let names: Vec<&str> = (0..self.names.len())
            .filter(|i| mask & (1 << i) != 0)
            .map(|i| self.names[i].as_str())
            .collect();
        if names.is_empty() {
            "nobody".into()
        } else {
            names.join("+")
        }
    }

    fn mac_name(&self, mac: [u8; 6]) -> String {
        match self.macs.iter().position(|m| *m == mac) {
            Some(i) => self.names[i].clone(),
            None => format!("{mac:02x?}"),
        }
    }

    /// Notes an event (a fault, a restore) on the timeline.
    pub fn mark(&self, what: impl Into<String>) -> Duration {
        let at = self.now();
        self.lock().marks.push((at, what.into()));
        at
    }

    /// The events noted, in order.
    pub fn marks(&self) -> Vec<(Duration, String)> {
        self.lock().marks.clone()
    }

    /// Records an ARP request sent at `at`; its number, for its answers.
    pub fn arp_sent(&self, at: Duration) -> usize {
        let mut inner = self.lock();
        inner.arp.push(ArpProbe {
            sent: at,
            answers: Vec::new(),
        });
        inner.arp.len() - 1
    }

    /// Records an answer from `mac` at `at` to ARP request `request`.
    pub fn arp_answer(&self, request: usize, at: Duration, mac: [u8; 6]) {
        if let Some(probe) = self.lock().arp.get_mut(request) {
            probe.answers.push((at, mac));
        }
    }

    /// Records a TCP probe.
    pub fn tcp(&self, probe: TcpProbe) {
        self.lock().tcp.push(probe);
    }

    /// Records a holder sample taken at `at` (bit `i` of `holding`: host `i` had the VIP),
    /// sorting excused hosts' addresses apart and lifting the excuses of restored hosts seen
    /// without it.
    pub fn round(&self, at: Duration, holding: u64) {
        let mut inner = self.lock();
        let mut excused = 0u64;
        for (i, excuse) in inner.excuses.iter_mut().enumerate() {
            let bit = 1u64 << i;
            match *excuse {
                Excuse::None => {}
                Excuse::Yes => excused |= bit,
                Excuse::UntilGone if holding & bit == 0 => *excuse = Excuse::None,
                Excuse::UntilGone => excused |= bit,
            }
        }
        inner.rounds.push(Round {
            at,
            holders: holding & !excused,
            stale: holding & excused,
        });
    }

    /// Sets host `i`'s excuse.
    pub fn excuse(&self, i: usize, excuse: Excuse) {
        if let Some(slot) = self.lock().excuses.get_mut(i) {
            *slot = excuse;
        }
    }

    /// Whether any host is excused.
    pub fn any_excused(&self) -> bool {
        self.lock().excuses.iter().any(|e| *e != Excuse::None)
    }

    /// What the window `[from, to]` shows.
    pub fn stats(&self, from: Duration, to: Duration) -> Stats {
        let inner = self.lock();
        let mut stats = Stats::default();
        let mut violations: Vec<(Duration, String)> = Vec::new();

        // ARP: answerers per request, and the gaps between answered requests.
        let mut last_answer = inner
            .arp
            .iter()
            .filter(|p| p.sent < from)
            .filter_map(|p| p.answers.first().map(|a| a.0))
            .max()
            .unwrap_or(from);
        for probe in inner.arp.iter().filter(|p| p.sent >= from && p.sent <= to) {
            stats.probes.0 += 1;
            let macs: BTreeSet<[u8; 6]> = probe.answers.iter().map(|a| a.1).collect();
            stats.max_answerers = stats.max_answerers.max(macs.len());
            if macs.len() > 1 {
                let who: Vec<String> = macs.iter().map(|m| self.mac_name(*m)).collect();
                violations.push((
                    probe.sent,
                    format!(
                        "ARP request at {} answered by {}",
                        secs(probe.sent),
                        who.join("+")
                    ),
                ));
            }
            if let Some((at, _)) = probe.answers.first() {
                stats.arp_gap = stats.arp_gap.max(at.saturating_sub(last_answer));
                last_answer = last_answer.max(*at);
            }
        }
        stats.arp_gap = stats.arp_gap.max(to.saturating_sub(last_answer));

        // TCP: who answered, and the gaps between answers.
        let mut last_answer = inner
            .tcp
            .iter()
            .filter(|p| p.done < from && p.answer.is_some())
            .map(|p| p.done)
            .max()
            .unwrap_or(from);
        for probe in inner.tcp.iter().filter(|p| p.sent >= from && p.sent <= to) {
            stats.probes.1 += 1;
            if let Some(host) = probe.answer {
                stats.answered_by.insert(host);
                stats.tcp_gap = stats.tcp_gap.max(probe.done.saturating_sub(last_answer));
                last_answer = last_answer.max(probe.done);
            }
        }
        stats.tcp_gap = stats.tcp_gap.max(to.saturating_sub(last_answer));

        // Holders per sample.
        for round in inner.rounds.iter().filter(|r| r.at >= from && r.at <= to) {
            stats.probes.2 += 1;
            let holders = usize::try_from(round.holders.count_ones()).unwrap_or(usize::MAX);
            stats.max_holders = stats.max_holders.max(holders);
            if round.stale != 0 {
                stats.stale_rounds += 1;
            }
            if holders > 1 {
                violations.push((
                    round.at,
                    format!(
                        "at {} {} held the VIP",
                        secs(round.at),
                        self.describe(round.holders)
                    ),
                ));
            }
        }
        stats.first_violation = violations.into_iter().min().map(|v| v.1);
        stats
    }

    /// What changed in the window `[from, to]`, one line per change, in time order: the
    /// events noted, who held the VIP (and stale addresses), who answered ARP, who answered
    /// over TCP.
    pub fn changes(&self, from: Duration, to: Duration) -> Vec<String> {
        let inner = self.lock();
        let mut lines: Vec<(Duration, String)> = Vec::new();
        let within = |at: Duration| at >= from && at <= to;
        for (at, what) in inner.marks.iter().filter(|m| within(m.0)) {
            lines.push((*at, format!("-- {what}")));
        }
        let mut last = None;
        for r in inner.rounds.iter().filter(|r| within(r.at)) {
            if last != Some((r.holders, r.stale)) {
                let stale = if r.stale == 0 {
                    String::new()
                } else {
                    format!(" (stale on {})", self.describe(r.stale))
                };
                lines.push((r.at, format!("held by {}{stale}", self.describe(r.holders))));
                last = Some((r.holders, r.stale));
            }
        }
        let mut last: Option<Vec<String>> = None;
        for p in inner.arp.iter().filter(|p| within(p.sent)) {
            let who: BTreeSet<String> = p.answers.iter().map(|a| self.mac_name(a.1)).collect();
            let who: Vec<String> = who.into_iter().collect();
            if last.as_ref() != Some(&who) {
                let said = if who.is_empty() {
                    "nobody".into()
                } else {
                    who.join("+")
                };
                lines.push((p.sent, format!("ARP answered by {said}")));
                last = Some(who);
            }
        }
        let mut last = None;
        for p in inner.tcp.iter().filter(|p| within(p.sent)) {
            if last != Some(p.answer) {
                let who = p.answer.map_or("nobody", |h| self.names[h].as_str());
                lines.push((p.sent, format!("TCP answered by {who}")));
                last = Some(p.answer);
            }
        }
        lines.sort();
        lines
            .into_iter()
            .map(|(at, what)| format!("{:>9.3} s  {what}", at.as_secs_f64()))
            .collect()
    }

    /// The host that alone holds and answers for the VIP now, judged by what was recorded
    /// since `since`: the latest samples show it alone holding (an excused host's stale
    /// address aside, if `allow_excused`), the latest ARP requests were each answered by its
    /// MAC alone, and the latest TCP probes by it. `Err` says what is seen instead.
    pub fn agreed_holder(&self, since: Duration, allow_excused: bool) -> Result<usize, String> {
        let inner = self.lock();
        let now = self.now();
        let mut why = String::new();
        if !allow_excused && inner.excuses.iter().any(|e| *e != Excuse::None) {
            let _ = write!(why, "a restored host still has a stale address; ");
        }
        let rounds: Vec<&Round> = inner.rounds.iter().filter(|r| r.at >= since).collect();
        let rounds = &rounds[rounds.len().saturating_sub(AGREE_ROUNDS)..];
        // The holder is the one host of the first of the latest samples; every other must
        // show it alone too.
        let holder = rounds
            .first()
            .filter(|r| r.holders.count_ones() == 1)
            .and_then(|r| usize::try_from(r.holders.trailing_zeros()).ok());
        if rounds.len() < AGREE_ROUNDS {
            let _ = write!(why, "too few holder samples yet; ");
        }
        if let Some(r) = rounds
            .iter()
            .find(|r| holder.is_none_or(|h| r.holders != 1 << h))
        {
            let _ = write!(why, "holders: {}; ", self.describe(r.holders));
        }
        let holder = holder.unwrap_or(usize::MAX);
        let mac = self.macs.get(holder).copied();

        let arp: Vec<&ArpProbe> = inner
            .arp
            .iter()
            .filter(|p| p.sent >= since && p.sent + ANSWER_WAIT <= now)
            .collect();
        let arp = &arp[arp.len().saturating_sub(AGREE_ARP)..];
        if arp.len() < AGREE_ARP {
            let _ = write!(why, "too few ARP requests yet; ");
        }
        if let Some(p) = arp.iter().find(|p| {
            let macs: BTreeSet<[u8; 6]> = p.answers.iter().map(|a| a.1).collect();
            macs.len() != 1 || Some(p.answers[0].1) != mac
        }) {
            let who: BTreeSet<String> = p.answers.iter().map(|a| self.mac_name(a.1)).collect();
            let _ = write!(
                why,
                "ARP at {} answered by {:?}; ",
                secs(p.sent),
                who.into_iter().collect::<Vec<_>>()
            );
        }

        let tcp: Vec<&TcpProbe> = inner.tcp.iter().filter(|p| p.sent >= since).collect();
        let tcp = &tcp[tcp.len().saturating_sub(AGREE_TCP)..];
        if tcp.len() < AGREE_TCP {
            let _ = write!(why, "too few TCP probes yet; ");
        }
        if let Some(p) = tcp.iter().find(|p| p.answer != Some(holder)) {
            let who = p.answer.map_or("nobody", |h| self.names[h].as_str());
            let _ = write!(why, "TCP at {} answered by {who}; ", secs(p.sent));
        }
        if why.is_empty() {
            Ok(holder)
        } else {
            Err(why.trim_end_matches("; ").to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn record() -> Record {
        Record::new(vec!["h1".into(), "h2".into()], vec![[1; 6], [2; 6]])
    }

    #[test]
    fn two_macs_answering_one_request_or_two_holders_in_one_sample_break_the_invariant() {
        let r = record();
        let a = r.arp_sent(ms(10));
        r.arp_answer(a, ms(11), [1; 6]);
        let b = r.arp_sent(ms(20));
        r.arp_answer(b, ms(21), [1; 6]);
        r.arp_answer(b, ms(22), [2; 6]);
        r.round(ms(30), 0b11);
        let s = r.stats(ms(0), ms(40));
        assert_eq!((s.max_answerers, s.max_holders), (2, 2));
        assert!(s.first_violation.unwrap().contains("h1+h2"));
    }

    #[test]
    fn an_excused_hosts_address_is_stale_until_it_is_seen_gone() {
        let r = record();
        r.excuse(0, Excuse::Yes);
        r.round(ms(1), 0b11);
        r.excuse(0, Excuse::UntilGone);
        r.round(ms(2), 0b11);
        r.round(ms(3), 0b10);
        r.round(ms(4), 0b11);
        let s = r.stats(ms(0), ms(5));
        assert_eq!(s.stale_rounds, 2);
        assert_eq!(s.max_holders, 2, "once seen gone, an address counts again");
        assert!(!r.any_excused());
    }

    #[test]
    fn the_outage_is_the_longest_time_without_an_answer() {
        let r = record();
        for (sent, answer) in [(0, Some(0)), (10, None), (20, None), (300, Some(1))] {
            r.tcp(TcpProbe {
                sent: ms(sent),
                done: ms(sent + 1),
                answer,
            });
        }
        let s = r.stats(ms(5), ms(310));
        assert_eq!(s.tcp_gap, ms(300));
        assert_eq!(s.answered_by, BTreeSet::from([1]));
    }
}
