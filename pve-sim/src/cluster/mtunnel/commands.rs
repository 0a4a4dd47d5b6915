//! The commands of an open migration tunnel, as qemu-server's `mtunnel` worker handles the
//! JSON lines arriving over its websocket (`mtunnelwebsocket`). The simulator has no websocket:
//! each command is one HTTPS request to the target's listener (see the `server` module's
//! tunnel endpoint) carrying the ticket `mtunnel` answered, and each answer is the line PVE
//! would send back: `{"success": true, ...}` or `{"success": false, "msg": "..."}`.
//!
//! A request reaches the tunnel only with the ticket of the open tunnel of that VMID, for its
//! socket, from the user or token that opened it (else `401 permission denied - invalid
//! PVETUNNEL ticket`); the first command stands for the websocket's connection: it must come
//! while the ticket is young (PVE's 40 s) and the VM's config must exist. After `quit` the
//! tunnel answers `tunnel is in exit-mode, ...` until its task has ended, then the ticket is
//! no longer valid.
//! Every command needs the config to carry the lock the tunnel expects (`Encountered wrong lock
//! - aborting mtunnel command handling.`), then:
//!
//! - `version` → `{api: 2, age: 0}`.
//! - `config` `{conf}`: the source's config text (volumes and bridges already mapped); checked
//!   as `update_vm_api` checks a write by the tunnel's owner (`config/privileges.rs`), written
//!   for the VMID with `lock: migrate`.
//! - `disk` `{storage, format, drive}`: a volume of the drive's `size` on `storage`
//!   (`Datastore.AllocateSpace` again), answered as `{volid, drivestr}` (`format=` added). A
//!   CD-ROM drive sent this way is the cloud-init image and keeps its `vm-<vmid>-cloudinit` name.
//! - `start` `{start_params, migrate_opts}`: the NBD drives must be the ones `disk` answered;
//!   the VM starts paused, waiting for the incoming state. The simulator's stand-in for the
//!   guest state the migration stream carries is the top-level `sim-guest-uptime` (seconds the
//!   guest has been up), so the guest keeps its uptime (and its agent) across the move.
//! - `resume`, `stop`, `nbdstop`, `fstrim`, `unlock` (drops the tunnel's lock), `ticket`.
//! - `quit` `{cleanup}`: with `cleanup`, frees the volumes `disk` allocated and destroys the
//!   VM's config; then the tunnel takes no more commands and its task ends.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::endpoint::check_storage_access;
use super::ticket as mtunnel_ticket;
use super::tunnel::Tunnel;
use crate::ApiError;
use crate::cluster::clock::now_unix;
use crate::cluster::config::parse::parse_main;
use crate::cluster::config::privileges::check_config_write;
use crate::cluster::drive::{Drive, format_size, is_drive_key, is_unused_key, split_volid};
use crate::cluster::inner::Inner;
use crate::cluster::power::{mark_running, mark_stopped, prepare_start};
use crate::cluster::request::Request;
use crate::cluster::state::State;
use crate::cluster::tasks::task::TaskLog;
use crate::cluster::vm::conf_missing;

/// `$PVE::QemuMigrate::WS_TUNNEL_VERSION`.
pub(crate) const TUNNEL_VERSION: u64 = 2;

/// The parameters each command may carry (`$cmd_desc`; commands without one ignore theirs).
fn allowed_keys(cmd: &str) -> Option<&'static [&'static str]> {
    Some(match cmd {
        "config" => &["conf", "firewall-config"],
        "disk" => &["format", "storage", "drive"],
        "start" => &["start_params", "migrate_opts", "sim-guest-uptime"],
        "ticket" => &["path"],
        "quit" => &["cleanup"],
        _ => return None,
    })
}

/// `PVE::JSONSchema::validate`'s exception, as the tunnel stringifies it.
fn param_error(key: &str, why: &str) -> String {
    format!("400 Parameter verification failed.\n{key}: {why}")
}

/// An `ApiError` as a Perl exception stringifies (`403 Permission check failed (...)`).
fn stringify(e: ApiError) -> String {
    if matches!(e.status, 400 | 403) {
        let mut text = format!("{} {}", e.status, e.message);
        for (k, v) in &e.errors {
            text.push_str(&format!("\n{k}: {v}"));
        }
        text
    } else {
        e.message
    }
}

/// Answer one command sent to VM `vmid`'s tunnel.
pub(crate) fn handle(
    cx: &Arc<Inner>,
    req: &Request<'_>,
    vmid: u32,
    ticket: &str,
    socket: &str,
    command: &Value,
) -> Result<Value, ApiError> {
    let node = req.local_node;
    let mut st = cx.state();
    let connecting = st
        .tunnels
        .get(&vmid)
        .is_none_or(|t| t.last_command.is_none());
    // `mtunnelwebsocket` checks the config when the source connects (its first command).
    if connecting && st.vm_on(node, vmid).is_none() {
        return Err(ApiError::internal(conf_missing(node, vmid)));
    }
    let invalid = || ApiError::status(401, "permission denied - invalid PVETUNNEL ticket");
    let running = |t: &Tunnel| st.tasks.get(&t.upid).is_some_and(|task| task.end.is_none());
    let open = st
        .tunnels
        .get(&vmid)
        .filter(|t| t.node == node && running(t))
        .ok_or_else(invalid)?;
    let now = (open.last_command.is_none()).then(now_unix);
    let valid = open.ticket == ticket
        && open.socket == socket
        && mtunnel_ticket::verify(
            &cx.tunnel_key,
            ticket,
            req.grants.authuser(),
            &format!("/socket{socket}"),
            now,
        );
    if !valid {
        return Err(invalid());
    }
    let Some(mut tunnel) = st.tunnels.remove(&vmid) else {
        return Err(invalid());
    };
    tunnel.last_command = Some(Instant::now());
    let reply = run(cx, &mut st, &mut tunnel, vmid, command);
    st.tunnels.insert(vmid, tunnel);
    Ok(reply)
}

/// One command line in, one reply line out.
fn run(cx: &Arc<Inner>, st: &mut State, tunnel: &mut Tunnel, vmid: u32, command: &Value) -> Value {
    let failure = |msg: String| json!({ "success": false, "msg": msg });
    let Some(params) = command.as_object() else {
        return failure("failed to parse command - not a JSON object".into());
    };
    let Some(cmd) = params.get("cmd").and_then(Value::as_str) else {
        return failure("'cmd' missing".into());
    };
    if tunnel.exit {
        return failure(format!(
            "tunnel is in exit-mode, processing '{cmd}' cmd not possible"
        ));
    }
    let known = [
        "version", "config", "disk", "start", "resume", "stop", "nbdstop", "fstrim", "unlock",
        "ticket", "quit",
    ];
    if !known.contains(&cmd) {
        return failure(format!("unknown command '{cmd}' given"));
    }
    let mut log = TaskLog::default();
    log.line(format!("received command '{cmd}'"));
    let result = check_params(cmd, params)
        .and_then(|()| check_lock(st, tunnel, vmid))
        .and_then(|()| execute(cx, st, tunnel, vmid, cmd, params, &mut log));
    if let Some(task) = st.tasks.get_mut(&tunnel.upid) {
        task.log.lines.extend(log.lines);
    }
    match result {
        Ok(mut out) => {
            out.insert("success".into(), Value::Bool(true));
            Value::Object(out)
        }
        Err(e) => failure(format!("failed to handle '{cmd}' command - {e}")),
    }
}

fn check_params(cmd: &str, params: &Map<String, Value>) -> Result<(), String> {
    let Some(allowed) = allowed_keys(cmd) else {
        return Ok(());
    };
    match params
        .keys()
        .find(|k| *k != "cmd" && !allowed.contains(&k.as_str()))
    {
        Some(k) => Err(param_error(
            k,
            "property is not defined in schema and the schema does not allow additional properties",
        )),
        None => Ok(()),
    }
}

/// `$run_locked`: the config must exist and carry the tunnel's lock.
fn check_lock(st: &State, tunnel: &Tunnel, vmid: u32) -> Result<(), String> {
    let vm = st
        .vm_on(&tunnel.node, vmid)
        .ok_or_else(|| conf_missing(&tunnel.node, vmid))?;
    match &tunnel.lock {
        Some(lock) if vm.conf.lock() != Some(lock.as_str()) => {
            Err("Encountered wrong lock - aborting mtunnel command handling.".into())
        }
        _ => Ok(()),
    }
}

fn string_param<'a>(params: &'a Map<String, Value>, key: &str) -> Result<&'a str, String> {
    params
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| param_error(key, "property is missing and it is not optional"))
}

fn execute(
    cx: &Arc<Inner>,
    st: &mut State,
    tunnel: &mut Tunnel,
    vmid: u32,
    cmd: &str,
    params: &Map<String, Value>,
    log: &mut TaskLog,
) -> Result<Map<String, Value>, String> {
    let node = tunnel.node.clone();
    let mut out = Map::new();
    match cmd {
        "version" => {
            out.insert("api".into(), json!(TUNNEL_VERSION));
            out.insert("age".into(), json!(0));
        }
        "config" => write_config(st, tunnel, vmid, string_param(params, "conf")?)?,
        "disk" => out = allocate_disk(st, tunnel, vmid, params)?,
        "start" => out = start(st, tunnel, vmid, params, log)?,
        "resume" => match st.vm_on_mut(&node, vmid) {
            Some(vm) if vm.run.running => vm.run.paused = false,
            _ => return Err(format!("VM {vmid} not running")),
        },
        "stop" => mark_stopped(st, vmid),
        "unlock" => {
            if let Some(lock) = tunnel.lock.take()
                && let Some(vm) = st.vm_on_mut(&node, vmid)
                && vm.conf.lock() == Some(lock.as_str())
            {
                vm.conf.remove("lock");
            }
        }
        "ticket" => {
            let path = string_param(params, "path")?;
            let known = st
                .vm_on(&node, vmid)
                .is_some_and(|vm| vm.run.running && path == migrate_socket(vmid));
            if !known {
                return Err(format!(
                    "Not allowed to generate ticket for unknown socket '{path}'"
                ));
            }
            let ticket = mtunnel_ticket::assemble(
                &cx.tunnel_key,
                tunnel.grants.authuser(),
                &format!("/socket{path}"),
                now_unix(),
            );
            out.insert("ticket".into(), json!(ticket));
        }
        "quit" => {
            let cleanup = params.get("cleanup").is_some_and(truthy);
            if cleanup {
                cleanup_vm(st, tunnel, vmid, log);
            }
            log.line("switching to exit-mode, waiting for client to disconnect");
            tunnel.exit = true;
        }
        // `nbdstop`, `fstrim`: nothing to simulate.
        _ => {}
    }
    Ok(out)
}

/// Perl truthiness of a JSON value (`1`, `true`, `"1"`).
fn truthy(v: &Value) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty() && s != "0",
        _ => false,
    }
}

fn migrate_socket(vmid: u32) -> String {
    format!("/run/qemu-server/{vmid}.migrate")
}

/// `config`: the source's config becomes this VM's, with `lock: migrate`.
fn write_config(st: &mut State, tunnel: &mut Tunnel, vmid: u32, text: &str) -> Result<(), String> {
    let mut conf = parse_main(vmid, text)?;
    for key in ["lock", "digest", "parent"] {
        conf.remove(key);
    }
    // Not written through update_vm_api: no permission needed, restored afterwards.
    let vmgenid = conf.remove("vmgenid");
    let meta = conf.remove("meta");
    check_config_write(&tunnel.grants, vmid, conf.main.iter()).map_err(stringify)?;
    if let Some(v) = vmgenid {
        conf.set("vmgenid", v);
    }
    if let Some(m) = meta {
        conf.set("meta", m);
    }
    conf.set("lock", "migrate");
    let vm = st
        .vm_on_mut(&tunnel.node, vmid)
        .ok_or_else(|| conf_missing(&tunnel.node, vmid))?;
    vm.conf = conf;
    tunnel.lock = Some("migrate".into());
    Ok(())
}

/// `disk`: a volume like the source's on the mapped storage.
fn allocate_disk(
    st: &mut State,
    tunnel: &mut Tunnel,
    vmid: u32,
    params: &Map<String, Value>,
) -> Result<Map<String, Value>, String> {
    let storage = string_param(params, "storage")?;
    let format = params.get("format").and_then(Value::as_str);
    let drive = params
        .get("drive")
        .and_then(Value::as_object)
        .ok_or_else(|| param_error("drive", "property is missing and it is not optional"))?;
    check_storage_access(st, &tunnel.grants, storage, &tunnel.node).map_err(stringify)?;
    let size = match drive.get("size") {
        Some(Value::Number(n)) => n.as_u64(),
        Some(Value::String(s)) => s.parse().ok(),
        _ => None,
    }
    .ok_or_else(|| "drive without a size".to_string())?;
    let cloudinit = drive.get("media").and_then(Value::as_str) == Some("cdrom");
    let name = cloudinit.then(|| format!("vm-{vmid}-cloudinit"));
    let volid = st.storages.alloc(
        storage,
        &tunnel.node,
        vmid,
        name.as_deref(),
        format,
        size,
        now_unix(),
    )?;
    let actual = st
        .storages
        .find(&volid, &tunnel.node)
        .map(|v| v.format.clone())
        .unwrap_or_default();
    let mut opts = std::collections::BTreeMap::new();
    for (k, v) in drive {
        if ["interface", "index", "file", "volume", "format", "size"].contains(&k.as_str()) {
            continue;
        }
        let text = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        opts.insert(k.clone(), text);
    }
    opts.insert("format".into(), actual);
    opts.insert("size".into(), format_size(size));
    let drivestr = Drive {
        file: volid.clone(),
        opts,
    }
    .print();
    tunnel.allocated.push(volid.clone());
    tunnel.nbd.insert(volid.clone(), drivestr.clone());
    let mut out = Map::new();
    out.insert("volid".into(), json!(volid));
    out.insert("drivestr".into(), json!(drivestr));
    Ok(out)
}

/// `start`: the VM runs paused on this node, waiting for the incoming state.
fn start(
    st: &mut State,
    tunnel: &Tunnel,
    vmid: u32,
    params: &Map<String, Value>,
    log: &mut TaskLog,
) -> Result<Map<String, Value>, String> {
    let nbd = params
        .get("migrate_opts")
        .and_then(|m| m.get("nbd"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut drives = Map::new();
    for (ds, entry) in &nbd {
        let volid = entry
            .get("volid")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("No volid set for NBD volume '{ds}'"))?;
        let drivestr = entry
            .get("drivestr")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("No drivestr set for NBD volume '{ds}:{volid}'"))?;
        if let Some(key) = entry
            .as_object()
            .and_then(|o| o.keys().find(|k| *k != "volid" && *k != "drivestr"))
        {
            return Err(format!(
                "Unknown NBD volume key for '{ds}:{volid}': '{key}'"
            ));
        }
        let expected = tunnel
            .nbd
            .get(volid)
            .ok_or_else(|| format!("Unknown NBD volume '{ds}:{volid}'"))?;
        if drivestr != expected {
            return Err(format!(
                "NBD mismatch for '{ds}': '{drivestr}' vs' {expected}"
            ));
        }
        drives.insert(
            ds.clone(),
            json!({
                "drivestr": drivestr,
                "nbd_uri": format!(
                    "nbd:unix:/run/qemu-server/{vmid}_nbd.migrate:exportname=drive-{ds}"
                ),
            }),
        );
    }
    prepare_start(st, &tunnel.node, vmid, true, log)?;
    mark_running(st, &tunnel.node, vmid);
    let uptime = params
        .get("sim-guest-uptime")
        .and_then(Value::as_f64)
        .filter(|u| u.is_finite() && *u >= 0.0);
    if let Some(vm) = st.vm_on_mut(&tunnel.node, vmid) {
        vm.run.paused = true;
        if let Some(up) = uptime {
            vm.run.guest_booted = Instant::now().checked_sub(Duration::from_secs_f64(up));
        }
    }
    let socket = migrate_socket(vmid);
    log.line(format!("migration listens on unix:{socket}"));
    for d in drives.values() {
        log.line(format!(
            "storage migration listens on {} volume:{}",
            d["nbd_uri"].as_str().unwrap_or_default(),
            d["drivestr"].as_str().unwrap_or_default()
        ));
    }
    let mut out = Map::new();
    out.insert(
        "migrate".into(),
        json!({ "proto": "unix", "addr": socket, "unix_sockets": [] }),
    );
    out.insert("drives".into(), Value::Object(drives));
    Ok(out)
}

/// `quit` with `cleanup`: free what `disk` allocated, then `destroy_vm`.
fn cleanup_vm(st: &mut State, tunnel: &mut Tunnel, vmid: u32, log: &mut TaskLog) {
    let node = tunnel.node.clone();
    for volid in std::mem::take(&mut tunnel.allocated) {
        log.line(format!("freeing volume '{volid}' as part of cleanup"));
        if let Err(e) = st.storages.free(&volid, &node) {
            log.line(e);
        }
    }
    let Some(vm) = st.vm_on(&node, vmid) else {
        return;
    };
    let volumes: Vec<String> = vm
        .conf
        .main
        .iter()
        .filter_map(|(k, v)| {
            if is_drive_key(k) {
                Drive::parse(v).map(|d| d.file)
            } else if is_unused_key(k) {
                Some(v.clone())
            } else {
                None
            }
        })
        .filter(|volid| split_volid(volid).is_some())
        .collect();
    for volid in volumes {
        if st
            .storages
            .find(&volid, &node)
            .is_some_and(|v| v.vmid == Some(vmid))
        {
            let _ = st.storages.free(&volid, &node);
        }
    }
    mark_stopped(st, vmid);
    st.vms.remove(&vmid);
}
