//! The `pvefleet` command line (clap derive): global flags, one subcommand per resource, and the
//! parsers for durations (`--ttl 24h`, `--timeout 10`).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use protocol::{NodeId, Role};

use crate::cli::config::CONFIG_ENV;
use crate::cli::output::OutputFormat;

/// Operate a pvefleet cluster: members, join tokens, VMs and the resources they use.
#[derive(Debug, Clone, PartialEq, Eq, Parser)]
#[command(
    name = "pvefleet",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    /// The configuration file: CA, admin certificate and key, coordinator members.
    #[arg(long, global = true, value_name = "FILE", env = CONFIG_ENV)]
    pub config: Option<PathBuf>,
    /// How to print results: tables for people, one JSON document for scripts.
    #[arg(long, short = 'o', global = true, value_enum, default_value_t = OutputFormat::Table)]
    pub output: OutputFormat,
    /// Read from the member contacted, without confirming with a quorum: answers without a
    /// leader, possibly behind.
    #[arg(long, global = true)]
    pub stale: bool,
    /// Give up after this long (seconds, or with a unit: 500ms, 30s, 2m), retries included.
    #[arg(long, global = true, value_name = "SECS", default_value = "10", value_parser = parse_timeout)]
    pub timeout: Duration,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The resources and what can be done with them.
#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum Command {
    /// The Raft cluster: leader, term, indexes, replication lag.
    #[command(subcommand)]
    Cluster(ClusterCommand),
    /// Coordinator members.
    #[command(subcommand)]
    Member(MemberCommand),
    /// Join tokens for new agents and coordinators.
    #[command(subcommand)]
    Token(TokenCommand),
    /// VMs (desired state, created or updated by name).
    #[command(subcommand)]
    Vm(VmCommand),
    /// IP pools VM NICs draw addresses from.
    #[command(subcommand)]
    Pool(PoolCommand),
    /// VMID ranges VMs draw ids from.
    #[command(subcommand)]
    Range(RangeCommand),
    /// Virtual IPs held by one host at a time.
    #[command(subcommand)]
    Vip(VipCommand),
    /// The fleet's event log, oldest first.
    Events(EventsArgs),
    /// Allocate ids directly (for tests and scripts).
    #[command(subcommand)]
    Alloc(AllocCommand),
    /// Start a whole simulated fleet on this machine (3 coordinators, 5 simulated PVE hosts),
    /// apply the example fleet and keep it running until Ctrl-C.
    Demo(DemoArgs),
}

/// `pvefleet demo`
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub struct DemoArgs {
    /// Where the demo keeps its state (default: a new temporary directory, removed at exit).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Coordinator members to start (3 or 5).
    #[arg(long, default_value_t = 3)]
    pub coordinators: u32,
    /// Simulated PVE hosts to start, one agent each.
    #[arg(long, default_value_t = 5)]
    pub hosts: u32,
    /// The fleet file to apply (default: the shipped example fleet).
    #[arg(long, short = 'f', value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Stop once every VM is running instead of waiting for Ctrl-C (for scripts and tests).
    #[arg(long)]
    pub exit_when_ready: bool,
}

/// `pvefleet cluster ...`
#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum ClusterCommand {
    /// Members, leader, term, commit and applied index, lag.
    Status,
}

/// `pvefleet member ...`
#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum MemberCommand {
    /// List the coordinator members.
    #[command(visible_alias = "list")]
    Ls,
    /// Create a one-use coordinator join token and print the command that joins a new member.
    Add(MemberAddArgs),
    /// Remove a member: it leaves Raft and its certificate is refused from then on.
    #[command(visible_alias = "rm")]
    Remove {
        /// The member's node id (`pvefleet member ls`).
        id: NodeId,
    },
}

/// `pvefleet member add`
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub struct MemberAddArgs {
    /// How long the token stays valid.
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = parse_duration)]
    pub ttl: Duration,
    /// The new member's QUIC listen address, to put in the printed command.
    #[arg(long, value_name = "HOST:PORT")]
    pub listen: Option<String>,
    /// The new member's data directory, to put in the printed command.
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
}

/// `pvefleet token ...`
#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum TokenCommand {
    /// Create a join token; it is printed once (only its hash is stored).
    Create(TokenCreateArgs),
    /// List join tokens (ids, roles, expiry, uses; never the secrets).
    #[command(visible_alias = "list")]
    Ls,
    /// Revoke a join token: no node can join with it any more.
    Revoke {
        /// The token's id (`pvefleet token ls`).
        id: String,
    },
}

/// `pvefleet token create`
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub struct TokenCreateArgs {
    /// The role a node joining with the token receives.
    #[arg(long, value_enum)]
    pub role: JoinRole,
    /// How long it stays valid (e.g. 30m, 24h, 7d) [default: 24h].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub ttl: Option<Duration>,
    /// How many joins it allows [default: unlimited until it expires].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub uses: Option<u32>,
}

/// The roles a join token can grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ValueEnum)]
pub enum JoinRole {
    /// A coordinator member (Raft voter once caught up).
    Coordinator,
    /// A node agent on a PVE host.
    Agent,
}

impl From<JoinRole> for Role {
    fn from(role: JoinRole) -> Role {
        match role {
            JoinRole::Coordinator => Role::Coordinator,
            JoinRole::Agent => Role::Agent,
        }
    }
}

/// `-f FILE` of the apply commands.
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub struct ApplyArgs {
    /// The TOML file (`-` reads standard input). Every entry is checked before any is sent.
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    pub file: PathBuf,
}

/// `pvefleet vm ...`
#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum VmCommand {
    /// Create or update VMs by name from a file of `[[vm]]` tables (or one VM's fields).
    Apply(ApplyArgs),
    /// List VMs.
    #[command(visible_alias = "list")]
    Ls,
    /// Show one VM: its spec, placement, ids, addresses and status.
    Show {
        /// The VM's name.
        name: String,
    },
    /// Delete a VM: it is destroyed on its host, then its VMID and addresses are released.
    #[command(visible_alias = "rm")]
    Delete {
        /// The VM's name.
        name: String,
    },
}

/// `pvefleet pool ...`
#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum PoolCommand {
    /// Create or update IP pools from the `[[pool]]` tables of a file.
    Apply(ApplyArgs),
    /// List IP pools and their use.
    #[command(visible_alias = "list")]
    Ls,
    /// Delete an IP pool (refused while addresses are allocated from it).
    #[command(visible_alias = "rm")]
    Delete {
        /// The pool's name.
        name: String,
    },
}

/// `pvefleet range ...`
#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum RangeCommand {
    /// Create or update VMID ranges from the `[[vmid_range]]` tables of a file.
    Apply(ApplyArgs),
    /// List VMID ranges and their use.
    #[command(visible_alias = "list")]
    Ls,
    /// Delete a VMID range (refused while VMIDs are allocated from it).
    #[command(visible_alias = "rm")]
    Delete {
        /// The range's name.
        name: String,
    },
}

/// `pvefleet vip ...`
#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum VipCommand {
    /// Create or update VIPs from the `[[vip]]` tables of a file.
    Apply(ApplyArgs),
    /// List VIPs and the host holding each.
    #[command(visible_alias = "list")]
    Ls,
    /// Delete a VIP.
    #[command(visible_alias = "rm")]
    Delete {
        /// The VIP's name.
        name: String,
    },
}

/// `pvefleet events`
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub struct EventsArgs {
    /// Only events after this sequence number (0: from the oldest kept).
    #[arg(long, value_name = "SEQ", default_value_t = 0)]
    pub since: u64,
    /// At most this many events.
    #[arg(long, value_name = "N")]
    pub limit: Option<u32>,
}

/// `pvefleet alloc ...`
#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum AllocCommand {
    /// Allocate (or show the already allocated) VMID of a VM.
    Vmid {
        /// The VM's name.
        vm: String,
    },
    /// Allocate one address from a pool to an owner outside the fleet's VMs.
    Ip {
        /// The pool's name.
        pool: String,
        /// Who holds the address (free text).
        owner: String,
    },
}

/// Parses `90s`, `30m`, `24h`, `7d`, `1h30m` or `500ms`; a unit is required, since a bare
/// number could mean seconds or hours.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || {
        format!("'{text}' is not a duration: write a number with a unit, e.g. 90s, 30m, 24h, 7d")
    };
    let mut rest = text.trim();
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total = Duration::ZERO;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let number: u64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
        let unit = match &rest[..unit_len] {
            "ms" => Duration::from_millis(1),
            "s" => Duration::from_secs(1),
            "m" => Duration::from_secs(60),
            "h" => Duration::from_secs(3600),
            "d" => Duration::from_secs(86_400),
            _ => return Err(bad()),
        };
        rest = &rest[unit_len..];
        let part = u32::try_from(number)
            .ok()
            .and_then(|n| unit.checked_mul(n))
            .ok_or_else(bad)?;
        total = total.checked_add(part).ok_or_else(bad)?;
    }
    if total.is_zero() {
        return Err(format!("'{text}' is zero: give a positive duration"));
    }
    Ok(total)
}

/// `--timeout`: whole or fractional seconds (`10`, `2.5`), or a duration with a unit.
pub fn parse_timeout(text: &str) -> Result<Duration, String> {
    if let Ok(secs) = text.trim().parse::<f64>() {
        return match Duration::try_from_secs_f64(secs) {
            Ok(d) if !d.is_zero() => Ok(d),
            _ => Err(format!("'{text}' is not a positive number of seconds")),
        };
    }
    parse_duration(text)
}
