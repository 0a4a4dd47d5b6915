//! What the agents told this member in their VIP renewals (docs/design/vips.md): when each
//! host's agent last renewed, the last claim per VIP, since when each host has been ready for
//! each VIP, and whether an agent only simulates holding. Every member records it; the leader's
//! VIP manager (`crate::vip_manager`) plans from it. Soft state on this member's monotonic
//! clock: a new leader rebuilds it from the next renewals (every 100 ms).
//!
//! ```text
//!  VipRenew{claims, reports, simulated} from host H ─▶ record(H) ─▶ Sightings
//!  vip manager ─▶ view(state) ─▶ (Sightings with epochs first seen, now)
//! ```

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use fleet::state::FleetState;
use fleet::vip::manage::Sightings;
use protocol::NodeId;
use protocol::agent::{VipClaim, VipReport};

#[derive(Debug, Default)]
struct Inner {
    seen: Sightings,
}

/// The renewals this member heard.
#[derive(Debug)]
pub(crate) struct VipSightings {
    inner: Mutex<Inner>,
    started: Instant,
}

impl VipSightings {
    /// Nothing heard yet.
    pub(crate) fn new() -> VipSightings {
        VipSightings {
            inner: Mutex::new(Inner::default()),
            started: Instant::now(),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A poisoned lock only means a panic elsewhere while holding it; this is plain data.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `host` renewed now with `claims` and `reports`.
    pub(crate) fn record(
        &self,
        host: NodeId,
        claims: &[VipClaim],
        reports: &[VipReport],
        simulated: bool,
        leaving: bool,
    ) {
        let now = self.now_ms();
        let mut inner = self.lock();
        let seen = &mut inner.seen;
        seen.renewed_at.insert(host, now);
        if simulated {
            seen.simulated.insert(host);
        } else {
            seen.simulated.remove(&host);
        }
        if leaving {
            seen.leaving.insert(host);
        } else {
            seen.leaving.remove(&host);
        }
        // A standby's claim is no owner asking: it neither keeps an owner's VIP nor lets a
        // previous owner go.
        for claim in claims.iter().filter(|c| !c.standby) {
            seen.claims
                .insert((claim.name.clone(), host), (claim.epoch, now));
        }
        // Readiness is what this renewal says: a VIP it no longer reports is not ready.
        seen.ready_since.retain(|(h, vip), _| {
            *h != host || reports.iter().any(|r| &r.name == vip && r.ready.is_ok())
        });
        seen.not_ready.retain(|(h, _), _| *h != host);
        for report in reports {
            if let Err(why) = &report.ready {
                seen.not_ready
                    .insert((host, report.name.clone()), why.clone());
            } else {
                seen.ready_since
                    .entry((host, report.name.clone()))
                    .or_insert(now);
            }
        }
    }

    /// `host` let go of `claims` (it removed the addresses first).
    pub(crate) fn released(&self, host: NodeId, claims: &[VipClaim]) {
        let mut inner = self.lock();
        for claim in claims {
            inner
                .seen
                .released
                .insert(claim.name.clone(), (host, claim.epoch));
        }
    }

    /// Whether this member, up for at least `for_ms`, has heard no claim of `vip` at `epoch`
    /// from `owner` for `for_ms`.
    pub(crate) fn quiet(&self, vip: &str, owner: NodeId, epoch: u64, for_ms: u64) -> bool {
        let now = self.now_ms();
        now >= for_ms && !self.lock().seen.claimed(vip, owner, epoch, now, for_ms)
    }

    /// Whether `owner` claimed `vip` at `epoch` within `within_ms`, as heard here.
    pub(crate) fn claimed(&self, vip: &str, owner: NodeId, epoch: u64, within_ms: u64) -> bool {
        let now = self.now_ms();
        self.lock().seen.claimed(vip, owner, epoch, now, within_ms)
    }

    /// The sightings for planning over `state`, and this member's clock: an epoch seen for the
    /// first time starts its grant grace now.
    pub(crate) fn view(&self, state: &FleetState) -> (Sightings, u64) {
        let now = self.now_ms();
        let mut inner = self.lock();
        let seen = &mut inner.seen;
        let known = |name: &String| state.vips().contains_key(name);
        seen.epoch_seen.retain(|name, _| known(name));
        seen.released.retain(|name, _| known(name));
        seen.claims.retain(|(name, _), _| known(name));
        for (name, vip) in state.vips() {
            let first = seen
                .epoch_seen
                .entry(name.clone())
                .or_insert((vip.epoch, now));
            if first.0 != vip.epoch {
                *first = (vip.epoch, now);
            }
        }
        (seen.clone(), now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(name: &str, ok: bool) -> VipReport {
        VipReport {
            name: name.into(),
            ready: if ok { Ok(()) } else { Err("no vmbr9".into()) },
        }
    }

    #[test]
    fn readiness_runs_from_the_first_ready_report_and_breaks_on_any_other() {
        let s = VipSightings::new();
        s.record(
            11,
            &[],
            &[report("api", true), report("dns", false)],
            false,
            false,
        );
        let first = s.lock().seen.ready_since[&(11, "api".to_string())];
        assert_eq!(
            s.lock().seen.not_ready[&(11, "dns".to_string())],
            "no vmbr9"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
        s.record(11, &[], &[report("api", true)], true, true);
        assert!(s.lock().seen.leaving.contains(&11));
        let inner = s.lock();
        assert_eq!(inner.seen.ready_since[&(11, "api".to_string())], first);
        assert!(
            !inner
                .seen
                .ready_since
                .contains_key(&(11, "dns".to_string()))
        );
        // What the last renewal did not report is neither ready nor said not to be.
        assert!(inner.seen.not_ready.is_empty());
        assert!(inner.seen.simulated.contains(&11));
        drop(inner);
        s.record(11, &[], &[report("api", false)], false, false);
        assert!(s.lock().seen.leaving.is_empty());
        assert!(s.lock().seen.simulated.is_empty());
        assert!(s.lock().seen.ready_since.is_empty());
        assert!(!s.lock().seen.renewed_at.contains_key(&12));
    }

    #[test]
    fn claims_are_kept_per_vip_and_host_with_their_epoch() {
        let s = VipSightings::new();
        let claim = VipClaim {
            name: "api".into(),
            epoch: 4,
            standby: false,
        };
        s.record(12, std::slice::from_ref(&claim), &[], false, false);
        assert!(s.claimed("api", 12, 4, 1_000) && !s.claimed("api", 12, 3, 1_000));
        // The previous holder still claiming epoch 3 does not hide the new owner's claim.
        let old = VipClaim {
            name: "api".into(),
            epoch: 3,
            standby: false,
        };
        s.record(11, std::slice::from_ref(&old), &[], false, false);
        assert!(s.claimed("api", 12, 4, 1_000) && s.claimed("api", 11, 3, 1_000));
        // A standby's claim is not an owner's.
        let standby = VipClaim {
            name: "api".into(),
            epoch: 5,
            standby: true,
        };
        s.record(13, std::slice::from_ref(&standby), &[], false, false);
        assert!(!s.claimed("api", 13, 5, 1_000));
        // A VIP the state no longer has is forgotten.
        let (seen, _) = s.view(&FleetState::new());
        assert!(seen.claims.is_empty());
        assert!(seen.renewed_at.contains_key(&12));
    }
}
