//! VM status objects as `vmstatus` builds them: `GET .../status/current`, the per-node list
//! `GET /nodes/{node}/qemu`, and the usage figures nodes and `/cluster/resources` add up.
//! Running VMs report deterministic, plausible load derived from their vmid and uptime.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::inner::Inner;
use super::request::{node, vmid};
use super::state::State;
use super::vm::{Vm, agent_enabled, boot_disk, cpus, memory_mib};
use crate::{ApiError, Params, Reply};

/// Usage of one VM.
pub(super) struct VmUsage {
    pub(super) cpus: u32,
    pub(super) maxmem: u64,
    pub(super) mem: u64,
    pub(super) maxdisk: u64,
    pub(super) cpu: f64,
    pub(super) uptime: u64,
    pub(super) netin: u64,
    pub(super) netout: u64,
    pub(super) diskread: u64,
    pub(super) diskwrite: u64,
}

/// Current usage of `vm` (zero load when stopped).
pub(super) fn usage(st: &State, vm: &Vm) -> VmUsage {
    let host_cpus = st.node(&vm.node).map_or(1, |n| n.cpus);
    let maxmem = memory_mib(&vm.conf) << 20;
    let maxdisk = boot_disk(&vm.conf)
        .and_then(|(_, d)| {
            st.storages
                .find(&d.file, &vm.node)
                .map(|v| v.size)
                .or(d.size())
        })
        .unwrap_or(0);
    let mut u = VmUsage {
        cpus: cpus(&vm.conf, host_cpus),
        maxmem,
        mem: 0,
        maxdisk,
        cpu: 0.0,
        uptime: 0,
        netin: 0,
        netout: 0,
        diskread: 0,
        diskwrite: 0,
    };
    if vm.run.running {
        let seed = u64::from(vm.vmid);
        u.uptime = vm.run.started.map_or(0, |t| t.elapsed().as_secs());
        u.mem = maxmem / 100 * (25 + seed % 40);
        u.cpu = if vm.run.paused {
            0.0
        } else {
            0.01 + (seed % 9) as f64 * 0.007
        };
        u.netin = u.uptime * 1_200 + seed;
        u.netout = u.uptime * 800 + seed / 2;
        u.diskread = (50 << 20) + u.uptime * 4_096;
        u.diskwrite = u.uptime * 2_048;
    }
    u
}

fn quirky(quirks: bool, v: u64) -> Value {
    if quirks {
        Value::from(v.to_string())
    } else {
        Value::from(v)
    }
}

/// `vmstatus` for one VM; `full` adds QMP data. `quirks` emits PVE's string drift
/// (`vmid`, `maxmem`, `maxdisk` as strings) for the list endpoint.
pub(super) fn status_object(st: &State, vm: &Vm, full: bool, quirks: bool) -> Map<String, Value> {
    let u = usage(st, vm);
    let running = vm.run.running;
    let mut o = Map::new();
    o.insert(
        "vmid".into(),
        if quirks {
            Value::from(vm.vmid.to_string())
        } else {
            Value::from(vm.vmid)
        },
    );
    o.insert(
        "status".into(),
        Value::from(if running { "running" } else { "stopped" }),
    );
    let name = vm
        .conf
        .get("name")
        .map_or_else(|| format!("VM {}", vm.vmid), str::to_string);
    o.insert("name".into(), Value::from(name));
    o.insert("cpus".into(), Value::from(u.cpus));
    o.insert("maxmem".into(), quirky(quirks, u.maxmem));
    o.insert("mem".into(), Value::from(u.mem));
    o.insert("maxdisk".into(), quirky(quirks, u.maxdisk));
    o.insert("disk".into(), Value::from(0));
    o.insert("cpu".into(), Value::from(u.cpu));
    o.insert("uptime".into(), Value::from(u.uptime));
    o.insert("netin".into(), Value::from(u.netin));
    o.insert("netout".into(), Value::from(u.netout));
    o.insert("diskread".into(), Value::from(u.diskread));
    o.insert("diskwrite".into(), Value::from(u.diskwrite));
    if vm.conf.is_template() {
        o.insert("template".into(), Value::from(1));
    }
    if vm.conf.main.keys().any(|k| k.starts_with("serial")) {
        o.insert("serial".into(), Value::from(1));
    }
    if let Some(lock) = vm.conf.lock() {
        o.insert("lock".into(), Value::from(lock));
    }
    if let Some(tags) = vm.conf.get("tags") {
        o.insert("tags".into(), Value::from(tags));
    }
    if running {
        o.insert("pid".into(), Value::from(vm.run.pid));
        o.insert("memhost".into(), Value::from(u.mem + (48 << 20)));
        for k in [
            "pressurecpusome",
            "pressurecpufull",
            "pressureiosome",
            "pressureiofull",
            "pressurememorysome",
            "pressurememoryfull",
        ] {
            o.insert(k.into(), Value::from(0));
        }
    }
    if full {
        let qmp = match (running, vm.run.paused) {
            (true, true) => "paused",
            (true, false) => "running",
            (false, _) => "stopped",
        };
        o.insert("qmpstatus".into(), Value::from(qmp));
        if running {
            o.insert("running-machine".into(), Value::from("pc-i440fx-9.2+pve1"));
            o.insert(
                "running-qemu".into(),
                Value::from(super::bootstrap::QEMU_VERSION),
            );
            o.insert("balloon".into(), Value::from(u.maxmem));
            o.insert("freemem".into(), Value::from(u.maxmem - u.mem));
            o.insert(
                "proxmox-support".into(),
                json!({ "pbs-dirty-bitmap": true, "query-bitmap-info": true }),
            );
        }
    }
    o
}

/// `GET /nodes/{node}/qemu`.
pub(super) fn list(cx: &Arc<Inner>, p: &Params) -> Result<Reply, ApiError> {
    let node = node(p)?;
    let full = p.flag("full", false);
    let st = cx.state();
    let items: Vec<Value> = st
        .vms
        .values()
        .filter(|vm| vm.node == node)
        .map(|vm| Value::Object(status_object(&st, vm, full, cx.quirks)))
        .collect();
    Ok(Reply::data(Value::Array(items)))
}

/// `GET .../status/current`.
pub(super) fn current(cx: &Arc<Inner>, p: &Params) -> Result<Reply, ApiError> {
    let (node, vmid) = (node(p)?, vmid(p)?);
    let st = cx.state();
    let vm = st.load(node, vmid)?;
    let mut o = status_object(&st, vm, true, false);
    o.insert("ha".into(), json!({ "managed": 0 }));
    if agent_enabled(&vm.conf) {
        o.insert("agent".into(), Value::from(1));
    }
    if let Some(vga) = vm.conf.get("vga") {
        let kv = super::drive::parse_kv(vga, "type");
        let kind = kv.get("type").map(String::as_str).unwrap_or("std");
        if kind.starts_with("qxl") || kind.starts_with("virtio") {
            o.insert("spice".into(), Value::from(1));
        }
        if let Some(c) = kv.get("clipboard") {
            o.insert("clipboard".into(), Value::from(c.as_str()));
        }
    }
    Ok(Reply::data(Value::Object(o)))
}
