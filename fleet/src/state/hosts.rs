//! Hosts, coordinator members and settings: registration and lifecycle (maintenance included),
//! bookkeeping of the Raft members (the membership itself is openraft's), and the node ids
//! nobody may reuse.

use protocol::NodeId;
use protocol::admin::ApplyOutcome;
use protocol::fleet::{
    Capacity, EventKind, EventLevel, Host, HostFacts, HostState, Member, PVE_CLUSTER_LABEL,
    Settings, UnixMillis, validate_host, validate_member_addr, validate_settings,
};
use protocol::spec::{Labels, SpecError};

use super::vms::{defined, not_found};

/// The longest reason a host's state may carry.
pub(crate) const MAX_REASON_CHARS: usize = 400;
use super::{CommandReply, FleetState, StateError};

impl FleetState {
    /// A node id never handed out before.
    pub(super) fn allocate_node_id(&mut self) -> NodeId {
        let id = self.next_node_id.max(1);
        self.next_node_id = id.saturating_add(1);
        id
    }

    /// Keeps ids created outside the allocator (the first member) from being handed out.
    fn note_node_id(&mut self, id: NodeId) {
        self.next_node_id = self.next_node_id.max(id.saturating_add(1));
    }

    fn refuse_revoked(&self, id: NodeId) -> Result<(), StateError> {
        if self.revoked_nodes.contains(&id) {
            return Err(StateError::Conflict(format!(
                "node {id} was removed: its id and certificate are refused for good"
            )));
        }
        Ok(())
    }

    pub(super) fn register_host(
        &mut self,
        id: NodeId,
        name: String,
        labels: Labels,
        capacity: Capacity,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        self.refuse_revoked(id)?;
        validate_host(&name, &labels)?;
        if let Some(other) = self.host_by_name(&name).filter(|h| h.id != id) {
            return Err(StateError::Conflict(format!(
                "host name {name} is already used by host {}",
                other.id
            )));
        }
        self.note_node_id(id);
        let message = match self.hosts.get_mut(&id) {
            Some(h) if h.name == name && h.labels == labels && h.capacity == capacity => {
                return Ok(CommandReply::Done);
            }
            Some(h) => {
                h.name = name.clone();
                h.labels = labels;
                h.capacity = capacity;
                "registration updated".to_string()
            }
            None => {
                self.hosts.insert(
                    id,
                    Host {
                        id,
                        name: name.clone(),
                        labels,
                        capacity,
                        state: HostState::Joining,
                        registered_at: now,
                        state_since: now,
                        state_reason: String::new(),
                        facts: None,
                        operator_labels: Default::default(),
                    },
                );
                "registered".to_string()
            }
        };
        self.info(
            now,
            EventKind::Host,
            format!("{name} ({id})"),
            format!(
                "{message}: {} CPUs, {} MiB",
                capacity.cpus, capacity.memory_mib
            ),
        );
        Ok(CommandReply::Done)
    }

    /// Replaces a host's facts; no event (they change with every VM created).
    pub(super) fn set_host_facts(
        &mut self,
        id: NodeId,
        facts: HostFacts,
    ) -> Result<CommandReply, StateError> {
        let host = self
            .hosts
            .get_mut(&id)
            .ok_or_else(|| not_found(EventKind::Host, id.to_string()))?;
        host.facts = Some(facts);
        Ok(CommandReply::Done)
    }

    /// Host `id`, known and not removed.
    fn live_host(&self, id: NodeId) -> Result<&Host, StateError> {
        let host = self
            .hosts
            .get(&id)
            .ok_or_else(|| not_found(EventKind::Host, id.to_string()))?;
        if host.state == HostState::Removed {
            return Err(StateError::Conflict(format!(
                "host {} ({id}) was removed",
                host.name
            )));
        }
        Ok(host)
    }

    pub(super) fn set_host_state(
        &mut self,
        id: NodeId,
        state: HostState,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let host = self.live_host(id)?;
        if host.state == state {
            return Ok(CommandReply::Done);
        }
        // A v1 command records no reason (a v1 snapshot could not carry one).
        self.move_host(id, state, String::new(), now);
        Ok(CommandReply::Done)
    }

    /// [`Command::SetHostLiveness`](super::Command::SetHostLiveness): the compare-and-set of
    /// the leader's liveness decisions.
    pub(super) fn set_host_liveness(
        &mut self,
        id: NodeId,
        expected: HostState,
        state: HostState,
        reason: &str,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let host = self
            .hosts
            .get(&id)
            .ok_or_else(|| not_found(EventKind::Host, id.to_string()))?;
        if host.state != expected {
            return Err(StateError::Conflict(format!(
                "host {} ({id}) is {}, not {expected}: the liveness decision was taken on an \
                 older view",
                host.name, host.state
            )));
        }
        if matches!(state, HostState::Removed | HostState::Joining) {
            return Err(StateError::Conflict(format!(
                "host {} ({id}): liveness moves a host between online, unreachable and fenced, \
                 not to {state}",
                host.name
            )));
        }
        if reason.chars().count() > MAX_REASON_CHARS || reason.chars().any(char::is_control) {
            return Err(SpecError::text(
                "reason",
                reason,
                format!("at most {MAX_REASON_CHARS} characters, no control characters"),
            )
            .into());
        }
        if host.state == state && host.state_reason == reason {
            return Ok(CommandReply::Done);
        }
        self.move_host(id, state, reason.to_string(), now);
        Ok(CommandReply::Done)
    }

    /// Puts host `id` into maintenance or takes it out; see [`super::Command::SetMaintenance`].
    pub(super) fn set_maintenance(
        &mut self,
        id: NodeId,
        enable: bool,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let host = self
            .hosts
            .get(&id)
            .ok_or_else(|| not_found(EventKind::Host, id.to_string()))?;
        let (from, to, reason) = if enable {
            (
                HostState::Online,
                HostState::Maintenance,
                "maintenance: its guests and VIPs are moved off",
            )
        } else {
            (
                HostState::Maintenance,
                HostState::Online,
                "maintenance over: the guests drained off it come back",
            )
        };
        if host.state == to {
            return Ok(CommandReply::Done);
        }
        if host.state != from {
            return Err(StateError::Conflict(if enable {
                format!(
                    "host {} is {}: only an online host goes into maintenance (a host that may \
                     be down cannot be drained; its HA guests are recovered once it is fenced)",
                    host.name, host.state
                )
            } else {
                format!("host {} is {}, not in maintenance", host.name, host.state)
            }));
        }
        if !enable {
            // Failed drains start afresh at the next maintenance.
            let on_host: Vec<String> = self
                .vms
                .iter()
                .filter(|(_, r)| r.assignment.host == Some(id))
                .map(|(n, _)| n.clone())
                .collect();
            for name in on_host {
                self.drain_failed_at.remove(&name);
            }
        }
        self.move_host(id, to, reason.to_string(), now);
        Ok(CommandReply::Done)
    }

    /// [`Command::SetHostLabels`](super::Command::SetHostLabels).
    pub(super) fn set_host_labels(
        &mut self,
        id: NodeId,
        set: Labels,
        unset: &[String],
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let host = self.live_host(id)?;
        validate_host(&host.name, &set)?;
        for key in set.keys().chain(unset) {
            if key == PVE_CLUSTER_LABEL {
                return Err(SpecError::text(
                    "labels",
                    key,
                    "a label the agent sets from its PVE cluster: it cannot be set or removed by                      hand",
                )
                .into());
            }
        }
        for key in unset {
            if !host.operator_labels.contains_key(key) && host.labels.contains_key(key) {
                return Err(StateError::Conflict(format!(
                    "label {key} of host {} comes from its agent's configuration ([labels] in                      /etc/pvefleet/agent.toml on the host): change it there",
                    host.name
                )));
            }
        }
        let mut labels = host.operator_labels.clone();
        labels.extend(set);
        for key in unset {
            labels.remove(key);
        }
        if labels == host.operator_labels {
            return Ok(CommandReply::Done);
        }
        let name = host.name.clone();
        let shown: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        if let Some(h) = self.hosts.get_mut(&id) {
            h.operator_labels = labels;
        }
        self.info(
            now,
            EventKind::Host,
            format!("{name} ({id})"),
            format!(
                "operator labels now {}",
                if shown.is_empty() {
                    "none".to_string()
                } else {
                    shown.join(", ")
                }
            ),
        );
        Ok(CommandReply::Done)
    }

    /// [`Command::RemoveHost`](super::Command::RemoveHost).
    pub(super) fn remove_host(
        &mut self,
        id: NodeId,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let host = self
            .hosts
            .get(&id)
            .ok_or_else(|| not_found(EventKind::Host, id.to_string()))?;
        if host.state == HostState::Removed {
            return Ok(CommandReply::Done);
        }
        let name = host.name.clone();
        let guests: Vec<&String> = self
            .vms
            .iter()
            .filter(|(_, r)| r.assignment.host == Some(id))
            .map(|(n, _)| n)
            .collect();
        if !guests.is_empty() {
            let shown: Vec<&str> = guests.iter().take(5).map(|n| n.as_str()).collect();
            return Err(StateError::Conflict(format!(
                "host {name} still has {} VM(s) placed on it ({}{}): drain it first (pvefleet                  host maintenance enable {name} --wait), or delete those VMs",
                guests.len(),
                shown.join(", "),
                if guests.len() > shown.len() {
                    ", ..."
                } else {
                    ""
                }
            )));
        }
        let vips: Vec<&str> = self
            .vips
            .values()
            .filter(|v| v.owner == Some(id) || v.standby == Some(id))
            .map(|v| v.spec.name.as_str())
            .collect();
        if !vips.is_empty() {
            return Err(StateError::Conflict(format!(
                "host {name} owns or stands by for VIP(s) {}: drain it first (pvefleet host                  maintenance enable {name} --wait hands them over)",
                vips.join(", ")
            )));
        }
        self.move_host(
            id,
            HostState::Removed,
            "decommissioned: its id and certificate are refused from now on".to_string(),
            now,
        );
        Ok(CommandReply::Done)
    }

    /// Moves a known host to `state` with `reason` and records the event.
    fn move_host(&mut self, id: NodeId, state: HostState, reason: String, now: UnixMillis) {
        let Some(host) = self.hosts.get_mut(&id) else {
            return;
        };
        let from = host.state;
        host.state = state;
        host.state_since = now;
        let subject = format!("{} ({id})", host.name);
        let message = if reason.is_empty() {
            format!("{from} -> {state}")
        } else {
            format!("{from} -> {state}: {reason}")
        };
        host.state_reason = reason;
        if state == HostState::Removed {
            self.revoked_nodes.insert(id);
            self.leaving.remove(&id);
        }
        let level = match state {
            HostState::Unreachable | HostState::Fenced => EventLevel::Warning,
            _ => EventLevel::Info,
        };
        self.events
            .push(now, level, EventKind::Host, subject, message);
        if matches!(state, HostState::Fenced | HostState::Removed) {
            self.abandon_migrations_from(id, state, now);
        }
    }

    pub(super) fn add_member(
        &mut self,
        member: Member,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        self.refuse_revoked(member.id)?;
        validate_member_addr(&member.addr)?;
        self.note_node_id(member.id);
        if self.members.get(&member.id) == Some(&member) {
            return Ok(CommandReply::Done);
        }
        let message = format!("{} at {}", member.role, member.addr);
        self.members.insert(member.id, member.clone());
        self.info(now, EventKind::Member, member.id.to_string(), message);
        Ok(CommandReply::Done)
    }

    pub(super) fn remove_member(
        &mut self,
        id: NodeId,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        if self.members.remove(&id).is_none() {
            return Err(not_found(EventKind::Member, id.to_string()));
        }
        self.revoked_nodes.insert(id);
        self.forget_member_versions(id);
        self.info(
            now,
            EventKind::Member,
            id.to_string(),
            "removed; its certificate is refused from now on",
        );
        Ok(CommandReply::Done)
    }

    pub(super) fn put_settings(
        &mut self,
        settings: Settings,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        validate_settings(&settings)?;
        if let Some(range) = &settings.default_vmid_range
            && !self.vmid_ranges.contains_key(range)
        {
            return Err(SpecError::text(
                "default_vmid_range",
                range,
                defined("VMID range", self.vmid_ranges.keys()),
            )
            .into());
        }
        if self.settings == settings {
            return Ok(CommandReply::Applied {
                outcome: ApplyOutcome::Unchanged,
            });
        }
        self.settings = settings;
        self.info(now, EventKind::Settings, "settings", "updated");
        Ok(CommandReply::Applied {
            outcome: ApplyOutcome::Updated,
        })
    }
}
