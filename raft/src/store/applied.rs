//! The in-memory applied state: the machine plus the last applied log id and membership, under
//! one lock so a reader never sees a machine and a log position that disagree.

use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::error::RaftStoreError;
use crate::machine::Machine;
use crate::types::{LogId, StoredMembership};

/// The machine and where in the log it stands.
pub(crate) struct Applied<M> {
    pub(crate) machine: M,
    pub(crate) last_applied: Option<LogId>,
    pub(crate) membership: StoredMembership,
}

/// A shared handle on the replicated machine, for reading the state (for example after
/// `Raft::ensure_linearizable`). Cheap to clone.
pub struct MachineHandle<M> {
    state: Arc<RwLock<Applied<M>>>,
}

impl<M> Clone for MachineHandle<M> {
    fn clone(&self) -> Self {
        MachineHandle {
            state: Arc::clone(&self.state),
        }
    }
}

impl<M: Machine> MachineHandle<M> {
    pub(crate) fn new(applied: Applied<M>) -> MachineHandle<M> {
        MachineHandle {
            state: Arc::new(RwLock::new(applied)),
        }
    }

    pub(crate) fn lock_read(&self) -> Result<RwLockReadGuard<'_, Applied<M>>, RaftStoreError> {
        self.state.read().map_err(|_| RaftStoreError::Poisoned)
    }

    pub(crate) fn lock_write(&self) -> Result<RwLockWriteGuard<'_, Applied<M>>, RaftStoreError> {
        self.state.write().map_err(|_| RaftStoreError::Poisoned)
    }

    /// Runs `f` on the machine; apply waits meanwhile, so keep `f` short.
    pub fn read<R>(&self, f: impl FnOnce(&M) -> R) -> Result<R, RaftStoreError> {
        Ok(f(&self.lock_read()?.machine))
    }

    /// The last log id applied to the machine (`None` before anything was applied).
    pub fn last_applied(&self) -> Result<Option<LogId>, RaftStoreError> {
        Ok(self.lock_read()?.last_applied)
    }
}
