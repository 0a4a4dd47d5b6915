//! [`OpTimeouts`]: how long the agent waits for PVE tasks, set once per host and carried by
//! [`VmOps`](super::VmOps).

use std::time::Duration;

/// How long the agent waits for PVE tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpTimeouts {
    /// Clone and create (a full clone copies whole disks).
    pub create: Duration,
    /// Other tasks (start, stop, resize, destroy, snapshots).
    pub task: Duration,
    /// Guest shutdown before a hard stop, when the command gives none (ensure, delete).
    pub shutdown_secs: u32,
}

impl Default for OpTimeouts {
    fn default() -> Self {
        Self {
            create: Duration::from_secs(30 * 60),
            task: Duration::from_secs(10 * 60),
            shutdown_secs: 60,
        }
    }
}
