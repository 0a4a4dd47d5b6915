//! Which coordinator to beat next, pure: the leader a follower named, else the members in turn
//! (from `cluster.toml`), with a back-off of 100 ms doubling to one heartbeat period between
//! failed attempts.

use std::fmt;
use std::time::Duration;

use protocol::NodeId;

/// The first pause after a failed beat.
pub const BACKOFF_START: Duration = Duration::from_millis(100);
/// The longest pause between attempts: the default heartbeat period. A healthy agent beats
/// this often anyway, so retrying at that pace costs the members nothing a healthy fleet does
/// not; a longer pause only eats the lease (5 s, as before, was half of it: a few failed beats
/// in a row during leader changes left an agent without an acknowledgement for a whole lease,
/// and it stopped its HA guests on a healthy host; chaos campaign, seed 27).
pub const BACKOFF_MAX: Duration = Duration::from_millis(protocol::timing::HEARTBEAT_MS);

/// A coordinator member: its node id and `host:port`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Target {
    /// Its node id (the certificate the agent expects).
    pub id: NodeId,
    /// Its QUIC address.
    pub addr: String,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "coordinator {} at {}", self.id, self.addr)
    }
}

/// The members known and the one to use now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Targets {
    members: Vec<Target>,
    /// The member the rotation picks next when there is no current one.
    next: usize,
    current: Option<Target>,
}

impl Targets {
    /// The members in the order to try them.
    pub fn new(members: Vec<Target>) -> Targets {
        Targets {
            members,
            next: 0,
            current: None,
        }
    }

    /// Every member known (hints add the ones `cluster.toml` did not list).
    pub fn members(&self) -> &[Target] {
        &self.members
    }

    /// The member to beat now: the current one, else the next in turn (`None` with no
    /// members at all).
    pub fn current(&mut self) -> Option<Target> {
        if self.current.is_none() && !self.members.is_empty() {
            let i = self.next % self.members.len();
            self.next = (i + 1) % self.members.len();
            self.current = Some(self.members[i].clone());
        }
        self.current.clone()
    }

    /// A follower named the leader: beat it next. An unknown member is remembered, and a known
    /// member's address is updated.
    pub fn follow(&mut self, leader: Target) {
        match self.members.iter_mut().find(|m| m.id == leader.id) {
            Some(known) => known.addr = leader.addr.clone(),
            None => self.members.push(leader.clone()),
        }
        self.current = Some(leader);
    }

    /// The current member failed: the next call picks another one in turn.
    pub fn failed(&mut self) {
        if let Some(failed) = self.current.take()
            && let Some(i) = self.members.iter().position(|m| *m == failed)
            && self.next == i
        {
            // The rotation was about to pick the member that just failed.
            self.next = (i + 1) % self.members.len();
        }
    }
}

/// The pause between failed attempts: 100 ms, doubling to [`BACKOFF_MAX`] (1 s), back to
/// 100 ms on success.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            next: BACKOFF_START,
        }
    }
}

impl Backoff {
    /// The pause to take now; the following one doubles (up to [`BACKOFF_MAX`]).
    pub fn next_pause(&mut self) -> Duration {
        let pause = self.next;
        self.next = (self.next * 2).min(BACKOFF_MAX);
        pause
    }

    /// A beat succeeded: start again from [`BACKOFF_START`].
    pub fn reset(&mut self) {
        self.next = BACKOFF_START;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(id: NodeId) -> Target {
        Target {
            id,
            addr: format!("10.0.0.{id}:7400"),
        }
    }

    #[test]
    fn failures_rotate_through_the_members() {
        let mut targets = Targets::new(vec![t(1), t(2), t(3)]);
        let mut seen = Vec::new();
        for _ in 0..4 {
            seen.push(targets.current().unwrap().id);
            targets.failed();
        }
        assert_eq!(seen, [1, 2, 3, 1]);
    }

    #[test]
    fn the_current_member_is_kept_until_it_fails() {
        let mut targets = Targets::new(vec![t(1), t(2)]);
        assert_eq!(targets.current().unwrap().id, 1);
        assert_eq!(targets.current().unwrap().id, 1);
    }

    #[test]
    fn a_hint_is_followed_and_an_unknown_leader_remembered() {
        let mut targets = Targets::new(vec![t(1), t(2)]);
        assert_eq!(targets.current().unwrap().id, 1);
        targets.follow(t(5));
        assert_eq!(targets.current(), Some(t(5)));
        assert_eq!(targets.members().len(), 3);
        // A moved member is dialed at its new address.
        let moved = Target {
            id: 2,
            addr: "10.9.9.9:7400".into(),
        };
        targets.follow(moved.clone());
        assert_eq!(targets.current(), Some(moved.clone()));
        assert!(targets.members().contains(&moved));
        // After the hinted leader fails, the rotation goes on.
        targets.failed();
        assert_ne!(targets.current().map(|c| c.id), Some(2));
    }

    #[test]
    fn a_failed_hinted_leader_is_not_picked_again_at_once() {
        let mut targets = Targets::new(vec![t(1), t(2), t(3)]);
        assert_eq!(targets.current().unwrap().id, 1);
        targets.follow(t(2));
        targets.failed();
        assert_eq!(targets.current().unwrap().id, 3);
    }

    #[test]
    fn no_members_means_no_target() {
        assert_eq!(Targets::new(Vec::new()).current(), None);
    }

    #[test]
    fn backoff_doubles_to_one_heartbeat_and_resets() {
        let mut b = Backoff::default();
        let pauses: Vec<u64> = (0..8).map(|_| b.next_pause().as_millis() as u64).collect();
        assert_eq!(pauses, [100, 200, 400, 800, 1000, 1000, 1000, 1000]);
        // However many attempts fail, the next comes within a heartbeat: a lease (10 beats)
        // always holds several attempts.
        let lease = Duration::from_millis(protocol::timing::HOST_LEASE_MS);
        assert!(BACKOFF_MAX * 5 <= lease);
        b.reset();
        assert_eq!(b.next_pause(), BACKOFF_START);
    }
}
