//! The fencing's effect on PVE: stop every running HA guest of this node hard, and confirm
//! each is stopped. What runs is read from PVE at that moment, not taken from the last
//! inventory, which may be seconds old.
//!
//! ```text
//!  GET /nodes/{node}/qemu ─▶ running fleet VMs ─▶ notes say ha=1 (or unreadable: stop it too)
//!    ─▶ POST …/{vmid}/status/stop (skiplock=1 as root, short timeout, overrule a shutdown)
//!    ─▶ wait for each task until the deadline ─▶ GET …/status/current: stopped? ─▶ confirmed
//! ```

use std::time::{Duration, Instant};

use futures_util::future::join_all;
use pve::PveError;
use pve::calls::StopOptions;

use crate::inventory::ha_guests::read_ha_mark;
use crate::inventory::pve_view::is_owned;

/// Why the HA guests could not be shown stopped.
#[derive(Debug, thiserror::Error)]
pub enum StopError {
    /// The VM list is unreadable: nothing can be shown stopped.
    #[error("cannot list the VMs of node {node}: {source}")]
    List {
        /// The node.
        node: String,
        /// PVE's error.
        source: Box<PveError>,
    },
    /// Some HA guests still run (or their state is unreadable) after the stop.
    #[error("HA guests not shown stopped: {0}")]
    StillRunning(String),
}

/// Stops the HA guests of one node.
#[derive(Debug, Clone)]
pub struct GuestStopper {
    client: pve::Client,
    node: String,
    /// PVE's `timeout` of a stop: how long QEMU gets before it is killed.
    stop_timeout_secs: u32,
}

impl GuestStopper {
    /// Stops the guests of `node` through `client`, giving each QEMU `stop_timeout` before
    /// PVE kills it.
    pub fn new(client: pve::Client, node: impl Into<String>, stop_timeout: Duration) -> Self {
        GuestStopper {
            client,
            node: node.into(),
            stop_timeout_secs: u32::try_from(stop_timeout.as_secs())
                .unwrap_or(u32::MAX)
                .max(1),
        }
    }

    /// The running HA guests of the node now, by VMID. A fleet VM whose notes cannot be read
    /// counts as HA: stopping it is the safe side.
    pub async fn running_ha(&self) -> Result<Vec<u32>, StopError> {
        let list = self
            .client
            .vm_list(&self.node, None)
            .await
            .map_err(|source| StopError::List {
                node: self.node.clone(),
                source: Box::new(source),
            })?;
        let running: Vec<u32> = list
            .iter()
            .filter(|g| !g.template && g.status != "stopped" && is_owned(g))
            .map(|g| g.vmid)
            .collect();
        let marks = join_all(running.iter().map(|&vmid| async move {
            (vmid, read_ha_mark(&self.client, &self.node, vmid).await)
        }))
        .await;
        Ok(marks
            .into_iter()
            .filter(|(_, ha)| ha.as_ref().map_or(true, |ha| *ha))
            .map(|(vmid, _)| vmid)
            .collect())
    }

    /// Stops every running HA guest and confirms it; answers the VMIDs stopped. The tasks are
    /// waited for until `deadline` at the latest.
    pub async fn stop_all(&self, deadline: Instant) -> Result<Vec<u32>, StopError> {
        let running = self.running_ha().await?;
        if running.is_empty() {
            return Ok(running);
        }
        let opts = StopOptions {
            timeout: Some(self.stop_timeout_secs),
            // A clean shutdown in progress must not hold the stop back.
            overrule_shutdown: Some(true),
            // A config lock (backup, migration) must not either; PVE allows it to root only,
            // which an API token never is.
            skiplock: self.client.backend().is_root().then_some(true),
            ..StopOptions::default()
        };
        let wait = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(500));
        let stops = join_all(running.iter().map(|&vmid| {
            let opts = opts.clone();
            async move {
                let outcome = match self.client.vm_stop(&self.node, vmid, &opts).await {
                    Ok(upid) => self.client.wait_task(&upid, wait).await.map(|_| ()),
                    Err(e) => Err(e),
                };
                if let Err(e) = outcome {
                    tracing::warn!(vmid, error = %e, "fence: the stop of an HA guest failed");
                }
            }
        }));
        stops.await;
        let confirmed = join_all(running.iter().map(|&vmid| async move {
            let state = self.client.vm_status(&self.node, vmid).await;
            (vmid, state)
        }))
        .await;
        let not_stopped: Vec<String> = confirmed
            .into_iter()
            .filter_map(|(vmid, state)| match state {
                Ok(s) if !s.is_running() => None,
                Ok(s) => Some(format!("{vmid} ({})", s.status)),
                Err(e) if e.is_missing_config() => None,
                Err(e) => Some(format!("{vmid} (unreadable: {e})")),
            })
            .collect();
        if not_stopped.is_empty() {
            Ok(running)
        } else {
            Err(StopError::StillRunning(not_stopped.join(", ")))
        }
    }
}
