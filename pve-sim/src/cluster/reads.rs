//! Cluster and node reads: `/version`, `/cluster/status`, `/cluster/nextid`, `/nodes`,
//! `/nodes/{node}/status`. Node load is the sum of its running VMs over a small base load.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use sha1::{Digest, Sha1};

use super::inner::Inner;
use super::request::node;
use super::state::{Node, State};
use super::vm_status::usage;
use crate::{ApiError, Params, Reply};

/// Memory the host itself uses.
const HOST_MEM_BASE: u64 = 2_560 << 20;
/// Root filesystem of a node.
const ROOTFS_TOTAL: u64 = 100 << 30;
const ROOTFS_USED: u64 = 9 << 30;

/// `repoid` of a pve-manager version: stable hex derived from the version string.
fn repoid(version: &str) -> String {
    hex::encode(Sha1::digest(format!("pve-manager/{version}").as_bytes()))[..8].to_string()
}

/// `GET /version`.
pub(super) fn version(cx: &Arc<Inner>) -> Reply {
    let release: Vec<&str> = cx.version.split('.').take(2).collect();
    Reply::data(json!({
        "version": cx.version,
        "release": release.join("."),
        "repoid": repoid(&cx.version),
    }))
}

/// `GET /cluster/status`: a cluster entry plus one per node (single node: only the node,
/// `nodeid: 0`). `local: 1` marks `local`, the node answering.
pub(super) fn cluster_status(cx: &Arc<Inner>, local: &str) -> Reply {
    let st = cx.state();
    let single = st.nodes.len() == 1;
    let mut out = Vec::new();
    if !single {
        let online = st
            .nodes
            .iter()
            .filter(|n| !cx.faults.node_down(&n.name))
            .count();
        out.push(json!({
            "type": "cluster",
            "id": "cluster",
            "name": cx.cluster_name,
            "nodes": st.nodes.len(),
            "quorate": u8::from(online * 2 > st.nodes.len()),
            "version": st.nodes.len() + 2,
        }));
    }
    for n in &st.nodes {
        out.push(json!({
            "type": "node",
            "id": format!("node/{}", n.name),
            "name": n.name,
            "nodeid": if single { 0 } else { n.nodeid },
            "ip": n.ip,
            "local": u8::from(n.name == local),
            "online": u8::from(!cx.faults.node_down(&n.name)),
            "level": "",
        }));
    }
    Reply::data(Value::Array(out))
}

/// `GET /nodes/{node}/certificates/info`: the certificate the node's API listener serves
/// (`pve-ssl.pem`; an empty list while no listener serves the node).
pub(super) fn certificates(cx: &Arc<Inner>, p: &Params) -> Result<Reply, ApiError> {
    let name = node(p)?;
    let st = cx.state();
    let n = st
        .node(name)
        .ok_or_else(|| ApiError::internal(format!("no such cluster node '{name}'")))?;
    Ok(Reply::data(Value::Array(
        n.certificate.iter().map(|c| c.to_json()).collect(),
    )))
}

/// `GET /cluster/nextid`: lowest free vmid from 100, or assert `vmid` is free.
pub(super) fn nextid(cx: &Arc<Inner>, p: &Params) -> Result<Reply, ApiError> {
    let st = cx.state();
    let id = match p.get("vmid") {
        Some(v) => {
            let id: u32 = v.parse().map_err(|_| {
                ApiError::param("vmid", format!("type check ('integer') failed - got '{v}'"))
            })?;
            if st.vms.contains_key(&id) {
                return Err(ApiError::param("vmid", format!("VM {id} already exists")));
            }
            id
        }
        None => (100..1_000_000)
            .find(|id| !st.vms.contains_key(id))
            .ok_or_else(|| {
                ApiError::internal("unable to get any free VMID in range [100, 999999]")
            })?,
    };
    Ok(Reply::data(if cx.quirks {
        Value::from(id.to_string())
    } else {
        Value::from(id)
    }))
}

/// Memory and CPU in use on a node.
pub(super) fn node_load(st: &State, node: &Node) -> (u64, f64) {
    let mut mem = HOST_MEM_BASE;
    let mut cpu_time = 0.015 * f64::from(node.cpus);
    for vm in st
        .vms
        .values()
        .filter(|vm| vm.node == node.name && vm.run.running)
    {
        let u = usage(st, vm);
        mem += u.mem;
        cpu_time += u.cpu * f64::from(u.cpus);
    }
    (
        mem.min(node.memory),
        (cpu_time / f64::from(node.cpus.max(1))).min(1.0),
    )
}

/// A fake but stable certificate fingerprint of a node.
/// A stable stand-in fingerprint for a node no listener serves (in-process use).
fn fingerprint(node: &str) -> String {
    let digest = sha2::Sha256::digest(format!("pve-ssl/{node}").as_bytes());
    digest
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// A `/nodes` (and `/cluster/resources` node) entry.
pub(super) fn node_entry(
    cx: &Inner,
    st: &State,
    n: &Node,
    with_fingerprint: bool,
) -> Map<String, Value> {
    let mut o = Map::new();
    o.insert("id".into(), Value::from(format!("node/{}", n.name)));
    o.insert("type".into(), Value::from("node"));
    o.insert("node".into(), Value::from(n.name.as_str()));
    if cx.faults.node_down(&n.name) {
        o.insert("status".into(), Value::from("offline"));
        return o;
    }
    let (mem, cpu) = node_load(st, n);
    o.insert("status".into(), Value::from("online"));
    o.insert("cpu".into(), Value::from(cpu));
    o.insert("maxcpu".into(), Value::from(n.cpus));
    o.insert("mem".into(), Value::from(mem));
    o.insert("maxmem".into(), Value::from(n.memory));
    o.insert("disk".into(), Value::from(ROOTFS_USED));
    o.insert("maxdisk".into(), Value::from(ROOTFS_TOTAL));
    o.insert("uptime".into(), Value::from(n.uptime()));
    o.insert("level".into(), Value::from(""));
    if with_fingerprint {
        let fp = n
            .ssl_fingerprint
            .clone()
            .unwrap_or_else(|| fingerprint(&n.name));
        o.insert("ssl_fingerprint".into(), Value::from(fp));
    }
    o
}

/// `GET /nodes`.
pub(super) fn nodes(cx: &Arc<Inner>) -> Reply {
    let st = cx.state();
    let items = st
        .nodes
        .iter()
        .map(|n| Value::Object(node_entry(cx, &st, n, true)))
        .collect();
    Reply::data(Value::Array(items))
}

/// `GET /nodes/{node}/status`.
pub(super) fn node_status(cx: &Arc<Inner>, p: &Params) -> Result<Reply, ApiError> {
    let name = node(p)?;
    let st = cx.state();
    let n = st
        .node(name)
        .ok_or_else(|| ApiError::internal(format!("no such cluster node '{name}'")))?;
    let (mem, cpu) = node_load(&st, n);
    let load = format!("{:.2}", cpu * f64::from(n.cpus));
    Ok(Reply::data(json!({
        "cpu": cpu,
        "cpuinfo": {
            "cores": n.cpus / 2, "cpus": n.cpus, "sockets": 1, "mhz": "2999.998", "hvm": "1",
            "model": "AMD EPYC 7313P 16-Core Processor", "flags": "fpu vme de pse tsc msr pae mce cx8 apic sep svm",
            "user_hz": 100,
        },
        "loadavg": [load.clone(), load.clone(), load],
        "memory": { "total": n.memory, "used": mem, "free": n.memory - mem, "available": n.memory - mem },
        "rootfs": { "total": ROOTFS_TOTAL, "used": ROOTFS_USED, "free": ROOTFS_TOTAL - ROOTFS_USED, "avail": ROOTFS_TOTAL - ROOTFS_USED },
        "swap": { "total": 8u64 << 30, "used": 0, "free": 8u64 << 30 },
        "ksm": { "shared": 0 },
        "uptime": n.uptime(),
        "idle": 0,
        "wait": 0.0,
        "kversion": "Linux 6.14.11-4-pve #1 SMP PREEMPT_DYNAMIC PMX 6.14.11-4 (2025-10-10T08:04Z)",
        "current-kernel": {
            "sysname": "Linux", "release": "6.14.11-4-pve", "machine": "x86_64",
            "version": "#1 SMP PREEMPT_DYNAMIC PMX 6.14.11-4 (2025-10-10T08:04Z)",
        },
        "boot-info": { "mode": "efi", "secureboot": 0 },
        "pveversion": format!("pve-manager/{}/{}", cx.version, repoid(&cx.version)),
    })))
}
