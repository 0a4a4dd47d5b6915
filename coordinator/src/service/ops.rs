//! The admin requests that act on running VMs or explain decisions, on the leader: `vm explain`
//! (the scheduler's verdict on every host, now), `vm start|stop` (the desired power state,
//! through Raft, so the fleet keeps it), `vm restart` and `vm snapshot ...` (one-shot commands
//! run by the VM's agent), and `host ls` with usage.
//!
//! ```text
//!  VmExplain  ── linearizable read ─▶ control.host_views ─▶ scheduler::explain ─▶ verdicts
//!  HostStatus ── linearizable read ─▶ committed usage per host + control.host_live
//!  VmPower    ── start | stop ─▶ SetVmState ─▶ Raft
//!             └─ restart ──┐
//!  VmSnapshot ─ name check ┴─▶ placed (host, VMID) ─▶ one shared run ─▶ control.run_command
//! ```
//!
//! A one-shot command runs longer than one client attempt lasts, so a retry of the same
//! request (same `request_id`) joins the run its first attempt started ([`runs`]): a client's
//! retry never restarts a VM twice, and a new operator command always runs anew.

mod one_shot;
pub(crate) mod plan;
mod runs;

use std::sync::Arc;
use std::time::Duration;

use protocol::admin::{
    HostStatusReply, RESTART_WAIT, SNAPSHOT_CHANGE_WAIT, SNAPSHOT_LIST_WAIT, VmExplain,
    VmExplainReply, VmPower, VmPowerAction, VmPowerReply, VmSnapshot, VmSnapshotReply,
};
use protocol::agent::{CommandOutput, Op, PowerAction, PowerOp, SnapshotAction, SnapshotOp};
use protocol::spec::DesiredState;
use transport::{RemoteError, Rpc};

pub(crate) use self::one_shot::{OneShotRuns, one_shot_runs};
use self::plan::{Placed, PowerPlan};
use super::Ctx;
use super::errors::unexpected;
use fleet::state::CommandReply;
use protocol::time::Now;

/// How long a restart lets the guest shut down before stopping it.
pub(crate) const RESTART_SHUTDOWN_SECS: u32 = 60;

impl Ctx {
    /// `vm explain`: every host's verdict for the VM (this member leads).
    pub(crate) async fn vm_explain(&self, req: &VmExplain) -> Result<VmExplainReply, RemoteError> {
        self.confirm_linearizable().await?;
        self.read_local(|s| plan::explain_vm(s, self.control.host_views(s), &req.name))?
    }

    /// `host ls`: every host with its committed usage and live view (this member leads).
    pub(crate) async fn host_status(&self) -> Result<HostStatusReply, RemoteError> {
        self.confirm_linearizable().await?;
        let mut hosts = self.read_local(plan::host_entries)?;
        let lease_ms = u64::try_from(self.control.config().lease.as_millis()).unwrap_or(u64::MAX);
        for entry in &mut hosts {
            if let Some(live) = self.control.host_live(entry.host.id) {
                entry.last_seen_ms = Some(live.last_seen_ms);
                entry.resources = live.resources;
            }
            plan::never_online_when_silent(entry, lease_ms);
        }
        Ok(HostStatusReply { hosts })
    }

    /// `vm start|stop|restart` (this member leads).
    pub(crate) async fn vm_power(&self, req: &VmPower) -> Result<VmPowerReply, RemoteError> {
        match req.action {
            VmPowerAction::Start => self.keep(&req.name, DesiredState::Running).await,
            VmPowerAction::Stop => self.keep(&req.name, DesiredState::Stopped).await,
            VmPowerAction::Restart => self.restart(&req.name, &req.request_id).await,
        }
    }

    /// Keeps the VM in `state` from now on: its spec changes through Raft, and the reconciler
    /// drives the VM there (and back, if it drifts).
    async fn keep(&self, vm: &str, state: DesiredState) -> Result<VmPowerReply, RemoteError> {
        self.confirm_linearizable().await?;
        let now = Now::read().millis;
        let (plan, host) = self.read_local(|s| {
            let host = s
                .vm(vm)
                .and_then(|r| r.assignment.host)
                .and_then(|id| s.hosts().get(&id))
                .map(|h| h.name.clone());
            plan::power_plan(s, vm, state, now).map(|p| (p, host))
        })??;
        let (changed, generation) = match plan {
            PowerPlan::Unchanged { generation } => (false, generation),
            PowerPlan::Propose(cmd) => match self.propose(&cmd).await? {
                CommandReply::VmApplied { generation, .. } => (true, generation),
                other => return Err(unexpected(VmPower::METHOD, &other)),
            },
        };
        Ok(VmPowerReply {
            generation,
            message: plan::power_message(vm, state, changed, generation, host.as_deref()),
        })
    }

    /// Restarts the VM on its host now; its desired state stays `running`.
    async fn restart(&self, vm: &str, request_id: &str) -> Result<VmPowerReply, RemoteError> {
        self.confirm_linearizable().await?;
        let target = self.read_local(|s| {
            let target = plan::placed(s, vm, "restart")?;
            match s.vm(vm).map(|r| r.spec.state) {
                Some(DesiredState::Stopped) => Err(RemoteError::conflict(format!(
                    "vm {vm} is kept stopped: nothing to restart; start it with `pvefleet vm \
                     start {vm}`"
                ))),
                _ => Ok(target),
            }
        })??;
        let op = Op::Power(PowerOp {
            name: vm.to_string(),
            vmid: target.vmid,
            action: PowerAction::Restart {
                timeout_secs: RESTART_SHUTDOWN_SECS,
            },
        });
        let verb = "restart";
        match self
            .run_shared(vm, request_id, &target, op, RESTART_WAIT, verb)
            .await?
        {
            CommandOutput::Vm(seen) => Ok(VmPowerReply {
                generation: target.generation,
                message: if seen.running {
                    format!(
                        "vm {vm} restarted on {} (vmid {})",
                        target.host_name, target.vmid
                    )
                } else {
                    format!(
                        "vm {vm} was restarted on {} (vmid {}) but is not running now: the \
                         fleet starts it again; watch `pvefleet vm show {vm}`",
                        target.host_name, target.vmid
                    )
                },
            }),
            other => Err(unexpected_output(verb, vm, &other)),
        }
    }

    /// `vm snapshot create|ls|rollback|delete` (this member leads).
    pub(crate) async fn vm_snapshot(
        &self,
        req: &VmSnapshot,
    ) -> Result<VmSnapshotReply, RemoteError> {
        plan::check_snapshot_action(&req.action)?;
        let vm = req.name.as_str();
        let verb = plan::snapshot_verb(&req.action);
        self.confirm_linearizable().await?;
        let target = self.read_local(|s| plan::placed(s, vm, &verb))??;
        let wait = match req.action {
            SnapshotAction::List => SNAPSHOT_LIST_WAIT,
            _ => SNAPSHOT_CHANGE_WAIT,
        };
        let op = Op::Snapshot(SnapshotOp {
            name: vm.to_string(),
            vmid: target.vmid,
            action: req.action.clone(),
        });
        match self
            .run_shared(vm, &req.request_id, &target, op, wait, &verb)
            .await?
        {
            CommandOutput::Snapshots(snapshots) => Ok(VmSnapshotReply {
                vm: vm.to_string(),
                snapshots,
            }),
            other => Err(unexpected_output(&verb, vm, &other)),
        }
    }

    /// Runs `op` on the VM's agent once per request id (retries of a request join its run),
    /// and reads its result.
    async fn run_shared(
        &self,
        vm: &str,
        request_id: &str,
        target: &Placed,
        op: Op,
        wait: Duration,
        verb: &str,
    ) -> Result<CommandOutput, RemoteError> {
        let control = Arc::clone(&self.control);
        let host = target.host;
        let key = format!("{request_id}/{host}/{op:?}");
        let result = self
            .runs
            .run_once(vm, key, move || async move {
                control.run_command(host, op, wait).await
            })
            .await
            .map_err(|e| {
                plan::no_result_error(verb, vm, target, RemoteError::unavailable(e.to_string()))
            })?;
        match result {
            Ok(Ok(output)) => Ok(output),
            Ok(Err(failure)) => Err(plan::failure_error(verb, vm, target, &failure)),
            Err(e) => Err(plan::no_result_error(verb, vm, target, e)),
        }
    }
}

fn unexpected_output(verb: &str, vm: &str, output: &CommandOutput) -> RemoteError {
    RemoteError::internal(format!(
        "the {verb} of vm {vm} answered an unexpected result {output:?}"
    ))
}

#[cfg(test)]
mod tests;
