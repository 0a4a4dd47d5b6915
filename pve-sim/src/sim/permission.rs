//! `check_api2_permissions`: the schema's `permissions` of a method evaluated for the caller's
//! [`Grants`] (`access` module).
//!
//! Full-privilege callers (`root@pam`, the configured tokens that are not read-only) pass every
//! check; everybody else is checked as `exec_api2_perm_check` checks: `perm` (with `any` and
//! `require_param`), `and`, `or`, `userid-param` (`self`: the caller is that user, not a token
//! of it; `Realm.AllocateUser` on `/access/realm/<realm>`), `userid-group` (`User.Modify` on
//! `/access/groups`; groups are not modelled, so nothing else grants it) and `perm-modify`
//! (`Permissions.Modify`, or `VM.Allocate`/`Datastore.Allocate`/`Pool.Allocate` on paths below
//! `/vms`, `/storage`, `/pool`). Methods marked `user: all` do their checks inside the handler;
//! for the writes among them the handler's check is applied here (`VM.Allocate` on create,
//! `Sys.Modify` on task stop).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::access::{Grants, Standing};
use crate::api::ApiError;
use crate::route::Route;

fn denied(what: Option<String>) -> ApiError {
    match what {
        Some(w) => ApiError::status(403, format!("Permission check failed ({w})")),
        None => ApiError::status(403, "Permission check failed"),
    }
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

/// The strings of a JSON list.
fn strings(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// One check's outcome: `quiet` (`$noerr`) turns every refusal into the bare text.
fn refuse(quiet: bool, err: ApiError) -> Result<(), ApiError> {
    if quiet && err.status == 403 {
        Err(denied(None))
    } else {
        Err(err)
    }
}

/// `exec_api2_perm_check`. `quiet` = `$noerr`.
fn exec(
    check: &Value,
    params: &BTreeMap<String, String>,
    grants: &Grants,
    quiet: bool,
) -> Result<(), ApiError> {
    let Some(items) = check.as_array() else {
        return Ok(());
    };
    match items.first().and_then(Value::as_str) {
        Some("and") => {
            for sub in &items[1..] {
                exec(sub, params, grants, quiet)?;
            }
            Ok(())
        }
        Some("or") => {
            if items[1..]
                .iter()
                .any(|sub| exec(sub, params, grants, true).is_ok())
            {
                Ok(())
            } else {
                Err(denied(None))
            }
        }
        Some("perm") => {
            let template = items.get(1).and_then(Value::as_str).unwrap_or("/");
            let privs = strings(items.get(2));
            let mut any = false;
            for pair in items.get(3..).unwrap_or_default().chunks(2) {
                match (pair.first().and_then(Value::as_str), pair.get(1)) {
                    (Some("any"), Some(v)) => {
                        any = v.as_i64() == Some(1) || v == &Value::Bool(true)
                    }
                    (Some("require_param"), Some(Value::String(p))) if !params.contains_key(p) => {
                        return Err(denied(None));
                    }
                    _ => {}
                }
            }
            let path = acl_path(template, params);
            let result = if any {
                grants.check_any(&path, &privs)
            } else {
                grants.check(&path, &privs)
            };
            result.or_else(|e| refuse(quiet, e))
        }
        Some("userid-param") => {
            let userid = params.get("userid").map(String::as_str).unwrap_or("");
            match items.get(1).and_then(Value::as_str) {
                Some("self") => {
                    if grants.registry().user(userid).is_none() {
                        return refuse(
                            quiet,
                            ApiError::internal(format!("no such user ('{userid}')")),
                        );
                    }
                    if grants.authuser() == userid {
                        Ok(())
                    } else {
                        Err(denied(None))
                    }
                }
                _ => {
                    let realm = userid.rsplit_once('@').map_or("", |(_, r)| r);
                    grants
                        .check(&format!("/access/realm/{realm}"), &["Realm.AllocateUser"])
                        .or_else(|e| refuse(quiet, e))
                }
            }
        }
        Some("userid-group") => {
            let privs = strings(items.get(1));
            let creating = items.get(2..).unwrap_or_default().chunks(2).any(|pair| {
                pair.first().and_then(Value::as_str) == Some("groups_param")
                    && pair.get(1).and_then(Value::as_str) == Some("create")
            });
            let userid = params.get("userid").map(String::as_str).unwrap_or("");
            if !creating && grants.registry().user(userid).is_none() {
                return refuse(
                    quiet,
                    ApiError::internal(format!("no such user ('{userid}')")),
                );
            }
            if grants.check_any("/access/groups", &privs).is_ok() {
                return Ok(());
            }
            // No groups exist, so no group-level privilege can make up for it.
            if creating {
                refuse(
                    quiet,
                    ApiError::permission("/access/groups", &privs.join("|")),
                )
            } else {
                Err(denied(None))
            }
        }
        Some("perm-modify") => {
            let template = items.get(1).and_then(Value::as_str).unwrap_or("/");
            let path = acl_path(template, params);
            let mut wanted = vec!["Permissions.Modify"];
            if path.starts_with("/storage/") {
                wanted.push("Datastore.Allocate");
            } else if path.starts_with("/vms/") {
                wanted.push("VM.Allocate");
            } else if path.starts_with("/pool/") {
                wanted.push("Pool.Allocate");
            }
            grants
                .check_any(&path, &wanted)
                .or_else(|e| refuse(quiet, e))
        }
        _ => Ok(()),
    }
}

/// Check the permission for `route` of a caller with `grants` (`None`: not authenticated)
/// with the (merged, unvalidated) parameters.
pub(crate) fn check(
    permissions: &Value,
    route: Route,
    grants: Option<&Grants>,
    params: &BTreeMap<String, String>,
) -> Result<(), ApiError> {
    let user = permissions.get("user").and_then(Value::as_str);
    if user == Some("world") {
        return Ok(());
    }
    let Some(grants) = grants else {
        return Err(denied(Some("user != null".into())));
    };
    // Everything everywhere, unless the configuration withholds a privilege from the token:
    // then the method's check is evaluated like anyone's.
    if grants.standing() == Standing::Full && grants.withholds_nothing() {
        return Ok(());
    }
    if user == Some("all") {
        let handler_check = match route {
            Route::VmCreate => Some(("/vms/{vmid}", "VM.Allocate")),
            Route::TaskStop => Some(("/nodes/{node}", "Sys.Modify")),
            _ => None,
        };
        return match handler_check {
            Some((path, privilege)) => grants.check(&acl_path(path, params), &[privilege]),
            None => Ok(()),
        };
    }
    match permissions.get("check") {
        Some(check) => exec(check, params, grants, false),
        None => Err(denied(None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::AccessControl;
    use crate::api::{Caller, Params};
    use crate::config::SimConfig;
    use crate::route::Route;
    use crate::schema::Schema;

    fn read_only() -> Caller {
        let mut c = Caller::token("audit@pve", "ro");
        c.read_only = true;
        c
    }

    fn check_as(
        route: Route,
        grants: Option<&Grants>,
        extra: &[(&str, &str)],
    ) -> Result<(), String> {
        let ms = Schema::embedded()
            .method(route.method(), route.template())
            .unwrap();
        let params: BTreeMap<String, String> =
            [("node", "pve1"), ("vmid", "100"), ("newid", "101")]
                .iter()
                .chain(extra)
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        check(&ms.permissions, route, grants, &params).map_err(|e| e.message)
    }

    fn check_route(route: Route, who: &Caller) -> Result<(), String> {
        let access = AccessControl::new(&SimConfig::default());
        check_as(route, Some(&access.grants(who)), &[])
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
        assert_eq!(check_route(Route::NodeCertificates, &ro), Ok(()));
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
        assert_eq!(
            check_route(Route::VmMtunnel, &ro),
            Err("Permission check failed (/vms/100, VM.Allocate)".into())
        );
    }

    #[test]
    fn full_callers_pass_and_anonymous_only_reaches_the_login() {
        for who in [Caller::root(), Caller::token("root@pam", "fleet")] {
            for r in Route::SERVED {
                assert_eq!(check_route(*r, &who), Ok(()));
            }
        }
        assert_eq!(check_as(Route::AccessTicket, None, &[]), Ok(()));
        assert_eq!(
            check_as(Route::Nodes, None, &[]),
            Err("Permission check failed (user != null)".into())
        );
    }

    /// A registry with user `mig@pve` (no privileges) and its privsep token `t`.
    fn with_token() -> (AccessControl, Grants) {
        let access = AccessControl::new(&SimConfig::default());
        let root = access.grants(&Caller::root());
        let call = |route: Route, pairs: &[(&str, &str)]| {
            let mut p = Params::default();
            for (k, v) in pairs {
                p.set(*k, *v);
            }
            crate::access::handle(&access, route, &p, &root)
                .unwrap()
                .unwrap()
        };
        call(Route::UserCreate, &[("userid", "mig@pve")]);
        call(
            Route::TokenCreate,
            &[("userid", "mig@pve"), ("tokenid", "t")],
        );
        let grants = access.grants(&Caller::token("mig@pve", "t"));
        (access, grants)
    }

    #[test]
    fn acl_callers_are_checked_like_exec_api2_perm_check() {
        let (_access, g) = with_token();
        let g = Some(&g);
        assert_eq!(
            check_as(Route::VmMtunnel, g, &[]),
            Err("Permission check failed (/vms/100, VM.Allocate)".into())
        );
        assert_eq!(
            check_as(Route::AclUpdate, g, &[("path", "/vms/100")]),
            Err("Permission check failed (/vms/100, Permissions.Modify|VM.Allocate)".into())
        );
        assert_eq!(
            check_as(Route::UserCreate, g, &[("userid", "x@pve")]),
            Err("Permission check failed (/access/realm/pve, Realm.AllocateUser)".into())
        );
        assert_eq!(
            check_as(Route::TokenCreate, g, &[("userid", "mig@pve")]),
            Err("Permission check failed".into()),
            "a token is not its user (userid-param self)"
        );
        assert_eq!(check_as(Route::NodeCertificates, g, &[]), Ok(()));
        assert_eq!(
            check_as(Route::ClusterStatus, g, &[]),
            Err("Permission check failed (/, Sys.Audit)".into())
        );
    }
}
