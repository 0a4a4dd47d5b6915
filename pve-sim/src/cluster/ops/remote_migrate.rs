//! `POST /nodes/{node}/qemu/{vmid}/remote_migrate` as qemu-server's `remote_migrate_vm`
//! handles it before forking the `qmigrate` worker (`remote_migration/job.rs`):
//!
//! - quorum; the VM's config (`Configuration file ... does not exist`); its lock
//!   (`VM is locked (<lock>)`); HA (`vmid: cannot remote-migrate VM that is configured for HA`);
//! - the connection to `target-endpoint` (pinned to its `fingerprint`, see
//!   `remote_migration/client.rs`); without a fingerprint PVE first reads the target's
//!   `certificates/info`, which fails against the simulator's self-signed certificates:
//!   `fingerprint '<fp>' not verified, abort!`;
//! - a running VM needs `online` (`can't migrate running VM without --online`), a stopped one
//!   migrates offline whatever `online` says;
//! - the maps: `target-storage: failed to parse storage map: <why>`, the same for bridges, and
//!   `remote migration requires explicit storage mapping!` for the identity map `1`;
//! - `GET /cluster/status` on the target names the node to migrate to (the entry with
//!   `local`), else `couldn't determine endpoint's node name`. This is the first request the
//!   token makes: it needs `Sys.Audit` on `/` of the target.
//!
//! A VMID already used on the target is not checked here (only `qm remote-migrate` and PDM do
//! that beforehand): the target's `mtunnel` refuses it and the task fails. `bwlimit` is
//! accepted and ignored.

use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use crate::cluster::inner::Inner;
use crate::cluster::remote_migration::client::{RemoteClient, RemoteEndpoint};
use crate::cluster::remote_migration::id_map::IdMap;
use crate::cluster::remote_migration::job::RemoteMigrateJob;
use crate::cluster::remote_migration::plan::{Plan, Progress};
use crate::cluster::remote_migration::worker::Conversation;
use crate::cluster::request::{check_quorum, node, upid_reply, vmid, vmid_param};
use crate::cluster::tasks::job::TaskOwner;
use crate::cluster::vm::check_lock;
use crate::{ApiError, Caller, Params, Reply};

/// The node of `/cluster/status` marked `local`.
fn local_node_of(status: &serde_json::Value) -> Option<String> {
    status.as_array()?.iter().find_map(|entry| {
        let local = match &entry["local"] {
            serde_json::Value::Bool(b) => *b,
            serde_json::Value::Number(n) => n.as_i64() == Some(1),
            serde_json::Value::String(s) => s == "1",
            _ => false,
        };
        (entry["type"] == "node" && local)
            .then(|| entry["name"].as_str().map(str::to_string))
            .flatten()
    })
}

/// `POST /nodes/{node}/qemu/{vmid}/remote_migrate`.
pub(crate) async fn remote_migrate(
    cx: &Arc<Inner>,
    p: &Params,
    caller: &Caller,
) -> Result<Reply, ApiError> {
    let node = node(p)?.to_string();
    let vmid = vmid(p)?;
    let target_vmid = match p.get("target-vmid") {
        Some(_) => vmid_param(p, "target-vmid")?,
        None => vmid,
    };
    let running = {
        let st = cx.state();
        check_quorum(&st, &cx.faults)?;
        let vm = st.load(&node, vmid)?;
        check_lock(&vm.conf).map_err(ApiError::internal)?;
        if st.ha.contains_key(&format!("vm:{vmid}")) {
            return Err(ApiError::param(
                "vmid",
                "cannot remote-migrate VM that is configured for HA",
            ));
        }
        vm.run.running
    };
    let endpoint = RemoteEndpoint::parse(p.req("target-endpoint")?).map_err(ApiError::internal)?;
    let client = RemoteClient::new(&endpoint, cx.remote_timeout()).map_err(ApiError::internal)?;
    if endpoint.fingerprint.is_none() {
        // No pin: only a certificate the system trusts would do, and none of the
        // simulator's is, so this ends in the client's fingerprint error.
        client
            .get("/nodes/localhost/certificates/info")
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?;
    }
    let online = p.flag("online", false);
    if running && !online {
        return Err(ApiError::internal(
            "can't migrate running VM without --online",
        ));
    }
    let storages = IdMap::parse(p.req("target-storage")?).map_err(|e| {
        ApiError::param(
            "target-storage",
            format!("failed to parse storage map: {e}"),
        )
    })?;
    let bridges = IdMap::parse(p.req("target-bridge")?).map_err(|e| {
        ApiError::param("target-bridge", format!("failed to parse bridge map: {e}"))
    })?;
    if storages.identity {
        return Err(ApiError::internal(
            "remote migration requires explicit storage mapping!",
        ));
    }
    let status = client
        .get("/cluster/status")
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let target_node = local_node_of(&status)
        .ok_or_else(|| ApiError::internal("couldn't determine endpoint's node name"))?;
    let plan = Plan {
        node: node.clone(),
        vmid,
        target_vmid,
        target_node,
        host: endpoint.host.clone(),
        delete: p.flag("delete", false),
        storages,
        bridges,
    };
    let progress = Arc::new(Mutex::new(Progress::default()));
    let cancel = CancellationToken::new();
    let conversation = Conversation::new(
        Arc::downgrade(cx),
        plan,
        client,
        Arc::clone(&progress),
        cancel.clone(),
    );
    let job = RemoteMigrateJob::new(node.clone(), vmid, online, conversation, progress, cancel);
    let owner = TaskOwner {
        node,
        kind: "qmigrate",
        vmid,
        user: caller.upid_user(),
    };
    let mut st = cx.state();
    Ok(upid_reply(cx.start_task(&mut st, owner, Box::new(job))))
}
