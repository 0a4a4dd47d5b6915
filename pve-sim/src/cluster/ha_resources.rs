//! `GET /cluster/ha/resources` (`index`, filtered by `type`) and
//! `GET /cluster/ha/resources/{sid}` (`read`): the configured HA resources with `sid`, `type`
//! and the file's `digest`, as `PVE::API2::HA::Resources` returns them. Tests set the
//! configuration as a whole ([`set`]); the simulator runs no HA manager.

use serde_json::Value;

use super::inner::Inner;
use crate::ha::{self, HaError, HaResource};
use crate::{ApiError, Params, Reply};

/// `GET /cluster/ha/resources`.
pub(super) fn list(cx: &Inner, p: &Params) -> Reply {
    let st = cx.state();
    let digest = ha::digest(&st.ha);
    let items = st
        .ha
        .values()
        .filter(|r| p.get("type").is_none_or(|t| r.kind.as_deref() == Some(t)))
        .map(|r| ha::api_entry(r, &digest))
        .collect();
    Reply::data(Value::Array(items))
}

/// `GET /cluster/ha/resources/{sid}`: a bare VMID names the VM; 500 `no such resource`.
pub(super) fn read(cx: &Inner, p: &Params) -> Result<Reply, ApiError> {
    let st = cx.state();
    let raw = p.req("sid")?;
    let (sid, _, _) = ha::parse_sid(raw, |id| st.vms.contains_key(&id))
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let res = st
        .ha
        .get(&sid)
        .ok_or_else(|| ApiError::internal(HaError::NoSuchResource(sid.clone()).to_string()))?;
    Ok(Reply::data(ha::api_entry(res, &ha::digest(&st.ha))))
}

/// Replace the whole configuration; returns it as stored (sids made full, `type` filled in).
pub(super) fn set(cx: &Inner, list: Vec<HaResource>) -> Result<Vec<HaResource>, HaError> {
    let mut st = cx.state();
    let cfg = ha::normalize(list, |id| st.vms.contains_key(&id))?;
    st.ha = cfg;
    Ok(st.ha.values().cloned().collect())
}

/// The configuration, in sid order.
pub(super) fn get(cx: &Inner) -> Vec<HaResource> {
    cx.state().ha.values().cloned().collect()
}
