//! The worker of `qmstart`: `vm_start`'s checks and effects as a task. Forked by
//! `status/start`, by create with `start=1` and by a rollback that starts the VM again.

use crate::cluster::power::{mark_running, prepare_start};
use crate::cluster::tasks::job::{Job, JobCx};

/// The worker of `qmstart`.
pub(super) struct StartJob {
    pub(super) node: String,
    pub(super) vmid: u32,
    pub(super) skiplock: bool,
}

impl Job for StartJob {
    fn begin(&mut self, cx: &mut JobCx<'_>) -> Result<f64, String> {
        prepare_start(cx.st, &self.node, self.vmid, self.skiplock, cx.log)?;
        Ok(1.5)
    }

    fn finish(&mut self, cx: &mut JobCx<'_>) -> Result<(), String> {
        let vm = cx.st.load_mut(&self.node, self.vmid)?;
        if vm.run.running {
            return Err(format!("VM {} already running", self.vmid));
        }
        mark_running(cx.st, &self.node, self.vmid);
        Ok(())
    }
}
