//! How the guard resets the host when the agent did not fence itself in time.
//!
//! - [`HostReboot`]: `reboot(2)` with `RB_AUTOBOOT` at once, without syncing the file
//!   systems, as a hardware watchdog would: the point is that no guest of this host runs a
//!   moment longer. Needs CAP_SYS_BOOT. Never run by a test.
//! - [`SimulatedReset`]: SIGKILL to the agent (a hung agent must not act after the reset),
//!   then the simulated node's reset (`pve-sim`'s `/_sim/nodes/{node}/power`): the lab
//!   platform's reset (`crate::platform`).

use std::future::Future;
use std::time::Duration;

use rustix::system::RebootCommand;

use super::agent_process::{self, ProcProbe, ProcessProbe};
use super::record::FenceRecord;
use crate::platform::lab_control::{ControlError, LabControl};

/// Why a reset did not happen.
#[derive(Debug, thiserror::Error)]
pub enum ResetError {
    /// `reboot(2)` refused (no CAP_SYS_BOOT?).
    #[error("reboot(2) failed: {0}")]
    Reboot(std::io::Error),
    /// The agent could not be killed.
    #[error("cannot kill the agent (pid {pid}): {source}")]
    Kill {
        /// Its pid.
        pid: u32,
        /// The OS error.
        source: std::io::Error,
    },
    /// The simulated node did not take the reset.
    #[error("cannot reset the simulated node: {0}")]
    LabControl(#[from] ControlError),
}

/// A way to reset the host.
pub trait HostReset: Send {
    /// Resets the host whose agent wrote `record` (the real one does not return).
    fn reset(
        &mut self,
        record: &FenceRecord,
    ) -> impl Future<Output = Result<(), ResetError>> + Send;

    /// What it is, for the log (`host`, `simulated`).
    fn kind(&self) -> &'static str;

    /// How long failing resets are retried before the guard gives up; `None`: for ever.
    fn give_up_after(&self) -> Option<Duration>;
}

/// The real reset.
#[derive(Debug, Clone, Copy, Default)]
pub struct HostReboot;

impl HostReset for HostReboot {
    async fn reset(&mut self, _record: &FenceRecord) -> Result<(), ResetError> {
        // No sync: a watchdog does not wait for the disks either, and a hung I/O path must
        // not keep the guests running.
        rustix::system::reboot(RebootCommand::Restart).map_err(|e| ResetError::Reboot(e.into()))
    }

    fn kind(&self) -> &'static str {
        "host"
    }

    fn give_up_after(&self) -> Option<Duration> {
        // Nothing else protects the guests: keep trying (and logging).
        None
    }
}

/// The simulated reset.
#[derive(Debug, Clone)]
pub struct SimulatedReset<P = ProcProbe> {
    node: LabControl,
    probe: P,
}

impl SimulatedReset {
    /// Kills the agent, then resets `node` through the simulator's control API.
    pub fn new(node: LabControl) -> SimulatedReset {
        SimulatedReset {
            node,
            probe: ProcProbe,
        }
    }
}

impl<P: ProcessProbe + Sync> HostReset for SimulatedReset<P> {
    async fn reset(&mut self, record: &FenceRecord) -> Result<(), ResetError> {
        let pid = record.agent_pid;
        if self.probe.alive(pid) {
            agent_process::kill(pid).map_err(|source| ResetError::Kill { pid, source })?;
        }
        self.node.reset().await?;
        Ok(())
    }

    fn kind(&self) -> &'static str {
        "simulated"
    }

    fn give_up_after(&self) -> Option<Duration> {
        // A simulator that stays unreachable is gone (a lab torn down): its VMs with it.
        Some(Duration::from_secs(10))
    }
}

/// The reset the configuration chose.
#[derive(Debug, Clone)]
pub enum ChosenReset {
    /// [`HostReboot`].
    Host(HostReboot),
    /// [`SimulatedReset`].
    Simulated(SimulatedReset),
}

impl HostReset for ChosenReset {
    async fn reset(&mut self, record: &FenceRecord) -> Result<(), ResetError> {
        match self {
            ChosenReset::Host(r) => r.reset(record).await,
            ChosenReset::Simulated(r) => r.reset(record).await,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            ChosenReset::Host(r) => r.kind(),
            ChosenReset::Simulated(r) => r.kind(),
        }
    }

    fn give_up_after(&self) -> Option<Duration> {
        match self {
            ChosenReset::Host(r) => r.give_up_after(),
            ChosenReset::Simulated(r) => r.give_up_after(),
        }
    }
}
