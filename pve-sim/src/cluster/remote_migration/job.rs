//! The `qmigrate` task of a remote migration as a [`Job`]: `begin` repeats `prepare`'s local
//! checks and sets the conversation with the target going on the runtime
//! (`worker.rs`), the task ends when the conversation is over, and `finish`
//! reports its outcome. The conversation consults the injected task fault itself.
//!
//! An interrupt before the switchover cancels the conversation (which then cleans up the
//! target) and unlocks the source VM; after the switchover it changes nothing, as PVE delays
//! signals until the migration is through. A task lost with its node stops the conversation
//! without any cleanup.

use std::sync::{Arc, Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;

use super::plan::{Phase, Progress};
use super::worker::Conversation;
use crate::cluster::state::State;
use crate::cluster::tasks::job::{Job, JobCx};
use crate::cluster::vm::check_lock;

/// One remote migration's task.
pub(crate) struct RemoteMigrateJob {
    node: String,
    vmid: u32,
    online: bool,
    conversation: Option<Conversation>,
    progress: Arc<Mutex<Progress>>,
    cancel: CancellationToken,
    /// Interrupted after the switchover: the conversation carries on to the end.
    detached: bool,
}

impl RemoteMigrateJob {
    /// The job of `conversation` for VM `vmid` on `node`.
    pub(crate) fn new(
        node: String,
        vmid: u32,
        online: bool,
        conversation: Conversation,
        progress: Arc<Mutex<Progress>>,
        cancel: CancellationToken,
    ) -> Self {
        Self {
            node,
            vmid,
            online,
            conversation: Some(conversation),
            progress,
            cancel,
            detached: false,
        }
    }

    fn progress(&self) -> MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Job for RemoteMigrateJob {
    fn begin(&mut self, cx: &mut JobCx<'_>) -> Result<f64, String> {
        let vm = cx.st.load_mut(&self.node, self.vmid)?;
        check_lock(&vm.conf)?;
        if vm.run.running && !self.online {
            return Err("can't migrate running VM without --online".into());
        }
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| "remote migration needs a running tokio runtime".to_string())?;
        let mut conversation = self
            .conversation
            .take()
            .ok_or_else(|| "remote migration started twice".to_string())?;
        conversation.set_upid(cx.upid);
        runtime.spawn(conversation.run());
        Ok(0.0)
    }

    fn ready(&self, _st: &State) -> bool {
        self.progress().outcome.is_some()
    }

    fn handles_faults(&self) -> bool {
        true
    }

    fn finish(&mut self, _cx: &mut JobCx<'_>) -> Result<(), String> {
        self.progress()
            .outcome
            .take()
            .unwrap_or_else(|| Err("migration aborted".into()))
    }

    fn abort(&mut self, cx: &mut JobCx<'_>) {
        let mut progress = self.progress.lock().unwrap_or_else(|e| e.into_inner());
        if progress.phase == Phase::Finishing {
            drop(progress);
            self.detached = true;
            return;
        }
        progress.cleanup_on_cancel = true;
        let locked = std::mem::replace(&mut progress.locked, false);
        drop(progress);
        self.cancel.cancel();
        if locked
            && let Some(vm) = cx.st.vm_on_mut(&self.node, self.vmid)
            && vm.conf.lock() == Some("migrate")
        {
            vm.conf.remove("lock");
        }
    }
}

impl Drop for RemoteMigrateJob {
    fn drop(&mut self) {
        // The task is over or gone: a conversation still running stops (an interrupted one
        // has been told to clean up first).
        if !self.detached {
            self.cancel.cancel();
        }
    }
}
