//! What one outgoing remote migration knows and how far it got: the [`Plan`] the API call
//! settled (who, where, with which maps), and the [`Progress`] the `qmigrate` task and the
//! conversation with the target share.

use super::id_map::IdMap;

/// Settled by `POST .../remote_migrate` before the task starts.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// The source node and VM.
    pub(crate) node: String,
    pub(crate) vmid: u32,
    /// The VMID on the target cluster.
    pub(crate) target_vmid: u32,
    /// The target node (the one answering `target-endpoint`).
    pub(crate) target_node: String,
    /// `target-endpoint`'s host, as the log names it.
    pub(crate) host: String,
    /// Destroy the source VM after a successful migration.
    pub(crate) delete: bool,
    pub(crate) storages: IdMap,
    pub(crate) bridges: IdMap,
}

/// How far the migration got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Phase {
    /// Opening the tunnel: nothing changed yet.
    Connecting,
    /// Copying and migrating: an interrupt or failure rolls back (source unlocked, target
    /// cleaned up).
    Migrating,
    /// Past the switchover (`phase3_cleanup`): no rollback any more.
    Finishing,
}

/// Shared by the task's job and the conversation.
#[derive(Debug)]
pub(crate) struct Progress {
    pub(super) phase: Phase,
    /// The source VM carries the `lock: migrate` this migration set.
    pub(super) locked: bool,
    /// Set by an interrupt: clean the target up before stopping.
    pub(super) cleanup_on_cancel: bool,
    /// The task's result, once the conversation is over.
    pub(super) outcome: Option<Result<(), String>>,
}

impl Default for Progress {
    fn default() -> Self {
        Self {
            phase: Phase::Connecting,
            locked: false,
            cleanup_on_cancel: false,
            outcome: None,
        }
    }
}
