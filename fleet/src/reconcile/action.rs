//! What the reconciler decides: one [`Action`] per thing to do, and how an action becomes a
//! state-machine command.

use protocol::NodeId;
use protocol::agent::Op;
use protocol::fleet::{EventKind, EventLevel, UnixMillis, VmStatus};

use crate::state::Command;

/// One thing to do. Actions of one VM are applied in order; an action refused by the state
/// machine stops the VM's remaining actions of that tick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Place the VM (it has no host).
    Schedule {
        /// The VM.
        vm: String,
        /// The chosen host.
        host: NodeId,
    },
    /// Allocate the VM's VMID, skipping VMIDs in use on the hosts.
    AllocateVmid {
        /// The VM.
        vm: String,
        /// VMIDs of foreign VMs and templates on any host.
        avoid: Vec<u32>,
    },
    /// Allocate the VM's pool addresses.
    AllocateIps {
        /// The VM.
        vm: String,
    },
    /// Record a new status (only proposed when it differs from the recorded one).
    SetStatus {
        /// The VM.
        vm: String,
        /// The status.
        status: VmStatus,
    },
    /// Release the addresses the spec no longer wants.
    ReleaseStaleIps {
        /// The VM.
        vm: String,
    },
    /// Record an event about the VM.
    Event {
        /// The VM.
        vm: String,
        /// Routine or warning.
        level: EventLevel,
        /// What happened.
        message: String,
    },
    /// The VM is gone from its host (or never reached one): drop the record and its ids.
    Release {
        /// The VM.
        vm: String,
    },
    /// Count a failed start of an HA `started` VM on `host` (PVE HA's `max_restart`).
    HaStartFailed {
        /// The VM.
        vm: String,
        /// The host it failed on.
        host: NodeId,
        /// The failure.
        message: String,
    },
    /// Close the VM's migration with what its source agent reported.
    EndMigration {
        /// The VM.
        vm: String,
        /// The PVE node the agent saw it on after the move (`None`: it failed).
        node: Option<String>,
        /// What happened.
        message: String,
    },
    /// Queue a command for the VM's host.
    Send {
        /// The host.
        host: NodeId,
        /// The spec generation it is made for.
        generation: u64,
        /// The command.
        op: Op,
    },
}

impl Action {
    /// The VM the action is about.
    pub fn vm(&self) -> &str {
        match self {
            Action::Schedule { vm, .. }
            | Action::AllocateVmid { vm, .. }
            | Action::AllocateIps { vm }
            | Action::SetStatus { vm, .. }
            | Action::ReleaseStaleIps { vm }
            | Action::Event { vm, .. }
            | Action::Release { vm }
            | Action::HaStartFailed { vm, .. }
            | Action::EndMigration { vm, .. } => vm,
            Action::Send { op, .. } => op.vm_name(),
        }
    }

    /// The Raft command the action proposes at `now`; `None` for [`Action::Send`].
    pub fn command(&self, now: UnixMillis) -> Option<Command> {
        let vm = self.vm().to_string();
        Some(match self {
            Action::Schedule { host, .. } => Command::ScheduleVm {
                name: vm,
                host: Some(*host),
                expected: None,
                now,
            },
            Action::AllocateVmid { avoid, .. } => Command::AllocateVmid {
                vm,
                avoid: avoid.clone(),
                now,
            },
            Action::AllocateIps { .. } => Command::AllocateIps { vm, now },
            Action::SetStatus { status, .. } => Command::SetVmStatus {
                name: vm,
                status: status.clone(),
                now,
            },
            Action::ReleaseStaleIps { .. } => Command::ReleaseStaleIps { vm, now },
            Action::Event { level, message, .. } => Command::RecordEvent {
                level: *level,
                kind: EventKind::Vm,
                subject: vm,
                message: message.clone(),
                now,
            },
            Action::Release { .. } => Command::ReleaseVm { name: vm, now },
            Action::HaStartFailed { host, message, .. } => Command::HaStartFailed {
                name: vm,
                host: *host,
                message: message.clone(),
                now,
            },
            Action::EndMigration { node, message, .. } => Command::EndMigration {
                name: vm,
                node: node.clone(),
                message: message.clone(),
                now,
            },
            Action::Send { .. } => return None,
        })
    }
}
