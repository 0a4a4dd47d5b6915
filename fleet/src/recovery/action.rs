//! The recovery planner's decisions and the commands that record them.

use protocol::NodeId;
use protocol::fleet::{MigrationPurpose, UnixMillis};

use crate::state::Command;

/// One recovery decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecoveryAction {
    /// Move `vm` off the fenced host `from` onto `to`, or record that it waits (`to` = `None`).
    Recover {
        /// The VM.
        vm: String,
        /// Its fenced host.
        from: NodeId,
        /// Where it goes; `None`: no host is eligible now.
        to: Option<NodeId>,
        /// What was decided, or why it waits.
        message: String,
    },
    /// Close `vm`'s recovery from `from`.
    End {
        /// The VM.
        vm: String,
        /// The fenced host the recovery started from.
        from: NodeId,
        /// What happened.
        message: String,
    },
    /// Move `vm`, whose starts kept failing on `from`, to `to` (`max_relocate`).
    Relocate {
        /// The VM.
        vm: String,
        /// The host its starts failed on.
        from: NodeId,
        /// The best host it has not failed on.
        to: NodeId,
        /// Why.
        message: String,
    },
    /// Live-migrate `vm` to `to`, after a member of its kept-together group relocated there
    /// (its starts failed on their host): the group stays together.
    MoveWithGroup {
        /// The VM (a partner of the relocated one).
        vm: String,
        /// Where the relocated member went.
        to: NodeId,
        /// Why.
        message: String,
    },
    /// Give up starting `vm` (PVE HA's `error`).
    GiveUp {
        /// The VM.
        vm: String,
        /// Why, and the way out.
        message: String,
    },
    /// Forget `vm`'s failed starts.
    ClearFailures {
        /// The VM.
        vm: String,
        /// Why.
        message: String,
    },
}

impl RecoveryAction {
    /// The command that records the decision at `now`.
    pub fn command(&self, now: UnixMillis) -> Command {
        match self {
            RecoveryAction::Recover {
                vm,
                from,
                to,
                message,
            } => Command::RecoverVm {
                name: vm.clone(),
                from: *from,
                to: *to,
                message: message.clone(),
                now,
            },
            RecoveryAction::End { vm, from, message } => Command::EndRecovery {
                name: vm.clone(),
                from: *from,
                message: message.clone(),
                now,
            },
            RecoveryAction::Relocate {
                vm,
                from,
                to,
                message,
            } => Command::HaRelocate {
                name: vm.clone(),
                from: *from,
                to: *to,
                message: message.clone(),
                now,
            },
            RecoveryAction::MoveWithGroup { vm, to, .. } => Command::StartMigration {
                name: vm.clone(),
                to: *to,
                purpose: MigrationPurpose::Gather,
                now,
            },
            RecoveryAction::GiveUp { vm, message } => Command::HaGiveUp {
                name: vm.clone(),
                message: message.clone(),
                now,
            },
            RecoveryAction::ClearFailures { vm, message } => Command::HaClearFailures {
                name: vm.clone(),
                message: message.clone(),
                now,
            },
        }
    }

    /// The VM the decision is about.
    pub fn vm(&self) -> &str {
        match self {
            RecoveryAction::Recover { vm, .. }
            | RecoveryAction::End { vm, .. }
            | RecoveryAction::Relocate { vm, .. }
            | RecoveryAction::MoveWithGroup { vm, .. }
            | RecoveryAction::GiveUp { vm, .. }
            | RecoveryAction::ClearFailures { vm, .. } => vm,
        }
    }
}
