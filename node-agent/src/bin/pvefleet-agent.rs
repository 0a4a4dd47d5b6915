//! `pvefleet-agent`: the node agent of a PVE host. `join` admits this host to a cluster with a
//! token read from a file, standard input or the environment (never the command line); `run`
//! keeps its session to the coordinators until SIGTERM/SIGINT; `fence-guard` resets the host
//! when the agent's lease ended with HA guests still armed (its own systemd unit, or the
//! agent's child). The hidden `--generate man|complete-bash|complete-zsh` prints the man page or
//! a completion script. Thin: the logic is in `node_agent::{config, join, daemon, fence}`. Exit
//! codes: 0 ok, 2 bad command line or configuration, 3 refused by the cluster (join token,
//! role), 1 anything else.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use bootstrap::token_input::{JOIN_TOKEN_ENV, check_join_arguments, read_join_token_of_process};
use clap::{CommandFactory, Parser, Subcommand};
use daemon::generate::{self, Generate, ManExtras};
use daemon::signal::cancel_on_signal;
use node_agent::config::{
    AgentConfig, ConfigError, DEFAULT_CONFIG_PATH, DEFAULT_DATA_DIR, DEFAULT_LOG, PveConfig,
};
use node_agent::daemon::{Agent, AgentError};
use node_agent::fence::settings::Guard;
use node_agent::fence::{GuardOptions, LaunchError, run_guard, spawn_child_guard};
use node_agent::join::{JoinError, JoinOptions, join_cluster, start_command};
use tokio_util::sync::CancellationToken;

const BIN: &str = "pvefleet-agent";

/// The async runtime's worker threads for `run` and `join`.
const AGENT_WORKERS: usize = 2;

/// The man page's FILES, ENVIRONMENT and SEE ALSO.
const MAN: ManExtras = ManExtras {
    files: &[
        (
            DEFAULT_CONFIG_PATH,
            "The configuration (TOML, each field documented in the file as shipped).",
        ),
        (
            DEFAULT_DATA_DIR,
            "The default data directory: node key and certificate, cluster CA, cluster.toml, \
             the command journal, the fence record fence.json.",
        ),
        (
            "/etc/pvefleet/pve-token",
            "The PVE API token of the https backend, as the shipped configuration names it: one \
             line USER@REALM!TOKENID=SECRET, mode 0600.",
        ),
    ],
    environment: &[
        (
            JOIN_TOKEN_ENV,
            "The join token for `join` when --token-file is not given. Never pass a token as \
             an argument: every local user can read a process's arguments.",
        ),
        (
            "RUST_LOG",
            "Log filter for the messages on stderr; wins over `log` of the configuration.",
        ),
        (
            "NOTIFY_SOCKET, WATCHDOG_USEC, WATCHDOG_PID",
            "Set by systemd (Type=notify, WatchdogSec=): run reports READY=1 after the first \
             heartbeat a leader acknowledged, its state in STATUS=, and pets the watchdog.",
        ),
    ],
    see_also: &[
        "pvefleet(1)",
        "pvefleet-coordinator(1)",
        "systemd.service(5)",
    ],
};

/// The pvefleet node agent: runs on each PVE host, keeps a session with the coordinators and
/// runs their commands against the local PVE API (HTTPS token, pvesh, or a simulated node).
#[derive(Debug, Parser)]
#[command(name = BIN, version, max_term_width = 100)]
struct Args {
    /// Print the man page or a completion script on stdout (for packaging).
    #[arg(long, hide = true, value_enum, value_name = "KIND")]
    generate: Option<Generate>,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Join a cluster with a token from `pvefleet token create --role agent`, read from
    /// --token-file or PVEFLEET_JOIN_TOKEN (never from the command line, where every local user
    /// could read it).
    Join {
        /// The QUIC address (host:port) of any coordinator (a follower redirects to the leader).
        addr: String,
        /// The old form `join TOKEN ADDR`: refused, without showing the token.
        #[arg(hide = true)]
        legacy: Option<String>,
        /// Read the join token from FILE (mode 0600; others' read access is refused), or from
        /// standard input if FILE is `-` [default: the environment variable
        /// PVEFLEET_JOIN_TOKEN].
        #[arg(long, value_name = "FILE")]
        token_file: Option<PathBuf>,
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
    /// (5000), log ("info"), and `[pve]` with backend = "https" (url, token_file, and one of
    /// ca_file, fingerprint, insecure = true) | "pvesh" (program, timeout_secs) | "sim" (cpus,
    /// memory_gib, bridges, ceph, time_scale, agent_ip_delay_secs), and `[fence]` with lead_ms
    /// (2000: HA guests are stopped and VIPs dropped this long before the lease ends), reset
    /// ("auto" | "host" | "simulated") and guard ("auto" | "unit" | "child").
    Run {
        /// The agent configuration.
        #[arg(long, value_name = "FILE", default_value = DEFAULT_CONFIG_PATH)]
        config: PathBuf,
    },
    /// Guard the agent's fence record (DATA_DIR/fence.json): reset this host once the record
    /// is armed (HA guests may run) and the lease it states has ended, the backstop for a hung
    /// or killed agent. `[fence] reset` of the configuration says how: "host" (reboot(2) at
    /// once, needs CAP_SYS_BOOT) or "simulated" (SIGKILL the agent, reset the simulated PVE
    /// node). Runs as pvefleet-agent-guard.service, or as the agent's child with
    /// `[fence] guard = "child"`.
    FenceGuard {
        /// The agent's data directory [default: data_dir of the configuration, else
        /// /var/lib/pvefleet/agent].
        #[arg(long, value_name = "DIR")]
        data_dir: Option<PathBuf>,
        /// The agent configuration [default: /etc/pvefleet/agent.toml if it exists].
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Exit once the agent named in the record is gone and the record is not armed (how
        /// the agent starts its child guard; the unit keeps guarding for the next agent).
        #[arg(long)]
        exit_with_agent: bool,
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

impl From<LaunchError> for Failure {
    fn from(e: LaunchError) -> Failure {
        let code = if matches!(e, LaunchError::Config(_)) {
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

/// A command with the configuration it works with: `run` needs one; `join` reads the one
/// named, or the default one if it exists, and its token.
enum Job {
    Run {
        path: PathBuf,
        config: AgentConfig,
    },
    Join {
        token: String,
        addr: String,
        data_dir: Option<PathBuf>,
        config_path: Option<PathBuf>,
        config: Option<AgentConfig>,
    },
    FenceGuard(GuardOptions),
}

impl Job {
    /// Reads the configuration `cmd` works with and, for `join`, the token (before logging
    /// starts: nothing here logs it).
    fn prepare(cmd: Cmd) -> anyhow::Result<Job> {
        match cmd {
            Cmd::Run { config: path } => Ok(Job::Run {
                config: AgentConfig::load(&path)?,
                path,
            }),
            Cmd::FenceGuard {
                data_dir,
                config: config_path,
                exit_with_agent,
            } => {
                let default = Path::new(DEFAULT_CONFIG_PATH);
                let config_path =
                    config_path.or_else(|| default.exists().then(|| default.to_path_buf()));
                let config = config_path.as_deref().map(AgentConfig::load).transpose()?;
                let data_dir = data_dir.unwrap_or_else(|| {
                    config
                        .as_ref()
                        .map_or_else(|| PathBuf::from(DEFAULT_DATA_DIR), |c| c.data_dir.clone())
                });
                Ok(Job::FenceGuard(GuardOptions {
                    data_dir,
                    config,
                    config_path,
                    exit_with_agent,
                }))
            }
            Cmd::Join {
                addr,
                legacy,
                token_file,
                data_dir,
                config: config_path,
            } => {
                check_join_arguments("pvefleet-agent join", &addr, legacy.as_deref())?;
                let token = read_join_token_of_process(token_file.as_deref())?;
                let default = Path::new(DEFAULT_CONFIG_PATH);
                let config = match &config_path {
                    Some(path) => Some(AgentConfig::load(path)?),
                    None if default.exists() => Some(AgentConfig::load(default)?),
                    None => None,
                };
                Ok(Job::Join {
                    token,
                    addr,
                    data_dir,
                    config_path,
                    config,
                })
            }
        }
    }

    /// The log filter of the configuration.
    fn log(&self) -> &str {
        match self {
            Job::Run { config, .. } => &config.log,
            Job::Join { config, .. } => config.as_ref().map_or(DEFAULT_LOG, |c| c.log.as_str()),
            Job::FenceGuard(opts) => opts.config.as_ref().map_or(DEFAULT_LOG, |c| c.log.as_str()),
        }
    }
}

fn main() -> ExitCode {
    if let Some(kind) = generate::requested::<Args>("generate") {
        return generate::print(kind, Args::command(), BIN, &MAN);
    }
    let args = Args::parse();
    // Read first: its `log` sets up logging.
    let job = match Job::prepare(args.command) {
        Ok(job) => job,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    // Before anything builds a TLS configuration: ring only, never a second provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    daemon::logging::init(job.log());
    // The guard is one small loop: one thread is all it needs. The agent idles almost always:
    // two workers, whatever the host's core count (tokio's default is one per core), so one
    // keeps the heartbeats going while the other waits on a disk write.
    let mut builder = if matches!(job, Job::FenceGuard(_)) {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(AGENT_WORKERS);
        builder
    };
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(dispatch(job)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure { code, error }) => {
            // Every error's own text already names its cause: `{error:#}` would repeat it.
            eprintln!("error: {error}");
            ExitCode::from(code)
        }
    }
}

async fn dispatch(job: Job) -> Result<(), Failure> {
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
            run_guard(opts, shutdown).await.map_err(Failure::from)
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

async fn run(path: &Path, mut config: AgentConfig) -> Result<(), Failure> {
    // Resolved here so an unusable machine host name is reported against this file.
    config.host_name = Some(config.resolved_host_name(path)?);
    let guard = config.fence.guard(config.pve.is_sim());
    let data_dir = config.data_dir.clone();
    // Started first: it writes the fence record the guard reads.
    let agent = Agent::start(config).await?;
    if guard == Guard::Child {
        let spawned =
            std::env::current_exe().and_then(|exe| spawn_child_guard(&exe, path, &data_dir));
        match spawned {
            Ok(pid) => tracing::info!(pid, "fence guard started as the agent's child"),
            Err(e) => {
                return Err(Failure {
                    code: 1,
                    error: anyhow::anyhow!("cannot start the fence guard: {e}"),
                });
            }
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
    agent.run(shutdown).await.map_err(Failure::from)
}
