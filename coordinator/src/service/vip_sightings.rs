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

/// How long after its start a member waits before it takes the silence of an owner it never
/// heard from as a sign that the owner is gone: a live agent's link to a restarted member
/// comes back only after its dial and handshake time out and are retried (a few seconds), and
/// until then the member's ignorance says nothing about the owner (docs/design/vips.md,
/// "Splits").
pub(crate) const AGENT_RECONNECT_MS: u64 = 5_000;

#[derive(Debug, Default)]
struct Inner {
    seen: Sightings,
    /// Per VIP: the epoch this member was first asked about by a standby, and when.
    asked_since: std::collections::BTreeMap<String, (u64, u64)>,
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
        for claim in claims {
            let key = (claim.name.clone(), host);
            if claim.held {
                seen.holding.insert(key.clone(), (claim.epoch, now));
            } else {
                seen.holding.remove(&key);
            }
            if !claim.standby {
                seen.claims.insert(key, (claim.epoch, now));
            }
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

    /// Whether `owner` is quiet here for `vip` at `epoch`: this member has heard no claim of it
    /// for `for_ms`, while it has known of that epoch for `for_ms` (a standby has asked about it
    /// that long) and could have heard the owner: it heard the owner's agent since it started,
    /// or it has been up for [`AGENT_RECONNECT_MS`]. Never on a restarted member's ignorance
    /// alone.
    pub(crate) fn quiet(&self, vip: &str, owner: NodeId, epoch: u64, for_ms: u64) -> bool {
        let now = self.now_ms();
        let mut inner = self.lock();
        let asked = inner
            .asked_since
            .entry(vip.to_string())
            .or_insert((epoch, now));
        if asked.0 != epoch {
            *asked = (epoch, now);
        }
        let known_for = now.saturating_sub(asked.1);
        let could_hear = inner.seen.renewed_at.contains_key(&owner) || now >= AGENT_RECONNECT_MS;
        known_for >= for_ms
            && now >= for_ms
            && could_hear
            && !inner.seen.claimed(vip, owner, epoch, now, for_ms)
    }

    /// Whether `owner`'s latest claim of `vip` at `epoch`, heard within `within_ms`, said it
    /// holds it.
    pub(crate) fn holds(&self, vip: &str, owner: NodeId, epoch: u64, within_ms: u64) -> bool {
        let now = self.now_ms();
        self.lock().seen.holds(vip, owner, epoch, now, within_ms)
    }

    /// Whether `owner` claimed `vip` at `epoch` within `within_ms`, as heard here.
    pub(crate) fn claimed(&self, vip: &str, owner: NodeId, epoch: u64, within_ms: u64) -> bool {
        let now = self.now_ms();
        self.lock().seen.claimed(vip, owner, epoch, now, within_ms)
    }

    /// The hosts whose agent renewed with this member within `within_ms`.
    pub(crate) fn heard_within(&self, within_ms: u64) -> std::collections::BTreeSet<NodeId> {
        let now = self.now_ms();
        self.lock()
            .seen
            .renewed_at
            .iter()
            .filter(|(_, at)| now.saturating_sub(**at) < within_ms)
            .map(|(host, _)| *host)
            .collect()
    }

    /// Whether a host other than `except` said, within `within_ms`, that it holds `vip`.
    pub(crate) fn held_by_other(&self, vip: &str, except: NodeId, within_ms: u64) -> bool {
        let now = self.now_ms();
        self.lock()
            .seen
            .holding
            .iter()
            .any(|((name, host), &(_, at))| {
                name == vip && *host != except && now.saturating_sub(at) < within_ms
            })
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
        seen.holding.retain(|(name, _), _| known(name));
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
            held: false,
        };
        s.record(12, std::slice::from_ref(&claim), &[], false, false);
        assert!(s.claimed("api", 12, 4, 1_000) && !s.claimed("api", 12, 3, 1_000));
        // The previous holder still claiming epoch 3 does not hide the new owner's claim.
        let old = VipClaim {
            name: "api".into(),
            epoch: 3,
            standby: false,
            held: false,
        };
        s.record(11, std::slice::from_ref(&old), &[], false, false);
        assert!(s.claimed("api", 12, 4, 1_000) && s.claimed("api", 11, 3, 1_000));
        // A standby's claim is not an owner's.
        let standby = VipClaim {
            name: "api".into(),
            epoch: 5,
            standby: true,
            held: false,
        };
        s.record(13, std::slice::from_ref(&standby), &[], false, false);
        assert!(!s.claimed("api", 13, 5, 1_000));
        // A VIP the state no longer has is forgotten.
        let (seen, _) = s.view(&FleetState::new());
        assert!(seen.claims.is_empty());
        assert!(seen.renewed_at.contains_key(&12));
    }

    fn claim(epoch: u64, standby: bool, held: bool) -> VipClaim {
        VipClaim {
            name: "api".into(),
            epoch,
            standby,
            held,
        }
    }

    /// The sightings as if this member started `ago_ms` ago.
    fn started(ago_ms: u64) -> VipSightings {
        let now = Instant::now();
        VipSightings {
            inner: Mutex::new(Inner::default()),
            started: now
                .checked_sub(std::time::Duration::from_millis(ago_ms))
                .unwrap_or(now),
        }
    }

    #[test]
    fn a_restarted_member_does_not_take_its_ignorance_for_the_owners_silence() {
        // Up 1 s, never heard the owner (host 11): its link may simply not be back yet.
        let s = started(1_000);
        assert!(
            !s.quiet("api", 11, 1, 300),
            "first asked: not known long enough"
        );
        s.lock().asked_since.insert("api".into(), (1, 0));
        assert!(!s.quiet("api", 11, 1, 300), "never heard the owner's agent");
        // Up past the reconnect bound: the owner would have reached it by now.
        let s = started(AGENT_RECONNECT_MS + 1_000);
        assert!(!s.quiet("api", 11, 1, 300));
        s.lock().asked_since.insert("api".into(), (1, 0));
        assert!(s.quiet("api", 11, 1, 300));
        // Another epoch starts the count again.
        assert!(!s.quiet("api", 11, 2, 300));
        // Heard the owner's agent (not claiming this epoch): quiet before the bound too.
        let s = started(1_000);
        s.record(11, &[], &[], false, false);
        s.lock().asked_since.insert("api".into(), (1, 0));
        assert!(s.quiet("api", 11, 1, 300));
        // ... but never while it claims.
        s.record(11, &[claim(1, false, true)], &[], false, false);
        assert!(!s.quiet("api", 11, 1, 300));
    }

    #[test]
    fn holding_is_what_the_latest_claim_said() {
        let s = VipSightings::new();
        s.record(11, &[claim(1, false, true)], &[], false, false);
        assert!(s.holds("api", 11, 1, 200) && !s.holds("api", 11, 2, 200));
        assert!(s.held_by_other("api", 12, 200) && !s.held_by_other("api", 11, 200));
        s.record(11, &[claim(1, false, false)], &[], false, false);
        assert!(!s.holds("api", 11, 1, 200));
        // A standby that holds the next epoch says so too (the leader records it).
        s.record(12, &[claim(2, true, true)], &[], false, false);
        assert!(s.holds("api", 12, 2, 200));
        assert!(
            !s.claimed("api", 12, 2, 200),
            "a standby's claim is no owner's"
        );
    }
}
