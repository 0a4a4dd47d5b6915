//! What the agent does about its lease, pure (docs/design/fencing-agent.md): its HA guests
//! must be stopped and its VIPs dropped *before* the lease ends, so it starts fencing at
//! `lease_end − lead`, and it says in the fence record whether the guard must reset the host
//! should the agent fail to.
//!
//! ```text
//!  no lease known ─────────────────────────────▶ Idle  (not armed)
//!  now < lease_end − lead ─────────────────────▶ Idle  (armed unless no HA guest runs)
//!  now ≥ lease_end − lead, HA guests may run ──▶ Fence (armed: the guard backs it up)
//!  now ≥ lease_end − lead, none runs ──────────▶ Done  (not armed)
//! ```
//!
//! "No lease known" is an agent that has not been acknowledged in this boot and found no
//! record of this boot: nothing was promised to the coordinators yet. A renewal moves
//! `lease_end` and brings the agent back to Idle.

use std::time::{Duration, Instant};

/// What the agent knows about its HA guests running now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HaGuests {
    /// Not read yet (right after start): they may run.
    Unknown,
    /// None runs.
    NoneRunning,
    /// At least one runs.
    Running,
}

/// The inputs of one decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FenceInput {
    /// When the lease ends; `None` when no lease is known in this boot.
    pub lease_end: Option<Instant>,
    /// How long before the lease end fencing starts (see [`effective_lead`]).
    pub lead: Duration,
    /// Now.
    pub now: Instant,
    /// The HA guests.
    pub ha: HaGuests,
}

/// What to do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FenceStep {
    /// The lease holds (or none is known): guests may start, VIPs may be claimed.
    Idle,
    /// The lease ends within `lead` and HA guests may run: stop them, drop the VIPs.
    Fence,
    /// The lease ends within `lead` (or ended) and no HA guest runs: hold nothing, start
    /// nothing, until a renewal.
    Done,
}

/// A decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FenceDecision {
    /// What to do.
    pub step: FenceStep,
    /// What the fence record says: HA guests may run and the lease is what protects them.
    pub armed: bool,
    /// When to decide again at the latest (the fencing start), if nothing changes before.
    pub wake_at: Option<Instant>,
}

/// The decision for `input`.
pub fn decide(input: &FenceInput) -> FenceDecision {
    let Some(end) = input.lease_end else {
        return FenceDecision {
            step: FenceStep::Idle,
            armed: false,
            wake_at: None,
        };
    };
    let may_run = input.ha != HaGuests::NoneRunning;
    // An end too close to the clock's origin to subtract from: fence at once.
    let fence_at = end.checked_sub(input.lead).unwrap_or(input.now);
    if input.now < fence_at {
        return FenceDecision {
            step: FenceStep::Idle,
            armed: may_run,
            wake_at: Some(fence_at),
        };
    }
    FenceDecision {
        step: if may_run {
            FenceStep::Fence
        } else {
            FenceStep::Done
        },
        // Past the end, an agent that has not read its guests yet (it just started, after a
        // guard reset or a long stop) does not arm: the guard would reset the host at once
        // and kill the agent before it could look, at every start. It stops what it finds
        // itself; a record armed by the previous run stays armed (the caller passes
        // `Running` then).
        armed: match input.ha {
            HaGuests::Running => true,
            HaGuests::NoneRunning => false,
            HaGuests::Unknown => input.now < end,
        },
        wake_at: None,
    }
}

/// The lead to use under a lease of `lease` length: the configured one, but always less than
/// half the lease, or a renewal due every heartbeat could never keep the agent out of fencing.
/// (A lease read back from the record has no known length: the configured lead holds.)
pub fn effective_lead(lead: Duration, lease: Option<Duration>) -> Duration {
    match lease {
        Some(lease) if lead * 2 >= lease => (lease / 2).saturating_sub(Duration::from_millis(1)),
        _ => lead,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use HaGuests::{NoneRunning, Running, Unknown};

    const MS: Duration = Duration::from_millis(1);
    const LEAD: Duration = Duration::from_millis(2000);

    fn at(t0: Instant, ms: u64) -> Instant {
        t0 + Duration::from_millis(ms)
    }

    #[test]
    fn fencing_begins_at_lease_end_minus_lead_and_only_with_ha_guests() {
        let t0 = Instant::now();
        let end = Some(at(t0, 10_000));
        // (ms after t0, HA guests, step, armed, wake at ms)
        let table = [
            (0, Running, FenceStep::Idle, true, Some(8_000)),
            (7_999, Running, FenceStep::Idle, true, Some(8_000)),
            (8_000, Running, FenceStep::Fence, true, None),
            (9_999, Running, FenceStep::Fence, true, None),
            (10_000, Running, FenceStep::Fence, true, None),
            (60_000, Running, FenceStep::Fence, true, None),
            (0, NoneRunning, FenceStep::Idle, false, Some(8_000)),
            (8_000, NoneRunning, FenceStep::Done, false, None),
            (12_000, NoneRunning, FenceStep::Done, false, None),
            // Right after start, before the first inventory: they may run.
            (0, Unknown, FenceStep::Idle, true, Some(8_000)),
            (8_000, Unknown, FenceStep::Fence, true, None),
            // Started after the end (after a guard reset): fence, but never arm a past end
            // without knowing a guest runs, or the guard would kill every new agent at once.
            (10_000, Unknown, FenceStep::Fence, false, None),
            (60_000, Unknown, FenceStep::Fence, false, None),
        ];
        for (now, ha, step, armed, wake) in table {
            let d = decide(&FenceInput {
                lease_end: end,
                lead: LEAD,
                now: at(t0, now),
                ha,
            });
            assert_eq!(d.step, step, "+{now} ms {ha:?}");
            assert_eq!(d.armed, armed, "+{now} ms {ha:?}");
            assert_eq!(d.wake_at, wake.map(|w| at(t0, w)), "+{now} ms {ha:?}");
        }
    }

    #[test]
    fn without_a_lease_nothing_is_fenced_or_armed() {
        let t0 = Instant::now();
        for ha in [Unknown, NoneRunning, Running] {
            let d = decide(&FenceInput {
                lease_end: None,
                lead: LEAD,
                now: t0,
                ha,
            });
            assert_eq!(
                d,
                FenceDecision {
                    step: FenceStep::Idle,
                    armed: false,
                    wake_at: None
                },
                "{ha:?}"
            );
        }
    }

    #[test]
    fn a_renewal_before_the_deadline_cancels_fencing_and_one_after_ends_it() {
        let t0 = Instant::now();
        let decide_at = |end_ms: u64, now_ms: u64| {
            decide(&FenceInput {
                lease_end: Some(at(t0, end_ms)),
                lead: LEAD,
                now: at(t0, now_ms),
                ha: Running,
            })
            .step
        };
        assert_eq!(decide_at(10_000, 7_900), FenceStep::Idle);
        // Renewed at 7.9 s (beat sent then, lease 10 s): the deadline moves to 15.9 s.
        assert_eq!(decide_at(17_900, 8_000), FenceStep::Idle);
        assert_eq!(decide_at(17_900, 15_899), FenceStep::Idle);
        assert_eq!(decide_at(17_900, 15_900), FenceStep::Fence);
        // A renewal that comes while fencing brings the agent back.
        assert_eq!(decide_at(10_000, 9_000), FenceStep::Fence);
        assert_eq!(decide_at(19_000, 9_000), FenceStep::Idle);
    }

    #[test]
    fn the_lead_stays_below_half_the_lease() {
        let s = Duration::from_secs;
        assert_eq!(effective_lead(s(2), Some(s(10))), s(2));
        assert_eq!(effective_lead(s(2), None), s(2));
        assert_eq!(effective_lead(s(2), Some(s(4))), 1999 * MS);
        assert_eq!(effective_lead(s(2), Some(s(3))), 1499 * MS);
        assert!(effective_lead(s(2), Some(s(1))) * 2 < s(1));
        assert_eq!(effective_lead(s(2), Some(Duration::ZERO)), Duration::ZERO);
    }
}
