//! How the guard comes to run: `pvefleet-agent fence-guard` builds it from the agent's
//! configuration ([`run_guard`]), started either by its own systemd unit
//! (`pvefleet-agent-guard.service`, `guard = "unit"`) or by the agent as its child
//! ([`spawn_child_guard`], `guard = "child"`, labs and tests).
//!
//! Why a unit in production: systemd kills every process of the agent's cgroup when the agent
//! dies, and the guard must outlive exactly that. A unit-started guard whose configuration says
//! `guard = "child"` stays idle (the agent starts its own), so one record never has two guards.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use tokio_util::sync::CancellationToken;

use super::agent_process::ProcProbe;
use super::clock::now_mono_ns;
use super::guard::{CHECK_EVERY, Guard, GuardError};
use super::record::{RecordError, current_boot_id, record_path};
use super::settings::Guard as GuardChoice;
use crate::config::{AgentConfig, ConfigError};
use crate::platform::{Platform, PlatformError};

/// What `fence-guard` was asked to do.
#[derive(Debug, Clone)]
pub struct GuardOptions {
    /// The agent's data directory (the record is there).
    pub data_dir: PathBuf,
    /// The agent's configuration, when there is one (its `[fence]` and `[pve]`).
    pub config: Option<AgentConfig>,
    /// Where the configuration was read from (messages).
    pub config_path: Option<PathBuf>,
    /// Exit once the agent is gone and nothing is armed (the agent's child).
    pub exit_with_agent: bool,
}

/// Why the guard could not run.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The configuration is unusable.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The platform of the configuration cannot be built.
    #[error(transparent)]
    Platform(#[from] PlatformError),
    /// The boot id is unreadable.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The guard failed.
    #[error(transparent)]
    Guard(#[from] GuardError),
}

/// A child guard leaves the agent's session and process group, so a Ctrl-C or hang-up meant
/// for a foreground agent does not end the guard that must outlive it.
pub fn leave_session() {
    if let Err(e) = rustix::process::setsid() {
        // Already a group leader (started by hand): it has its own group anyway.
        tracing::debug!(error = %e, "fence guard: setsid");
    }
}

/// Runs the guard `opts` describe until `shutdown` (or until it exits on its own).
pub async fn run_guard(opts: GuardOptions, shutdown: CancellationToken) -> Result<(), LaunchError> {
    if opts.exit_with_agent {
        leave_session();
    }
    let platform = match &opts.config {
        Some(config) => {
            let shown = opts
                .config_path
                .clone()
                .unwrap_or_else(|| PathBuf::from("the agent configuration"));
            let node = config.resolved_host_name(&shown)?;
            Platform::new(config, &node, |k| std::env::var(k).ok())?
        }
        None => Platform::host(),
    };
    if !opts.exit_with_agent && platform.guard() == GuardChoice::Child {
        tracing::info!(
            "fence guard: the configuration has guard = \"child\": the agent runs its own guard, \
             this one stays idle"
        );
        shutdown.cancelled().await;
        return Ok(());
    }
    let guard = Guard::new(
        record_path(&opts.data_dir),
        current_boot_id()?,
        platform.reset(),
        ProcProbe,
        opts.exit_with_agent,
    );
    guard.run(now_mono_ns, CHECK_EVERY, shutdown).await?;
    Ok(())
}

/// Starts `program fence-guard` for the agent of `data_dir` configured by `config_path` as a
/// child that exits with the agent, and does not wait for it; answers its pid. The program is
/// the agent's own binary (`std::env::current_exe`). Its stdout is closed (the agent's carries
/// the ready line), its stderr is the agent's. The guard leaves the agent's session itself
/// ([`leave_session`]): `setpgid` here would be refused by the agent unit's system call filter.
pub fn spawn_child_guard(
    program: &Path,
    config_path: &Path,
    data_dir: &Path,
) -> std::io::Result<u32> {
    let child = Command::new(program)
        .arg("fence-guard")
        .arg("--data-dir")
        .arg(data_dir)
        .arg("--config")
        .arg(config_path)
        .arg("--exit-with-agent")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()?;
    // Not waited for: it outlives the agent when the record is armed.
    Ok(child.id())
}
