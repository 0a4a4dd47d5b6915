//! The commands of a move to another PVE cluster (encoding v2), PVE's remote migration as
//! Proxmox Datacenter Manager drives it, with the fleet handing the credentials over:
//!
//! ```text
//!  leader ── OpenMigrationTarget{vmid, storages, bridges} ──▶ target agent
//!         ◀── MigrationTarget(endpoint: address, PVE fingerprint, token id + secret) ──
//!              (a token of the dedicated migration user, valid for this VMID, these
//!               storages and bridges only, expiring; kept in the leader's memory only)
//!  leader ── RemoteMigrate{endpoint, storage and bridge map} ──▶ source agent
//!              └─ POST /nodes/{node}/qemu/{vmid}/remote_migrate (delete=1) ─▶ task
//!         ◀── Migrated{node: target node}
//!  leader ── CloseMigrationTarget{vmid} ──▶ target agent (token deleted, its ACLs too)
//!         ◀── TargetClosed{arrived, running}   (whether the VM is on the target node)
//! ```
//!
//! The token of VM `vmid` is always `vm<vmid>` of the migration user, so closing needs no
//! memory of the opening: a new leader, or the leader of a move whose source host was fenced
//! halfway, closes it all the same and learns from the answer whether the VM arrived.
//!
//! The secret travels only inside the mutually authenticated agent sessions and the HTTPS
//! body of the PVE call; it is a [`Secret`] (never in `Debug`), the agents run these two
//! target commands outside the command journal (nothing stores it on disk), and the Raft log
//! never sees it.

use serde::{Deserialize, Serialize};

use crate::secret::Secret;

/// Where and how a source reaches the target PVE node of a remote migration (PVE's
/// `target-endpoint`, format `proxmox-remote`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteEndpoint {
    /// The target node's API address (host name or IP).
    pub host: String,
    /// Its API port (8006 on PVE).
    pub port: u16,
    /// The SHA-256 fingerprint of its API certificate (`AA:BB:...`), pinned by the source.
    pub fingerprint: String,
    /// The target's PVE node name.
    pub node: String,
    /// The API token id (`user@realm!tokenid`).
    pub token_id: String,
    /// The token's secret.
    pub secret: Secret,
    /// When the token expires (Unix seconds).
    pub expires_unix: u64,
}

impl RemoteEndpoint {
    /// The `target-endpoint` value PVE's `remote_migrate` takes (holds the secret).
    pub fn proxmox_remote(&self) -> Secret {
        Secret::new(format!(
            "host={},port={},fingerprint={},apitoken=PVEAPIToken={}={}",
            self.host,
            self.port,
            self.fingerprint,
            self.token_id,
            self.secret.expose()
        ))
    }
}

/// Mint a migration token on this host's PVE node for VM `vmid` arriving here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenTargetOp {
    /// The VM's fleet name.
    pub name: String,
    /// The VMID it gets here.
    pub vmid: u32,
    /// The storages here its disks go to.
    pub storages: Vec<String>,
    /// The bridges here its NICs attach to.
    pub bridges: Vec<String>,
    /// How long the token lives, in seconds.
    pub ttl_secs: u32,
}

/// Move VM `vmid` of this host to another PVE cluster with PVE's remote migration. Idempotent
/// like [`super::MigrateOp`]: a VM no longer here whose target node answers for it is a
/// finished move.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteMigrateOp {
    /// The VM's fleet name.
    pub name: String,
    /// Its VMID (here and on the target).
    pub vmid: u32,
    /// The target.
    pub endpoint: RemoteEndpoint,
    /// PVE's `target-storage` (`src:dst,...` or one id for every source storage).
    pub target_storage: String,
    /// PVE's `target-bridge` (`src:dst,...` or one id for every source bridge).
    pub target_bridge: String,
}

/// Delete the migration token of VM `vmid` on this host (gone = success), and say whether the
/// VM arrived on this host's PVE node (present, owned by the fleet, not locked by a migration).
/// Also asked, without a token to delete, of the target of a move within a PVE cluster whose
/// source host was fenced halfway.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CloseTargetOp {
    /// The VM's fleet name.
    pub name: String,
    /// Its VMID.
    pub vmid: u32,
}
