//! Recovering the VMs of a fenced host (encoding v2): [`Command::RecoverVm`] moves a VM off a
//! host that is `fenced` (or records why it waits), [`Command::EndRecovery`] closes the entry
//! once the VM reached its desired state on the new host. Both are compare-and-sets on what
//! the leader saw, so a decision taken on a view that has since changed never lands.
//!
//! The one rule enforced here, whatever the proposer believes: a VM leaves its host only while
//! that host is `fenced`, i.e. after the leader proved the host can no longer run anything
//! (docs/design/fencing.md, rule 3). The command is refused otherwise.
//!
//! [`Command::RecoverVm`]: super::Command::RecoverVm
//! [`Command::EndRecovery`]: super::Command::EndRecovery

use protocol::NodeId;
use protocol::fleet::{EventKind, EventLevel, HostState, Recovery, UnixMillis, VmPhase, VmStatus};

use super::vms::not_found;
use super::{CommandReply, FleetState, StateError};

impl FleetState {
    /// The recoveries under way, by VM name.
    pub fn recoveries(&self) -> &std::collections::BTreeMap<String, Recovery> {
        &self.recoveries
    }

    /// The recovery of VM `name`, if one is under way.
    pub fn recovery(&self, name: &str) -> Option<&Recovery> {
        self.recoveries.get(name)
    }

    /// Moves VM `name` from the fenced host `from` to `to`, or records that it waits (`to` is
    /// `None`) with `message`.
    pub(super) fn recover_vm(
        &mut self,
        name: &str,
        from: NodeId,
        to: Option<NodeId>,
        message: &str,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let from_host = self
            .hosts
            .get(&from)
            .ok_or_else(|| not_found(EventKind::Host, from.to_string()))?;
        if from_host.state != HostState::Fenced {
            return Err(StateError::Conflict(format!(
                "host {} ({from}) is {}: only the VMs of a fenced host are recovered",
                from_host.name, from_host.state
            )));
        }
        let from_node = from_host.name.clone();
        let to_name = match to {
            Some(id) => Some(self.move_target(id, from)?),
            None => None,
        };
        if let Some(m) = self.migrations.get(name) {
            return Err(StateError::Conflict(format!(
                "VM {name:?} was moving from {} to {} when {} was fenced: it is not recovered \
                 until {}'s agent says whether it arrived there",
                m.from_node, m.to_node, m.from_node, m.to_node
            )));
        }
        let rec = self
            .vms
            .get_mut(name)
            .ok_or_else(|| not_found(EventKind::Vm, name))?;
        if rec.deleting {
            return Err(StateError::Conflict(format!(
                "VM {name:?} is being deleted"
            )));
        }
        if rec.assignment.host != Some(from) {
            return Err(StateError::Conflict(format!(
                "VM {name:?} is no longer on host {from_node}"
            )));
        }
        let ha = rec.spec.ha.policy(&self.settings.ha);
        if !ha.fences() || ha.recovery == protocol::spec::RecoveryMode::None {
            return Err(StateError::Conflict(format!(
                "VM {name:?} is not recovered (HA {}, recovery {})",
                ha.state.map_or("off", |s| s.as_str()),
                ha.recovery
            )));
        }
        let previous = self.recoveries.get(name);
        let since = previous
            .filter(|r| r.from_host == from)
            .map_or(now, |r| r.since);
        let unchanged = previous.is_some_and(|r| r.to_host == to && r.message == message);
        if unchanged {
            return Ok(CommandReply::Done);
        }
        let entry = Recovery {
            from_host: from,
            from_node: from_node.clone(),
            mode: ha.recovery,
            to_host: to,
            message: message.to_string(),
            since,
            updated_at: now,
        };
        let (level, text) = match &to_name {
            Some(to_name) => {
                rec.assignment.host = to;
                // The new host has confirmed nothing yet: with no generation observed, the
                // reconciler sends its Ensure at once instead of waiting for an inventory.
                rec.status = VmStatus {
                    phase: VmPhase::Scheduled,
                    message: format!("recovering from fenced host {from_node} onto {to_name}"),
                    updated_at: now,
                    ips: rec.status.ips.clone(),
                    ..VmStatus::default()
                };
                (
                    EventLevel::Warning,
                    format!(
                        "recovering from fenced host {from_node} onto {to_name} ({}): {message}",
                        ha.recovery
                    ),
                )
            }
            None => {
                // The fence stopped it (its host's lease ended with its HA guests stopped):
                // shown so, where it is, until a host takes it.
                rec.status = VmStatus {
                    phase: VmPhase::Stopped,
                    message: format!(
                        "stopped by the fence of {from_node}; recovery waits: {message}"
                    ),
                    updated_at: now,
                    ..rec.status.clone()
                };
                (
                    EventLevel::Warning,
                    format!("recovering from fenced host {from_node}: waiting: {message}"),
                )
            }
        };
        self.recoveries.insert(name.to_string(), entry);
        self.events.push(now, level, EventKind::Vm, name, text);
        Ok(CommandReply::Done)
    }

    /// The name of host `to`, which a VM moving off `from` may go to: another host, online.
    pub(super) fn move_target(&self, to: NodeId, from: NodeId) -> Result<String, StateError> {
        let h = self
            .hosts
            .get(&to)
            .ok_or_else(|| not_found(EventKind::Host, to.to_string()))?;
        if h.state != HostState::Online || to == from {
            return Err(StateError::Conflict(format!(
                "host {} ({to}) is {}: a VM moves onto another online host",
                h.name, h.state
            )));
        }
        Ok(h.name.clone())
    }

    /// Closes VM `name`'s recovery, which the proposer saw going from `from` (so an entry a
    /// newer recovery replaced is left alone), with `message` as the event.
    pub(super) fn end_recovery(
        &mut self,
        name: &str,
        from: NodeId,
        message: &str,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        match self.recoveries.get(name) {
            Some(r) if r.from_host == from => {}
            _ => return Ok(CommandReply::Done),
        }
        self.recoveries.remove(name);
        self.info(now, EventKind::Vm, name, message);
        Ok(CommandReply::Done)
    }
}
