//! Hosts going down cleanly (encoding v2): [`Command::HostLeaving`] records what the shutdown
//! policy makes of an agent that says it stops ([`crate::shutdown::decide`]), before the leader
//! answers it; [`Command::HostReturned`] notes a beat of another agent session (the host is
//! back: a maintenance the policy started ends); [`Command::EndLeaving`] drops the record once
//! the hold it may have granted can no longer run.
//!
//! What is enforced here: the record exists before any leader can grant its hold (the leader
//! answers only after the commit), and it is never replaced by a shorter hold, so every leader
//! counts the longest lease the host may hold (the fence proof of [`crate::liveness`]).
//!
//! [`Command::HostLeaving`]: super::Command::HostLeaving
//! [`Command::HostReturned`]: super::Command::HostReturned
//! [`Command::EndLeaving`]: super::Command::EndLeaving

use std::collections::BTreeMap;

use protocol::NodeId;
use protocol::agent::{LeaveAction, LeaveKind};
use protocol::fleet::{EventKind, HostState, Leaving, UnixMillis};

use super::vms::not_found;
use super::{CommandReply, FleetState, StateError};
use crate::shutdown;

impl FleetState {
    /// The hosts leaving or back from leaving, by id.
    pub fn leaving(&self) -> &BTreeMap<NodeId, Leaving> {
        &self.leaving
    }

    /// Records that the agent of host `id` (session `boot_id`) stops for `kind`.
    pub(super) fn host_leaving(
        &mut self,
        id: NodeId,
        kind: LeaveKind,
        boot_id: u64,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let host = self
            .hosts
            .get(&id)
            .ok_or_else(|| not_found(EventKind::Host, id.to_string()))?;
        if !matches!(
            host.state,
            HostState::Online | HostState::Maintenance | HostState::Unreachable
        ) {
            return Err(StateError::Conflict(format!(
                "host {} is {}: only a host whose agent beats can leave cleanly",
                host.name, host.state
            )));
        }
        if let Some(l) = self.leaving.get(&id)
            && l.boot_id == boot_id
            && !l.returned
        {
            return Ok(CommandReply::Done);
        }
        let (action, hold_ms) = shutdown::decide(self.settings.ha.shutdown_policy, kind);
        let name = host.name.clone();
        let policy = self.settings.ha.shutdown_policy;
        if action == LeaveAction::Failover {
            // Nothing to hold; a hold granted to an earlier session still counts.
            self.info(
                now,
                EventKind::Host,
                &name,
                format!(
                    "its agent stops for {} (shutdown policy {policy}): fenced once its lease \
                     ends, its HA guests recovered elsewhere",
                    kind.describe()
                ),
            );
            return Ok(CommandReply::Done);
        }
        let drained = action == LeaveAction::Drain && host.state == HostState::Online;
        if drained {
            self.set_maintenance(id, true, now)?;
        }
        // Never shorter than a hold an earlier session may still hold.
        let hold_ms = self
            .leaving
            .get(&id)
            .map_or(hold_ms, |l| l.hold_ms.max(hold_ms));
        self.leaving.insert(
            id,
            Leaving {
                kind,
                action,
                boot_id,
                hold_ms,
                drained,
                since: now,
                returned: false,
            },
        );
        let what = match (kind, action) {
            (LeaveKind::Restart, _) => {
                "its guests keep running; nothing is fenced or moved".to_string()
            }
            (_, LeaveAction::Drain) => format!(
                "shutdown policy {policy}: drained first, whatever cannot move stays frozen"
            ),
            _ => format!(
                "shutdown policy {policy}: its guests stay, frozen, started again when it is back"
            ),
        };
        self.info(
            now,
            EventKind::Host,
            &name,
            format!(
                "its agent stops for {} ({what}; not fenced for {} s)",
                kind.describe(),
                hold_ms / 1000
            ),
        );
        Ok(CommandReply::Done)
    }

    /// Notes that host `id` beats from agent session `boot_id`: back, if another session left.
    pub(super) fn host_returned(
        &mut self,
        id: NodeId,
        boot_id: u64,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let Some(l) = self.leaving.get_mut(&id) else {
            return Ok(CommandReply::Done);
        };
        if l.returned || l.boot_id == boot_id {
            return Ok(CommandReply::Done);
        }
        l.returned = true;
        let (kind, drained) = (l.kind, l.drained);
        let name = self
            .hosts
            .get(&id)
            .map_or_else(|| id.to_string(), |h| h.name.clone());
        let in_maintenance = self
            .hosts
            .get(&id)
            .is_some_and(|h| h.state == HostState::Maintenance);
        if drained && in_maintenance {
            self.set_maintenance(id, false, now)?;
        }
        self.info(
            now,
            EventKind::Host,
            name,
            format!("back after {}", kind.describe()),
        );
        Ok(CommandReply::Done)
    }

    /// Drops the record of host `id`, which must be back.
    pub(super) fn end_leaving(&mut self, id: NodeId) -> Result<CommandReply, StateError> {
        match self.leaving.get(&id) {
            None => Ok(CommandReply::Done),
            Some(l) if l.returned => {
                self.leaving.remove(&id);
                Ok(CommandReply::Done)
            }
            Some(_) => Err(StateError::Conflict(format!(
                "host {id} has not come back: its hold may still run"
            ))),
        }
    }
}
