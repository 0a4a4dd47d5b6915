//! Commands the leader sends an agent, and their results. Every command has an id; an agent
//! runs an id at most once, keeps its result and answers a repeated id with it (safety rule 4
//! of docs/design/architecture.md). Ids are made by the leader and never reused for another command.
//!
//! [`Op::Ensure`] is level-based: the agent reads the VM, compares it with the spec and changes
//! only what differs (create, configure, resize, power), so running it again after a crash or
//! for a periodic resync is safe.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::RemoteEndpoint;
use super::diagnosis::{DIAGNOSIS_SCOPE, DiagnoseOp, HostDiagnosis};
use super::remote_move::{CloseTargetOp, OpenTargetOp, RemoteMigrateOp};
use crate::fleet::{NicAddress, TakeOver};
use crate::spec::VmSpec;

/// One command for an agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentCommand {
    /// Unique id (`<vm>/<op>/g<generation>/t<term>/<n>`), at most 128 bytes (the journal's
    /// limit; longer ids are refused).
    pub id: String,
    /// What to do.
    pub op: Op,
}

/// What a command does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    /// Make the VM exist and match its spec (create or clone, configure, power).
    Ensure(Box<EnsureVm>),
    /// Stop, destroy and purge the VM (gone = success).
    Delete(DeleteVm),
    /// A one-shot power action.
    Power(PowerOp),
    /// A snapshot action.
    Snapshot(SnapshotOp),
    /// Move the VM to another node of this host's PVE cluster (encoding v2).
    Migrate(MigrateOp),
    /// Mint a token for a VM arriving here from another PVE cluster (v2; not journaled: its
    /// answer holds the token's secret).
    OpenMigrationTarget(OpenTargetOp),
    /// Move the VM to another PVE cluster with PVE's remote migration (v2).
    RemoteMigrate(RemoteMigrateOp),
    /// Delete the token of a remote migration and say whether the VM arrived (v2; not
    /// journaled).
    CloseMigrationTarget(CloseTargetOp),
    /// Remove the VM from this host because the fleet rebuilds it on another one (a
    /// `recovery = recreate` VM's move; v2): what [`Op::Delete`] does, answered to the move.
    Vacate(DeleteVm),
    /// Report the host's facts for `pvefleet doctor` (v2; read-only, not journaled).
    Diagnose(DiagnoseOp),
}

/// What a command does: the reconciler reacts to a result by its kind, matched as this enum
/// (a new kind of command is a compile error wherever results are read, never a string that
/// silently matches nothing). [`OpKind::as_str`] names it in logs and command ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpKind {
    /// [`Op::Ensure`].
    Ensure,
    /// [`Op::Delete`].
    Delete,
    /// [`Op::Power`].
    Power,
    /// [`Op::Snapshot`].
    Snapshot,
    /// [`Op::Migrate`].
    Migrate,
    /// [`Op::OpenMigrationTarget`].
    OpenTarget,
    /// [`Op::RemoteMigrate`].
    RemoteMigrate,
    /// [`Op::CloseMigrationTarget`].
    CloseTarget,
    /// [`Op::Vacate`].
    Vacate,
    /// [`Op::Diagnose`].
    Diagnose,
}

impl OpKind {
    /// Its short name in logs and command ids (`ensure`, `open-target`): part of every command
    /// id, so never renamed.
    pub fn as_str(self) -> &'static str {
        match self {
            OpKind::Ensure => "ensure",
            OpKind::Delete => "delete",
            OpKind::Power => "power",
            OpKind::Snapshot => "snapshot",
            OpKind::Migrate => "migrate",
            OpKind::OpenTarget => "open-target",
            OpKind::RemoteMigrate => "remote-migrate",
            OpKind::CloseTarget => "close-target",
            OpKind::Vacate => "vacate",
            OpKind::Diagnose => "diagnose",
        }
    }
}

impl std::fmt::Display for OpKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Op {
    /// What it does.
    pub fn kind(&self) -> OpKind {
        match self {
            Op::Ensure(_) => OpKind::Ensure,
            Op::Delete(_) => OpKind::Delete,
            Op::Power(_) => OpKind::Power,
            Op::Snapshot(_) => OpKind::Snapshot,
            Op::Migrate(_) => OpKind::Migrate,
            Op::OpenMigrationTarget(_) => OpKind::OpenTarget,
            Op::RemoteMigrate(_) => OpKind::RemoteMigrate,
            Op::CloseMigrationTarget(_) => OpKind::CloseTarget,
            Op::Vacate(_) => OpKind::Vacate,
            Op::Diagnose(_) => OpKind::Diagnose,
        }
    }

    /// The fleet name of the VM the command is about.
    pub fn vm_name(&self) -> &str {
        match self {
            Op::Ensure(e) => &e.spec.name,
            Op::Delete(d) => &d.name,
            Op::Power(p) => &p.name,
            Op::Snapshot(s) => &s.name,
            Op::Migrate(m) => &m.name,
            Op::OpenMigrationTarget(o) => &o.name,
            Op::RemoteMigrate(m) => &m.name,
            Op::CloseMigrationTarget(c) => &c.name,
            Op::Vacate(d) => &d.name,
            Op::Diagnose(_) => DIAGNOSIS_SCOPE,
        }
    }

    /// Whether the agent runs it outside its command journal: minting and deleting a
    /// migration token, and a diagnosis. Running one twice is harmless (the token of a VMID is
    /// replaced, or already gone; a diagnosis only reads), and the journal would otherwise
    /// keep a token's secret on disk.
    pub fn is_unjournaled(&self) -> bool {
        matches!(
            self,
            Op::OpenMigrationTarget(_) | Op::CloseMigrationTarget(_) | Op::Diagnose(_)
        )
    }
}

/// Move a VM of this host to another node of its PVE cluster with PVE's migration: live
/// (`online`) when it runs, its local disks copied (`with-local-disks`). Idempotent: a VM
/// already on the target node is a success, so a command re-sent by a new leader after the
/// move finished reports it again instead of failing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MigrateOp {
    /// The VM's fleet name.
    pub name: String,
    /// Its VMID.
    pub vmid: u32,
    /// The PVE node it goes to.
    pub target: String,
}

/// Make a VM exist on this host as its spec says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnsureVm {
    /// The desired VM.
    pub spec: VmSpec,
    /// The spec's generation (written to the managed-notes block).
    pub generation: u64,
    /// The VMID allocated by the fleet: the VM is created with exactly this VMID.
    pub vmid: u32,
    /// Addresses allocated from pools, written as `ipconfig<nic>`.
    pub ips: Vec<NicAddress>,
    /// DNS servers of the pools of the VM's NICs, used when the spec names none.
    pub pool_dns: Vec<String>,
    /// How long to wait for guest-agent addresses after a start, in seconds (0 = do not wait).
    pub ip_wait_secs: u32,
    /// A relocation from a fenced node (v2): take the VM's configuration over from that node's
    /// directory before anything else. `None` for every other ensure.
    pub take_over: Option<TakeOver>,
}

/// Remove a fleet VM from this host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeleteVm {
    /// The fleet name (the VM's PVE name must match).
    pub name: String,
    /// Its VMID.
    pub vmid: u32,
}

/// A one-shot power action on a fleet VM.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PowerOp {
    /// The fleet name.
    pub name: String,
    /// Its VMID.
    pub vmid: u32,
    /// What to do.
    pub action: PowerAction,
}

/// Power actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PowerAction {
    /// Start (no-op when running).
    Start,
    /// ACPI shutdown; after `timeout_secs` a hard stop.
    Shutdown {
        /// Seconds to wait for the guest.
        timeout_secs: u32,
    },
    /// Hard stop (no-op when stopped).
    Stop,
    /// Shutdown (with the timeout, then stop) and start again.
    Restart {
        /// Seconds to wait for the guest to shut down.
        timeout_secs: u32,
    },
}

/// A snapshot action on a fleet VM.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotOp {
    /// The fleet name.
    pub name: String,
    /// Its VMID.
    pub vmid: u32,
    /// What to do.
    pub action: SnapshotAction,
}

/// Snapshot actions (each answers the snapshot list after it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum SnapshotAction {
    /// Take a snapshot.
    Create {
        /// Snapshot name (PVE: letter first, then letters, digits, `-`, `_`; at most 40).
        snapshot: String,
        /// Free text.
        description: String,
        /// Include the RAM of a running VM.
        vmstate: bool,
    },
    /// List snapshots.
    List,
    /// Roll back to a snapshot.
    Rollback {
        /// Snapshot name.
        snapshot: String,
        /// Start the VM after the rollback (when the snapshot has no RAM state).
        start: bool,
    },
    /// Delete a snapshot.
    Delete {
        /// Snapshot name.
        snapshot: String,
    },
}

/// One snapshot of a VM.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotInfo {
    /// Snapshot name.
    pub name: String,
    /// Free text.
    pub description: String,
    /// The parent snapshot.
    pub parent: Option<String>,
    /// Unix seconds it was taken.
    pub taken_at: Option<u64>,
    /// Includes RAM.
    pub vmstate: bool,
}

/// The result of one command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandResult {
    /// The command's id.
    pub id: String,
    /// What it produced, or why it failed.
    pub outcome: Result<CommandOutput, CommandFailure>,
}

/// What a successful command produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum CommandOutput {
    /// The VM after an ensure or power action.
    Vm(VmObservation),
    /// The VM is gone (`existed`: it was there and was destroyed now).
    Deleted {
        /// It existed before this command.
        existed: bool,
    },
    /// The snapshots after a snapshot action.
    Snapshots(Vec<SnapshotInfo>),
    /// The VM after a migration: on `node` (the target), running or not.
    Migrated {
        /// The PVE node it is on now.
        node: String,
        /// It runs there.
        running: bool,
    },
    /// A migration token minted for a VM arriving here (v2).
    MigrationTarget(RemoteEndpoint),
    /// A migration target closed (v2): whether the VM arrived on this host's node, and runs.
    TargetClosed {
        /// It is here, owned by the fleet and not locked by a migration.
        arrived: bool,
        /// It runs here.
        running: bool,
    },
    /// The host's facts, for `pvefleet doctor` (v2).
    Diagnosis(Box<HostDiagnosis>),
}

/// A fleet VM as an agent found it after acting on it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmObservation {
    /// Its VMID.
    pub vmid: u32,
    /// The spec generation its config now matches.
    pub generation: u64,
    /// PVE reports it running.
    pub running: bool,
    /// Guest addresses (guest agent; loopback and link-local dropped), or the configured
    /// static/pool addresses when the VM has no guest agent.
    pub ips: Vec<IpAddr>,
    /// Config changes PVE keeps pending until a restart the spec's policy does not allow.
    pub pending_restart: Vec<String>,
    /// Its config digest after the command.
    pub digest: String,
}

/// Why a command failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandFailure {
    /// The class of failure (decides retries).
    pub kind: FailureKind,
    /// The step that failed (`clone`, `configure`, `start`, ...).
    pub step: String,
    /// What went wrong, PVE's text included.
    pub message: String,
}

/// Classes of command failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FailureKind {
    /// Worth retrying later (PVE busy, lock held, connection lost).
    Transient,
    /// Retrying the same command cannot help (bad parameter, missing template).
    Permanent,
    /// The VMID holds a VM without the fleet's ownership tag (or another name): left alone.
    NotOwned,
    /// The VM does not exist on this host.
    NotFound,
    /// The agent crashed while running the command and cannot tell whether it took effect.
    InDoubt,
}
