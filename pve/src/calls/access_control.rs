//! What an agent needs of PVE's access control to receive a remote migration: a dedicated
//! user, a role with only the privileges the target side checks, ACL entries, and API tokens
//! (`/access/users`, `/access/roles`, `/access/acl`, `/access/users/{userid}/token/{tokenid}`).
//! A token's secret comes back once, in the create answer ([`TokenCreated`], whose `Debug`
//! hides it).

use serde::Deserialize;

use crate::client::Client;
use crate::error::PveError;
use crate::props::kv::invalid;
use crate::request::{ApiRequest, Method};

/// Checks `user@realm`.
fn check_userid(field: &str, userid: &str) -> Result<(), PveError> {
    let ok = userid.split_once('@').is_some_and(|(u, r)| {
        !u.is_empty()
            && !r.is_empty()
            && userid.len() <= 64
            && !userid
                .chars()
                .any(|c| c == ':' || c == '/' || c == '!' || c.is_whitespace())
    });
    if ok {
        Ok(())
    } else {
        Err(invalid(field, format!("'{userid}' is not USER@REALM")))
    }
}

/// Checks an id (`tokenid`, `roleid`): a letter, then letters, digits, `-`, `_`, `.`.
fn check_id(field: &str, id: &str) -> Result<(), PveError> {
    let mut chars = id.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && id.len() <= 64;
    if ok {
        Ok(())
    } else {
        Err(invalid(
            field,
            format!("'{id}' must start with a letter, then letters, digits, '-', '_' or '.'"),
        ))
    }
}

/// `POST /access/users`: a user without a password (it cannot log in; only its tokens act).
pub fn create_user_request(userid: &str, comment: &str) -> Result<ApiRequest, PveError> {
    check_userid("userid", userid)?;
    Ok(ApiRequest::new(Method::Post, "/access/users")
        .param("userid", userid)
        .param("comment", comment))
}

/// `POST /access/roles`.
pub fn create_role_request(roleid: &str, privs: &[&str]) -> Result<ApiRequest, PveError> {
    check_id("roleid", roleid)?;
    Ok(ApiRequest::new(Method::Post, "/access/roles")
        .param("roleid", roleid)
        .param("privs", privs.join(",")))
}

/// `PUT /access/roles/{roleid}`: set the role's privileges to exactly `privs`.
pub fn update_role_request(roleid: &str, privs: &[&str]) -> Result<ApiRequest, PveError> {
    check_id("roleid", roleid)?;
    Ok(
        ApiRequest::new(Method::Put, format!("/access/roles/{roleid}"))
            .param("privs", privs.join(",")),
    )
}

/// Who an ACL entry is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AclSubject<'a> {
    /// A user (`user@realm`).
    User(&'a str),
    /// An API token (`user@realm!tokenid`).
    Token(&'a str),
}

/// `PUT /access/acl`: grant `role` on `path` to `subject`.
pub fn put_acl_request(
    path: &str,
    role: &str,
    subject: AclSubject<'_>,
    propagate: bool,
) -> Result<ApiRequest, PveError> {
    if !path.starts_with('/') {
        return Err(invalid(
            "path",
            format!("'{path}' is not an ACL path (/...)"),
        ));
    }
    check_id("roles", role)?;
    let req = ApiRequest::new(Method::Put, "/access/acl")
        .param("path", path)
        .param("roles", role)
        .flag("propagate", Some(propagate));
    Ok(match subject {
        AclSubject::User(u) => {
            check_userid("users", u)?;
            req.param("users", u)
        }
        AclSubject::Token(t) => {
            let (user, id) = t
                .split_once('!')
                .ok_or_else(|| invalid("tokens", format!("'{t}' is not USER@REALM!TOKENID")))?;
            check_userid("tokens", user)?;
            check_id("tokens", id)?;
            req.param("tokens", t)
        }
    })
}

/// `POST /access/users/{userid}/token/{tokenid}`.
pub fn create_token_request(
    userid: &str,
    tokenid: &str,
    comment: &str,
    expire_unix: u64,
    privsep: bool,
) -> Result<ApiRequest, PveError> {
    check_userid("userid", userid)?;
    check_id("tokenid", tokenid)?;
    Ok(ApiRequest::new(
        Method::Post,
        format!("/access/users/{userid}/token/{tokenid}"),
    )
    .param("comment", comment)
    .param("expire", expire_unix.to_string())
    .flag("privsep", Some(privsep)))
}

/// `DELETE /access/users/{userid}/token/{tokenid}` (PVE drops the token's ACL entries too).
pub fn delete_token_request(userid: &str, tokenid: &str) -> Result<ApiRequest, PveError> {
    check_userid("userid", userid)?;
    check_id("tokenid", tokenid)?;
    Ok(ApiRequest::new(
        Method::Delete,
        format!("/access/users/{userid}/token/{tokenid}"),
    ))
}

/// A new token, as the create call answers it.
#[derive(Clone, PartialEq, Eq, Deserialize)]
pub struct TokenCreated {
    /// `user@realm!tokenid`.
    #[serde(rename = "full-tokenid")]
    pub full_tokenid: String,
    /// The secret (shown by PVE this once).
    pub value: String,
}

impl std::fmt::Debug for TokenCreated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCreated")
            .field("full_tokenid", &self.full_tokenid)
            .field("value", &"<redacted>")
            .finish()
    }
}

impl Client {
    /// Create a user (no password).
    pub async fn create_user(&self, userid: &str, comment: &str) -> Result<(), PveError> {
        self.execute_once(&create_user_request(userid, comment)?)
            .await
            .map(|_| ())
    }

    /// Create a role.
    pub async fn create_role(&self, roleid: &str, privs: &[&str]) -> Result<(), PveError> {
        self.execute_once(&create_role_request(roleid, privs)?)
            .await
            .map(|_| ())
    }

    /// Set a role's privileges.
    pub async fn update_role(&self, roleid: &str, privs: &[&str]) -> Result<(), PveError> {
        self.execute(&update_role_request(roleid, privs)?)
            .await
            .map(|_| ())
    }

    /// Grant a role on a path.
    pub async fn put_acl(
        &self,
        path: &str,
        role: &str,
        subject: AclSubject<'_>,
        propagate: bool,
    ) -> Result<(), PveError> {
        self.execute(&put_acl_request(path, role, subject, propagate)?)
            .await
            .map(|_| ())
    }

    /// Create an API token; the answer holds its secret.
    pub async fn create_token(
        &self,
        userid: &str,
        tokenid: &str,
        comment: &str,
        expire_unix: u64,
        privsep: bool,
    ) -> Result<TokenCreated, PveError> {
        let req = create_token_request(userid, tokenid, comment, expire_unix, privsep)?;
        let reply = self.execute_once(&req).await?;
        crate::client::decode(&req, reply.data)
    }

    /// Delete an API token.
    pub async fn delete_token(&self, userid: &str, tokenid: &str) -> Result<(), PveError> {
        self.execute(&delete_token_request(userid, tokenid)?)
            .await
            .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_check_ids_and_send_what_pve_takes() {
        let t = create_token_request("pvefleet-migrate@pve", "vm100", "move", 1_900_000_000, true)
            .unwrap();
        assert_eq!(t.path, "/access/users/pvefleet-migrate@pve/token/vm100");
        assert_eq!(
            (t.get("privsep"), t.get("expire")),
            (Some("1"), Some("1900000000"))
        );
        assert!(create_token_request("nouser", "vm100", "", 0, true).is_err());
        assert!(create_token_request("a@pve", "1x", "", 0, true).is_err());
        let acl =
            put_acl_request("/", "FleetMigrate", AclSubject::Token("a@pve!vm1"), false).unwrap();
        assert_eq!(
            (acl.get("tokens"), acl.get("propagate")),
            (Some("a@pve!vm1"), Some("0"))
        );
        assert!(put_acl_request("vms", "R", AclSubject::User("a@pve"), true).is_err());
        let role = create_role_request("FleetMigrate", &["VM.Allocate", "Sys.Incoming"]).unwrap();
        assert_eq!(role.get("privs"), Some("VM.Allocate,Sys.Incoming"));
    }

    #[test]
    fn a_new_token_never_shows_its_secret() {
        let t = TokenCreated {
            full_tokenid: "a@pve!vm1".into(),
            value: "5e1c7a".into(),
        };
        assert!(!format!("{t:?}").contains("5e1c7a"));
    }
}
