//! Moves between PVE clusters (PVE's remote migration, as Proxmox Datacenter Manager drives
//! it), both ends:
//!
//! ```text
//!  target: open  ─ user pvefleet-migrate@pve, role FleetMigrate (only what PVE's target
//!                  side checks: Sys.Audit, Sys.Incoming, VM.Allocate, VM.Config.*,
//!                  Datastore.AllocateSpace, SDN.Use)
//!                ─ token vm<VMID> (privilege-separated, expiring) with ACL entries on
//!                  /vms/<VMID>, / (not inherited), /storage/<id>, /sdn/zones/localnetwork/<bridge>
//!                ─ answer: this node's address, its API certificate's fingerprint, the token
//!  source: move  ─ VM here, idle ─▶ POST .../remote_migrate (online, delete=1) ─▶ wait
//!                ─ VM here, locked by a migration ─▶ wait for that task (a re-run)
//!                ─ VM gone from this cluster ─▶ in doubt: the fleet asks the target
//!  target: close ─ token deleted (PVE drops its ACL entries) ─ answer: did the VM arrive?
//! ```
//!
//! The token's secret exists only in the answer to `open` and in the body of the
//! `remote_migrate` call: never in a log line, an error, argv or the command journal.

use std::time::{SystemTime, UNIX_EPOCH};

use protocol::Secret;
use protocol::agent::{
    CloseTargetOp, CommandFailure, FailureKind, OpenTargetOp, RemoteEndpoint, RemoteMigrateOp,
};
use pve::calls::{
    AclSubject, CertificateInfo, RemoteMigrateOptions, ResourceType, TaskListFilter, TaskSource,
};

use super::VmOps;
use super::failure::{AtStep, Subject};
use super::ownership::{self, Ownership};
pub use crate::migration_address::MigrationAddress;

/// The user whose tokens receive remote migrations (it has no password: it cannot log in).
pub const MIGRATION_USER: &str = "pvefleet-migrate@pve";
/// Its role (PVE refuses role ids starting with `PVE`, its own namespace).
pub const MIGRATION_ROLE: &str = "FleetMigrate";
/// The role's privileges: exactly what PVE checks on the target of a remote migration. The
/// source reads the target's `/cluster/status` (`Sys.Audit`), opens the tunnel (`VM.Allocate`
/// on the VM, `Sys.Incoming` on `/`), allocates disks (`Datastore.AllocateSpace`), and writes
/// the config as a config update would, key by key (`VM.Config.*`, `SDN.Use` on each bridge).
pub const MIGRATION_PRIVS: [&str; 13] = [
    "Datastore.AllocateSpace",
    "SDN.Use",
    "Sys.Audit",
    "Sys.Incoming",
    "VM.Allocate",
    "VM.Config.CDROM",
    "VM.Config.CPU",
    "VM.Config.Cloudinit",
    "VM.Config.Disk",
    "VM.Config.HWType",
    "VM.Config.Memory",
    "VM.Config.Network",
    "VM.Config.Options",
];

/// The token of VM `vmid` (one per VM: minting it again replaces it).
fn token_name(vmid: u32) -> String {
    format!("vm{vmid}")
}

fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Whether a PVE error says the thing to create exists already (users, roles).
fn exists_already(e: &pve::PveError) -> bool {
    e.to_string().contains("already exists")
}

/// Mints the token of a VM arriving here.
pub(super) async fn open_target(
    ops: &VmOps,
    cmd: &OpenTargetOp,
) -> Result<RemoteEndpoint, CommandFailure> {
    const STEP: &str = "open-target";
    let s = Subject {
        name: &cmd.name,
        vmid: cmd.vmid,
    };
    let address = ops.migration_address.clone().ok_or_else(|| {
        s.fail(
            FailureKind::Permanent,
            STEP,
            "this host takes no remote migrations: set [pve] migration_address = \
             \"ADDRESS[:PORT]\" in the agent's configuration (the address the PVE nodes of \
             other clusters reach this node's API at)"
                .to_string(),
        )
    })?;
    let resources = ops
        .client
        .cluster_resources(Some(ResourceType::Vm))
        .await
        .at(&s, "lookup")?;
    if let Some(r) = resources.iter().find(|r| r.vmid == Some(cmd.vmid)) {
        return Err(s.fail(
            FailureKind::Permanent,
            STEP,
            format!(
                "VMID {} is used in this PVE cluster already (on node {})",
                cmd.vmid,
                r.node.as_deref().unwrap_or("?")
            ),
        ));
    }
    let c = &ops.client;
    match c
        .create_user(
            MIGRATION_USER,
            "pvefleet: receives remote migrations through per-VM tokens",
        )
        .await
    {
        Err(e) if !exists_already(&e) => return Err(s.pve("user", &e)),
        _ => {}
    }
    match c.create_role(MIGRATION_ROLE, &MIGRATION_PRIVS).await {
        Err(e) if exists_already(&e) => c
            .update_role(MIGRATION_ROLE, &MIGRATION_PRIVS)
            .await
            .at(&s, "role")?,
        Err(e) => return Err(s.pve("role", &e)),
        Ok(()) => {}
    }
    // The user may use the role anywhere; each token only where its ACL entries say (PVE
    // grants a privilege-separated token the intersection of both).
    c.put_acl("/", MIGRATION_ROLE, AclSubject::User(MIGRATION_USER), true)
        .await
        .at(&s, "acl")?;
    let tokenid = token_name(cmd.vmid);
    // A token left by an earlier attempt is replaced (its secret is lost with that answer).
    let _ = c.delete_token(MIGRATION_USER, &tokenid).await;
    let expires_unix = now_unix() + u64::from(cmd.ttl_secs);
    let token = c
        .create_token(
            MIGRATION_USER,
            &tokenid,
            &format!(
                "pvefleet: remote migration of {} (VMID {})",
                cmd.name, cmd.vmid
            ),
            expires_unix,
            true,
        )
        .await
        .at(&s, "token")?;
    let subject = AclSubject::Token(&token.full_tokenid);
    let mut paths: Vec<(String, bool)> =
        vec![(format!("/vms/{}", cmd.vmid), false), ("/".into(), false)];
    paths.extend(
        cmd.storages
            .iter()
            .map(|id| (format!("/storage/{id}"), false)),
    );
    paths.extend(
        cmd.bridges
            .iter()
            .map(|b| (format!("/sdn/zones/localnetwork/{b}"), false)),
    );
    for (path, propagate) in &paths {
        c.put_acl(path, MIGRATION_ROLE, subject, *propagate)
            .await
            .at(&s, "acl")?;
    }
    let certs = c.certificates_info(&ops.node).await.at(&s, "certificate")?;
    let fingerprint = CertificateInfo::served(&certs)
        .ok_or_else(|| {
            s.fail(
                FailureKind::Permanent,
                "certificate",
                format!("node {} lists no API certificate fingerprint", ops.node),
            )
        })?
        .to_string();
    tracing::info!(vm = s.name, vmid = s.vmid, token = %token.full_tokenid, "migration target opened");
    Ok(RemoteEndpoint {
        host: address.host,
        port: address.port,
        fingerprint,
        node: ops.node.clone(),
        token_id: token.full_tokenid,
        secret: Secret::new(token.value),
        expires_unix,
    })
}

/// Deletes the token of a VM that was to arrive here, and says whether it did (present here,
/// the fleet's, not locked by a migration) and runs.
pub(super) async fn close_target(
    ops: &VmOps,
    cmd: &CloseTargetOp,
) -> Result<(bool, bool), CommandFailure> {
    let s = Subject {
        name: &cmd.name,
        vmid: cmd.vmid,
    };
    // Gone already (or never minted, for a move within the cluster) is fine.
    if let Err(e) = ops
        .client
        .delete_token(MIGRATION_USER, &token_name(cmd.vmid))
        .await
        && !e.to_string().contains("no such")
        && !e.is_missing_config()
    {
        tracing::debug!(vm = s.name, error = %e, "migration token not deleted (it expires)");
    }
    let Some(cfg) = ops.read_config(cmd.vmid).await.at(&s, "lookup")? else {
        return Ok((false, false));
    };
    if !matches!(ownership::ownership(&cfg, s.name), Ownership::Owned) || cfg.lock().is_some() {
        return Ok((false, false));
    }
    let running = ops.is_running(&s).await?;
    Ok((true, running))
}

/// Moves the VM to the endpoint's PVE cluster; answers the target node and whether it runs.
pub(super) async fn remote_migrate(
    ops: &VmOps,
    cmd: &RemoteMigrateOp,
) -> Result<(String, bool), CommandFailure> {
    const STEP: &str = "remote-migrate";
    let s = Subject {
        name: &cmd.name,
        vmid: cmd.vmid,
    };
    let resources = ops
        .client
        .cluster_resources(Some(ResourceType::Vm))
        .await
        .at(&s, "lookup")?;
    let here = resources
        .iter()
        .find(|r| r.is_qemu() && r.vmid == Some(cmd.vmid));
    match here.and_then(|r| r.node.as_deref()) {
        None => {
            // Deleted by a finished move (delete=1), or by someone: only the target knows.
            return Err(s.fail(
                FailureKind::InDoubt,
                "lookup",
                format!(
                    "the VM is no longer in this PVE cluster: a remote migration to {} may have \
                     finished; the fleet asks the target",
                    cmd.endpoint.node
                ),
            ));
        }
        Some(node) if node != ops.node => {
            return Err(s.fail(
                FailureKind::NotFound,
                "lookup",
                format!("the VM is on node {node}, not on this node ({})", ops.node),
            ));
        }
        Some(_) => {}
    }
    let cfg = ops.find_owned(&s).await?.ok_or_else(|| {
        s.fail(
            FailureKind::NotFound,
            "lookup",
            format!("no VM {} on node {}", cmd.vmid, ops.node),
        )
    })?;
    let running = ops.is_running(&s).await?;
    let upid = match cfg.lock().as_deref() {
        // An earlier run's move is still going (the agent restarted while it waited).
        Some("migrate") => running_move(ops, &s).await?.ok_or_else(|| {
            s.fail(
                FailureKind::InDoubt,
                STEP,
                "the VM is locked by a migration whose task is not running; check `qm unlock` \
                 after making sure no copy of it runs on the target"
                    .to_string(),
            )
        })?,
        _ => {
            ops.refuse_pve_ha(&s, STEP).await?;
            let opts = RemoteMigrateOptions {
                target_endpoint: cmd.endpoint.proxmox_remote().expose().to_string(),
                target_storage: cmd.target_storage.clone(),
                target_bridge: cmd.target_bridge.clone(),
                target_vmid: Some(cmd.vmid),
                online: running.then_some(true),
                delete: Some(true),
                bwlimit: None,
            };
            let upid = ops
                .client
                .remote_migrate_vm(&ops.node, cmd.vmid, &opts)
                .await
                .at(&s, STEP)?;
            tracing::info!(vm = s.name, vmid = s.vmid, target = %cmd.endpoint.node, online = running, "remote migration started");
            upid
        }
    };
    // Disks are copied over the network: as long as a full clone may take.
    ops.client
        .wait_task(&upid, ops.timeouts.create)
        .await
        .at(&s, STEP)?;
    Ok((cmd.endpoint.node.clone(), running))
}

/// The running `qmigrate` task of the VM on this node, if any.
async fn running_move(ops: &VmOps, s: &Subject<'_>) -> Result<Option<pve::Upid>, CommandFailure> {
    let filter = TaskListFilter {
        source: Some(TaskSource::Active),
        typefilter: Some("qmigrate".into()),
        vmid: Some(s.vmid),
        ..TaskListFilter::default()
    };
    let (tasks, _) = ops
        .client
        .node_tasks(&ops.node, &filter)
        .await
        .at(s, "lookup")?;
    Ok(tasks
        .iter()
        .filter(|t| t.endtime.is_none())
        .find_map(|t| t.upid.parse().ok()))
}
