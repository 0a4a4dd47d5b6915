//! Carrying out a command: `join` prints what it did and how to start the agent, `run` serves
//! until a signal (with its child guard when configured), `fence-guard` guards. Each error
//! says what went wrong and maps to the exit code the man page documents.

use std::path::{Path, PathBuf};

use daemon::signal::cancel_on_signal;
use tokio_util::sync::CancellationToken;

use super::error::CommandError;
use super::job::Job;
use crate::config::{AgentConfig, DEFAULT_CONFIG_PATH, DEFAULT_DATA_DIR, PveConfig};
use crate::daemon::{Agent, AgentError};
use crate::fence::settings::Guard;
use crate::fence::{run_guard, spawn_child_guard};
use crate::join::{JoinOptions, join_cluster, start_command};
use crate::platform::Platform;

/// Carries out `job`; what it prints goes to stdout.
///
/// # Errors
/// [`CommandError`], whose [`CommandError::exit_code`] is the process's.
pub async fn dispatch(job: Job) -> Result<(), CommandError> {
    match job {
        Job::Join {
            token,
            addr,
            data_dir,
            config_path,
            config,
        } => {
            let data_dir = data_dir.unwrap_or_else(|| {
                config
                    .as_ref()
                    .map_or_else(|| PathBuf::from(DEFAULT_DATA_DIR), |c| c.data_dir.clone())
            });
            let report = join_cluster(&JoinOptions {
                token,
                via: addr,
                data_dir,
            })
            .await?;
            println!(
                "joined cluster {} as agent {} ({} coordinator(s) known)",
                report.cluster_id, report.node_id, report.members
            );
            let start = next_step(&report.data_dir, config.as_ref(), config_path.as_deref());
            if start.starts_with("systemctl")
                && let Some(missing) = missing_token_file(config.as_ref())
            {
                println!(
                    "first write the PVE API token to {} (one line USER@REALM!TOKENID=SECRET, \
                         mode 0600)",
                    missing.display()
                );
            }
            println!("start it: {start}");
            Ok(())
        }
        Job::Run { path, config } => run(&path, config).await,
        Job::FenceGuard(opts) => {
            let shutdown = CancellationToken::new();
            tokio::spawn(cancel_on_signal(shutdown.clone()));
            run_guard(opts, shutdown).await.map_err(CommandError::from)
        }
    }
}

/// The command that starts the agent joined into `data_dir`, given the configuration read
/// (`config`, from `config_path` or the default file).
fn next_step(data_dir: &Path, config: Option<&AgentConfig>, config_path: Option<&Path>) -> String {
    // The unit runs with the default file: its data_dir is the one it serves.
    let unit_dir = match (config_path, config) {
        (None, Some(config)) => config.data_dir.clone(),
        (None, None) => PathBuf::from(DEFAULT_DATA_DIR),
        (Some(_), _) => AgentConfig::load(Path::new(DEFAULT_CONFIG_PATH))
            .map_or_else(|_| PathBuf::from(DEFAULT_DATA_DIR), |c| c.data_dir),
    };
    start_command(data_dir, &unit_dir, config_path)
}

/// The token file the https backend of `config` names, if it does not exist yet.
fn missing_token_file(config: Option<&AgentConfig>) -> Option<&Path> {
    match &config?.pve {
        PveConfig::Https(https) if !https.token_file.exists() => Some(&https.token_file),
        _ => None,
    }
}

/// Runs the agent (and its child guard when the configuration says so) until a signal.
async fn run(path: &Path, mut config: AgentConfig) -> Result<(), CommandError> {
    // Resolved here so an unusable machine host name is reported against this file.
    config.host_name = Some(config.resolved_host_name(path)?);
    let host = config.host_name.clone().unwrap_or_default();
    let guard = Platform::new(&config, &host, |k| std::env::var(k).ok())
        .map_err(|e| CommandError::from(AgentError::Platform(e)))?
        .guard();
    let data_dir = config.data_dir.clone();
    // Started first: it writes the fence record the guard reads.
    let agent = Agent::start(config).await?;
    if guard == Guard::Child {
        let spawned =
            std::env::current_exe().and_then(|exe| spawn_child_guard(&exe, path, &data_dir));
        match spawned {
            Ok(pid) => tracing::info!(pid, "fence guard started as the agent's child"),
            Err(e) => return Err(CommandError::ChildGuard(e)),
        }
    }
    let shutdown = CancellationToken::new();
    tokio::spawn(cancel_on_signal(shutdown.clone()));
    let ready = agent.ready();
    tokio::spawn(async move {
        if let Some(line) = ready.await {
            match serde_json::to_string(&line) {
                Ok(json) => println!("{json}"),
                Err(e) => tracing::error!(error = %e, "cannot print the ready line"),
            }
        }
    });
    agent.run(shutdown).await.map_err(CommandError::from)
}
