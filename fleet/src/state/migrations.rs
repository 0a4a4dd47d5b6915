//! Migrations (encoding v2): [`Command::StartMigration`] records that a VM moves to another
//! host ([`MoveKind`]: within its PVE cluster, remote to another one, or rebuilt there),
//! [`Command::EndMigration`] records the outcome its agents reported. While one is recorded
//! the reconciler sends the VM nothing but the move.
//!
//! What is enforced here, whatever the proposer believes: a migration starts only from the
//! VM's host while that host is online (its agent carries the move out; a host that may be
//! down is recovery's business, never a migration's), to another online host of the same PVE
//! cluster, for a VM that is placed, not being deleted, and not already moving or being
//! recovered; and automatic rebalancing, only while it is on and moves no other VM. The kind
//! is decided here, from the two hosts' PVE clusters and the VM's recovery mode, so every
//! member agrees on it. The VM's host changes only when an agent reported the VM on the
//! target node (or, for a rebuild, its removal from the source), so the fleet never names a
//! host the VM is not on.
//!
//! [`Command::StartMigration`]: super::Command::StartMigration
//! [`Command::EndMigration`]: super::Command::EndMigration

use std::collections::BTreeMap;

use protocol::NodeId;
use protocol::fleet::{
    EventKind, EventLevel, HostState, Migration, MigrationPurpose, MoveKind, PVE_CLUSTER_LABEL,
    UnixMillis,
};
use protocol::spec::RecoveryMode;

use super::vms::not_found;
use super::{CommandReply, FleetState, StateError};

impl FleetState {
    /// The migrations under way, by VM name.
    pub fn migrations(&self) -> &BTreeMap<String, Migration> {
        &self.migrations
    }

    /// The migration of VM `name`, if one is under way.
    pub fn migration(&self, name: &str) -> Option<&Migration> {
        self.migrations.get(name)
    }

    /// Where the VMs drained off a host in maintenance go back to, by VM name.
    pub fn homes(&self) -> &BTreeMap<String, NodeId> {
        &self.homes
    }

    /// When the last drain of VM `name` failed, if one did since it last moved.
    pub fn drain_failed_at(&self, name: &str) -> Option<UnixMillis> {
        self.drain_failed_at.get(name).copied()
    }

    /// Records that VM `name` moves to host `to` for `purpose`.
    pub(super) fn start_migration(
        &mut self,
        name: &str,
        to: NodeId,
        purpose: MigrationPurpose,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let rec = self
            .vms
            .get(name)
            .ok_or_else(|| not_found(EventKind::Vm, name))?;
        let conflict = |why: String| Err(StateError::Conflict(format!("VM {name:?} {why}")));
        if rec.deleting {
            return conflict("is being deleted".into());
        }
        if let Some(m) = self.migrations.get(name) {
            return conflict(format!(
                "is already moving from {} to {}",
                m.from_node, m.to_node
            ));
        }
        if self.recoveries.contains_key(name) {
            return conflict("is being recovered from a fenced host".into());
        }
        if purpose == MigrationPurpose::Rebalance {
            if !self.settings.rebalance.enabled {
                return conflict("is not moved: automatic rebalancing is off".into());
            }
            if let Some((other, _)) = self
                .migrations
                .iter()
                .find(|(_, m)| m.purpose == MigrationPurpose::Rebalance)
            {
                return conflict(format!(
                    "is not moved: rebalancing moves one VM at a time, and {other} is moving"
                ));
            }
        }
        let Some(from) = rec.assignment.host else {
            return conflict("is not placed on a host yet".into());
        };
        if rec.assignment.vmid.is_none() {
            return conflict("has no VMID yet (it is not created)".into());
        }
        let from_host = self
            .hosts
            .get(&from)
            .ok_or_else(|| not_found(EventKind::Host, from.to_string()))?;
        // A drain moves VMs off a host in maintenance; anything else, off an online host.
        let source_ok = from_host.state == HostState::Online
            || (purpose == MigrationPurpose::Drain && from_host.state == HostState::Maintenance);
        if !source_ok {
            return conflict(format!(
                "is on host {}, which is {}: only a VM of an online host is migrated (its agent \
                 moves it)",
                from_host.name, from_host.state
            ));
        }
        let to_host = self
            .hosts
            .get(&to)
            .ok_or_else(|| not_found(EventKind::Host, to.to_string()))?;
        if to == from {
            return conflict(format!("is on {} already", to_host.name));
        }
        if to_host.state != HostState::Online {
            return conflict(format!(
                "cannot move to host {}, which is {}, not online",
                to_host.name, to_host.state
            ));
        }
        let cluster = from_host.labels.get(PVE_CLUSTER_LABEL);
        let same_cluster = cluster.is_some() && to_host.labels.get(PVE_CLUSTER_LABEL) == cluster;
        let kind = if same_cluster {
            MoveKind::Local
        } else if self.ha_policy(rec).recovery == RecoveryMode::Recreate {
            MoveKind::Recreate
        } else {
            MoveKind::Remote
        };
        let entry = Migration {
            from_host: from,
            from_node: from_host.name.clone(),
            to_host: to,
            to_node: to_host.name.clone(),
            purpose,
            kind,
            since: now,
            source_lost_at: None,
        };
        let text = format!(
            "migrating from {} to {} ({}; {})",
            entry.from_node,
            entry.to_node,
            purpose.describe(&entry.from_node, &entry.to_node),
            kind.describe()
        );
        // An operator's move is the VM's new place: it has no home to go back to.
        if purpose == MigrationPurpose::Operator {
            self.homes.remove(name);
        }
        self.migrations.insert(name.to_string(), entry);
        self.info(now, EventKind::Vm, name, text);
        Ok(CommandReply::Done)
    }

    /// Host `id` became `state` (fenced or removed): its agent will not report. A rebuild
    /// from it is over (the VM is the recovery's now). A move from it by PVE's migration may
    /// have put the VM on the target already, so it stays recorded, marked
    /// [`Migration::source_lost_at`]: the VM is not recovered until the target's agent said
    /// whether it arrived (safety rule: a VM never runs twice). A move to it whose source was
    /// lost before is over too: the target's fencing stopped whatever arrived there.
    pub(super) fn abandon_migrations_from(
        &mut self,
        id: NodeId,
        state: HostState,
        now: UnixMillis,
    ) {
        let names: Vec<String> = self
            .migrations
            .iter()
            .filter(|(_, m)| m.from_host == id || (m.to_host == id && m.source_lost_at.is_some()))
            .map(|(name, _)| name.clone())
            .collect();
        for name in names {
            let Some(m) = self.migrations.get_mut(&name) else {
                continue;
            };
            if m.from_host == id && m.kind != MoveKind::Recreate && m.source_lost_at.is_none() {
                m.source_lost_at = Some(now);
                let text = format!(
                    "migration from {} to {}: {} is {state} halfway; the VM is not recovered \
                     until {}'s agent says whether it arrived there",
                    m.from_node, m.to_node, m.from_node, m.to_node
                );
                self.events
                    .push(now, EventLevel::Warning, EventKind::Vm, name, text);
                continue;
            }
            if let Some(m) = self.migrations.remove(&name) {
                let lost = if m.to_host == id {
                    &m.to_node
                } else {
                    &m.from_node
                };
                self.events.push(
                    now,
                    EventLevel::Warning,
                    EventKind::Vm,
                    name,
                    format!(
                        "migration from {} to {} abandoned: {lost} is {state}",
                        m.from_node, m.to_node
                    ),
                );
            }
        }
    }

    /// Closes VM `name`'s migration: seen on the target node (`node`), the target becomes its
    /// host; otherwise it stays where it is. `message` is the event.
    pub(super) fn end_migration(
        &mut self,
        name: &str,
        node: Option<&str>,
        message: &str,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let Some(m) = self.migrations.remove(name) else {
            return Ok(CommandReply::Done);
        };
        let to = m.to_host;
        let moved = node == Some(m.to_node.as_str());
        match (m.purpose, moved) {
            (MigrationPurpose::Drain, true) => {
                self.homes.insert(name.to_string(), m.from_host);
                self.drain_failed_at.remove(name);
            }
            (MigrationPurpose::Drain, false) => {
                self.drain_failed_at.insert(name.to_string(), now);
            }
            // Home, moved or not: not tried again (the event says where it stays).
            (MigrationPurpose::Home, _) => {
                self.homes.remove(name);
            }
            (
                MigrationPurpose::Operator
                | MigrationPurpose::Failback
                | MigrationPurpose::Rebalance
                | MigrationPurpose::Gather,
                _,
            ) => {}
        }
        if moved {
            // A rebuilt VM is gone from its source and not built yet: the reconciler's ensure
            // creates it on its new host.
            let rebuilt = m.kind == MoveKind::Recreate;
            if let Some(rec) = self.vms.get_mut(name) {
                rec.assignment.host = Some(to);
                rec.status.current_host = (!rebuilt).then_some(to);
                rec.status.updated_at = now;
            }
            let how = if rebuilt {
                " (rebuilt from its spec)"
            } else {
                ""
            };
            self.info(
                now,
                EventKind::Vm,
                name,
                format!(
                    "migrated from {} to {}{how}: {message}",
                    m.from_node, m.to_node
                ),
            );
        } else {
            self.events.push(
                now,
                EventLevel::Warning,
                EventKind::Vm,
                name,
                format!(
                    "migration from {} to {} failed, it stays on {}: {message}",
                    m.from_node, m.to_node, m.from_node
                ),
            );
        }
        Ok(CommandReply::Done)
    }
}
