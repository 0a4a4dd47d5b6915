//! The `pvefleet` command line (clap derive): global flags, one subcommand per resource, and the
//! parsers for durations (`--ttl 24h`, `--timeout 10`).

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use protocol::admin::UNLIMITED_USES;
use protocol::{NodeId, Role};

use crate::output::OutputFormat;
use bootstrap::cli_config::CONFIG_ENV;
use daemon::generate::Generate;

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
    /// Print the man page or a completion script on stdout (for packaging).
    #[arg(long, hide = true, value_enum, value_name = "KIND")]
    pub generate: Option<Generate>,
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
    /// The web dashboard the members serve (when configured): one-time login links.
    #[command(subcommand)]
    Dashboard(DashboardCommand),
    /// Operator identities: admin certificates, one per person or tool, revocable by id.
    #[command(subcommand)]
    Admin(AdminCommand),
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
    /// PVE hosts running a node agent: capacity, usage, state.
    #[command(subcommand)]
    Host(HostCommand),
    /// Rebalancing: the moves that would even out the hosts' load (`plan` shows them; nothing
    /// is moved).
    #[command(subcommand)]
    Rebalance(RebalanceCommand),
    /// Cluster-wide settings: overcommit, reserves, the default VMID range and the HA defaults.
    #[command(subcommand)]
    Settings(SettingsCommand),
    /// The fleet's event log, oldest first (`--follow` waits for new ones).
    Events(EventsArgs),
    /// Allocate ids directly, or release an address (for tests, scripts and reservations).
    #[command(subcommand)]
    Alloc(AllocCommand),
    /// Check the fleet before and after a rollout: versions, PVE, the agents' API token
    /// privileges, TLS pinning, snippet storages, clocks, certificates, quorum and
    /// replication, VIP capabilities. Each finding says what to do; exit 6 when one is a
    /// problem.
    Doctor(DoctorArgs),
    /// Apply a whole fleet file (pools, VMID ranges, VIPs, settings, VM groups and VMs) as one
    /// write: every entry is applied, or none is.
    Apply(VmApplyArgs),
}

/// `pvefleet doctor`
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub struct DoctorArgs {
    /// Exit 6 on warnings too (mixed versions, a certificate a few days from expiry...).
    #[arg(long)]
    pub strict: bool,
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
    /// Create a join token (one use, valid 1h unless widened); it is printed once (only its
    /// hash is stored). A coordinator token hands the cluster CA key to the node that joins
    /// with it: prefer `pvefleet member add`, which also prints the join command.
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

/// `pvefleet dashboard ...`
#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum DashboardCommand {
    /// Print a one-time login link for the web dashboard (valid 15 minutes unless widened;
    /// the cluster keeps only its hash). The session it opens acts as you, until you are
    /// revoked or it expires.
    Login(DashboardLoginArgs),
}

/// `pvefleet dashboard login`
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub struct DashboardLoginArgs {
    /// The session can look but not act (no start/stop, migration, maintenance, VIP move).
    #[arg(long)]
    pub read_only: bool,
    /// How long the link waits to be used (e.g. 15m, 1h; at most 24h).
    #[arg(long, value_name = "DURATION", default_value = "15m", value_parser = parse_duration)]
    pub ttl: Duration,
    /// The dashboard's address [default: https://<first coordinator's host>:7443].
    #[arg(long, value_name = "https://HOST:PORT", env = "PVEFLEET_DASHBOARD_URL")]
    pub url: Option<String>,
}

/// `pvefleet token create`
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub struct TokenCreateArgs {
    /// The role a node joining with the token receives.
    #[arg(long, value_enum)]
    pub role: JoinRole,
    /// How long it stays valid (e.g. 30m, 24h, 7d; at most 24h for a coordinator token).
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = parse_duration)]
    pub ttl: Duration,
    /// How many joins it allows, or `unlimited` (until it expires); a coordinator token allows
    /// exactly one.
    #[arg(long, value_name = "N|unlimited", default_value = "1", value_parser = parse_uses)]
    pub uses: u32,
}

/// `pvefleet admin ...`
#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum AdminCommand {
    /// List admin identities: when each was issued, when its certificate expires, how far
    /// renewals may extend it, and whether it is revoked.
    #[command(visible_alias = "list")]
    Ls,
    /// Add an admin: a key is made on this machine (only a signing request is sent), and the
    /// key, its certificate, the CA and a configuration are written to a new directory to hand
    /// to that person or tool.
    Add(AdminAddArgs),
    /// Revoke an admin: every certificate of its id is refused by every member from now on.
    Revoke {
        /// The admin's id (`pvefleet admin ls`).
        id: NodeId,
        /// Revoke even the admin this configuration uses: this command's own certificate is
        /// refused from then on.
        #[arg(long)]
        yes_revoke_myself: bool,
    },
}

/// `pvefleet admin add`
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub struct AdminAddArgs {
    /// Who or what the admin is for (1 to 64 printable characters, e.g. alice or ci-deploy).
    pub name: String,
    /// How long its certificate is valid (e.g. 7d, 24h; default: the cluster's, 30 days). It
    /// renews itself while valid, up to the renewal bound the cluster sets.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub ttl: Option<Duration>,
    /// The directory to write (created; refused if it exists and is not empty). Default:
    /// `./pvefleet-admin-NAME`.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// `KEY=VALUE`: a label to set.
pub fn parse_label(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!(
            "'{text}' is not KEY=VALUE (e.g. rack=r12); `host unlabel` removes a label"
        )),
    }
}

/// `--uses N|unlimited`: a count of joins, `unlimited` as the wire's [`UNLIMITED_USES`].
pub fn parse_uses(text: &str) -> Result<u32, String> {
    if text == "unlimited" {
        return Ok(UNLIMITED_USES);
    }
    match text.parse::<u32>() {
        Ok(n) if (1..UNLIMITED_USES).contains(&n) => Ok(n),
        _ => Err(format!(
            "'{text}' is not a number of uses: write a count from 1 to {}, or unlimited",
            UNLIMITED_USES - 1
        )),
    }
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

/// `pvefleet rebalance ...`
#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum RebalanceCommand {
    /// Show the moves that would even out the memory load of the hosts of each PVE cluster
    /// (each the best single move left, under every placement rule; pinned guests never move).
    Plan,
}

/// `pvefleet settings ...`
#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum SettingsCommand {
    /// Show the settings in force, HA defaults included.
    Show,
    /// Replace the settings with the `[settings]` table of a file (a key left out is its
    /// default; `[settings.ha]` holds the HA defaults of VMs that leave them out).
    Apply(ApplyArgs),
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
    Apply(VmApplyArgs),
    /// List VMs: host, VMID, state, addresses, age.
    #[command(visible_alias = "list")]
    Ls,
    /// Show one VM: its spec, placement, ids, addresses, status and conditions.
    Show {
        /// The VM's name.
        name: String,
    },
    /// Show every host's placement verdict for a VM: its scores, or the filter that excluded it.
    Explain {
        /// The VM's name.
        name: String,
    },
    /// Keep a VM running (its desired state becomes `running`).
    Start {
        /// The VM's name.
        name: String,
    },
    /// Keep a VM stopped (its desired state becomes `stopped`: shut down, then stopped after
    /// a timeout).
    Stop {
        /// The VM's name.
        name: String,
    },
    /// Restart a running VM now (shutdown, stop after 60s, start); it stays desired running.
    Restart {
        /// The VM's name.
        name: String,
    },
    /// Move a VM to another node of its PVE cluster with PVE's migration (live when it runs,
    /// local disks copied); without --to, to the node the scheduler picks.
    Migrate(VmMigrateArgs),
    /// Set the number of members of a VM group (`[[vm_group]]`): the missing ones are created
    /// from the group's spec, those numbered past N are deleted.
    Scale {
        /// The group's name.
        group: String,
        /// How many members it keeps.
        replicas: u32,
    },
    /// Snapshots of a VM, taken and restored on its host.
    #[command(subcommand)]
    Snapshot(SnapshotCommand),
    /// Delete a VM: it is destroyed on its host, then its VMID and addresses are released.
    #[command(visible_alias = "rm")]
    Delete {
        /// The VM's name.
        name: String,
    },
}

/// `pvefleet vm apply`
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub struct VmApplyArgs {
    /// The TOML file (`-` reads standard input). Every entry is checked before any is sent.
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    pub file: PathBuf,
    /// Then wait until every applied VM is in its desired state (running with its addresses,
    /// or stopped), showing progress on stderr; exit non-zero naming the VMs that are not.
    #[arg(long)]
    pub wait: bool,
    /// How long `--wait` waits in all.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration, requires = "wait")]
    pub wait_timeout: Duration,
    /// With `--wait`, give up once a VM has stayed failed this long (the fleet retries failed
    /// operations with back-off, so a failure can be passing).
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = parse_duration, requires = "wait")]
    pub fail_after: Duration,
}

/// `pvefleet vm migrate`
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub struct VmMigrateArgs {
    /// The VM's name.
    pub name: String,
    /// The host to move it to (another node of its PVE cluster); default: the scheduler's
    /// choice, under the same filters and affinity rules as placement.
    #[arg(long, value_name = "HOST")]
    pub to: Option<String>,
    /// Then wait until the move is over, showing progress on stderr; exit non-zero with PVE's
    /// reason when it failed.
    #[arg(long, conflicts_with = "dry_run")]
    pub wait: bool,
    /// How long `--wait` waits.
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = parse_duration, requires = "wait")]
    pub wait_timeout: Duration,
    /// Show where the VM (and its affinity group) would go and how every other node of its PVE
    /// cluster was judged, without moving anything.
    #[arg(long)]
    pub dry_run: bool,
}

/// `pvefleet vm snapshot ...`
#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum SnapshotCommand {
    /// Take a snapshot of a VM.
    Create {
        /// The VM's name.
        name: String,
        /// The snapshot's name (a letter, then letters, digits, `-`, `_`; 2 to 40 characters).
        snapshot: String,
        /// Include the RAM of the running VM (a rollback resumes it where it was).
        #[arg(long)]
        vmstate: bool,
        /// Free text stored with the snapshot.
        #[arg(
            long,
            value_name = "TEXT",
            default_value = "",
            hide_default_value = true
        )]
        description: String,
    },
    /// List a VM's snapshots, oldest first.
    #[command(visible_alias = "list")]
    Ls {
        /// The VM's name.
        name: String,
    },
    /// Roll a VM back to a snapshot (its changes since are lost).
    Rollback {
        /// The VM's name.
        name: String,
        /// The snapshot's name.
        snapshot: String,
        /// Start the VM after the rollback (a snapshot with RAM resumes it anyway).
        #[arg(long)]
        start: bool,
    },
    /// Delete a snapshot of a VM.
    #[command(visible_alias = "rm")]
    Delete {
        /// The VM's name.
        name: String,
        /// The snapshot's name.
        snapshot: String,
    },
}

/// `pvefleet host ...`
#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum HostCommand {
    /// List hosts: state and for how long, capacity, VMs and what they commit, load, last
    /// heartbeat.
    #[command(visible_alias = "list")]
    Ls,
    /// One host: its state with the reason and since when (online, unreachable, fenced...),
    /// capacity, what its VMs commit, load and last heartbeat.
    Show {
        /// The host's PVE node name.
        name: String,
    },
    /// Set labels on a host (placement constraints, VIPs and rules match them). They win over
    /// the labels of the agent's configuration on the same key and are kept in the fleet's
    /// state (the agent's own are changed in its agent.toml).
    Label {
        /// The host's PVE node name.
        name: String,
        /// `KEY=VALUE` labels to set.
        #[arg(required = true, value_name = "KEY=VALUE", value_parser = parse_label)]
        labels: Vec<(String, String)>,
    },
    /// Remove labels set with `host label`.
    Unlabel {
        /// The host's PVE node name.
        name: String,
        /// Label keys to remove.
        #[arg(required = true, value_name = "KEY")]
        keys: Vec<String>,
    },
    /// Decommission a host: refused while VMs are placed on it or it holds a VIP (drain it
    /// first with `host maintenance enable NAME --wait`); its certificate is refused from
    /// then on and its name may be used by a new host.
    #[command(visible_alias = "rm")]
    Remove {
        /// The host's PVE node name.
        name: String,
    },
    /// Maintenance: `enable` drains the host (its guests move to the other nodes of its PVE
    /// cluster by live migration, its VIPs are handed over) and keeps it out of scheduling
    /// and fencing; `disable` brings the guests drained off it back; `status` tells what is
    /// left.
    Maintenance(HostMaintenanceArgs),
}

/// `pvefleet host maintenance`
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub struct HostMaintenanceArgs {
    /// enable, disable or status.
    #[arg(value_enum)]
    pub action: MaintenanceArg,
    /// The host's PVE node name.
    pub host: String,
    /// Then wait until the drain (or the way back) is over, showing what is left on stderr.
    #[arg(long)]
    pub wait: bool,
    /// How long `--wait` waits.
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = parse_duration, requires = "wait")]
    pub wait_timeout: Duration,
}

/// What `host maintenance` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MaintenanceArg {
    /// Into maintenance: drain the host.
    Enable,
    /// Out of maintenance: bring its guests back.
    Disable,
    /// Where the drain or the way back stands.
    Status,
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
    /// List VIPs: the host holding each, since when, and how many hosts could take it over
    /// (the leader's live view; with `--stale`, the replicated owners only).
    #[command(visible_alias = "list")]
    Ls,
    /// Show VIPs with every host's standing: eligible, or why not.
    Show {
        /// The VIP's name (every VIP when absent).
        name: Option<String>,
    },
    /// Hand a VIP to another host now (it must be eligible); the owner lets go once that host
    /// claims it, so the address is unreachable for a few milliseconds.
    Move {
        /// The VIP's name.
        name: String,
        /// The host to hand it to.
        host: String,
    },
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
    /// Keep printing new events as they happen, until Ctrl-C (with `--output json`: one JSON
    /// object per line).
    #[arg(long, short = 'f')]
    pub follow: bool,
    /// Stop following after this many events (for scripts and tests).
    #[arg(long, value_name = "N", hide = true, requires = "follow")]
    pub max_events: Option<u64>,
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
    /// Release an address allocated with `alloc ip` (a VM's addresses go with the VM).
    Release {
        /// The pool's name.
        pool: String,
        /// The address to give back.
        address: IpAddr,
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
