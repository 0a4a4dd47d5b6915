//! Who a request is from ([`Request`]), reading validated parameters the way the handlers
//! need them, and the `root@pam`-only option rule (`<param>: Only root may use this option.`).

use super::state::State;
use crate::access::Grants;
use crate::faults::Faults;
use crate::{ApiError, Caller, Params, Reply};

/// One request as the model sees it besides its parameters.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Request<'a> {
    /// The authenticated caller.
    pub(crate) caller: &'a Caller,
    /// The node whose listener took the request (what `localhost` means).
    pub(crate) local_node: &'a str,
    /// The caller's privileges, for the checks handlers make themselves.
    pub(crate) grants: &'a Grants,
}

/// The `{node}` path parameter.
pub(super) fn node(p: &Params) -> Result<&str, ApiError> {
    p.req("node")
}

/// The `{vmid}` path parameter (or another vmid-typed parameter).
pub(super) fn vmid_param(p: &Params, key: &str) -> Result<u32, ApiError> {
    let raw = p.req(key)?;
    raw.trim_start_matches('+')
        .parse()
        .map_err(|_| ApiError::param(key, format!("type check ('integer') failed - got '{raw}'")))
}

/// The `{vmid}` path parameter.
pub(super) fn vmid(p: &Params) -> Result<u32, ApiError> {
    vmid_param(p, "vmid")
}

/// Perl truthiness of a parameter value (`0` and empty are false).
pub(super) fn truthy(p: &Params, key: &str) -> bool {
    p.get(key).is_some_and(|v| !v.is_empty() && v != "0")
}

/// Refuse root-only options for anyone but `root@pam` (a token of root is not root).
pub(super) fn root_only(p: &Params, caller: &Caller, keys: &[&str]) -> Result<(), ApiError> {
    if caller.is_root() {
        return Ok(());
    }
    match keys.iter().find(|k| truthy(p, k)) {
        Some(k) => Err(ApiError::param(*k, "Only root may use this option.")),
        None => Ok(()),
    }
}

/// `check_cfs_quorum`: more than half of the nodes must be up (a single node always is).
pub(super) fn check_quorum(st: &State, faults: &Faults) -> Result<(), ApiError> {
    let total = st.nodes.len();
    let up = st
        .nodes
        .iter()
        .filter(|n| !faults.node_down(&n.name))
        .count();
    if total > 1 && up * 2 <= total {
        return Err(ApiError::internal("cluster not ready - no quorum?"));
    }
    Ok(())
}

/// A UPID answer.
pub(super) fn upid_reply(upid: String) -> Reply {
    Reply::data(serde_json::Value::from(upid))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> Params {
        let mut p = Params::default();
        for (k, v) in pairs {
            p.set(*k, *v);
        }
        p
    }

    #[test]
    fn root_only_options_refuse_tokens_of_root() {
        let p = params(&[("skiplock", "1")]);
        assert!(root_only(&p, &Caller::root(), &["skiplock"]).is_ok());
        let err = root_only(&p, &Caller::token("root@pam", "fleet"), &["skiplock"]).unwrap_err();
        assert_eq!(err.status, 400);
        assert_eq!(err.errors["skiplock"], "Only root may use this option.");
        let off = params(&[("skiplock", "0")]);
        assert!(root_only(&off, &Caller::token("root@pam", "fleet"), &["skiplock"]).is_ok());
    }
}
