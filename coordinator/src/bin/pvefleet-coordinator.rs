//! `pvefleet-coordinator`: a coordinator member of a pvefleet cluster. `init` creates a cluster,
//! `join` admits this node with a token, `run` serves until SIGTERM/SIGINT, `admin-cert` makes
//! a new operator certificate. Thin: the logic is in `coordinator::{setup, node}`. Exit codes: 0 ok, 2 usage, 3 refused by the cluster (join
//! token), 1 anything else.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use coordinator::cli::output::human::timestamp;
use coordinator::config::{
    ControlConfig, DEFAULT_IP_WAIT_SECS, DEFAULT_LEASE, DEFAULT_RECONCILE_TICK,
    DEFAULT_RENEW_CHECK, DEFAULT_RESYNC, RunConfig,
};
use coordinator::error::CoordinatorError;
use coordinator::node::CoordinatorNode;
use coordinator::setup::{
    AdminCertOptions, DEFAULT_ADMIN_ID, InitOptions, JoinOptions, init_cluster, issue_admin_cert,
    join_cluster,
};
use coordinator::tokens::{Now, secs_to_millis};
use tokio_util::sync::CancellationToken;

/// A coordinator member of a pvefleet cluster (Raft over QUIC with mutual TLS).
#[derive(Debug, Parser)]
#[command(name = "pvefleet-coordinator", version)]
struct Args {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Create a new cluster with this member as its first coordinator (node 1).
    Init {
        /// The member's data directory (created; must not hold a node).
        #[arg(long)]
        data_dir: PathBuf,
        /// The QUIC address to listen on, as the other members and the CLI dial it.
        #[arg(long)]
        listen: SocketAddr,
        /// The cluster id (1-32 characters a-z 0-9 '-'); generated if absent.
        #[arg(long)]
        cluster_id: Option<String>,
        /// The local HTTP address for /metrics, /healthz, /readyz (default 127.0.0.1, any port).
        #[arg(long)]
        http: Option<SocketAddr>,
    },
    /// Join an existing cluster with a token from `pvefleet member add` or `token create`.
    Join {
        /// The join token.
        token: String,
        /// The QUIC address of any member (a follower redirects to the leader).
        addr: SocketAddr,
        /// The new member's data directory (created; must not hold a node).
        #[arg(long)]
        data_dir: PathBuf,
        /// The QUIC address to listen on, as the other members dial it.
        #[arg(long)]
        listen: SocketAddr,
    },
    /// Issue a new admin certificate for the `pvefleet` CLI with this coordinator's CA (e.g.
    /// when the old one expired); writes admin.pem and admin.key (0600) in DATA_DIR.
    AdminCert {
        /// The coordinator's data directory (holds the CA key).
        #[arg(long)]
        data_dir: PathBuf,
        /// The admin id the certificate names.
        #[arg(long, value_name = "N", default_value_t = DEFAULT_ADMIN_ID,
              value_parser = clap::value_parser!(u64).range(1..))]
        id: u64,
    },
    /// Serve the member in DATA_DIR until SIGTERM or SIGINT.
    Run {
        /// The member's data directory (made by init or join).
        #[arg(long)]
        data_dir: PathBuf,
        /// The local HTTP address (overrides the one recorded at init; port 0 picks one).
        #[arg(long)]
        http: Option<SocketAddr>,
        /// Build a Raft snapshot every N log entries (and keep at most N behind it).
        #[arg(long, value_name = "N")]
        snapshot_logs: Option<u64>,
        /// How often to check whether the node certificate is due for renewal (tests only).
        #[arg(
            long,
            hide = true,
            value_name = "N",
            default_value_t = DEFAULT_RENEW_CHECK.as_secs(),
            value_parser = clap::value_parser!(u64).range(1..)
        )]
        renew_check_secs: u64,
        /// The lease granted to agents with each heartbeat, in seconds.
        #[arg(
            long,
            value_name = "SECS",
            default_value_t = DEFAULT_LEASE.as_secs(),
            value_parser = clap::value_parser!(u64).range(1..=3600)
        )]
        lease_secs: u64,
        /// Re-send an Ensure to a VM that looks in order after this many seconds (at least the
        /// lease).
        #[arg(
            long,
            value_name = "SECS",
            default_value_t = DEFAULT_RESYNC.as_secs(),
            value_parser = clap::value_parser!(u64).range(1..=86_400)
        )]
        resync_secs: u64,
        /// How long agents wait for a started VM's guest-agent addresses (0 = do not wait).
        #[arg(
            long,
            value_name = "SECS",
            default_value_t = DEFAULT_IP_WAIT_SECS,
            value_parser = clap::value_parser!(u32).range(0..=3600)
        )]
        ip_wait_secs: u32,
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

fn main() -> ExitCode {
    let args = Args::parse();
    // Before anything builds a TLS configuration: ring only, never a second provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,openraft=warn")),
        )
        .with_writer(std::io::stderr)
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
        Err(e) => {
            // Every error's own text already names its cause: `{e:#}` would repeat it.
            eprintln!("error: {e}");
            let refused = e
                .downcast_ref::<CoordinatorError>()
                .is_some_and(CoordinatorError::is_refusal);
            ExitCode::from(if refused { 3 } else { 1 })
        }
    }
}

async fn dispatch(cmd: Cmd) -> anyhow::Result<()> {
    match cmd {
        Cmd::Init {
            data_dir,
            listen,
            cluster_id,
            http,
        } => {
            let report = init_cluster(&InitOptions {
                data_dir,
                listen,
                cluster_id,
                http,
            })?;
            let dir = report.data_dir.display();
            println!(
                "created cluster {} with this member as node {} (CA sha256:{})",
                report.cluster_id, report.node_id, report.ca_sha256
            );
            println!("start it:           pvefleet-coordinator run --data-dir {dir}");
            println!(
                "point the CLI at it: export PVEFLEET_CONFIG={}",
                report.cli_config.display()
            );
            println!("add members:        pvefleet member add");
            Ok(())
        }
        Cmd::Join {
            token,
            addr,
            data_dir,
            listen,
        } => {
            let report = join_cluster(&JoinOptions {
                token,
                via: addr,
                data_dir,
                listen,
            })
            .await?;
            println!(
                "joined cluster {} as {} {}",
                report.cluster_id, report.role, report.node_id
            );
            if report.role == protocol::Role::Coordinator {
                println!(
                    "start it: pvefleet-coordinator run --data-dir {} (it becomes a voter once \
                     it has caught up)",
                    report.data_dir.display()
                );
            }
            Ok(())
        }
        Cmd::AdminCert { data_dir, id } => {
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
            renew_check_secs,
            lease_secs,
            resync_secs,
            ip_wait_secs,
            reconcile_tick_ms,
        } => run(
            RunConfig {
                data_dir,
                http,
                snapshot_logs,
                renew_check: Duration::from_secs(renew_check_secs),
            },
            ControlConfig {
                lease: Duration::from_secs(lease_secs),
                resync: Duration::from_secs(resync_secs),
                ip_wait_secs,
                tick: Duration::from_millis(reconcile_tick_ms),
            },
        )
        .await
        .map_err(Into::into),
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
