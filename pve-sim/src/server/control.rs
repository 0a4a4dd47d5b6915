//! Simulator control over HTTPS (not part of the PVE API), for testbeds that run the simulator
//! as a process. Needs a root ticket (with CSRF token on writes) or a configured token that is
//! not read-only (tokens created through the API never qualify). Answers use the API envelope (`{"data": ...}` / `{"data": null, "message": ...}`).
//!
//! - `GET /_sim/faults` → the [`FaultSettings`]; `PUT /_sim/faults` with a `FaultSettings`
//!   JSON body replaces them.
//! - `POST /_sim/vm/{vmid}/power` with `{"running": bool}` powers a VM on/off behind the API.
//! - `POST /_sim/vm/{vmid}/lock` with `{"lock": "backup"}` or `{"lock": null}` sets or
//!   clears the `lock:` line of a VM's config behind the API (a backup or migration cut short
//!   by its node's death) → `{"vmid", "lock"}`; unknown VM 404, a lock PVE does not know 400.
//! - `POST /_sim/nodes/{node}/power` with `{"action": "off" | "on" | "reset"}` powers a host
//!   ([`crate::node_power`]) → `{"node", "action", "online": bool, "stopped": [vmid, ...]}`
//!   (the VMs that were running on it); unknown node 404, unknown action 400. A node that is
//!   off does not answer, so power it on through another node's listener.
//! - `POST /_sim/pmxcfs/move-config` with `{"vmid": u32, "from": node, "to": node}` moves a
//!   stopped VM's config between node directories, as pve-ha-manager does for a fenced node
//!   → `{"vmid", "node": to}`; unknown node or config not on `from` 404, running VM 409.
//! - `POST /_sim/pmxcfs/clear-lock` with `{"vmid": u32, "node": node}` removes the `lock:`
//!   line from the config in `node`'s directory, even while `node` is off (root editing the
//!   file in `/etc/pve` on a live node) → `{"vmid", "node", "lock": previous or null}`; unknown
//!   node or config not on `node` 404.
//! - `PUT /_sim/ha/resources` with a JSON list of [`HaResource`] (`[{"sid": "vm:100",
//!   "state": "started", "max_restart": 1, ...}]`) replaces PVE's HA resources → the list as
//!   stored (full sids, `type` filled in); a refused list is a 400 with PVE's text.
//! - `PUT /_sim/snippets/{node}/{storage}/{filename}` stores the body as a snippet file.

use hyper::body::Incoming;
use hyper::{Method, Request, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::body::{OneChunk, read_body};
use super::response::respond;
use crate::access::Standing;
use crate::auth::{Credentials, Principal};
use crate::faults::FaultSettings;
use crate::ha::HaResource;
use crate::node_power::NodePowerAction;
use crate::route::HttpMethod;
use crate::sim::{Sim, unix_now};

/// Largest control body (snippets can be bigger than API parameters).
const MAX_CONTROL_BODY: usize = 4 * 1024 * 1024;

fn ok(data: Value) -> Response<OneChunk> {
    respond(
        200,
        "OK",
        serde_json::to_vec(&json!({ "data": data })).unwrap_or_default(),
    )
}

fn fail(status: u16, message: &str) -> Response<OneChunk> {
    let body = json!({ "data": null, "message": format!("{message}\n") });
    respond(
        status,
        message.lines().next().unwrap_or(""),
        serde_json::to_vec(&body).unwrap_or_default(),
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Power {
    running: bool,
}

/// The body of `POST /_sim/nodes/{node}/power` (the action parsed on its own, so an unknown
/// one is named with the allowed values).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NodePower {
    action: String,
}

/// The body of `POST /_sim/pmxcfs/move-config`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MoveConfig {
    vmid: u32,
    from: String,
    to: String,
}

/// The body of `POST /_sim/vm/{vmid}/lock` (`lock` required, `null` clears it).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct VmLock {
    #[serde(deserialize_with = "required_nullable")]
    lock: Option<String>,
}

/// A field that must be present but may be `null` (serde treats a missing `Option` as
/// `None`, which would turn a typo'd body into "clear the lock").
fn required_nullable<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Option::<String>::deserialize(d)
}

/// The body of `POST /_sim/pmxcfs/clear-lock`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClearLock {
    vmid: u32,
    node: String,
}

fn vm_lock(sim: &Sim, vmid: &str, body: &[u8]) -> Response<OneChunk> {
    let Ok(vmid) = vmid.parse::<u32>() else {
        return fail(400, &format!("invalid vmid '{vmid}'"));
    };
    match serde_json::from_slice::<VmLock>(body) {
        Ok(l) => match sim.set_vm_lock(vmid, l.lock.as_deref()) {
            Ok(()) => ok(json!({ "vmid": vmid, "lock": l.lock })),
            Err(e) => fail(e.status, &e.message),
        },
        Err(e) => fail(400, &format!("invalid lock request: {e}")),
    }
}

fn clear_lock(sim: &Sim, body: &[u8]) -> Response<OneChunk> {
    match serde_json::from_slice::<ClearLock>(body) {
        Ok(c) => match sim.clear_vm_lock(c.vmid, &c.node) {
            Ok(previous) => ok(json!({ "vmid": c.vmid, "node": c.node, "lock": previous })),
            Err(e) => fail(e.status, &e.message),
        },
        Err(e) => fail(400, &format!("invalid clear-lock request: {e}")),
    }
}

fn node_power(sim: &Sim, node: &str, body: &[u8]) -> Response<OneChunk> {
    let action = match serde_json::from_slice::<NodePower>(body) {
        Ok(p) => match p.action.parse::<NodePowerAction>() {
            Ok(a) => a,
            Err(e) => return fail(400, &e.to_string()),
        },
        Err(e) => return fail(400, &format!("invalid node power request: {e}")),
    };
    match sim.power_node(node, action) {
        Ok(stopped) => ok(json!({
            "node": node,
            "action": action.as_str(),
            "online": !sim.faults().node_down(node),
            "stopped": stopped,
        })),
        Err(e) => fail(e.status, &e.message),
    }
}

fn move_config(sim: &Sim, body: &[u8]) -> Response<OneChunk> {
    match serde_json::from_slice::<MoveConfig>(body) {
        Ok(m) => match sim.move_vm_config(m.vmid, &m.from, &m.to) {
            Ok(()) => ok(json!({ "vmid": m.vmid, "node": m.to })),
            Err(e) => fail(e.status, &e.message),
        },
        Err(e) => fail(400, &format!("invalid move-config request: {e}")),
    }
}

fn ha_resources(sim: &Sim, body: &[u8]) -> Response<OneChunk> {
    match serde_json::from_slice::<Vec<HaResource>>(body) {
        Ok(list) => match sim.set_ha_resources(list) {
            Ok(stored) => ok(serde_json::to_value(stored).unwrap_or(Value::Null)),
            Err(e) => fail(e.status, &e.message),
        },
        Err(e) => fail(400, &format!("invalid HA resources: {e}")),
    }
}

/// Answer one `/_sim/...` request.
pub(crate) async fn handle(sim: &Sim, req: Request<Incoming>) -> Response<OneChunk> {
    let method = match *req.method() {
        Method::GET => HttpMethod::Get,
        Method::POST => HttpMethod::Post,
        Method::PUT => HttpMethod::Put,
        Method::DELETE => HttpMethod::Delete,
        _ => return fail(501, "method not available"),
    };
    let path = percent_encoding::percent_decode_str(req.uri().path())
        .decode_utf8_lossy()
        .into_owned();
    let headers = req.headers();
    let creds = Credentials {
        cookie: headers.get("cookie").and_then(|v| v.to_str().ok()),
        authorization: headers.get("authorization").and_then(|v| v.to_str().ok()),
        csrf: headers
            .get("csrfpreventiontoken")
            .and_then(|v| v.to_str().ok()),
    };
    let who = match sim.auth().authenticate(method, &path, creds, unix_now()) {
        Ok(who) => who,
        Err(e) => return respond(401, &e.message, Vec::new()),
    };
    // Only full-privilege callers: not read-only tokens, not users and tokens whose
    // privileges come from ACLs.
    let allowed = matches!(&who, Principal::User(c) if c.is_root()
        || (c.tokenid.is_some()
            && sim.auth().access().grants(c).standing() == Standing::Full));
    if !allowed {
        return fail(403, "Permission check failed (/_sim, Sys.Modify)");
    }
    let body = match read_body(req.into_body(), MAX_CONTROL_BODY).await {
        Ok(b) => b,
        Err(_) => return fail(501, "for data too large"),
    };
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match (method, segs.as_slice()) {
        (HttpMethod::Get, ["_sim", "faults"]) => {
            ok(serde_json::to_value(sim.faults().snapshot()).unwrap_or(Value::Null))
        }
        (HttpMethod::Put, ["_sim", "faults"]) => {
            match serde_json::from_slice::<FaultSettings>(&body) {
                Ok(settings) => {
                    sim.faults().replace(settings);
                    ok(serde_json::to_value(sim.faults().snapshot()).unwrap_or(Value::Null))
                }
                Err(e) => fail(400, &format!("invalid fault settings: {e}")),
            }
        }
        (HttpMethod::Post, ["_sim", "vm", vmid, "power"]) => {
            let Ok(vmid) = vmid.parse::<u32>() else {
                return fail(400, &format!("invalid vmid '{vmid}'"));
            };
            match serde_json::from_slice::<Power>(&body) {
                Ok(p) if sim.set_vm_running(vmid, p.running) => {
                    ok(json!({ "vmid": vmid, "running": p.running }))
                }
                Ok(_) => fail(404, &format!("VM {vmid} does not exist")),
                Err(e) => fail(400, &format!("invalid power request: {e}")),
            }
        }
        (HttpMethod::Post, ["_sim", "vm", vmid, "lock"]) => vm_lock(sim, vmid, &body),
        (HttpMethod::Post, ["_sim", "nodes", node, "power"]) => node_power(sim, node, &body),
        (HttpMethod::Post, ["_sim", "pmxcfs", "move-config"]) => move_config(sim, &body),
        (HttpMethod::Post, ["_sim", "pmxcfs", "clear-lock"]) => clear_lock(sim, &body),
        (HttpMethod::Put, ["_sim", "ha", "resources"]) => ha_resources(sim, &body),
        (HttpMethod::Put, ["_sim", "snippets", node, storage, filename]) => {
            let content = String::from_utf8_lossy(&body);
            match sim.write_snippet(node, storage, filename, &content) {
                Ok(volid) => ok(json!(volid)),
                Err(e) => fail(e.status, &e.message),
            }
        }
        _ => fail(
            501,
            &format!("Method '{} {path}' not implemented", method.as_str()),
        ),
    }
}
