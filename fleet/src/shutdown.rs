//! The shutdown policy (PVE HA's `shutdown_policy`) as a pure decision: what the fleet does
//! with a host whose agent says it is going down cleanly, and for how long its guests may stay
//! frozen (docs/design/maintenance.md, "Shutdown policy").
//!
//! | agent says | freeze | failover | migrate | conditional |
//! |---|---|---|---|---|
//! | restart  | freeze (60 s) | freeze (60 s) | freeze (60 s) | freeze (60 s) |
//! | reboot   | freeze (5 min) | failover | drain, then freeze | freeze (5 min) |
//! | power-off| freeze (5 min) | failover | drain, then freeze | failover |
//!
//! An agent restart never moves or fences anything, whatever the policy: the guests keep
//! running, and the hold covers the restart.

use protocol::NodeId;
use protocol::agent::{LeaveAction, LeaveKind};
use protocol::spec::ShutdownPolicy;

use crate::migration;
use crate::scheduler::HostView;
use crate::state::FleetState;

/// The hold of an agent restart: the new process beats again within seconds.
pub const RESTART_HOLD_MS: u64 = 60_000;
/// The hold of a host that reboots or powers off frozen: a PVE host reboots in a few minutes.
pub const FREEZE_HOLD_MS: u64 = 300_000;

/// What `policy` makes of `kind`, and the hold lease that goes with it (0: none, the
/// heartbeat lease stays).
pub fn decide(policy: ShutdownPolicy, kind: LeaveKind) -> (LeaveAction, u64) {
    match (kind, policy) {
        (LeaveKind::Restart, _) => (LeaveAction::Freeze, RESTART_HOLD_MS),
        (_, ShutdownPolicy::Failover) | (LeaveKind::PowerOff, ShutdownPolicy::Conditional) => {
            (LeaveAction::Failover, 0)
        }
        (_, ShutdownPolicy::Migrate) => (LeaveAction::Drain, FREEZE_HOLD_MS),
        (_, ShutdownPolicy::Freeze) | (LeaveKind::Reboot, ShutdownPolicy::Conditional) => {
            (LeaveAction::Freeze, FREEZE_HOLD_MS)
        }
    }
}

/// How a drain before a shutdown stands: the managed guests still on host `id` that a drain
/// moves (not those that stay: [`crate::maintenance::stays`]), and whether
/// the drain can do no more (none left, or every one left can go nowhere: not moving, no failed
/// move waiting for its retry, and no host that takes it).
pub fn drain_state(state: &FleetState, views: &[HostView], id: NodeId) -> (u32, bool) {
    let left: Vec<&str> = state
        .vms()
        .values()
        .filter(|r| {
            r.assignment.host == Some(id) && !r.deleting && !crate::maintenance::stays(state, r)
        })
        .map(|r| r.spec.name.as_str())
        .collect();
    let stuck = left.iter().all(|name| {
        state.migration(name).is_none()
            && state.drain_failed_at(name).is_none()
            && migration::target(state, views.to_vec(), name, None).is_err()
    });
    (u32::try_from(left.len()).unwrap_or(u32::MAX), stuck)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_table_is_pves_and_a_restart_always_freezes() {
        use LeaveAction::{Drain, Failover, Freeze};
        use LeaveKind::{PowerOff, Reboot, Restart};
        use ShutdownPolicy::{Conditional, Failover as Fo, Freeze as Fz, Migrate};
        let table = [
            (Fz, [Freeze, Freeze, Freeze]),
            (Fo, [Freeze, Failover, Failover]),
            (Migrate, [Freeze, Drain, Drain]),
            (Conditional, [Freeze, Freeze, Failover]),
        ];
        for (policy, actions) in table {
            for (kind, want) in [Restart, Reboot, PowerOff].into_iter().zip(actions) {
                let (action, hold) = decide(policy, kind);
                assert_eq!(action, want, "{policy} {kind:?}");
                let want_hold = match (kind, action) {
                    (Restart, _) => RESTART_HOLD_MS,
                    (_, Failover) => 0,
                    _ => FREEZE_HOLD_MS,
                };
                assert_eq!(hold, want_hold, "{policy} {kind:?}");
            }
        }
    }
}
