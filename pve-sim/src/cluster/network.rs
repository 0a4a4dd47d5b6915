//! `GET /nodes/{node}/network`: one physical NIC and the node's Linux bridges (`vmbr0` carries
//! the node address), filtered by `type` (`bridge`, `any_bridge`, `eth`, ...).

use std::sync::Arc;

use serde_json::{Value, json};

use super::inner::Inner;
use super::request::node;
use crate::{ApiError, Params, Reply};

/// `GET /nodes/{node}/network`.
pub(super) fn list(cx: &Arc<Inner>, p: &Params) -> Result<Reply, ApiError> {
    let name = node(p)?;
    let st = cx.state();
    let n = st
        .node(name)
        .ok_or_else(|| ApiError::internal(format!("no such cluster node '{name}'")))?;
    let kind = p.get("type");
    let mut out = Vec::new();
    if kind.is_none_or(|k| k == "eth") {
        out.push(json!({
            "iface": "eno1", "type": "eth", "active": 1, "autostart": 1, "exists": 1,
            "method": "manual", "method6": "manual", "families": ["inet"], "priority": 3,
        }));
    }
    let bridges = kind
        .is_none_or(|k| ["bridge", "any_bridge", "any_local_bridge", "include_sdn"].contains(&k));
    if bridges {
        for (i, b) in n.bridges.iter().enumerate() {
            let mut o = json!({
                "iface": b, "type": "bridge", "active": 1, "autostart": 1,
                "method": "manual", "method6": "manual", "families": ["inet"],
                "bridge_ports": if i == 0 { "eno1" } else { "" },
                "bridge_stp": "off", "bridge_fd": "0", "priority": 4 + i,
            });
            if i == 0 {
                o["method"] = Value::from("static");
                o["address"] = Value::from(n.ip.as_str());
                o["netmask"] = Value::from("24");
                o["cidr"] = Value::from(format!("{}/24", n.ip));
            }
            out.push(o);
        }
    }
    Ok(Reply::data(Value::Array(out)))
}
