//! Benchmark rounds: one fault played many times, each after a random delay ([`Phase`]), and
//! what the rounds show together. A round's outage is the longest time the client went without
//! an answer from the injection until the restore begins (the fault's own effect: a take-over,
//! or nothing); the restore's own window is kept apart, because keepalived's restored master
//! preempts and pvefleet's does not, which is not the fault's outage.
//!
//! A round whose fault was injected counts in the figures even when it did not play out (no
//! take-over within the testbed's settle time): leaving it out would hide the longest outages.
//! Its gap, measured until its restore began, is then a lower bound.
//!
//! [`pvefleet`] plays the testbed's faults ([`VipBed::exercise`]); keepalived's rounds are
//! played by [`KeepalivedBed`](super::keepalived_bed::KeepalivedBed) and give the same
//! [`RoundOutcome`].

use std::time::Duration;

use super::phase::Phase;
use crate::vip_bed::VipBed;
use crate::vip_bed::faults::Fault;
use crate::vip_bed::record::Stats;

/// What one round showed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoundOutcome {
    /// The delay before the fault.
    pub delay: Duration,
    /// The host the fault hit.
    pub owner: Option<String>,
    /// Who held the VIP once the fault took effect.
    pub taken_by: Option<String>,
    /// Whether the Raft leader ran on the owner's host (pvefleet; `None`: unknown or n/a).
    pub leader_on_owner: Option<bool>,
    /// From the injection until the restore began.
    pub fault: Stats,
    /// From the restore until one host held it again.
    pub restore: Stats,
    /// Whether the fault was injected (its window measured).
    pub injected: bool,
    /// What went wrong (empty: the round played out).
    pub problems: Vec<String>,
}

impl RoundOutcome {
    /// Whether the fault was played and took effect as expected.
    pub fn played(&self) -> bool {
        self.injected && self.problems.is_empty() && self.taken_by.is_some()
    }

    /// The most hosts answering one ARP request, and holding in one sample, over the round.
    pub fn most_at_once(&self) -> (usize, usize) {
        (
            self.fault.max_answerers.max(self.restore.max_answerers),
            self.fault.max_holders.max(self.restore.max_holders),
        )
    }
}

/// Smallest, median and largest of some durations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spread {
    /// How many.
    pub n: usize,
    /// The smallest.
    pub min: Duration,
    /// The median (the mean of the middle two for an even count).
    pub median: Duration,
    /// The largest.
    pub max: Duration,
}

impl Spread {
    /// The spread of `values`; `None` for none.
    pub fn of(mut values: Vec<Duration>) -> Option<Spread> {
        values.sort();
        let n = values.len();
        let (first, last) = (*values.first()?, *values.last()?);
        let median = if n % 2 == 1 {
            values[n / 2]
        } else {
            (values[n / 2 - 1] + values[n / 2]) / 2
        };
        Some(Spread {
            n,
            min: first,
            median,
            max: last,
        })
    }
}

/// The rounds of one fault on one system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Series {
    /// The fault's name.
    pub fault: String,
    /// Every round, in order.
    pub rounds: Vec<RoundOutcome>,
}

impl Series {
    /// The rounds that played out.
    pub fn played(&self) -> impl Iterator<Item = &RoundOutcome> {
        self.rounds.iter().filter(|r| r.played())
    }

    /// The rounds whose fault was injected: those the figures are made of.
    pub fn measured(&self) -> impl Iterator<Item = &RoundOutcome> {
        self.rounds.iter().filter(|r| r.injected)
    }

    /// The TCP outages of the rounds measured (the headline figure).
    pub fn tcp(&self) -> Option<Spread> {
        Spread::of(self.measured().map(|r| r.fault.tcp_gap).collect())
    }

    /// The ARP outages of the rounds measured.
    pub fn arp(&self) -> Option<Spread> {
        Spread::of(self.measured().map(|r| r.fault.arp_gap).collect())
    }

    /// The longest TCP outage of the restores.
    pub fn restore_tcp_max(&self) -> Option<Duration> {
        self.rounds.iter().map(|r| r.restore.tcp_gap).max()
    }

    /// The most hosts answering one ARP request, and holding in one sample, over every round
    /// (played out or not).
    pub fn most_at_once(&self) -> (usize, usize) {
        self.rounds
            .iter()
            .map(RoundOutcome::most_at_once)
            .fold((0, 0), |a, b| (a.0.max(b.0), a.1.max(b.1)))
    }
}

/// Plays `fault` `rounds` times on the pvefleet testbed, each after waiting for one settled
/// holder and then a delay from `phase`. [`VipBed::exercise`] checks the settle again, notes
/// the leader and injects (its own checks take a few tens of milliseconds more, which the
/// random delay spreads as well), waits for the effect, restores and settles.
pub fn pvefleet(bed: &mut VipBed, fault: Fault, rounds: usize, phase: &mut Phase) -> Series {
    Series {
        fault: fault.name().to_string(),
        rounds: (0..rounds)
            .map(|_| pvefleet_round(bed, fault, phase))
            .collect(),
    }
}

fn pvefleet_round(bed: &mut VipBed, fault: Fault, phase: &mut Phase) -> RoundOutcome {
    let mut outcome = RoundOutcome {
        delay: phase.next_delay(),
        ..RoundOutcome::default()
    };
    let since = bed.record.now();
    if let Err(e) = bed.wait_settled("one holder before the round", since, None, false) {
        outcome.problems.push(format!("before the round: {e}"));
        return outcome;
    }
    let leader = bed.leader().ok().map(|m| bed.name(m).to_string());
    std::thread::sleep(outcome.delay);
    let first_mark = bed.record.marks().len();
    let report = bed.exercise(fault);
    let marks = bed.record.marks();
    let new = marks.get(first_mark..).unwrap_or_default();
    let at = |what: String| new.iter().find(|m| m.1.starts_with(&what)).map(|m| m.0);
    let from = at(format!("{fault}: on "));
    let restore = at(format!("{fault}: restore"));
    let settled = at(format!("{fault}: settled"));
    if let (Some(from), Some(restore), Some(settled)) = (from, restore, settled) {
        outcome.fault = bed.record.stats(from, restore);
        outcome.restore = bed.record.stats(restore, settled);
        outcome.injected = !report.problems.iter().any(|p| p.starts_with("injecting"));
    }
    outcome.leader_on_owner = match (&leader, &report.owner) {
        (Some(l), Some(o)) => Some(l == o),
        _ => None,
    };
    outcome.problems.extend(report.problems.iter().cloned());
    if let Some(v) = &report.stats.first_violation {
        outcome.problems.push(format!("INVARIANT BROKEN: {v}"));
    }
    outcome.owner = report.owner;
    outcome.taken_by = report.taken_by;
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        let s = Spread::of(vec![ms(40), ms(10), ms(30), ms(20)]);
        assert_eq!(
            s,
            Some(Spread {
                n: 4,
                min: ms(10),
                median: ms(25),
                max: ms(40)
            })
        );
        assert_eq!(
            Spread::of(vec![ms(3), ms(1), ms(2)]).map(|s| s.median),
            Some(ms(2))
        );
        assert_eq!(Spread::of(Vec::new()), None);
    }

    #[test]
    fn the_figures_are_the_injected_rounds_played_out_or_not() {
        let played = RoundOutcome {
            injected: true,
            taken_by: Some("h2".into()),
            fault: Stats {
                tcp_gap: ms(400),
                ..Stats::default()
            },
            ..RoundOutcome::default()
        };
        let failed = RoundOutcome {
            injected: true,
            problems: vec!["no take-over".into()],
            fault: Stats {
                tcp_gap: ms(20_000),
                ..Stats::default()
            },
            ..RoundOutcome::default()
        };
        let not_injected = RoundOutcome {
            problems: vec!["not settled".into()],
            fault: Stats {
                tcp_gap: ms(9000),
                max_holders: 2,
                ..Stats::default()
            },
            ..RoundOutcome::default()
        };
        let series = Series {
            fault: "x".into(),
            rounds: vec![played, failed, not_injected],
        };
        assert_eq!(series.played().count(), 1);
        assert_eq!(
            series.tcp().map(|s| (s.n, s.min, s.max)),
            Some((2, ms(400), ms(20_000))),
            "a failed round's outage counts, a round never injected does not"
        );
        assert_eq!(
            series.most_at_once(),
            (0, 2),
            "but every round counts for the invariant"
        );
    }
}
