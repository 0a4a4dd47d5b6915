//! Which member a call tries next, and from when: a pure schedule (time is passed in) that the
//! call loop drives. Members start in the order given; one that answered without helping (no
//! leader yet, unreachable) waits a short back-off before it is tried again, so an election is
//! followed closely; a leader hint is tried at once; a member that refused this client's
//! certificate is not tried again.

use std::collections::{HashMap, VecDeque};

use bootstrap::cli_config::CoordinatorAddr;
use tokio::time::Instant;

use crate::policy::backoff;

/// A member waiting for its (next) attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Queued {
    member: CoordinatorAddr,
    not_before: Instant,
    /// A leader hint: started without waiting for the running attempts to stall.
    urgent: bool,
}

/// The members one call still has to try, and what it learned so far.
#[derive(Debug)]
pub(crate) struct Schedule {
    queue: VecDeque<Queued>,
    /// Attempts per member that came back without an answer, for its back-off.
    retries: HashMap<CoordinatorAddr, u32>,
    /// Members that refused this client's certificate (or that it refused).
    untrusted: Vec<CoordinatorAddr>,
    /// Members that failed otherwise (alive or not).
    failed: Vec<CoordinatorAddr>,
    /// Leader hints followed; stale hints can point in a circle during an election.
    hops: usize,
    max_hops: usize,
}

/// When the next attempt may start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Due {
    pub(crate) at: Instant,
    /// Start it even while other attempts run well (a leader hint).
    pub(crate) urgent: bool,
}

impl Schedule {
    /// A schedule trying `order` from `now`, in that order.
    pub(crate) fn new(order: Vec<CoordinatorAddr>, now: Instant) -> Schedule {
        let max_hops = 2 * order.len() + 2;
        Schedule {
            queue: order
                .into_iter()
                .map(|member| Queued {
                    member,
                    not_before: now,
                    urgent: false,
                })
                .collect(),
            retries: HashMap::new(),
            untrusted: Vec::new(),
            failed: Vec::new(),
            hops: 0,
            max_hops,
        }
    }

    /// The first queued member that is not `running`, and when it may start.
    pub(crate) fn next_due(&self, running: &[CoordinatorAddr]) -> Option<Due> {
        self.queue
            .iter()
            .filter(|q| !running.contains(&q.member))
            .map(|q| Due {
                at: q.not_before,
                urgent: q.urgent,
            })
            .min_by_key(|d| (!d.urgent, d.at))
    }

    /// Takes the member [`next_due`](Self::next_due) named.
    pub(crate) fn take_due(&mut self, running: &[CoordinatorAddr]) -> Option<CoordinatorAddr> {
        let due = self.next_due(running)?;
        let at = self.queue.iter().position(|q| {
            !running.contains(&q.member) && q.not_before == due.at && q.urgent == due.urgent
        })?;
        self.queue.remove(at).map(|q| q.member)
    }

    /// `member` gave no answer (no leader yet, unreachable, timed out): it is tried again after
    /// its back-off, behind the others.
    pub(crate) fn retry_later(&mut self, member: CoordinatorAddr, now: Instant) {
        let retries = self.retries.entry(member.clone()).or_default();
        let wait = backoff(*retries);
        *retries = retries.saturating_add(1);
        if !self.failed.contains(&member) {
            self.failed.push(member.clone());
        }
        self.requeue(member, now + wait, false);
    }

    /// `member` refused this client's certificate (or TLS refused it): not tried again.
    pub(crate) fn distrust(&mut self, member: CoordinatorAddr) {
        self.queue.retain(|q| q.member != member);
        if !self.untrusted.contains(&member) {
            self.untrusted.push(member);
        }
    }

    /// `from` named `leader`: it is tried now, unless hints went in circles too long (then
    /// `from` is retried after its back-off like a member without a leader). Whether the hint
    /// is followed.
    pub(crate) fn follow_hint(
        &mut self,
        from: CoordinatorAddr,
        leader: CoordinatorAddr,
        now: Instant,
    ) -> bool {
        if self.hops >= self.max_hops || leader == from {
            self.retry_later(from, now);
            return false;
        }
        self.hops += 1;
        self.requeue(leader, now, true);
        self.requeue(from, now + backoff(0), false);
        true
    }

    /// Whether every member tried refused TLS and nothing is left to try: the configuration is
    /// wrong, not the cluster.
    pub(crate) fn only_untrusted_left(&self) -> bool {
        self.queue.is_empty() && !self.untrusted.is_empty() && self.failed.is_empty()
    }

    /// Queues `member` (once) from `not_before`.
    fn requeue(&mut self, member: CoordinatorAddr, not_before: Instant, urgent: bool) {
        if self.untrusted.contains(&member) {
            return;
        }
        self.queue.retain(|q| q.member != member);
        let entry = Queued {
            member,
            not_before,
            urgent,
        };
        if urgent {
            self.queue.push_front(entry);
        } else {
            self.queue.push_back(entry);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn wait_for(due: Instant, now: Instant) -> Duration {
        due.saturating_duration_since(now)
    }

    fn member(id: u64) -> CoordinatorAddr {
        CoordinatorAddr {
            addr: format!("127.0.0.1:{}", 7400 + id),
            id,
        }
    }

    #[test]
    fn members_start_in_order_and_a_running_one_is_skipped() {
        let now = Instant::now();
        let mut s = Schedule::new(vec![member(1), member(2), member(3)], now);
        assert_eq!(s.take_due(&[]), Some(member(1)));
        assert_eq!(s.take_due(&[member(2)]), Some(member(3)));
        assert_eq!(s.take_due(&[member(2)]), None);
        assert_eq!(s.take_due(&[]), Some(member(2)));
        assert_eq!(s.next_due(&[]), None);
    }

    #[test]
    fn a_member_without_an_answer_is_retried_after_a_growing_back_off() {
        let now = Instant::now();
        let mut s = Schedule::new(vec![member(1)], now);
        let m = s.take_due(&[]).unwrap();
        s.retry_later(m.clone(), now);
        assert_eq!(
            s.next_due(&[]).map(|d| wait_for(d.at, now)),
            Some(backoff(0))
        );
        let m = s.take_due(&[]).unwrap();
        s.retry_later(m, now);
        assert_eq!(
            s.next_due(&[]).map(|d| wait_for(d.at, now)),
            Some(backoff(1))
        );
        assert!(!s.only_untrusted_left());
    }

    #[test]
    fn a_leader_hint_goes_first_at_once_until_hints_circle() {
        let now = Instant::now();
        let mut s = Schedule::new(vec![member(1), member(2), member(3)], now);
        let first = s.take_due(&[]).unwrap();
        assert!(s.follow_hint(first, member(3), now));
        let due = s.next_due(&[]).unwrap();
        assert!(due.urgent && due.at == now);
        assert_eq!(s.take_due(&[]), Some(member(3)));
        // A member naming itself, or hints going round: retried later instead.
        assert!(!s.follow_hint(member(2), member(2), now));
        for _ in 0..10 {
            s.follow_hint(member(1), member(2), now);
        }
        assert!(!s.follow_hint(member(1), member(2), now));
    }

    #[test]
    fn untrusted_members_are_not_tried_again() {
        let now = Instant::now();
        let mut s = Schedule::new(vec![member(1), member(2)], now);
        let a = s.take_due(&[]).unwrap();
        s.distrust(a);
        assert!(!s.only_untrusted_left(), "member 2 is still to be tried");
        let b = s.take_due(&[]).unwrap();
        s.distrust(b.clone());
        assert!(s.only_untrusted_left());
        // A hint to an untrusted member is not queued; its sender is retried later.
        s.follow_hint(member(9), b, now);
        assert_eq!(s.take_due(&[]), Some(member(9)));
        assert_eq!(s.take_due(&[]), None);
    }
}
