//! What one caller may do: its [`Standing`] and, for callers governed by ACLs, the
//! privileges `PVE::RPCEnvironment::permissions` computes for a path (`root@pam` holds all;
//! a user holds the privileges of its roles on the path; a token without privilege separation
//! holds its user's; a token with it holds its user's ∩ those of its own roles).
//!
//! A [`Grants`] is a snapshot of the registry taken when the request arrived: a worker forked
//! by the request (the `qmtunnel` of a remote migration) keeps checking against it, as PVE's
//! forked worker keeps the `user.cfg` its request read.

use std::sync::Arc;

use super::acl::Member;
use super::privileges::{PrivSet, all, is_audit};
use super::registry::{ROOT, Registry, TokenOrigin, split_tokenid};
use crate::api::{ApiError, Caller};

/// The three kinds of callers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Standing {
    /// `root@pam`, the configured tokens that are not read-only and in-process callers the
    /// registry does not know: every privilege everywhere.
    Full,
    /// The configured read-only tokens: every `*.Audit` privilege, nothing else.
    Audit,
    /// Users created and tokens minted through the API: what their ACL entries grant.
    Acl,
}

/// A caller's privileges, evaluated against a registry snapshot.
#[derive(Debug, Clone)]
pub(crate) struct Grants {
    standing: Standing,
    /// `user@realm` or `user@realm!token`, as PVE's `$authuser`.
    authuser: String,
    registry: Arc<Registry>,
    /// What the caller's token holds nowhere ([`super::registry::Token::withheld`]).
    withheld: PrivSet,
}

impl Grants {
    /// The grants of `caller` against `registry`.
    pub(crate) fn of(caller: &Caller, registry: Arc<Registry>) -> Self {
        let standing = if caller.read_only {
            Standing::Audit
        } else if caller.is_root() {
            Standing::Full
        } else if let Some(tokenid) = &caller.tokenid {
            match registry.token(&caller.userid, tokenid).map(|t| &t.origin) {
                Some(TokenOrigin::Api) => Standing::Acl,
                _ => Standing::Full,
            }
        } else if registry.user(&caller.userid).is_some_and(|u| u.created) {
            Standing::Acl
        } else {
            Standing::Full
        };
        let withheld = caller
            .tokenid
            .as_deref()
            .and_then(|id| registry.token(&caller.userid, id))
            .map(|t| t.withheld.iter().cloned().collect())
            .unwrap_or_default();
        Self {
            standing,
            authuser: caller.upid_user(),
            registry,
            withheld,
        }
    }

    /// The caller's standing.
    pub(crate) fn standing(&self) -> Standing {
        self.standing
    }

    /// No privilege is withheld from the caller's token.
    pub(crate) fn withholds_nothing(&self) -> bool {
        self.withheld.is_empty()
    }

    /// `$authuser`: `user@realm` or `user@realm!token`.
    pub(crate) fn authuser(&self) -> &str {
        &self.authuser
    }

    /// The registry snapshot the grants are evaluated against.
    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Every privilege the caller holds on `path`.
    pub(crate) fn privileges(&self, path: &str) -> PrivSet {
        let mut held = match self.standing {
            Standing::Full => all().iter().map(|p| p.to_string()).collect(),
            Standing::Audit => all()
                .iter()
                .filter(|p| is_audit(p))
                .map(|p| p.to_string())
                .collect(),
            Standing::Acl => acl_privileges(&self.registry, &self.authuser, path),
        };
        held.retain(|p| !self.withheld.contains(p));
        held
    }

    /// Whether the caller holds `privilege` on `path`.
    pub(crate) fn has(&self, path: &str, privilege: &str) -> bool {
        if self.withheld.contains(privilege) {
            return false;
        }
        match self.standing {
            Standing::Full => true,
            Standing::Audit => is_audit(privilege),
            Standing::Acl => self.privileges(path).contains(privilege),
        }
    }

    /// `$rpcenv->check`: every privilege, else `Permission check failed (<path>, <priv>)` for
    /// the first one missing.
    pub(crate) fn check(&self, path: &str, privileges: &[&str]) -> Result<(), ApiError> {
        match privileges.iter().find(|p| !self.has(path, p)) {
            Some(missing) => Err(ApiError::permission(path, missing)),
            None => Ok(()),
        }
    }

    /// `$rpcenv->check_any`: one of the privileges, else `Permission check failed (<path>,
    /// <a>|<b>)`.
    pub(crate) fn check_any(&self, path: &str, privileges: &[&str]) -> Result<(), ApiError> {
        if privileges.iter().any(|p| self.has(path, p)) {
            Ok(())
        } else {
            Err(ApiError::permission(path, &privileges.join("|")))
        }
    }
}

/// `permissions($user, $path)` of a user or token governed by ACLs.
fn acl_privileges(reg: &Registry, authuser: &str, path: &str) -> PrivSet {
    if authuser == ROOT {
        return all().iter().map(|p| p.to_string()).collect();
    }
    let role_privileges = |member: &Member| -> PrivSet {
        reg.acl
            .roles(member, path)
            .keys()
            .flat_map(|role| reg.role_privileges(role))
            .collect()
    };
    match split_tokenid(authuser) {
        Some((userid, tokenid)) => {
            let Some(token) = reg.token(userid, tokenid) else {
                return PrivSet::new();
            };
            let of_user = acl_privileges(reg, userid, path);
            if !token.privsep {
                return of_user;
            }
            role_privileges(&Member::Token(authuser.to_string()))
                .intersection(&of_user)
                .cloned()
                .collect()
        }
        None => role_privileges(&Member::User(authuser.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::registry::{Token, User};
    use crate::config::SimConfig;

    fn registry(privsep: bool) -> Registry {
        let mut reg = Registry::from_config(&SimConfig::default());
        let mut user = User {
            enable: true,
            expire: 0,
            created: true,
            tokens: Default::default(),
        };
        user.tokens.insert(
            "t".into(),
            Token {
                secret: "s".into(),
                privsep,
                expire: 0,
                comment: None,
                origin: TokenOrigin::Api,
                withheld: Default::default(),
            },
        );
        reg.users.insert("mig@pve".into(), user);
        reg.custom_roles.insert(
            "Migrator".into(),
            ["VM.Allocate".to_string(), "Sys.Incoming".to_string()].into(),
        );
        reg
    }

    fn token_grants(reg: Registry) -> Grants {
        Grants::of(&Caller::token("mig@pve", "t"), Arc::new(reg))
    }

    #[test]
    fn a_privsep_token_holds_its_users_privileges_intersected_with_its_own() {
        let mut reg = registry(true);
        reg.acl.set(
            "/vms/100",
            Member::Token("mig@pve!t".into()),
            "Migrator",
            true,
        );
        let g = token_grants(reg.clone());
        assert_eq!(g.standing(), Standing::Acl);
        assert_eq!(
            g.check("/vms/100", &["VM.Allocate"]).unwrap_err().message,
            "Permission check failed (/vms/100, VM.Allocate)",
            "the user itself holds nothing"
        );
        reg.acl
            .set("/", Member::User("mig@pve".into()), "PVEVMAdmin", true);
        let g = token_grants(reg);
        assert!(g.check("/vms/100", &["VM.Allocate"]).is_ok());
        assert!(!g.has("/vms/100", "VM.PowerMgmt"), "not the token's");
        assert!(!g.has("/vms/100", "Sys.Incoming"), "not the user's");
        assert!(!g.has("/vms/101", "VM.Allocate"));
        assert_eq!(
            g.check_any("/vms/101", &["VM.Allocate", "VM.Audit"])
                .unwrap_err()
                .message,
            "Permission check failed (/vms/101, VM.Allocate|VM.Audit)"
        );
    }

    #[test]
    fn a_token_without_privsep_holds_its_users_privileges() {
        let mut reg = registry(false);
        reg.acl
            .set("/", Member::User("mig@pve".into()), "PVEAuditor", true);
        let g = token_grants(reg);
        assert!(g.has("/vms/7", "VM.Audit") && !g.has("/vms/7", "VM.Allocate"));
    }

    #[test]
    fn configured_callers_keep_their_standing() {
        let reg = Arc::new(registry(true));
        let full = Grants::of(&Caller::token("root@pam", "fleet"), Arc::clone(&reg));
        assert_eq!(full.standing(), Standing::Full);
        assert!(full.has("/anything", "Sys.Incoming"));
        let mut ro = Caller::token("audit@pve", "ro");
        ro.read_only = true;
        let audit = Grants::of(&ro, Arc::clone(&reg));
        assert!(audit.has("/", "Sys.Audit") && !audit.has("/", "Sys.Modify"));
        let root = Grants::of(&Caller::root(), Arc::clone(&reg));
        assert_eq!(root.standing(), Standing::Full);
        let unknown = Grants::of(&Caller::token("agent@pve", "x"), reg);
        assert_eq!(unknown.standing(), Standing::Full, "in-process callers");
    }
}
