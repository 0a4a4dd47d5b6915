//! `GET /cluster/resources`: VM, node and storage entries (storage once per storage and node),
//! filtered by `type` (`vm`, `storage`, `node`, `sdn`). VMs and storages of a node that is down
//! report `status: unknown`, as they do when their node's pvestatd stops sending.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::inner::Inner;
use super::reads::node_entry;
use super::vm_status::usage;
use crate::{ApiError, Params, Reply};

/// `GET /cluster/resources`.
pub(super) fn cluster_resources(cx: &Arc<Inner>, p: &Params) -> Result<Reply, ApiError> {
    let kind = p.get("type");
    let want = |k: &str| kind.is_none_or(|t| t == k);
    let st = cx.state();
    let mut out = Vec::new();
    if want("vm") {
        for vm in st.vms.values() {
            let down = cx.faults.node_down(&vm.node);
            let u = usage(&st, vm);
            let mut o = Map::new();
            o.insert("id".into(), Value::from(format!("qemu/{}", vm.vmid)));
            o.insert("type".into(), Value::from("qemu"));
            o.insert("vmid".into(), Value::from(vm.vmid));
            o.insert("node".into(), Value::from(vm.node.as_str()));
            let status = match (down, vm.run.running) {
                (true, _) => "unknown",
                (false, true) => "running",
                (false, false) => "stopped",
            };
            o.insert("status".into(), Value::from(status));
            if !down {
                let name = vm
                    .conf
                    .get("name")
                    .map_or_else(|| format!("VM {}", vm.vmid), str::to_string);
                o.insert("name".into(), Value::from(name));
            }
            o.insert(
                "template".into(),
                Value::from(u8::from(vm.conf.is_template())),
            );
            o.insert("maxcpu".into(), Value::from(u.cpus));
            o.insert("cpu".into(), Value::from(u.cpu));
            o.insert("maxmem".into(), Value::from(u.maxmem));
            o.insert("mem".into(), Value::from(u.mem));
            o.insert("maxdisk".into(), Value::from(u.maxdisk));
            o.insert("disk".into(), Value::from(0));
            o.insert("netin".into(), Value::from(u.netin));
            o.insert("netout".into(), Value::from(u.netout));
            o.insert("diskread".into(), Value::from(u.diskread));
            o.insert("diskwrite".into(), Value::from(u.diskwrite));
            o.insert("uptime".into(), Value::from(u.uptime));
            if vm.run.running {
                o.insert("memhost".into(), Value::from(u.mem + (48 << 20)));
            }
            if let Some(lock) = vm.conf.lock() {
                o.insert("lock".into(), Value::from(lock));
            }
            if let Some(tags) = vm.conf.get("tags") {
                o.insert("tags".into(), Value::from(tags));
            }
            out.push(Value::Object(o));
        }
    }
    if want("node") {
        for n in &st.nodes {
            let mut o = node_entry(cx, &st, n, false);
            o.insert("cgroup-mode".into(), Value::from(2));
            out.push(Value::Object(o));
        }
    }
    if want("storage") {
        for n in &st.nodes {
            let down = cx.faults.node_down(&n.name);
            for s in st.storages.all().iter().filter(|s| s.on_node(&n.name)) {
                let mut o = Map::new();
                o.insert(
                    "id".into(),
                    Value::from(format!("storage/{}/{}", n.name, s.id)),
                );
                o.insert("type".into(), Value::from("storage"));
                o.insert("storage".into(), Value::from(s.id.as_str()));
                o.insert("node".into(), Value::from(n.name.as_str()));
                o.insert("plugintype".into(), Value::from(s.kind.as_str()));
                o.insert(
                    "status".into(),
                    Value::from(if down { "unknown" } else { "available" }),
                );
                o.insert("shared".into(), Value::from(u8::from(s.shared)));
                o.insert("content".into(), Value::from(s.content_string()));
                if !down {
                    o.insert("disk".into(), Value::from(st.storages.used(&s.id, &n.name)));
                    o.insert("maxdisk".into(), Value::from(s.total));
                }
                out.push(Value::Object(o));
            }
        }
    }
    Ok(Reply::data(Value::Array(out)))
}
