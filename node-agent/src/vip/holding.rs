//! One VIP this host owns, from the agent's side of the majority-granted lease
//! (docs/design/vips.md): which members vouched for renewals sent when, and what follows for the
//! address. The agent holds it only while a majority vouches, counting each promise from its
//! own send time ([`protocol::agent::held_until`]); it lets go the moment that ends, before
//! any member may vouch for another holder.
//!
//! ```text
//!  renewal sent at s to member m ─▶ vouched ─▶ vouched(m, s)
//!  step(now): majority valid past now ─▶ Acquire (first time) | Keep ; otherwise ─▶ Lose
//! ```

use protocol::agent::held_until;

/// What the agent does with the address after a [`Holding::step`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Not held and no majority: nothing to do.
    Idle,
    /// A majority vouches now: add the address and announce it; held until the time given
    /// (agent clock, ms).
    Acquire(u64),
    /// Still held, until the time given.
    Keep(u64),
    /// The majority is gone: remove the address now.
    Lose,
}

/// The lease of one owned VIP as this agent sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holding {
    lease_ms: u64,
    /// Per member: the send time of its latest vouched renewal.
    acked_sends: Vec<Option<u64>>,
    held: bool,
}

impl Holding {
    /// A VIP just granted to this host by a cluster of `members` members: not held until a
    /// majority vouches.
    pub fn new(members: usize, lease_ms: u64) -> Holding {
        Holding {
            lease_ms,
            acked_sends: vec![None; members],
            held: false,
        }
    }

    /// The cluster turned out to have `members` members (more than this holding counted): the
    /// majority is counted over them from now on, so it may end at once if the vouches so far
    /// are no majority of the larger set. Never shrinks.
    pub fn grow(&mut self, members: usize) {
        if members > self.acked_sends.len() {
            self.acked_sends.resize(members, None);
        }
    }

    /// Member `member` vouched for a renewal this agent sent at `sent_ms`. An answer to an
    /// older renewal arriving late never shortens what a newer one gave.
    pub fn vouched(&mut self, member: usize, sent_ms: u64) {
        if let Some(slot) = self.acked_sends.get_mut(member) {
            *slot = Some(slot.map_or(sent_ms, |s| s.max(sent_ms)));
        }
    }

    /// Whether some member's promise is still live at `now_ms` (as this agent counts it), a
    /// majority or not.
    pub fn any_vouch(&self, now_ms: u64) -> bool {
        self.acked_sends
            .iter()
            .flatten()
            .any(|&sent| sent.saturating_add(self.lease_ms) > now_ms)
    }

    /// Whether the address is held (after the last step).
    pub fn is_held(&self) -> bool {
        self.held
    }

    /// Until when a majority vouches (agent clock), if it does.
    pub fn until(&self) -> Option<u64> {
        held_until(&self.acked_sends, self.acked_sends.len(), self.lease_ms)
    }

    /// What to do at `now_ms`.
    pub fn step(&mut self, now_ms: u64) -> Step {
        match (self.until().filter(|&u| u > now_ms), self.held) {
            (Some(until), false) => {
                self.held = true;
                Step::Acquire(until)
            }
            (Some(until), true) => Step::Keep(until),
            (None, true) => {
                self.held = false;
                Step::Lose
            }
            (None, false) => Step::Idle,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The members' default lease (`fleet::vip::lease::LeaseConfig::DEFAULT`).
    const LEASE: u64 = 400;

    #[test]
    fn the_address_is_held_only_while_a_majority_vouches() {
        let mut h = Holding::new(3, LEASE);
        assert_eq!(h.step(0), Step::Idle);
        h.vouched(0, 100);
        assert_eq!(h.step(110), Step::Idle, "one of three is not a majority");
        h.vouched(2, 90);
        assert_eq!(h.step(120), Step::Acquire(90 + LEASE));
        assert!(h.is_held());
        h.vouched(0, 200);
        h.vouched(1, 200);
        assert_eq!(h.step(210), Step::Keep(200 + LEASE));
        // No renewal after 200: let go exactly when the majority's promises end.
        assert_eq!(h.step(200 + LEASE - 1), Step::Keep(200 + LEASE));
        assert_eq!(h.step(200 + LEASE), Step::Lose);
        assert!(!h.is_held());
        assert_eq!(h.step(200 + LEASE + 1), Step::Idle);
    }

    #[test]
    fn a_late_answer_to_an_older_renewal_never_shortens_the_lease() {
        let mut h = Holding::new(3, LEASE);
        h.vouched(0, 500);
        h.vouched(1, 500);
        h.vouched(0, 300); // the answer to an earlier renewal, arriving last
        assert_eq!(h.until(), Some(500 + LEASE));
        h.vouched(7, 900); // not a member: ignored
        assert_eq!(h.until(), Some(500 + LEASE));
    }

    #[test]
    fn a_lease_that_ended_before_the_first_step_is_never_acquired() {
        let mut h = Holding::new(1, LEASE);
        h.vouched(0, 0);
        assert_eq!(
            h.step(LEASE),
            Step::Idle,
            "the promise was over when looked at"
        );
    }

    #[test]
    fn a_larger_member_set_learned_later_asks_for_a_larger_majority_at_once() {
        let mut h = Holding::new(1, 400);
        h.vouched(0, 1_000);
        assert_eq!(h.step(1_100), Step::Acquire(1_400));
        // The cluster has 3 members: one vouch of 3 is no majority, the holder lets go.
        h.grow(3);
        assert_eq!(h.step(1_150), Step::Lose);
        h.vouched(2, 1_120);
        assert_eq!(h.step(1_150), Step::Acquire(1_400));
        h.grow(2);
        assert_eq!(h.until(), Some(1_400), "never shrinks");
    }
}
