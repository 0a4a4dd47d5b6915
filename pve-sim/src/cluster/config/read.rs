//! Reading a VM config: `GET .../config` (pending applied unless `current=1`, or a
//! snapshot's), `GET .../pending` and `GET .../snapshot/{snapname}/config`.

use std::sync::Arc;

use serde_json::Value;

use super::text::section_json;
use crate::cluster::inner::Inner;
use crate::cluster::request::{node, vmid};
use crate::{ApiError, Params, Reply};

/// `GET .../config`.
pub(crate) fn config(cx: &Arc<Inner>, p: &Params) -> Result<Reply, ApiError> {
    let (node, vmid) = (node(p)?, vmid(p)?);
    let current = p.flag("current", false);
    let snapshot = p.get("snapshot").filter(|s| !s.is_empty());
    if snapshot.is_some() && current {
        let msg = "cannot use 'snapshot' parameter with 'current'";
        let mut errors = std::collections::BTreeMap::new();
        errors.insert("snapshot".to_string(), msg.to_string());
        errors.insert("current".to_string(), msg.to_string());
        return Err(ApiError::params(errors));
    }
    let st = cx.state();
    let vm = st.load(node, vmid)?;
    let obj = match snapshot {
        Some(name) => {
            let snap =
                vm.conf.snapshots.get(name).ok_or_else(|| {
                    ApiError::internal(format!("snapshot '{name}' does not exist"))
                })?;
            let mut obj = section_json(snap);
            obj.insert("digest".into(), Value::from(vm.conf.digest()));
            obj
        }
        None => vm.conf.to_json(!current),
    };
    Ok(Reply::data(Value::Object(obj)))
}

/// `GET .../pending`.
pub(crate) fn pending(cx: &Arc<Inner>, p: &Params) -> Result<Reply, ApiError> {
    let (node, vmid) = (node(p)?, vmid(p)?);
    let st = cx.state();
    let vm = st.load(node, vmid)?;
    Ok(Reply::data(Value::Array(vm.conf.pending_json())))
}

/// `GET .../snapshot/{snapname}/config`.
pub(crate) fn snapshot_config(cx: &Arc<Inner>, p: &Params) -> Result<Reply, ApiError> {
    let (node, vmid) = (node(p)?, vmid(p)?);
    let name = p.req("snapname")?;
    let st = cx.state();
    let vm = st.load(node, vmid)?;
    let snap = vm
        .conf
        .snapshots
        .get(name)
        .ok_or_else(|| ApiError::internal(format!("snapshot '{name}' does not exist")))?;
    Ok(Reply::data(Value::Object(section_json(snap))))
}
