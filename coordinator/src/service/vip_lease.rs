//! The members' side of the VIP lease (docs/design/vips.md, rule 5): every member, leader or
//! not, serves `VipRenew` and `VipRelease` on the Agent service. It vouches for a host only for
//! the VIPs the replicated state says that host owns, under that epoch, and only as its
//! [`PromiseBook`] allows (never a second holder while a promise to another is live, plus the
//! drift wait; nobody during its silence after a start).
//!
//! ```text
//!  VipRenew{claims} from agent H ─▶ per claim: state owner = H at that epoch? ─▶ book.vouch
//!        ─▶ Ok(lease_ms) | Err(why)
//!  VipRelease{claims} from agent H ─▶ book.release (H's promises only)
//! ```

use std::sync::Mutex;
use std::time::Instant;

use fleet::state::FleetState;
use fleet::vip::lease::{LeaseConfig, PromiseBook, Refusal};
use protocol::NodeId;
use protocol::agent::{VipClaim, VipVouch};

/// This member's promises, on its own monotonic clock (milliseconds since it started).
#[derive(Debug)]
pub(crate) struct VipPromises {
    book: Mutex<PromiseBook>,
    started: Instant,
    cfg: LeaseConfig,
}

impl VipPromises {
    /// The promises of a member starting now: silent for a lease and the drift wait, since it
    /// may have vouched before it restarted.
    pub(crate) fn new(cfg: LeaseConfig) -> VipPromises {
        VipPromises {
            book: Mutex::new(PromiseBook::new(0, &cfg)),
            started: Instant::now(),
            cfg,
        }
    }

    /// The lease a vouch gives.
    pub(crate) fn lease_ms(&self) -> u64 {
        self.cfg.lease_ms
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// The answers to `host`'s renewal; `quiet` says whether this member has heard no claim
    /// from an owner (VIP, owner, epoch) for a while (see [`vouch_all`]).
    pub(crate) fn renew(
        &self,
        state: &FleetState,
        host: NodeId,
        claims: &[VipClaim],
        quiet: &dyn Fn(&str, NodeId, u64) -> bool,
    ) -> Vec<VipVouch> {
        let now = self.now_ms();
        // A poisoned lock only means a panic elsewhere while holding it; the book is plain data.
        let mut book = self
            .book
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        vouch_all(state, host, claims, &mut book, now, &self.cfg, quiet)
    }

    /// Whom this member vouches for now, per VIP.
    pub(crate) fn live(&self) -> std::collections::BTreeMap<String, (NodeId, u64)> {
        let now = self.now_ms();
        let book = self
            .book
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        book.live(now)
            .map(|(vip, p)| (vip.to_string(), (p.holder, p.epoch)))
            .collect()
    }

    /// The holder and epoch this member vouches for now for `vip`, if any.
    pub(crate) fn vouching(&self, vip: &str) -> Option<(NodeId, u64)> {
        let now = self.now_ms();
        let book = self
            .book
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        book.promise(vip, now).map(|p| (p.holder, p.epoch))
    }

    /// `host` let go of `claims`.
    pub(crate) fn release(&self, host: NodeId, claims: &[VipClaim]) {
        let mut book = self
            .book
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for claim in claims {
            book.release(&claim.name, host, claim.epoch);
        }
    }
}

fn refusal_text(refusal: &Refusal) -> String {
    match refusal {
        Refusal::PromisedElsewhere { holder, for_ms } => {
            format!("this member vouches for host {holder} for {for_ms} ms more")
        }
        Refusal::Silent { for_ms } => {
            format!("this member started recently and vouches for nobody for {for_ms} ms")
        }
    }
}

/// The answer for each claim of `host` at `now_ms`, given the replicated state.
pub(crate) fn vouch_all(
    state: &FleetState,
    host: NodeId,
    claims: &[VipClaim],
    book: &mut PromiseBook,
    now_ms: u64,
    cfg: &LeaseConfig,
    quiet: &dyn Fn(&str, NodeId, u64) -> bool,
) -> Vec<VipVouch> {
    claims
        .iter()
        .map(|claim| {
            let outcome = match state.vips().get(&claim.name) {
                None => Err(format!("no VIP named {:?}", claim.name)),
                // The standby, claiming the next epoch: it takes over once this member's
                // promise to the owner lapsed (or keeps what it took over).
                Some(vip)
                    if claim.standby
                        && vip.standby == Some(host)
                        && claim.epoch == vip.epoch + 1
                        && vip.owner.is_some() =>
                {
                    let kept = book
                        .last(&claim.name)
                        .is_some_and(|p| p.holder == host && p.epoch == claim.epoch);
                    // Or this member has heard nothing from the owner for a while (a member
                    // restarted since the owner took the VIP never vouched for it): a healthy
                    // owner renews with every member, so it is never quiet here, and the book
                    // still refuses while any promise of this member is live.
                    let lapsed = vip.owner.is_some_and(|owner| {
                        book.lapsed(&claim.name, owner, vip.epoch, now_ms, cfg)
                            || quiet(&claim.name, owner, vip.epoch)
                    });
                    if kept || lapsed {
                        book.vouch(&claim.name, host, claim.epoch, now_ms, cfg)
                            .map(|_| cfg.lease_ms)
                            .map_err(|r| refusal_text(&r))
                    } else {
                        Err(format!(
                            "VIP {} is held under epoch {}: its standby takes over only once \
                             this member's promise to the owner has lapsed or the owner went \
                             quiet",
                            claim.name, vip.epoch
                        ))
                    }
                }
                Some(vip) if vip.owner != Some(host) || vip.epoch != claim.epoch => Err(format!(
                    "VIP {} is owned by {} at epoch {}, not by host {host} at epoch {}",
                    claim.name,
                    vip.owner
                        .map_or("nobody".to_string(), |o| format!("host {o}")),
                    vip.epoch,
                    claim.epoch
                )),
                Some(_) => book
                    .vouch(&claim.name, host, claim.epoch, now_ms, cfg)
                    .map(|_| cfg.lease_ms)
                    .map_err(|r| refusal_text(&r)),
            };
            VipVouch {
                name: claim.name.clone(),
                outcome,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use fleet::state::{Command, CommandReply};
    use protocol::fleet::{Capacity, HostState};
    use protocol::spec::VipSpecV1;

    use super::*;

    const CFG: LeaseConfig = LeaseConfig::DEFAULT;

    fn ok(state: &mut FleetState, index: &mut u64, cmd: Command) {
        *index += 1;
        let reply = state.apply(*index, cmd);
        assert!(!matches!(reply, CommandReply::Refused(_)), "{reply:?}");
    }

    /// A fleet with hosts 11 and 12 online and VIP `api` owned by `owner` (epoch 1, or 2
    /// after a second move).
    fn fleet(owners: &[u64]) -> FleetState {
        let mut s = FleetState::new();
        let mut i = 0;
        for (id, name) in [(11, "pve-a"), (12, "pve-b")] {
            ok(
                &mut s,
                &mut i,
                Command::RegisterHost {
                    id,
                    name: name.into(),
                    labels: Default::default(),
                    capacity: Capacity::default(),
                    now: 1,
                },
            );
            ok(
                &mut s,
                &mut i,
                Command::SetHostState {
                    id,
                    state: HostState::Online,
                    now: 1,
                },
            );
        }
        ok(
            &mut s,
            &mut i,
            Command::PutVip {
                spec: VipSpecV1 {
                    name: "api".into(),
                    address: "10.0.0.200/24".into(),
                    interface: "vmbr0".into(),
                    hosts: vec![],
                },
                now: 1,
            },
        );
        for (epoch, owner) in owners.iter().enumerate() {
            ok(
                &mut s,
                &mut i,
                Command::SetVipOwner {
                    name: "api".into(),
                    owner: Some(*owner),
                    expected_epoch: epoch as u64,
                    now: 2,
                },
            );
        }
        s
    }

    fn claim(epoch: u64) -> Vec<VipClaim> {
        vec![VipClaim {
            name: "api".into(),
            epoch,
            standby: false,
            held: false,
        }]
    }

    /// A standby's claim of `epoch` (the owner's + 1).
    fn as_standby(
        state: &FleetState,
        host: NodeId,
        epoch: u64,
        book: &mut PromiseBook,
        now: u64,
    ) -> Result<u64, String> {
        let claims = [VipClaim {
            name: "api".into(),
            epoch,
            standby: true,
            held: false,
        }];
        vouch_all(state, host, &claims, book, now, &CFG, &|_, _, _| false)
            .remove(0)
            .outcome
    }

    fn answer(
        state: &FleetState,
        host: NodeId,
        epoch: u64,
        book: &mut PromiseBook,
        now: u64,
    ) -> Result<u64, String> {
        vouch_all(state, host, &claim(epoch), book, now, &CFG, &|_, _, _| {
            false
        })
        .remove(0)
        .outcome
    }

    /// Past the start-up silence.
    const T: u64 = 10_000;

    #[test]
    fn only_the_owner_at_its_epoch_is_vouched_for() {
        let state = fleet(&[11]);
        let mut book = PromiseBook::new(0, &CFG);
        assert_eq!(answer(&state, 11, 1, &mut book, T), Ok(400));
        let other = answer(&state, 12, 1, &mut book, T).unwrap_err();
        assert!(other.contains("owned by host 11 at epoch 1"), "{other}");
        let stale = answer(&state, 11, 0, &mut book, T).unwrap_err();
        assert!(stale.contains("not by host 11 at epoch 0"), "{stale}");
        let unknown = vouch_all(
            &state,
            11,
            &[VipClaim {
                name: "dns".into(),
                epoch: 1,
                standby: false,
                held: false,
            }],
            &mut book,
            T,
            &CFG,
            &|_, _, _| false,
        );
        assert!(
            unknown[0]
                .outcome
                .as_ref()
                .unwrap_err()
                .contains("no VIP named")
        );
    }

    #[test]
    fn a_new_owner_waits_out_the_old_promise_unless_the_old_owner_released() {
        let mut book = PromiseBook::new(0, &CFG);
        let before = fleet(&[11]);
        answer(&before, 11, 1, &mut book, T).unwrap();
        // The leader moved it to host 12 (epoch 2): this member still vouches for 11.
        let after = fleet(&[11, 12]);
        let wait = answer(&after, 12, 2, &mut book, T + 100).unwrap_err();
        assert!(wait.contains("vouches for host 11"), "{wait}");
        let free = T + CFG.lease_ms + CFG.handover_wait_ms();
        assert!(answer(&after, 12, 2, &mut book, free - 1).is_err());
        assert_eq!(answer(&after, 12, 2, &mut book, free), Ok(400));

        // A graceful hand-over: the old owner released, the new one is vouched for at once.
        let mut book = PromiseBook::new(0, &CFG);
        answer(&before, 11, 1, &mut book, T).unwrap();
        book.release("api", 11, 1);
        assert_eq!(answer(&after, 12, 2, &mut book, T + 1), Ok(400));
    }

    #[test]
    fn a_member_that_just_started_vouches_for_nobody() {
        let promises = VipPromises::new(CFG);
        let state = fleet(&[11]);
        let answers = promises.renew(&state, 11, &claim(1), &|_, _, _| false);
        assert!(
            answers[0]
                .outcome
                .as_ref()
                .unwrap_err()
                .contains("started recently"),
            "{answers:?}"
        );
    }

    #[test]
    fn the_standby_takes_over_only_from_an_owner_this_member_saw_lapse() {
        let mut state = fleet(&[11]);
        let standby = Command::SetVipStandby {
            name: "api".into(),
            standby: Some(12),
            expected_epoch: 1,
        };
        assert!(!matches!(
            state.apply(10, standby),
            CommandReply::Refused(_)
        ));
        // A member that never vouched for the owner does not know what it holds.
        let mut fresh = PromiseBook::new(0, &CFG);
        let unknown = as_standby(&state, 12, 2, &mut fresh, T).unwrap_err();
        assert!(
            unknown.contains("its standby takes over only once"),
            "{unknown}"
        );
        // ... unless it has heard nothing from the owner for a while (it restarted since the
        // owner took the VIP, and the owner is gone).
        let quiet = vouch_all(
            &state,
            12,
            &[VipClaim {
                name: "api".into(),
                epoch: 2,
                standby: true,
                held: false,
            }],
            &mut fresh,
            T,
            &CFG,
            &|vip, owner, epoch| (vip, owner, epoch) == ("api", 11, 1),
        );
        assert_eq!(quiet[0].outcome, Ok(400));
        // While the owner's promise is live, or within the drift wait after it, no.
        let mut book = PromiseBook::new(0, &CFG);
        answer(&state, 11, 1, &mut book, T).unwrap();
        let lapsed = T + CFG.lease_ms + CFG.handover_wait_ms();
        assert!(as_standby(&state, 12, 2, &mut book, lapsed - 1).is_err());
        // Only the standby, and only for the next epoch.
        let mut third = book.clone();
        assert!(as_standby(&state, 13, 2, &mut third, lapsed).is_err());
        assert!(as_standby(&state, 12, 3, &mut third, lapsed).is_err());
        // Not as an owner's claim: the standby says what it claims.
        assert!(answer(&state, 12, 2, &mut book.clone(), lapsed).is_err());
        assert_eq!(as_standby(&state, 12, 2, &mut book, lapsed), Ok(400));
        // It keeps what it took over; the owner, back, is refused until it lapses in turn.
        assert_eq!(as_standby(&state, 12, 2, &mut book, lapsed + 100), Ok(400));
        assert!(answer(&state, 11, 1, &mut book, lapsed + 150).is_err());
    }
}
