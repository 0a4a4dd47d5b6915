//! `pvefleet-coordinator`: a coordinator member of a pvefleet cluster. `init` creates a cluster,
//! `join` admits this node with a token (from a file, standard input or the environment, never
//! the command line), `run` serves until SIGTERM/SIGINT, `admin-cert` makes
//! a new operator certificate. Every subcommand reads the configuration file (`--config`,
//! default /etc/pvefleet/coordinator.toml if it exists); flags win over it. The hidden
//! `--generate man|complete-bash|complete-zsh` prints the man page or a completion script.
//! Thin: the logic is in `coordinator::{config, setup, node}`. Exit codes: 0 ok, 2 usage or
//! configuration, 3 refused by the cluster (join token), 1 anything else.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use bootstrap::token_input::{JOIN_TOKEN_ENV, check_join_arguments, read_join_token_of_process};
use clap::{CommandFactory, Parser, Subcommand};
use coordinator::config::file::{DEFAULT_CONFIG_PATH, http_address};
use coordinator::config::{
    ControlConfig, CoordinatorConfig, DEFAULT_RECONCILE_TICK, DEFAULT_RENEW_CHECK, NodeSettings,
    RunConfig,
};
use coordinator::error::CoordinatorError;
use coordinator::node::CoordinatorNode;
use coordinator::setup::{
    AdminCertOptions, DEFAULT_ADMIN_ID, InitOptions, JoinOptions, init_cluster, issue_admin_cert,
    join_cluster, start_command,
};
use daemon::generate::{self, Generate, ManExtras};
use daemon::signal::cancel_on_signal;
use protocol::time::timestamp;
use protocol::time::{Now, secs_to_millis};
use tokio_util::sync::CancellationToken;

const BIN: &str = "pvefleet-coordinator";

/// The man page's FILES, ENVIRONMENT and SEE ALSO.
const MAN: ManExtras = ManExtras {
    files: &[
        (
            DEFAULT_CONFIG_PATH,
            "The configuration: data_dir, listen, http, lease_secs, resync_secs, ip_wait_secs, \
             log (TOML, each field documented in the file as shipped).",
        ),
        (
            "/var/lib/pvefleet/coordinator",
            "The default data directory: node key and certificate, cluster CA and its key, \
             cluster.toml, coordinator.toml (recorded by init and join), the Raft store, and \
             pvefleet.toml with admin.pem and admin.key for the pvefleet CLI.",
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
            "Set by systemd (Type=notify, WatchdogSec=): run reports READY=1 once its \
             membership is settled, its state in STATUS=, and pets the watchdog.",
        ),
    ],
    see_also: &["pvefleet(1)", "pvefleet-agent(1)", "systemd.service(5)"],
};

/// A coordinator member of a pvefleet cluster (Raft over QUIC with mutual TLS).
#[derive(Debug, Parser)]
#[command(name = BIN, version, max_term_width = 100)]
struct Args {
    /// The configuration file (TOML) [default: /etc/pvefleet/coordinator.toml, if it exists].
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Print the man page or a completion script on stdout (for packaging).
    #[arg(long, hide = true, value_enum, value_name = "KIND")]
    generate: Option<Generate>,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Create a new cluster with this member as its first coordinator (node 1).
    Init {
        /// The member's data directory (created; must not hold a node) [default: data_dir of
        /// the configuration].
        #[arg(long, value_name = "DIR")]
        data_dir: Option<PathBuf>,
        /// The QUIC address to listen on, as the other members and the CLI dial it [default:
        /// listen of the configuration].
        #[arg(long, value_name = "ADDR:PORT")]
        listen: Option<SocketAddr>,
        /// The cluster id (1-32 characters a-z 0-9 '-'); generated if absent.
        #[arg(long)]
        cluster_id: Option<String>,
        /// The local HTTP address for /metrics, /healthz, /readyz, recorded for `run` (which
        /// prefers its own --http and the configuration's `http`).
        #[arg(long, value_name = "ADDR:PORT")]
        http: Option<SocketAddr>,
        /// How many days past its first expiry an admin certificate may be renewed. 0 (the
        /// default): a renewal rotates the key but keeps the expiry, and an operator issues a
        /// new identity with `pvefleet admin add` before it ends.
        #[arg(long, value_name = "DAYS", default_value_t = 0)]
        admin_renewal_days: u32,
    },
    /// Join an existing cluster with a token from `pvefleet member add`, read from --token-file
    /// or PVEFLEET_JOIN_TOKEN (never from the command line, where every local user could read
    /// it). A coordinator token hands this node the cluster CA key.
    Join {
        /// The QUIC address (ADDR:PORT) of any member (a follower redirects to the leader).
        addr: String,
        /// The old form `join TOKEN ADDR`: refused, without showing the token.
        #[arg(hide = true)]
        legacy: Option<String>,
        /// Read the join token from FILE (mode 0600; others' read access is refused), or from
        /// standard input if FILE is `-` [default: the environment variable
        /// PVEFLEET_JOIN_TOKEN].
        #[arg(long, value_name = "FILE")]
        token_file: Option<PathBuf>,
        /// The new member's data directory (created; must not hold a node) [default: data_dir
        /// of the configuration].
        #[arg(long, value_name = "DIR")]
        data_dir: Option<PathBuf>,
        /// The QUIC address to listen on, as the other members dial it [default: listen of
        /// the configuration].
        #[arg(long, value_name = "ADDR:PORT")]
        listen: Option<SocketAddr>,
    },
    /// Issue a new admin certificate for the `pvefleet` CLI with this coordinator's CA (e.g.
    /// when the old one expired); writes admin.pem and admin.key (0600) in DATA_DIR.
    AdminCert {
        /// The coordinator's data directory (holds the CA key) [default: data_dir of the
        /// configuration].
        #[arg(long, value_name = "DIR")]
        data_dir: Option<PathBuf>,
        /// The admin id the certificate names.
        #[arg(long, value_name = "N", default_value_t = DEFAULT_ADMIN_ID,
              value_parser = clap::value_parser!(u64).range(1..))]
        id: u64,
    },
    /// Serve the member in DATA_DIR until SIGTERM or SIGINT; prints one JSON line
    /// {"node_id":..,"listen":..,"http":..} on stdout once its membership is settled.
    Run {
        /// The member's data directory (made by init or join) [default: data_dir of the
        /// configuration].
        #[arg(long, value_name = "DIR")]
        data_dir: Option<PathBuf>,
        /// The local HTTP address (port 0 picks one) [default: http of the configuration,
        /// else the one recorded at init, else 127.0.0.1 on a free port].
        #[arg(long, value_name = "ADDR:PORT")]
        http: Option<SocketAddr>,
        /// Build a Raft snapshot every N log entries (and keep at most N behind it).
        #[arg(long, value_name = "N")]
        snapshot_logs: Option<u64>,
        /// Serve the web dashboard over HTTPS on this address (port 0 picks one) [default:
        /// listen of the configuration's dashboard table; none without one]. Log in with
        /// `pvefleet dashboard login`.
        #[arg(long, value_name = "ADDR:PORT")]
        dashboard: Option<SocketAddr>,
        /// Where the dashboard lists `pvefleet sim run --report` reports from [default:
        /// scenario_dir of the configuration's dashboard table, /var/lib/pvefleet/scenarios].
        #[arg(long, value_name = "DIR")]
        scenario_dir: Option<PathBuf>,
        /// Abort after committing a write of admin METHOD, before replying, once per
        /// cluster (the first member to create MARKER dies there; tests only: builds with the
        /// `fault-points` feature).
        #[cfg(feature = "fault-points")]
        #[arg(long, hide = true, value_name = "METHOD=MARKER")]
        abort_after_commit: Option<coordinator::fault_point::AbortAfterCommit>,
        /// How often to check whether the node certificate is due for renewal (tests only).
        #[arg(
            long,
            hide = true,
            value_name = "N",
            default_value_t = DEFAULT_RENEW_CHECK.as_secs(),
            value_parser = clap::value_parser!(u64).range(1..)
        )]
        renew_check_secs: u64,
        /// The lease granted to agents with each heartbeat, in seconds [default: lease_secs
        /// of the configuration, 10].
        #[arg(
            long,
            value_name = "SECS",
            value_parser = clap::value_parser!(u64).range(1..=3600)
        )]
        lease_secs: Option<u64>,
        /// Re-send an Ensure to a VM that looks in order after this many seconds (at least the
        /// lease) [default: resync_secs of the configuration, 30].
        #[arg(
            long,
            value_name = "SECS",
            value_parser = clap::value_parser!(u64).range(1..=86_400)
        )]
        resync_secs: Option<u64>,
        /// How long agents wait for a started VM's guest-agent addresses (0 = do not wait)
        /// [default: ip_wait_secs of the configuration, 60].
        #[arg(
            long,
            value_name = "SECS",
            value_parser = clap::value_parser!(u32).range(0..=3600)
        )]
        ip_wait_secs: Option<u32>,
        /// The reconciler's period when nothing wakes it sooner (tests only).
        #[arg(
            long,
            hide = true,
            value_name = "MS",
            default_value_t = u64::try_from(DEFAULT_RECONCILE_TICK.as_millis()).unwrap_or(300),
            value_parser = clap::value_parser!(u64).range(10..=10_000)
        )]
        reconcile_tick_ms: u64,
    },
}

/// A command line that parsed but cannot be carried out as given (exit 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct UsageError(String);

/// The configuration file in force and where it came from.
struct Configured {
    file: CoordinatorConfig,
    /// The `--config` given, if any.
    explicit: Option<PathBuf>,
}

impl Configured {
    /// The file to name in messages.
    fn shown(&self) -> String {
        self.explicit
            .as_deref()
            .unwrap_or(Path::new(DEFAULT_CONFIG_PATH))
            .display()
            .to_string()
    }

    /// The `listen` of `init` or `join`: the flag, else the file's.
    fn listen(&self, flag: Option<SocketAddr>, command: &str) -> Result<SocketAddr, UsageError> {
        flag.or(self.file.listen).ok_or_else(|| {
            UsageError(format!(
                "{command} needs the QUIC address this member listens on, as the others dial \
                 it: pass --listen ADDR:PORT or set `listen` in {}",
                self.shown()
            ))
        })
    }

    /// The command that starts the member in `data_dir`.
    fn start_command(&self, data_dir: &Path) -> String {
        // The unit runs with the default file: its data_dir is the one it serves.
        let unit_dir = match &self.explicit {
            None => self.file.data_dir.clone(),
            Some(_) => CoordinatorConfig::load_or_default(None)
                .map_or_else(|_| CoordinatorConfig::default().data_dir, |c| c.data_dir),
        };
        start_command(data_dir, &unit_dir, self.explicit.as_deref())
    }
}

fn main() -> ExitCode {
    if let Some(kind) = generate::requested::<Args>("generate") {
        return generate::print(kind, Args::command(), BIN, &MAN);
    }
    let args = Args::parse();
    let file = match CoordinatorConfig::load_or_default(args.config.as_deref()) {
        Ok(file) => file,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    // Before anything builds a TLS configuration: ring only, never a second provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    daemon::logging::init(&file.log);
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
    let configured = Configured {
        file,
        explicit: args.config,
    };
    match runtime.block_on(dispatch(args.command, &configured)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // Every error's own text already names its cause: `{e:#}` would repeat it.
            eprintln!("error: {e}");
            let refused = e
                .downcast_ref::<CoordinatorError>()
                .is_some_and(CoordinatorError::is_refusal);
            let usage = e.downcast_ref::<UsageError>().is_some();
            ExitCode::from(match (refused, usage) {
                (true, _) => 3,
                (_, true) => 2,
                _ => 1,
            })
        }
    }
}

async fn dispatch(cmd: Cmd, configured: &Configured) -> anyhow::Result<()> {
    let file = &configured.file;
    match cmd {
        Cmd::Init {
            data_dir,
            listen,
            cluster_id,
            http,
            admin_renewal_days,
        } => {
            let listen = configured.listen(listen, "init")?;
            let report = init_cluster(&InitOptions {
                data_dir: data_dir.unwrap_or_else(|| file.data_dir.clone()),
                listen,
                cluster_id,
                http,
                admin_renewal_days,
            })?;
            println!(
                "created cluster {} with this member as node {} (CA sha256:{})",
                report.cluster_id, report.node_id, report.ca_sha256
            );
            println!(
                "point the CLI at it: export PVEFLEET_CONFIG={}",
                report.cli_config.display()
            );
            println!("add members:         pvefleet member add");
            println!(
                "start it:            {}",
                configured.start_command(&report.data_dir)
            );
            Ok(())
        }
        Cmd::Join {
            addr,
            legacy,
            token_file,
            data_dir,
            listen,
        } => {
            // Checked before the address is parsed: a parse error would echo a token given as
            // the old form's first argument.
            check_join_arguments("pvefleet-coordinator join", &addr, legacy.as_deref())
                .map_err(|e| UsageError(e.to_string()))?;
            let addr: SocketAddr = addr.parse().map_err(|e| {
                UsageError(format!(
                    "invalid member address '{addr}': {e} (expected ADDR:PORT, e.g. \
                     10.0.0.11:7400)"
                ))
            })?;
            let listen = configured.listen(listen, "join")?;
            let token = read_join_token_of_process(token_file.as_deref())
                .map_err(|e| UsageError(e.to_string()))?;
            let report = join_cluster(&JoinOptions {
                token,
                via: addr,
                data_dir: data_dir.unwrap_or_else(|| file.data_dir.clone()),
                listen,
            })
            .await?;
            println!(
                "joined cluster {} as {} {}",
                report.cluster_id, report.role, report.node_id
            );
            if report.role == protocol::Role::Coordinator {
                println!(
                    "start it: {} (it becomes a voter once it has caught up)",
                    configured.start_command(&report.data_dir)
                );
            }
            Ok(())
        }
        Cmd::AdminCert { data_dir, id } => {
            let data_dir = data_dir.unwrap_or_else(|| file.data_dir.clone());
            let report = issue_admin_cert(&AdminCertOptions { data_dir, id }, Now::read().secs())?;
            println!(
                "wrote the certificate of admin {} to {} and its key to {} (mode 0600); valid \
                 until {}; the CLI renews it automatically from two thirds of its life on",
                report.id,
                report.cert.display(),
                report.key.display(),
                timestamp(secs_to_millis(report.not_after))
            );
            match report.cli_config {
                Some(config) => println!(
                    "the CLI uses them with: export PVEFLEET_CONFIG={}",
                    config.display()
                ),
                None => println!("point `cert` and `key` in the CLI configuration at them"),
            }
            Ok(())
        }
        Cmd::Run {
            data_dir,
            http,
            snapshot_logs,
            dashboard,
            scenario_dir,
            #[cfg(feature = "fault-points")]
            abort_after_commit,
            renew_check_secs,
            lease_secs,
            resync_secs,
            ip_wait_secs,
            reconcile_tick_ms,
        } => {
            #[cfg(feature = "fault-points")]
            if let Some(point) = abort_after_commit {
                coordinator::fault_point::arm(point);
            }
            let data_dir = data_dir.unwrap_or_else(|| file.data_dir.clone());
            // What init recorded; an unreadable directory is reported when the member starts.
            let recorded = NodeSettings::load(&data_dir).ok().and_then(|s| s.http);
            let http = http_address(http, file.http, recorded);
            let mut dashboard = match (&file.dashboard, dashboard) {
                (Some(table), flag) => Some(table.config(flag)),
                (None, Some(listen)) => Some(coordinator::dashboard::DashboardConfig {
                    listen,
                    cert: coordinator::dashboard::DashboardCert::Member,
                    session: coordinator::dashboard::DEFAULT_SESSION,
                    scenario_dir: coordinator::dashboard::DEFAULT_SCENARIO_DIR.into(),
                }),
                (None, None) => None,
            };
            if let (Some(d), Some(dir)) = (dashboard.as_mut(), scenario_dir) {
                d.scenario_dir = dir;
            }
            run(
                RunConfig {
                    data_dir,
                    http: Some(http),
                    snapshot_logs,
                    dashboard,
                    renew_check: Duration::from_secs(renew_check_secs),
                },
                ControlConfig {
                    lease: lease_secs.map_or(file.lease(), Duration::from_secs),
                    resync: resync_secs.map_or(file.resync(), Duration::from_secs),
                    ip_wait_secs: ip_wait_secs.unwrap_or(file.ip_wait_secs),
                    tick: Duration::from_millis(reconcile_tick_ms),
                },
            )
            .await
            .map_err(Into::into)
        }
    }
}

async fn run(config: RunConfig, control: ControlConfig) -> Result<(), CoordinatorError> {
    let node = CoordinatorNode::start_with(config, control).await?;
    let shutdown = CancellationToken::new();
    tokio::spawn(cancel_on_signal(shutdown.clone()));
    let ready = node.ready();
    tokio::spawn(async move {
        if let Some(line) = ready.await {
            match serde_json::to_string(&line) {
                Ok(json) => println!("{json}"),
                Err(e) => tracing::error!(error = %e, "cannot print the ready line"),
            }
        }
    });
    node.run(shutdown).await
}
