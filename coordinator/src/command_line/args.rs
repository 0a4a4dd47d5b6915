//! The coordinator's command line as clap reads it: the subcommands and their flags, the
//! man page's extra sections. What the flags mean once the configuration file and the recorded
//! settings are taken into account is [`super::settings`]'s.

use std::net::SocketAddr;
use std::path::PathBuf;

use bootstrap::token_input::JOIN_TOKEN_ENV;
use clap::{Parser, Subcommand};
use daemon::generate::{Generate, ManExtras};

use crate::config::file::DEFAULT_CONFIG_PATH;
use crate::config::{DEFAULT_RECONCILE_TICK, DEFAULT_RENEW_CHECK};
use crate::setup::DEFAULT_ADMIN_ID;

/// The binary's name.
pub const BIN: &str = "pvefleet-coordinator";

/// The man page's FILES, ENVIRONMENT and SEE ALSO.
pub const MAN: ManExtras = ManExtras {
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
pub struct Args {
    /// The configuration file (TOML) [default: /etc/pvefleet/coordinator.toml, if it exists].
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Print the man page or a completion script on stdout (for packaging).
    #[arg(long, hide = true, value_enum, value_name = "KIND")]
    pub generate: Option<Generate>,
    /// What to do.
    #[command(subcommand)]
    pub command: Cmd,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Cmd {
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
    Run(RunFlags),
}

/// The flags of `run`.
#[derive(Debug, clap::Args)]
pub struct RunFlags {
    /// The member's data directory (made by init or join) [default: data_dir of the
    /// configuration].
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// The local HTTP address (port 0 picks one) [default: http of the configuration,
    /// else the one recorded at init, else 127.0.0.1 on a free port].
    #[arg(long, value_name = "ADDR:PORT")]
    pub http: Option<SocketAddr>,
    /// Build a Raft snapshot every N log entries (and keep at most N behind it).
    #[arg(long, value_name = "N")]
    pub snapshot_logs: Option<u64>,
    /// Serve the web dashboard over HTTPS on this address (port 0 picks one) [default:
    /// listen of the configuration's dashboard table; none without one]. Log in with
    /// `pvefleet dashboard login`.
    #[arg(long, value_name = "ADDR:PORT")]
    pub dashboard: Option<SocketAddr>,
    /// Where the dashboard lists `pvefleet-lab sim run --report` reports from [default:
    /// scenario_dir of the configuration's dashboard table, /var/lib/pvefleet/scenarios].
    #[arg(long, value_name = "DIR")]
    pub scenario_dir: Option<PathBuf>,
    /// Abort after committing a write of admin METHOD, before replying, once per
    /// cluster (the first member to create MARKER dies there; tests only: builds with the
    /// `fault-points` feature).
    #[cfg(feature = "fault-points")]
    #[arg(long, hide = true, value_name = "METHOD=MARKER")]
    pub abort_after_commit: Option<crate::fault_point::AbortAfterCommit>,
    /// How often to check whether the node certificate is due for renewal (tests only).
    #[arg(
        long,
        hide = true,
        value_name = "N",
        default_value_t = DEFAULT_RENEW_CHECK.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub renew_check_secs: u64,
    /// The lease granted to agents with each heartbeat, in seconds, 1 to 60 [default:
    /// lease_secs of the configuration, 10].
    #[arg(
        long,
        value_name = "SECS",
        value_parser = clap::value_parser!(u64).range(crate::config::file::LEASE_SECS_RANGE)
    )]
    pub lease_secs: Option<u64>,
    /// Re-send an Ensure to a VM that looks in order after this many seconds (at least the
    /// lease) [default: resync_secs of the configuration, 30].
    #[arg(
        long,
        value_name = "SECS",
        value_parser = clap::value_parser!(u64).range(1..=86_400)
    )]
    pub resync_secs: Option<u64>,
    /// How long agents wait for a started VM's guest-agent addresses (0 = do not wait)
    /// [default: ip_wait_secs of the configuration, 60].
    #[arg(
        long,
        value_name = "SECS",
        value_parser = clap::value_parser!(u32).range(0..=3600)
    )]
    pub ip_wait_secs: Option<u32>,
    /// The reconciler's period when nothing wakes it sooner (tests only).
    #[arg(
        long,
        hide = true,
        value_name = "MS",
        default_value_t = u64::try_from(DEFAULT_RECONCILE_TICK.as_millis()).unwrap_or(300),
        value_parser = clap::value_parser!(u64).range(10..=10_000)
    )]
    pub reconcile_tick_ms: u64,
}
