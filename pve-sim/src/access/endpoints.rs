//! The `/access` methods that build a least-privilege token, with pve-access-control's checks
//! and texts (`API2/User.pm`, `API2/Role.pm`, `API2/ACL.pm`):
//!
//! - `POST /access/users`: `create user failed: user '<id>' already exists`; a password is
//!   only accepted for the realms that exist (`pam`, `pve`: `auth domain '<realm>' does not
//!   exist`) and is not used to log in (only `root@pam` logs in); groups do not exist.
//! - `POST /access/roles`: ids starting with `PVE` are reserved; `create role failed: role
//!   '<id>' already exists`. `PUT /access/roles/{roleid}`: built-in roles cannot be modified,
//!   `update role failed: role '<id>' does not exist`; `append` adds instead of replacing.
//!   Privilege names are checked by the schema (`invalid privilege '<name>'`).
//! - `PUT /access/acl`: one of `users`/`groups`/`tokens` is required; the path must be one
//!   PVE knows; members and roles must exist (`ACL update failed: ...`); a caller without
//!   `Permissions.Modify` on the path may only hand out roles whose privileges it holds there
//!   (PVE's propagation refinement of that rule is not modelled).
//! - `POST /access/users/{userid}/token/{tokenid}`: `Token already exists.`; answers the
//!   secret once. `DELETE` removes the token and every ACL entry of it.
//!
//! - `GET /access/permissions` (`API2/AccessControl.pm`): the caller's own privileges (or,
//!   with `Sys.Audit` on `/access`, another user's or token's) on `path` as `{path: {priv:
//!   1}}`, `{}` when it holds none there; without `path`, every path PVE's
//!   `get_effective_permissions` starts from (`/`, `/access`, `/access/groups`, `/nodes`,
//!   `/pool`, `/sdn`, `/storage`, `/vms`) and every ACL path, those without privileges left
//!   out.
//!
//! Who may call them is the schema's permission check (`sim/permission.rs`).

use serde_json::{Map, Value, json};

use super::acl::{Member, check_path, normalize_path};
use super::control::AccessControl;
use super::grants::Grants;
use super::privileges::{is_builtin_role, is_privilege};
use super::registry::{Registry, Token, TokenOrigin, User, split_tokenid};
use crate::api::{ApiError, Params, Reply};
use crate::route::Route;
use crate::schema::split_list;

/// Realms of a fresh PVE installation.
const REALMS: &[&str] = &["pam", "pve"];

/// Answer one `/access` method (`None`: not one of them).
pub(crate) fn handle(
    access: &AccessControl,
    route: Route,
    p: &Params,
    grants: &Grants,
) -> Option<Result<Reply, ApiError>> {
    Some(match route {
        Route::UserCreate => create_user(access, p),
        Route::RoleCreate => create_role(access, p),
        Route::RoleUpdate => update_role(access, p),
        Route::AclUpdate => update_acl(access, p, grants),
        Route::TokenCreate => create_token(access, p),
        Route::TokenDelete => delete_token(access, p),
        Route::AccessPermissions => permissions(access, p, grants),
        _ => return None,
    })
}

fn create_user(access: &AccessControl, p: &Params) -> Result<Reply, ApiError> {
    let userid = p.req("userid")?.to_string();
    access.update("create user failed", |reg| {
        if reg.users.contains_key(&userid) {
            return Err(format!("user '{userid}' already exists"));
        }
        let realm = userid.rsplit_once('@').map_or("", |(_, r)| r);
        if p.has("password") && !REALMS.contains(&realm) {
            return Err(format!("auth domain '{realm}' does not exist"));
        }
        if let Some(group) = p
            .get("groups")
            .map(split_list)
            .and_then(|g| g.first().cloned())
        {
            return Err(format!("no such group '{group}'"));
        }
        reg.users.insert(
            userid.clone(),
            User {
                enable: p.flag("enable", true),
                expire: p.int("expire").unwrap_or(0),
                created: true,
                tokens: Default::default(),
            },
        );
        Ok(())
    })?;
    Ok(Reply::null())
}

/// `add_role_privs`.
fn add_privileges(reg: &mut Registry, role: &str, privs: Option<&str>) -> Result<(), String> {
    let Some(privs) = privs else {
        return Ok(());
    };
    let set = reg
        .custom_roles
        .get_mut(role)
        .ok_or_else(|| format!("role '{role}' does not exist"))?;
    for privilege in split_list(privs) {
        if !is_privilege(&privilege) {
            return Err(format!("invalid privilege '{privilege}'"));
        }
        set.insert(privilege);
    }
    Ok(())
}

fn create_role(access: &AccessControl, p: &Params) -> Result<Reply, ApiError> {
    let role = p.req("roleid")?.to_string();
    if role.to_ascii_lowercase().starts_with("pve") {
        return Err(ApiError::param(
            "roleid",
            "cannot use role ID starting with the (case-insensitive) 'PVE' namespace",
        ));
    }
    access.update("create role failed", |reg| {
        if reg.has_role(&role) {
            return Err(format!("role '{role}' already exists"));
        }
        reg.custom_roles.insert(role.clone(), Default::default());
        add_privileges(reg, &role, p.get("privs"))
    })?;
    Ok(Reply::null())
}

fn update_role(access: &AccessControl, p: &Params) -> Result<Reply, ApiError> {
    let role = p.req("roleid")?.to_string();
    if is_builtin_role(&role) {
        return Err(ApiError::internal(format!(
            "auto-generated role '{role}' cannot be modified"
        )));
    }
    access.update("update role failed", |reg| {
        let set = reg
            .custom_roles
            .get_mut(&role)
            .ok_or_else(|| format!("role '{role}' does not exist"))?;
        if !p.flag("append", false) {
            set.clear();
        }
        add_privileges(reg, &role, p.get("privs"))
    })?;
    Ok(Reply::null())
}

/// The members of one `PUT /access/acl`, checked against the registry.
fn acl_members(reg: &Registry, p: &Params) -> Result<Vec<Member>, String> {
    if let Some(group) = p
        .get("groups")
        .map(split_list)
        .and_then(|g| g.first().cloned())
    {
        return Err(format!("group '{group}' does not exist"));
    }
    let mut out = Vec::new();
    for userid in p.get("users").map(split_list).unwrap_or_default() {
        if reg.user(&userid).is_none() {
            return Err(format!("user '{userid}' does not exist"));
        }
        out.push(Member::User(userid));
    }
    for tokenid in p.get("tokens").map(split_list).unwrap_or_default() {
        let (userid, token) = split_tokenid(&tokenid).ok_or_else(|| {
            format!(
                "'{tokenid}' is not a valid token ID - not able to split into user and token parts"
            )
        })?;
        reg.check_token(userid, token)?;
        out.push(Member::Token(tokenid.clone()));
    }
    Ok(out)
}

fn update_acl(access: &AccessControl, p: &Params, grants: &Grants) -> Result<Reply, ApiError> {
    if !["users", "groups", "tokens"].iter().any(|k| p.has(k)) {
        let why = "either 'users', 'groups' or 'tokens' is required.";
        return Err(ApiError::params(
            ["users", "groups", "tokens"]
                .iter()
                .map(|k| (k.to_string(), why.to_string()))
                .collect(),
        ));
    }
    let raw = p.req("path")?;
    let delete = p.flag("delete", false);
    let path = normalize_path(raw)
        .filter(|path| delete || check_path(path))
        .ok_or_else(|| ApiError::param("path", format!("invalid ACL path '{raw}'")))?;
    let propagate = p.flag("propagate", true);
    let held = grants.privileges(&path);
    access.update("ACL update failed", |reg| {
        let members = acl_members(reg, p)?;
        for role in split_list(p.req("roles").map_err(|e| e.message)?) {
            if !reg.has_role(&role) {
                return Err(format!("role '{role}' does not exist"));
            }
            if !held.contains("Permissions.Modify") {
                let verb = if delete { "remove" } else { "add" };
                let refuse = |why: &str| {
                    format!("400 Parameter verification failed.\nrole: Cannot {verb} role '{role}' - {why}")
                };
                if !reg.role_privileges(&role).is_subset(&held) {
                    return Err(refuse(
                        "requires 'Permissions.Modify' or superset of privileges.",
                    ));
                }
                if role == "NoAccess" {
                    return Err(refuse("requires 'Permissions.Modify'"));
                }
            }
            for member in &members {
                if delete {
                    reg.acl.remove(&path, member, &role);
                } else {
                    reg.acl.set(&path, member.clone(), &role, propagate);
                }
            }
        }
        Ok(())
    })?;
    Ok(Reply::null())
}

/// A token secret: a random (version 4) UUID, as `PVE::TokenConfig::generate_token`.
fn token_secret() -> String {
    use rand::Rng;
    crate::uuid::uuid_v4(rand::rng().random())
}

fn create_token(access: &AccessControl, p: &Params) -> Result<Reply, ApiError> {
    let userid = p.req("userid")?.to_string();
    let tokenid = p.req("tokenid")?.to_string();
    let reg = access.snapshot();
    reg.check_user(&userid).map_err(ApiError::internal)?;
    if reg.token(&userid, &tokenid).is_some() {
        return Err(ApiError::param("tokenid", "Token already exists."));
    }
    let token = Token {
        secret: token_secret(),
        privsep: p.flag("privsep", true),
        expire: p.int("expire").unwrap_or(0),
        comment: p
            .get("comment")
            .filter(|c| !c.is_empty())
            .map(str::to_string),
        origin: TokenOrigin::Api,
        withheld: Default::default(),
    };
    let mut info = Map::new();
    info.insert("privsep".into(), json!(u8::from(token.privsep)));
    if let Some(expire) = p.int("expire") {
        info.insert("expire".into(), json!(expire));
    }
    if let Some(comment) = &token.comment {
        info.insert("comment".into(), json!(comment));
    }
    let secret = token.secret.clone();
    access.update("generating token failed", |reg| {
        let user = reg
            .users
            .get_mut(&userid)
            .ok_or_else(|| format!("no such user ('{userid}')"))?;
        if user.tokens.contains_key(&tokenid) {
            return Err("Token already exists.".into());
        }
        user.tokens.insert(tokenid.clone(), token);
        Ok(())
    })?;
    Ok(Reply::data(json!({
        "full-tokenid": format!("{userid}!{tokenid}"),
        "info": Value::Object(info),
        "value": secret,
    })))
}

fn delete_token(access: &AccessControl, p: &Params) -> Result<Reply, ApiError> {
    let userid = p.req("userid")?.to_string();
    let tokenid = p.req("tokenid")?.to_string();
    access
        .snapshot()
        .check_token(&userid, &tokenid)
        .map_err(ApiError::internal)?;
    access.update("deleting token failed", |reg| {
        reg.check_token(&userid, &tokenid)?;
        if let Some(user) = reg.users.get_mut(&userid) {
            user.tokens.remove(&tokenid);
        }
        reg.acl
            .remove_member(&Member::Token(format!("{userid}!{tokenid}")));
        Ok(())
    })?;
    Ok(Reply::null())
}

/// The paths `get_effective_permissions` always looks at, before the ACL's own.
const EFFECTIVE_PATHS: &[&str] = &[
    "/",
    "/access",
    "/access/groups",
    "/nodes",
    "/pool",
    "/sdn",
    "/storage",
    "/vms",
];

fn permissions(access: &AccessControl, p: &Params, grants: &Grants) -> Result<Reply, ApiError> {
    let authid = grants.authuser().to_string();
    let userid = p
        .get("userid")
        .map_or_else(|| authid.clone(), str::to_string);
    let owned_token = split_tokenid(&userid).is_some_and(|(user, _)| user == authid);
    if userid != authid && !owned_token {
        grants.check("/access", &["Sys.Audit"])?;
    }
    let of = if userid == authid {
        grants.clone()
    } else {
        access.grants_of(&userid)
    };
    let held = |path: &str| -> Map<String, Value> {
        of.privileges(path)
            .into_iter()
            .map(|privilege| (privilege, json!(1)))
            .collect()
    };
    let mut res = Map::new();
    if let Some(path) = p.get("path") {
        let privs = held(path);
        if !privs.is_empty() {
            res.insert(path.to_string(), Value::Object(privs));
        }
    } else {
        let mut paths: Vec<String> = EFFECTIVE_PATHS.iter().map(|s| s.to_string()).collect();
        paths.extend(of.registry().acl.paths());
        paths.sort();
        paths.dedup();
        for path in paths {
            let privs = held(&path);
            if !privs.is_empty() {
                res.insert(path, Value::Object(privs));
            }
        }
    }
    Ok(Reply::data(Value::Object(res)))
}
