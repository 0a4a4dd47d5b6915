//! The failed starts of HA `started` VMs (encoding v2), PVE HA's `max_restart` and
//! `max_relocate`: the leader counts each failed start ([`Command::HaStartFailed`]), and its
//! planner (`fleet::recovery`) decides from the count to retry, to move the VM to a host it has
//! not failed on ([`Command::HaRelocate`]) or to give up ([`Command::HaGiveUp`], PVE's `error`
//! state, which stops every retry until the VM's HA state changes).
//!
//! [`Command::HaStartFailed`]: super::Command::HaStartFailed
//! [`Command::HaRelocate`]: super::Command::HaRelocate
//! [`Command::HaGiveUp`]: super::Command::HaGiveUp

use protocol::NodeId;
use protocol::fleet::{
    EventKind, EventLevel, Recovery, StartFailures, UnixMillis, VmPhase, VmStatus,
};
use protocol::spec::{HaState, RecoveryMode};

use super::vms::not_found;
use super::{CommandReply, FleetState, StateError};

impl FleetState {
    /// The failed starts of HA VMs, by VM name.
    pub fn start_failures(&self) -> &std::collections::BTreeMap<String, StartFailures> {
        &self.start_failures
    }

    /// VM `name`'s failed starts, if any are counted.
    pub fn start_failure(&self, name: &str) -> Option<&StartFailures> {
        self.start_failures.get(name)
    }

    /// Whether the fleet gave up starting VM `name` (PVE HA's `error` state).
    pub fn ha_error(&self, name: &str) -> Option<&str> {
        self.start_failures.get(name)?.error.as_deref()
    }

    pub(super) fn ha_start_failed(
        &mut self,
        name: &str,
        host: NodeId,
        message: &str,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let rec = self
            .vms
            .get(name)
            .ok_or_else(|| not_found(EventKind::Vm, name))?;
        if rec.assignment.host != Some(host) || rec.spec.ha.state != Some(HaState::Started) {
            return Err(StateError::Conflict(format!(
                "VM {name:?} is not an HA started guest on host {host}"
            )));
        }
        let entry = self.start_failures.entry(name.to_string()).or_default();
        if entry.error.is_some() {
            return Ok(CommandReply::Done);
        }
        if entry.host != host {
            entry.host = host;
            entry.failures = 0;
        }
        entry.failures += 1;
        entry.last_message = message.to_string();
        entry.updated_at = now;
        Ok(CommandReply::Done)
    }

    pub(super) fn ha_relocate(
        &mut self,
        name: &str,
        from: NodeId,
        to: NodeId,
        message: &str,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let from_node = self
            .hosts
            .get(&from)
            .map(|h| h.name.clone())
            .ok_or_else(|| not_found(EventKind::Host, from.to_string()))?;
        let to_name = self.move_target(to, from)?;
        let rec = self
            .vms
            .get_mut(name)
            .ok_or_else(|| not_found(EventKind::Vm, name))?;
        let entry = self.start_failures.get_mut(name);
        let Some(entry) = entry.filter(|e| e.host == from && e.error.is_none()) else {
            return Err(StateError::Conflict(format!(
                "VM {name:?} has no failed starts on host {from_node} to relocate after"
            )));
        };
        if rec.assignment.host != Some(from) || rec.deleting {
            return Err(StateError::Conflict(format!(
                "VM {name:?} is no longer on host {from_node}"
            )));
        }
        entry.tried.push(from);
        entry.host = to;
        entry.failures = 0;
        entry.updated_at = now;
        rec.assignment.host = Some(to);
        rec.status = VmStatus {
            phase: VmPhase::Scheduled,
            message: format!("relocating from {from_node} onto {to_name}: {message}"),
            updated_at: now,
            ips: rec.status.ips.clone(),
            ..VmStatus::default()
        };
        self.recoveries.insert(
            name.to_string(),
            Recovery {
                from_host: from,
                from_node: from_node.clone(),
                mode: RecoveryMode::Relocate,
                to_host: Some(to),
                message: message.to_string(),
                since: now,
                updated_at: now,
            },
        );
        self.events.push(
            now,
            EventLevel::Warning,
            EventKind::Vm,
            name,
            format!("relocating from {from_node} onto {to_name}: {message}"),
        );
        Ok(CommandReply::Done)
    }

    pub(super) fn ha_give_up(
        &mut self,
        name: &str,
        message: &str,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let rec = self
            .vms
            .get_mut(name)
            .ok_or_else(|| not_found(EventKind::Vm, name))?;
        let Some(entry) = self.start_failures.get_mut(name) else {
            return Err(StateError::Conflict(format!(
                "VM {name:?} has no failed starts to give up after"
            )));
        };
        if entry.error.is_some() {
            return Ok(CommandReply::Done);
        }
        entry.error = Some(message.to_string());
        entry.updated_at = now;
        rec.status.phase = VmPhase::Failed;
        rec.status.message = format!("HA error: {message}");
        rec.status.updated_at = now;
        self.events.push(
            now,
            EventLevel::Warning,
            EventKind::Vm,
            name,
            format!("HA error: {message}"),
        );
        Ok(CommandReply::Done)
    }

    pub(super) fn ha_clear_failures(
        &mut self,
        name: &str,
        message: &str,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        if self.start_failures.remove(name).is_some() {
            self.info(now, EventKind::Vm, name, message);
        }
        Ok(CommandReply::Done)
    }
}
