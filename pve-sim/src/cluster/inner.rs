//! [`Inner`]: what the API handlers and the task drivers share behind the [`Cluster`] handle:
//! the state lock, the jobs of running tasks, the faults and the configured behaviour. Its own
//! file because every operation file takes it and the cluster module dispatches to them.
//!
//! [`Cluster`]: super::Cluster

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::state::State;
use super::tasks::job::Job;
use crate::faults::Faults;

/// Shared by the API handlers and the task drivers.
pub(super) struct Inner {
    pub(super) state: Mutex<State>,
    /// The work still to do of each running task, by UPID text (taken when the task completes
    /// or is interrupted). Kept beside the state rather than in it because a job works on the
    /// state. Only locked while the state lock is held, and never across a call.
    pub(super) jobs: Mutex<HashMap<String, Box<dyn Job>>>,
    pub(super) faults: Arc<Faults>,
    pub(super) time_scale: f64,
    pub(super) agent_ip_delay: f64,
    pub(super) quirks: bool,
    pub(super) version: String,
    pub(super) cluster_name: String,
    /// Signs the tickets of migration tunnels (random per simulator).
    pub(super) tunnel_key: [u8; 32],
    /// How long each request of an outgoing remote migration may take.
    pub(super) remote_timeout: Mutex<Duration>,
}

impl Inner {
    /// The state lock (a poisoned lock only means a panicking test thread).
    pub(super) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The limit on each request of an outgoing remote migration.
    pub(super) fn remote_timeout(&self) -> Duration {
        *self
            .remote_timeout
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// The running tasks' jobs (poisoning as for [`Inner::state`]).
    pub(super) fn jobs(&self) -> MutexGuard<'_, HashMap<String, Box<dyn Job>>> {
        self.jobs.lock().unwrap_or_else(|e| e.into_inner())
    }
}
