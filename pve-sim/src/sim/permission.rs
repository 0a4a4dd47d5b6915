//! `check_api2_permissions`: the schema's `permissions` of a method evaluated for the caller.
//!
//! The simulator knows two kinds of callers: full-privilege ones (`root@pam`, tokens without
//! privilege separation) and read-only tokens, which hold every `*.Audit` privilege and nothing
//! else. Methods marked `user: all` do their checks inside the handler; for the writes among
//! them the handler's check is applied here (`VM.Allocate` on create, `Sys.Modify` on task
//! stop).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::api::ApiError;
use crate::auth::Principal;
use crate::route::Route;

fn denied(what: Option<String>) -> ApiError {
    match what {
        Some(w) => ApiError::status(403, format!("Permission check failed ({w})")),
        None => ApiError::status(403, "Permission check failed"),
    }
}

/// Whether a read-only caller holds `privilege`.
fn read_only_has(privilege: &str) -> bool {
    privilege.ends_with(".Audit")
}

/// `template_replace` + `normalize_path`: `/vms/{vmid}` → `/vms/100`.
fn acl_path(template: &str, params: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        match rest[open..].find('}') {
            Some(close) => {
                let name = &rest[open + 1..open + close];
                out.push_str(params.get(name).map(String::as_str).unwrap_or(""));
                rest = &rest[open + close + 1..];
            }
            None => {
                out.push_str(&rest[open..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    let parts: Vec<&str> = out.split('/').filter(|s| !s.is_empty()).collect();
    format!("/{}", parts.join("/"))
}

/// `exec_api2_perm_check` with the read-only privilege set. `quiet` = `$noerr`.
fn exec(check: &Value, params: &BTreeMap<String, String>, quiet: bool) -> Result<(), ApiError> {
    let Some(items) = check.as_array() else {
        return Ok(());
    };
    let fail = |what: Option<String>| {
        if quiet {
            Err(denied(None))
        } else {
            Err(denied(what))
        }
    };
    match items.first().and_then(Value::as_str) {
        Some("and") => {
            for sub in &items[1..] {
                exec(sub, params, quiet)?;
            }
            Ok(())
        }
        Some("or") => {
            if items[1..].iter().any(|sub| exec(sub, params, true).is_ok()) {
                Ok(())
            } else {
                Err(denied(None))
            }
        }
        Some("perm") => {
            let template = items.get(1).and_then(Value::as_str).unwrap_or("/");
            let privs: Vec<&str> = items
                .get(2)
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut any = false;
            for pair in items.get(3..).unwrap_or_default().chunks(2) {
                match (pair.first().and_then(Value::as_str), pair.get(1)) {
                    (Some("any"), Some(v)) => {
                        any = v.as_i64() == Some(1) || v == &Value::Bool(true)
                    }
                    (Some("require_param"), Some(Value::String(p))) if !params.contains_key(p) => {
                        return fail(None);
                    }
                    _ => {}
                }
            }
            let path = acl_path(template, params);
            if any {
                if privs.iter().any(|p| read_only_has(p)) {
                    return Ok(());
                }
                return fail(Some(format!("{path}, {}", privs.join("|"))));
            }
            match privs.iter().find(|p| !read_only_has(p)) {
                Some(missing) => fail(Some(format!("{path}, {missing}"))),
                None => Ok(()),
            }
        }
        // Owner/group checks do not occur in the simulated methods.
        _ => Ok(()),
    }
}

/// Check the caller's permission for `route` with the (merged, unvalidated) parameters.
pub(crate) fn check(
    permissions: &Value,
    route: Route,
    who: &Principal,
    params: &BTreeMap<String, String>,
) -> Result<(), ApiError> {
    let user = permissions.get("user").and_then(Value::as_str);
    if user == Some("world") {
        return Ok(());
    }
    let caller = match who {
        Principal::Anonymous { .. } => return Err(denied(Some("user != null".into()))),
        Principal::User(c) => c,
    };
    if !caller.read_only {
        return Ok(());
    }
    if user == Some("all") {
        let handler_check = match route {
            Route::VmCreate => Some(("/vms/{vmid}", "VM.Allocate")),
            Route::TaskStop => Some(("/nodes/{node}", "Sys.Modify")),
            _ => None,
        };
        return match handler_check {
            Some((path, privilege)) => {
                Err(ApiError::permission(&acl_path(path, params), privilege))
            }
            None => Ok(()),
        };
    }
    match permissions.get("check") {
        Some(check) => exec(check, params, false),
        None => Err(denied(None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Caller;
    use crate::route::Route;
    use crate::schema::Schema;

    fn read_only() -> Principal {
        let mut c = Caller::token("audit@pve", "ro");
        c.read_only = true;
        Principal::User(c)
    }

    fn check_route(route: Route, who: &Principal) -> Result<(), String> {
        let ms = Schema::embedded()
            .method(route.method(), route.template())
            .unwrap();
        let params: BTreeMap<String, String> =
            [("node", "pve1"), ("vmid", "100"), ("newid", "101")]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        check(&ms.permissions, route, who, &params).map_err(|e| e.message)
    }

    #[test]
    fn read_only_tokens_may_read_but_not_write() {
        let ro = read_only();
        assert_eq!(check_route(Route::VmConfigGet, &ro), Ok(()));
        assert_eq!(check_route(Route::ClusterStatus, &ro), Ok(()));
        assert_eq!(check_route(Route::StorageContent, &ro), Ok(()));
        assert_eq!(check_route(Route::AgentNetwork, &ro), Ok(()));
        assert_eq!(check_route(Route::HaResourceList, &ro), Ok(()));
        assert_eq!(check_route(Route::HaResourceRead, &ro), Ok(()));
        assert_eq!(
            check_route(Route::VmStart, &ro),
            Err("Permission check failed (/vms/100, VM.PowerMgmt)".into())
        );
        assert_eq!(
            check_route(Route::VmConfigPut, &ro),
            Err("Permission check failed (/vms/100, VM.Config.Disk|VM.Config.CDROM|VM.Config.CPU|VM.Config.Memory|VM.Config.Network|VM.Config.HWType|VM.Config.Options|VM.Config.Cloudinit)".into())
        );
        assert_eq!(
            check_route(Route::VmCreate, &ro),
            Err("Permission check failed (/vms/100, VM.Allocate)".into())
        );
        assert_eq!(
            check_route(Route::VmClone, &ro),
            Err("Permission check failed (/vms/100, VM.Clone)".into())
        );
        assert_eq!(
            check_route(Route::TaskStop, &ro),
            Err("Permission check failed (/nodes/pve1, Sys.Modify)".into())
        );
    }

    #[test]
    fn full_callers_pass_and_anonymous_only_reaches_the_login() {
        let root = Principal::User(Caller::root());
        let token = Principal::User(Caller::token("root@pam", "fleet"));
        for r in Route::SERVED {
            assert_eq!(check_route(*r, &root), Ok(()));
            assert_eq!(check_route(*r, &token), Ok(()));
        }
        let anon = Principal::Anonymous { token: false };
        assert_eq!(check_route(Route::AccessTicket, &anon), Ok(()));
        assert_eq!(
            check_route(Route::Nodes, &anon),
            Err("Permission check failed (user != null)".into())
        );
    }
}
