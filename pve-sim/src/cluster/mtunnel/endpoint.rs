//! The receiving end of a remote migration: `POST /nodes/{node}/qemu/{vmid}/mtunnel` as
//! qemu-server's `mtunnel` handles it, and its `qmtunnel` worker.
//!
//! The call checks that `{node}` is `localhost` or the node answering, each listed storage
//! (`check_storage_access_migrate`: enabled on the node, `Datastore.AllocateSpace` on
//! `/storage/<sid>`, `images` content) and bridge (`bridge '<x>' does not exist`), quorum,
//! then writes an empty config with `lock: create` for the VMID (`unable to create empty VM
//! config - VM <vmid> already exists on node '<node>'` when the VMID is taken anywhere in the
//! cluster), and answers `{ticket, socket, upid}`. The `qmtunnel` task runs until the source
//! sends `quit`, never connects (the temporary config is removed) or goes silent (see
//! [`Tunnel`]); the commands themselves are `commands.rs`.

use std::sync::Arc;
use std::time::Instant;

use serde_json::json;

use super::ticket as mtunnel_ticket;
use super::tunnel::Tunnel;
use crate::access::Grants;
use crate::cluster::clock::now_unix;
use crate::cluster::inner::Inner;
use crate::cluster::request::{Request, check_quorum, vmid};
use crate::cluster::state::State;
use crate::cluster::tasks::job::{Job, JobCx, TaskOwner};
use crate::schema::split_list;
use crate::{ApiError, Params, Reply};

/// `node needs to be 'localhost' or local hostname '<node>'`, shared with the tunnel endpoint.
pub(super) fn local_node<'a>(p: &Params, req: &Request<'a>) -> Result<&'a str, ApiError> {
    let node = p.req("node")?;
    if node != "localhost" && node != req.local_node {
        return Err(ApiError::param(
            "node",
            format!(
                "node needs to be 'localhost' or local hostname '{}'",
                req.local_node
            ),
        ));
    }
    Ok(req.local_node)
}

/// `$check_storage_access_migrate`: enabled on `node`, `Datastore.AllocateSpace` on it, and
/// able to hold VM images.
pub(super) fn check_storage_access(
    st: &State,
    grants: &Grants,
    storage: &str,
    node: &str,
) -> Result<(), ApiError> {
    let scfg = st
        .storages
        .check_enabled(storage, node)
        .map_err(ApiError::internal)?;
    grants.check(&format!("/storage/{storage}"), &["Datastore.AllocateSpace"])?;
    if !scfg.content.contains("images") {
        return Err(ApiError::internal(format!(
            "storage '{storage}' does not support vm images"
        )));
    }
    Ok(())
}

/// `POST /nodes/{node}/qemu/{vmid}/mtunnel`.
pub(crate) fn open(cx: &Arc<Inner>, p: &Params, req: &Request<'_>) -> Result<Reply, ApiError> {
    let node = local_node(p, req)?;
    let vmid = vmid(p)?;
    let mut st = cx.state();
    for storage in p.get("storages").map(split_list).unwrap_or_default() {
        check_storage_access(&st, req.grants, &storage, node)?;
    }
    let bridges = st.node(node).map(|n| n.bridges.clone()).unwrap_or_default();
    for bridge in p.get("bridges").map(split_list).unwrap_or_default() {
        if !bridges.contains(&bridge) {
            return Err(ApiError::internal(format!(
                "bridge '{bridge}' does not exist"
            )));
        }
    }
    check_quorum(&st, &cx.faults)?;
    if let Some(existing) = st.vms.get(&vmid) {
        return Err(ApiError::param(
            "vmid",
            format!(
                "unable to create empty VM config - VM {vmid} already exists on node '{}'",
                existing.node
            ),
        ));
    }
    st.create_locked_config(node, vmid);
    let socket = format!("/run/qemu-server/{vmid}.mtunnel");
    let authuser = req.grants.authuser().to_string();
    let ticket = mtunnel_ticket::assemble(
        &cx.tunnel_key,
        &authuser,
        &format!("/socket{socket}"),
        now_unix(),
    );
    // The tunnel exists before its worker starts: the worker is ready to end once it is gone.
    st.tunnels.insert(
        vmid,
        Tunnel {
            node: node.to_string(),
            ticket: ticket.clone(),
            socket: socket.clone(),
            upid: String::new(),
            grants: req.grants.clone(),
            lock: Some("create".into()),
            allocated: Vec::new(),
            nbd: Default::default(),
            opened: Instant::now(),
            last_command: None,
            exit: false,
        },
    );
    let owner = TaskOwner {
        node: node.to_string(),
        kind: "qmtunnel",
        vmid,
        user: authuser,
    };
    let upid = cx.start_task(&mut st, owner, Box::new(TunnelJob { vmid }));
    if let Some(t) = st.tunnels.get_mut(&vmid) {
        t.upid = upid.clone();
    }
    Ok(Reply::data(json!({
        "ticket": ticket,
        "socket": socket,
        "upid": upid,
    })))
}

/// The `qmtunnel` worker: done once the tunnel quit, timed out or is gone.
struct TunnelJob {
    vmid: u32,
}

impl Job for TunnelJob {
    fn begin(&mut self, cx: &mut JobCx<'_>) -> Result<f64, String> {
        cx.log.line("mtunnel started");
        Ok(0.0)
    }

    fn ready(&self, st: &State) -> bool {
        st.tunnels
            .get(&self.vmid)
            .is_none_or(|t| t.exit || t.timed_out(Instant::now()))
    }

    fn finish(&mut self, cx: &mut JobCx<'_>) -> Result<(), String> {
        let Some(tunnel) = cx.st.tunnels.remove(&self.vmid) else {
            return Err("mtunnel exited unexpectedly".into());
        };
        if tunnel.exit {
            cx.log.line("mtunnel exited");
            return Ok(());
        }
        if tunnel.last_command.is_some() {
            return Err("mtunnel exited unexpectedly".into());
        }
        cx.log
            .line("Failed to accept tunnel connection - got timeout");
        cx.log.line("Removing tunnel socket..");
        cx.log.line("Removing temporary VM config..");
        if cx
            .st
            .vm_on(&tunnel.node, self.vmid)
            .is_some_and(|vm| vm.conf.lock() == Some("create"))
        {
            cx.st.vms.remove(&self.vmid);
        }
        Err("Exiting mtunnel".into())
    }

    fn abort(&mut self, cx: &mut JobCx<'_>) {
        // Killed: the tunnel is gone, the config stays as it is (locked), as in PVE.
        cx.st.tunnels.remove(&self.vmid);
    }
}
