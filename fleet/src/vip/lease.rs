//! The VIP lease, granted by a majority of coordinator members rather than by the leader alone,
//! so that a leader election (which takes longer than a VIP lease may) never interrupts a
//! holder (docs/design/vips.md).
//!
//! - Every member keeps a [`PromiseBook`]: for each VIP, which holder (and ownership epoch) it
//!   vouches for, until when on its own monotonic clock. It vouches only for the owner the
//!   replicated state names, and never for a second holder while a promise to another is live,
//!   counting a drift allowance on top.
//! - The holder's agent renews with every member directly and holds the address only while a
//!   majority of them vouch for it: [`held_until`] counts each promise from the agent's own
//!   *send* time, which is before the member's receipt, so the agent always lets go first.
//! - Any two majorities share a member, and that member will not vouch for the new holder before
//!   its promise to the old one is over: two hosts never hold a VIP at once (safety rule 5).
//!
//! All times are milliseconds of a monotonic clock; each side uses its own.

use std::collections::BTreeMap;

use protocol::NodeId;

/// The lease settings every member and agent uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseConfig {
    /// How long one promise lasts, from the member's receipt of the renewal.
    pub lease_ms: u64,
    /// How often the holder renews (at least three renewals per lease).
    pub renew_every_ms: u64,
    /// The largest rate difference between two hosts' monotonic clocks, in parts per million.
    pub drift_ppm: u64,
    /// Added to every wait for another holder: scheduling delays of the member's own process.
    pub margin_ms: u64,
}

impl Default for LeaseConfig {
    fn default() -> LeaseConfig {
        LeaseConfig::DEFAULT
    }
}

impl LeaseConfig {
    /// A lease of 400 ms renewed every 100 ms, 1 % drift, 50 ms margin: an owner that dies is
    /// replaced about half a second after its last renewal.
    pub const DEFAULT: LeaseConfig = LeaseConfig {
        lease_ms: protocol::timing::VIP_LEASE_MS,
        renew_every_ms: protocol::timing::VIP_RENEW_EVERY_MS,
        drift_ppm: 10_000,
        margin_ms: 50,
    };

    /// Checks the settings.
    ///
    /// # Errors
    /// A message naming the field and what is allowed.
    pub fn validate(&self) -> Result<(), String> {
        if !(100..=60_000).contains(&self.lease_ms) {
            return Err(format!(
                "lease_ms = {} is not allowed: expected 100 to 60000",
                self.lease_ms
            ));
        }
        if self.renew_every_ms == 0 || self.renew_every_ms.saturating_mul(3) > self.lease_ms {
            return Err(format!(
                "renew_every_ms = {} is not allowed: expected 1 to a third of lease_ms ({})",
                self.renew_every_ms,
                self.lease_ms / 3
            ));
        }
        if self.drift_ppm > 100_000 {
            return Err(format!(
                "drift_ppm = {} is not allowed: expected 0 to 100000 (10 %)",
                self.drift_ppm
            ));
        }
        Ok(())
    }

    /// How long after its promise to one holder ends a member still refuses another: the two
    /// clocks may differ in rate by `drift` each way over the lease, plus the margin.
    pub fn handover_wait_ms(&self) -> u64 {
        let drift = self
            .lease_ms
            .saturating_mul(2)
            .saturating_mul(self.drift_ppm)
            / 1_000_000;
        drift.saturating_add(self.margin_ms)
    }

    /// How long a member that restarted (and forgot its promises) vouches for nobody.
    pub fn restart_silence_ms(&self) -> u64 {
        self.lease_ms.saturating_add(self.handover_wait_ms())
    }
}

pub use protocol::agent::{held_until, majority};

/// One member's promise for one VIP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Promise {
    /// The host vouched for.
    pub holder: NodeId,
    /// The ownership epoch it holds the VIP under.
    pub epoch: u64,
    /// Until when (member clock).
    pub until_ms: u64,
}

/// Why a member does not vouch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// It still vouches for another holder (or an older epoch) for `for_ms` more.
    PromisedElsewhere {
        /// The other holder.
        holder: NodeId,
        /// How long until it may vouch for the asker.
        for_ms: u64,
    },
    /// The member restarted and may have promised before: it vouches for nobody yet.
    Silent {
        /// How long until it may vouch.
        for_ms: u64,
    },
}

/// A member's promises, by VIP name. Lives in memory only: a restarted member is silent for
/// [`LeaseConfig::restart_silence_ms`] instead of remembering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromiseBook {
    promises: BTreeMap<String, Promise>,
    silent_until_ms: u64,
}

impl PromiseBook {
    /// The book of a member started at `started_ms`.
    pub fn new(started_ms: u64, cfg: &LeaseConfig) -> PromiseBook {
        PromiseBook {
            promises: BTreeMap::new(),
            silent_until_ms: started_ms.saturating_add(cfg.restart_silence_ms()),
        }
    }

    /// The last promise for `vip`, live or over.
    pub fn last(&self, vip: &str) -> Option<Promise> {
        self.promises.get(vip).copied()
    }

    /// Every live promise at `now_ms`, by VIP.
    pub fn live(&self, now_ms: u64) -> impl Iterator<Item = (&str, Promise)> + '_ {
        self.promises
            .iter()
            .filter(move |(_, p)| now_ms < p.until_ms)
            .map(|(vip, p)| (vip.as_str(), *p))
    }

    /// The live promise for `vip` at `now_ms`, if any.
    pub fn promise(&self, vip: &str, now_ms: u64) -> Option<Promise> {
        self.promises
            .get(vip)
            .copied()
            .filter(|p| now_ms < p.until_ms)
    }

    /// Vouches for `holder` (owner of `vip` under `epoch` in the replicated state: the caller
    /// checks that) until `now_ms + lease`, unless another holder may still hold the VIP.
    ///
    /// # Errors
    /// [`Refusal`] saying for how long.
    pub fn vouch(
        &mut self,
        vip: &str,
        holder: NodeId,
        epoch: u64,
        now_ms: u64,
        cfg: &LeaseConfig,
    ) -> Result<Promise, Refusal> {
        if now_ms < self.silent_until_ms {
            return Err(Refusal::Silent {
                for_ms: self.silent_until_ms - now_ms,
            });
        }
        if let Some(p) = self.promises.get(vip)
            && (p.holder != holder || p.epoch != epoch)
        {
            let free_at = p.until_ms.saturating_add(cfg.handover_wait_ms());
            if now_ms < free_at {
                return Err(Refusal::PromisedElsewhere {
                    holder: p.holder,
                    for_ms: free_at - now_ms,
                });
            }
        }
        let promise = Promise {
            holder,
            epoch,
            until_ms: now_ms.saturating_add(cfg.lease_ms),
        };
        self.promises.insert(vip.to_string(), promise);
        Ok(promise)
    }

    /// The holder says it no longer holds `vip` (it removed the address first): the promise
    /// ends now, so the next owner is vouched for at once (a graceful handover). The ended
    /// promise is kept, so [`PromiseBook::lapsed`] still knows whom it was for.
    pub fn release(&mut self, vip: &str, holder: NodeId, epoch: u64) {
        if let Some(p) = self.promises.get_mut(vip)
            && p.holder == holder
            && p.epoch == epoch
        {
            // Ended long enough ago that the drift wait is over too.
            p.until_ms = 0;
        }
    }

    /// Whether this member's last promise for `vip` was to `holder` at `epoch` and is over
    /// (ran out, drift wait included, or released) at `now_ms`: a standby may take over only
    /// from an owner that this member vouched for and saw lapse, never from one it never
    /// vouched for (it may not know what that owner holds).
    pub fn lapsed(
        &self,
        vip: &str,
        holder: NodeId,
        epoch: u64,
        now_ms: u64,
        cfg: &LeaseConfig,
    ) -> bool {
        self.promises.get(vip).is_some_and(|p| {
            p.holder == holder
                && p.epoch == epoch
                && now_ms >= p.until_ms.saturating_add(cfg.handover_wait_ms())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CFG: LeaseConfig = LeaseConfig::DEFAULT;

    fn book() -> PromiseBook {
        PromiseBook::new(0, &CFG)
    }

    /// Time after which a fresh book vouches.
    const AWAKE: u64 = 1_000;

    #[test]
    fn settings_are_checked_by_name() {
        assert!(LeaseConfig::default().validate().is_ok());
        let e = LeaseConfig {
            renew_every_ms: 200,
            ..CFG
        }
        .validate()
        .unwrap_err();
        assert!(e.starts_with("renew_every_ms = 200"), "{e}");
        assert!(
            LeaseConfig {
                lease_ms: 50,
                ..CFG
            }
            .validate()
            .is_err()
        );
        assert_eq!(CFG.handover_wait_ms(), 8 + 50);
    }

    #[test]
    fn the_holder_holds_while_a_majority_vouches_counted_from_its_send_times() {
        assert_eq!(majority(3), 2);
        assert_eq!(majority(5), 3);
        // Members 0 and 2 acknowledged renewals sent at 1000 and 900: held until 900 + lease.
        assert_eq!(
            held_until(&[Some(1000), None, Some(900)], 3, 400),
            Some(1300)
        );
        assert_eq!(held_until(&[Some(1000), None, None], 3, 400), None);
        assert_eq!(
            held_until(&[Some(10), Some(50), Some(30), Some(40), None], 5, 400),
            Some(430)
        );
        assert_eq!(held_until(&[], 0, 400), None);
    }

    #[test]
    fn a_member_vouches_for_one_holder_at_a_time_and_waits_out_the_drift() {
        let mut b = book();
        let p = b.vouch("api", 1, 1, AWAKE, &CFG).unwrap();
        assert_eq!(p.until_ms, AWAKE + 400);
        // Renewals by the same holder extend it.
        assert_eq!(
            b.vouch("api", 1, 1, AWAKE + 100, &CFG).unwrap().until_ms,
            AWAKE + 500
        );
        // Another holder (a new epoch) waits until the promise is over plus the drift wait.
        let free = AWAKE + 500 + CFG.handover_wait_ms();
        assert_eq!(
            b.vouch("api", 2, 2, free - 1, &CFG),
            Err(Refusal::PromisedElsewhere {
                holder: 1,
                for_ms: 1
            })
        );
        assert_eq!(b.vouch("api", 2, 2, free, &CFG).unwrap().holder, 2);
        // The old holder, now, is refused in turn; other VIPs are independent.
        assert!(b.vouch("api", 1, 1, free + 1, &CFG).is_err());
        assert!(b.vouch("dns", 1, 1, free + 1, &CFG).is_ok());
    }

    #[test]
    fn a_release_hands_over_at_once_and_only_the_holder_releases() {
        let mut b = book();
        b.vouch("api", 1, 1, AWAKE, &CFG).unwrap();
        b.release("api", 2, 1); // not the holder: nothing
        assert!(b.vouch("api", 2, 2, AWAKE + 1, &CFG).is_err());
        b.release("api", 1, 1);
        assert_eq!(b.promise("api", AWAKE + 1), None);
        assert!(b.vouch("api", 2, 2, AWAKE + 1, &CFG).is_ok());
    }

    #[test]
    fn a_promise_lapses_only_once_over_with_the_drift_wait_and_only_for_its_holder() {
        let mut b = book();
        assert!(
            !b.lapsed("api", 1, 1, AWAKE, &CFG),
            "never vouched for: no lapse"
        );
        b.vouch("api", 1, 1, AWAKE, &CFG).unwrap();
        let over = AWAKE + 400 + CFG.handover_wait_ms();
        assert!(!b.lapsed("api", 1, 1, over - 1, &CFG));
        assert!(b.lapsed("api", 1, 1, over, &CFG));
        assert!(!b.lapsed("api", 1, 2, over, &CFG), "another epoch");
        assert!(!b.lapsed("api", 2, 1, over, &CFG), "another holder");
        // A release is a lapse at once.
        b.vouch("dns", 1, 1, AWAKE, &CFG).unwrap();
        b.release("dns", 1, 1);
        assert!(b.lapsed("dns", 1, 1, AWAKE + 1, &CFG));
    }

    #[test]
    fn a_restarted_member_vouches_for_nobody_until_any_promise_it_forgot_is_over() {
        let mut b = PromiseBook::new(5_000, &CFG);
        let silent = CFG.restart_silence_ms();
        assert_eq!(
            b.vouch("api", 1, 1, 5_000, &CFG),
            Err(Refusal::Silent { for_ms: silent })
        );
        assert!(b.vouch("api", 1, 1, 5_000 + silent, &CFG).is_ok());
    }

    /// The safety argument, exhaustively over small schedules: two holders whose majorities
    /// overlap never both hold at the same instant, whatever the order of renewals.
    #[test]
    fn two_holders_never_hold_at_once_whatever_the_schedule() {
        let members = 3;
        for old_sends in 0..4u64 {
            for new_start in (0..3_000).step_by(37) {
                let mut books: Vec<PromiseBook> = (0..members).map(|_| book()).collect();
                // The old holder renews with every member at AWAKE + 100 k, k <= old_sends.
                let mut old_acks = vec![None; members];
                for k in 0..=old_sends {
                    let t = AWAKE + 100 * k;
                    for (i, b) in books.iter_mut().enumerate() {
                        if b.vouch("v", 1, 1, t, &CFG).is_ok() {
                            old_acks[i] = Some(t);
                        }
                    }
                }
                let old_until = held_until(&old_acks, members, CFG.lease_ms).unwrap();
                // The new holder asks everyone at `t`; with no drift, clocks agree.
                let t = AWAKE + new_start;
                let mut new_acks = vec![None; members];
                for (i, b) in books.iter_mut().enumerate() {
                    if b.vouch("v", 2, 2, t, &CFG).is_ok() {
                        new_acks[i] = Some(t);
                    }
                }
                if held_until(&new_acks, members, CFG.lease_ms).is_some() {
                    assert!(
                        t >= old_until,
                        "new holder at {t}, old holds until {old_until}"
                    );
                }
            }
        }
    }
}
