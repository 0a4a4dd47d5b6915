//! `pvefleet-agent`: the node agent of a PVE host. `join` admits this host to a cluster with a
//! token; `run` keeps its session to the coordinators until SIGTERM/SIGINT. Thin: the logic is
//! in `node_agent::{join, daemon}`. Exit codes: 0 ok, 2 bad command line or configuration,
//! 3 refused by the cluster (join token, role), 1 anything else.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use node_agent::config::{AgentConfig, ConfigError, DEFAULT_CONFIG_PATH, DEFAULT_DATA_DIR};
use node_agent::daemon::{Agent, AgentError};
use node_agent::join::{JoinError, JoinOptions, join_cluster};
use tokio_util::sync::CancellationToken;

/// The pvefleet node agent: runs on each PVE host, keeps a session with the coordinators and
/// runs their commands against the local PVE API (HTTPS token, pvesh, or a simulated node).
#[derive(Debug, Parser)]
#[command(name = "pvefleet-agent", version)]
struct Args {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Join a cluster with a token from `pvefleet token create --role agent`.
    Join {
        /// The join token.
        token: String,
        /// The QUIC address (host:port) of any coordinator (a follower redirects to the leader).
        addr: String,
        /// The agent's data directory (created; must not hold a node) [default: data_dir of
        /// the configuration, else /var/lib/pvefleet/agent].
        #[arg(long, value_name = "DIR")]
        data_dir: Option<PathBuf>,
        /// The agent configuration, for its data_dir [default: /etc/pvefleet/agent.toml if it
        /// exists].
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Run the agent until SIGTERM or SIGINT; prints one JSON line
    /// {"node_id":..,"host":..,"backend":..} on stdout once a leader acknowledged it.
    ///
    /// The configuration (TOML) has: data_dir, host_name (default: this machine's short host
    /// name; required with the sim backend), `[labels]`, heartbeat_ms (1000), inventory_ms
    /// (5000), and `[pve]` with backend = "https" (url, token_file, and one of ca_file,
    /// fingerprint, insecure = true) | "pvesh" (program, timeout_secs) | "sim" (cpus,
    /// memory_gib, bridges, ceph, time_scale, agent_ip_delay_secs).
    Run {
        /// The agent configuration.
        #[arg(long, value_name = "FILE", default_value = DEFAULT_CONFIG_PATH)]
        config: PathBuf,
    },
}

/// A failure with its exit code.
struct Failure {
    code: u8,
    error: anyhow::Error,
}

impl From<ConfigError> for Failure {
    fn from(e: ConfigError) -> Failure {
        Failure {
            code: 2,
            error: e.into(),
        }
    }
}

impl From<AgentError> for Failure {
    fn from(e: AgentError) -> Failure {
        let code = if matches!(e, AgentError::Config(_)) {
            2
        } else {
            1
        };
        Failure {
            code,
            error: e.into(),
        }
    }
}

impl From<JoinError> for Failure {
    fn from(e: JoinError) -> Failure {
        let code = if e.is_refusal() { 3 } else { 1 };
        Failure {
            code,
            error: e.into(),
        }
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    // Before anything builds a TLS configuration: ring only, never a second provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        // Colours only for people: journald and log files get plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(dispatch(args.command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure { code, error }) => {
            // Every error's own text already names its cause: `{error:#}` would repeat it.
            eprintln!("error: {error}");
            ExitCode::from(code)
        }
    }
}

async fn dispatch(cmd: Cmd) -> Result<(), Failure> {
    match cmd {
        Cmd::Join {
            token,
            addr,
            data_dir,
            config,
        } => {
            let data_dir = match data_dir {
                Some(dir) => dir,
                None => configured_data_dir(config.as_deref())?,
            };
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
            println!(
                "start it: pvefleet-agent run --config FILE (with data_dir = \"{}\")",
                report.data_dir.display()
            );
            Ok(())
        }
        Cmd::Run { config } => run(&config).await,
    }
}

/// The data directory of the configuration named (or of the default one if it exists).
fn configured_data_dir(config: Option<&Path>) -> Result<PathBuf, Failure> {
    let path = match config {
        Some(path) => path.to_path_buf(),
        None if Path::new(DEFAULT_CONFIG_PATH).exists() => PathBuf::from(DEFAULT_CONFIG_PATH),
        None => return Ok(PathBuf::from(DEFAULT_DATA_DIR)),
    };
    Ok(AgentConfig::load(&path)?.data_dir)
}

async fn run(path: &Path) -> Result<(), Failure> {
    let mut config = AgentConfig::load(path)?;
    // Resolved here so an unusable machine host name is reported against this file.
    config.host_name = Some(config.resolved_host_name(path)?);
    let agent = Agent::start(config).await?;
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
    agent.run(shutdown).await.map_err(Failure::from)
}

/// Cancels `shutdown` on the first SIGTERM or SIGINT.
async fn cancel_on_signal(shutdown: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot install signal handlers; stop with SIGKILL");
        return;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
        _ = int.recv() => tracing::info!("SIGINT: shutting down"),
    }
    shutdown.cancel();
}
