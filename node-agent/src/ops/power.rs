//! Power: start when stopped, a clean shutdown that becomes a hard stop when the guest does not
//! go down in time, a hard stop, and a restart made of both; as steps of ensure and delete,
//! and as the one-shot [`PowerOp`].

use std::time::Duration;

use protocol::agent::{CommandFailure, FailureKind, PowerAction, PowerOp, VmObservation};
use pve::PveError;
use pve::calls::{ShutdownOptions, StartOptions, StopOptions};

use super::VmOps;
use super::failure::{AtStep, Subject};
use super::notes;
use super::observe::observe;

/// Slack on top of the guest's shutdown timeout before the task wait gives up.
const SHUTDOWN_SLACK: Duration = Duration::from_secs(30);

/// Whether a shutdown failed because the guest did not power off (so a stop is due).
fn guest_did_not_stop(err: &PveError) -> bool {
    matches!(err, PveError::TaskTimeout { .. })
        || err
            .message()
            .is_some_and(|m| m.contains("got timeout") || m.contains("VM is paused"))
}

impl VmOps {
    /// Whether PVE reports a QEMU process for the VM (paused counts as running).
    pub(super) async fn is_running(&self, s: &Subject<'_>) -> Result<bool, CommandFailure> {
        let status = self
            .client
            .vm_status(&self.node, s.vmid)
            .await
            .at(s, "status")?;
        Ok(status.is_running())
    }

    /// Starts the VM unless it runs.
    pub(super) async fn start_if_stopped(&self, s: &Subject<'_>) -> Result<(), CommandFailure> {
        if self.is_running(s).await? {
            return Ok(());
        }
        // Held until the start task ended: the fencer waits for it before it confirms.
        let _permit = self.start_permit(s, "start").await?;
        let upid = self
            .client
            .vm_start(&self.node, s.vmid, &StartOptions::default())
            .await
            .at(s, "start")?;
        self.wait(&upid).await.at(s, "start")
    }

    /// Stops the VM hard unless it is stopped; `overrule` ends a shutdown still running.
    pub(super) async fn stop_if_running(
        &self,
        s: &Subject<'_>,
        overrule: bool,
    ) -> Result<(), CommandFailure> {
        if !self.is_running(s).await? {
            return Ok(());
        }
        let opts = StopOptions {
            overrule_shutdown: overrule.then_some(true),
            ..StopOptions::default()
        };
        let upid = self
            .client
            .vm_stop(&self.node, s.vmid, &opts)
            .await
            .at(s, "stop")?;
        self.wait(&upid).await.at(s, "stop")
    }

    /// Asks the guest to shut down within `timeout_secs`, then stops it hard.
    pub(super) async fn shut_down(
        &self,
        s: &Subject<'_>,
        timeout_secs: u32,
    ) -> Result<(), CommandFailure> {
        if !self.is_running(s).await? {
            return Ok(());
        }
        let opts = ShutdownOptions {
            timeout: Some(timeout_secs),
            ..ShutdownOptions::default()
        };
        let wait = Duration::from_secs(u64::from(timeout_secs)) + SHUTDOWN_SLACK;
        let result = match self.client.vm_shutdown(&self.node, s.vmid, &opts).await {
            Ok(upid) => self.client.wait_task(&upid, wait).await.map(|_| ()),
            Err(e) => Err(e),
        };
        match result {
            Ok(()) => Ok(()),
            Err(e) if guest_did_not_stop(&e) => {
                tracing::info!(vm = s.name, vmid = s.vmid, error = %e, "guest did not shut down in time; stopping it");
                self.stop_if_running(s, true).await
            }
            Err(e) => Err(s.pve("shutdown", &e)),
        }
    }

    /// Shutdown (then stop) and start.
    pub(super) async fn restart(
        &self,
        s: &Subject<'_>,
        timeout_secs: u32,
    ) -> Result<(), CommandFailure> {
        self.shut_down(s, timeout_secs).await?;
        self.start_if_stopped(s).await
    }
}

/// Runs a one-shot power action on a fleet VM and answers what it looks like after.
pub(super) async fn power(ops: &VmOps, cmd: &PowerOp) -> Result<VmObservation, CommandFailure> {
    let s = Subject {
        name: &cmd.name,
        vmid: cmd.vmid,
    };
    let cfg = ops.find_owned(&s).await?.ok_or_else(|| {
        s.fail(
            FailureKind::NotFound,
            "lookup",
            format!("no VM {} on node {}", cmd.vmid, ops.node),
        )
    })?;
    if matches!(cmd.action, PowerAction::Start | PowerAction::Restart { .. }) {
        ops.refuse_pve_ha(&s, "lookup").await?;
    }
    match cmd.action {
        PowerAction::Start => ops.start_if_stopped(&s).await?,
        PowerAction::Shutdown { timeout_secs } => ops.shut_down(&s, timeout_secs).await?,
        PowerAction::Stop => ops.stop_if_running(&s, true).await?,
        PowerAction::Restart { timeout_secs } => ops.restart(&s, timeout_secs).await?,
    }
    let generation = cfg
        .description()
        .and_then(|d| notes::parse(&d))
        .map_or(0, |n| n.generation);
    observe(ops, &s, generation, Duration::ZERO).await
}
