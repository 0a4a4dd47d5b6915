//! The agent's command line as clap reads it: the subcommands, their flags and the man
//! page's extra sections. What a command works with once the configuration file is read is
//! [`super::job`]'s.

use std::path::PathBuf;

use bootstrap::token_input::JOIN_TOKEN_ENV;
use clap::{Parser, Subcommand};
use daemon::generate::{Generate, ManExtras};

use crate::config::{DEFAULT_CONFIG_PATH, DEFAULT_DATA_DIR};

/// The binary's name.
pub const BIN: &str = "pvefleet-agent";

/// The async runtime's worker threads for `run` and `join`.
pub const AGENT_WORKERS: usize = 2;

/// The man page's FILES, ENVIRONMENT and SEE ALSO.
pub const MAN: ManExtras = ManExtras {
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
pub struct Args {
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
    /// name), platform ("host" | "lab": beside a pve-sim process), vip_holding, `[labels]`,
    /// heartbeat_ms (1000), inventory_ms (5000), log ("info"), and `[pve]` with backend =
    /// "https" (url, token_file, and one of ca_file, fingerprint, insecure = true) | "pvesh"
    /// (program, timeout_secs), and `[fence]` with lead_ms (2000: HA guests are stopped and
    /// VIPs dropped this long before the lease ends), reset ("auto" | "host" | "simulated")
    /// and guard ("auto" | "unit" | "child").
    Run {
        /// The agent configuration.
        #[arg(long, value_name = "FILE", default_value = DEFAULT_CONFIG_PATH)]
        config: PathBuf,
    },
    /// Guard the agent's fence record (DATA_DIR/fence.json): reset this host once the record
    /// is armed (HA guests may run) and the lease it states has ended, the backstop for a hung
    /// or killed agent. `[fence] reset` of the configuration says how: "host" (reboot(2) at
    /// once, needs CAP_SYS_BOOT) or, with platform = "lab", "simulated" (SIGKILL the agent,
    /// reset the simulated PVE node through pve-sim's control API). Runs as pvefleet-agent-guard.service, or as the agent's child with
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
