//! What `user.cfg` holds in the simulator: users with their API tokens, custom roles and the
//! ACL. Built from the configuration (`root@pam`, and every token of [`SimConfig::tokens`]
//! with its user), then changed through the `/access` methods.
//!
//! The configured tokens keep the standing they always had: full privileges, or every
//! `*.Audit` privilege when `read_only`. So that a token created later for one of their users
//! behaves as in PVE (its privileges are the user's, or with privilege separation the user's ∩
//! its own), such a user gets the ACL entry that standing implies: `/` `Administrator`, or
//! `/` `PVEAuditor` when all its configured tokens are read-only.

use std::collections::{BTreeMap, BTreeSet};

use super::acl::{Acl, Member};
use super::privileges::builtin_roles;
use crate::config::SimConfig;

/// `root@pam`, who always exists and always holds every privilege.
pub(crate) const ROOT: &str = "root@pam";

/// Where a token comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TokenOrigin {
    /// Declared in the configuration: full privileges, or `*.Audit` only when `read_only`.
    Config {
        /// Only `*.Audit` privileges.
        read_only: bool,
    },
    /// Created through `POST /access/users/{userid}/token/{tokenid}`: privileges from ACLs.
    Api,
}

/// One API token.
#[derive(Debug, Clone)]
pub(crate) struct Token {
    /// The secret (a UUID).
    pub(crate) secret: String,
    /// Privilege separation: the token's privileges are its user's ∩ its own ACL entries.
    pub(crate) privsep: bool,
    /// Expiry (unix time); 0 = never.
    pub(crate) expire: i64,
    /// Free text.
    pub(crate) comment: Option<String>,
    pub(crate) origin: TokenOrigin,
    /// Privileges the token holds nowhere whatever its standing (a configured token whose
    /// role misses them: how a testbed gives an agent a token that lacks a privilege).
    pub(crate) withheld: BTreeSet<String>,
}

/// One user.
#[derive(Debug, Clone)]
pub(crate) struct User {
    pub(crate) enable: bool,
    /// Account expiry (unix time); 0 = never.
    pub(crate) expire: i64,
    /// Created through `POST /access/users` (privileges from ACLs), not implied by the
    /// configuration.
    pub(crate) created: bool,
    /// Tokens by token id.
    pub(crate) tokens: BTreeMap<String, Token>,
}

impl User {
    fn new(created: bool) -> Self {
        Self {
            enable: true,
            expire: 0,
            created,
            tokens: BTreeMap::new(),
        }
    }

    /// `check_user_enabled`: enabled and not expired at `now`.
    pub(crate) fn usable(&self, now: i64) -> bool {
        self.enable && (self.expire == 0 || self.expire >= now)
    }
}

/// Users, custom roles and ACL.
#[derive(Debug, Clone, Default)]
pub(crate) struct Registry {
    pub(crate) users: BTreeMap<String, User>,
    /// Roles created through `POST /access/roles` (the built-in ones are fixed).
    pub(crate) custom_roles: BTreeMap<String, BTreeSet<String>>,
    pub(crate) acl: Acl,
}

impl Registry {
    /// The users and tokens a configuration implies.
    pub(crate) fn from_config(config: &SimConfig) -> Self {
        let mut reg = Registry::default();
        reg.users.insert(ROOT.to_string(), User::new(false));
        let mut full_users = BTreeSet::new();
        for t in &config.tokens {
            let user = reg
                .users
                .entry(t.userid.clone())
                .or_insert_with(|| User::new(false));
            user.tokens.insert(
                t.tokenid.clone(),
                Token {
                    secret: t.secret.clone(),
                    privsep: t.read_only,
                    expire: 0,
                    comment: None,
                    origin: TokenOrigin::Config {
                        read_only: t.read_only,
                    },
                    withheld: t.withheld.iter().cloned().collect(),
                },
            );
            if !t.read_only {
                full_users.insert(t.userid.clone());
            }
        }
        for t in &config.tokens {
            if t.userid == ROOT {
                continue;
            }
            let role = if full_users.contains(&t.userid) {
                "Administrator"
            } else {
                "PVEAuditor"
            };
            reg.acl.set("/", Member::User(t.userid.clone()), role, true);
        }
        reg
    }

    /// A user by id.
    pub(crate) fn user(&self, userid: &str) -> Option<&User> {
        self.users.get(userid)
    }

    /// A token of a user.
    pub(crate) fn token(&self, userid: &str, tokenid: &str) -> Option<&Token> {
        self.users.get(userid).and_then(|u| u.tokens.get(tokenid))
    }

    /// Whether a role exists (built-in or custom).
    pub(crate) fn has_role(&self, role: &str) -> bool {
        builtin_roles().contains_key(role) || self.custom_roles.contains_key(role)
    }

    /// The privileges of a role (none for an unknown one).
    pub(crate) fn role_privileges(&self, role: &str) -> BTreeSet<String> {
        match builtin_roles().get(role) {
            Some(privs) => privs.iter().map(|p| p.to_string()).collect(),
            None => self.custom_roles.get(role).cloned().unwrap_or_default(),
        }
    }

    /// `check_user_exist`: the user or PVE's `no such user ('x')`.
    pub(crate) fn check_user(&self, userid: &str) -> Result<&User, String> {
        self.user(userid)
            .ok_or_else(|| format!("no such user ('{userid}')"))
    }

    /// `check_token_exist`: the token or PVE's texts.
    pub(crate) fn check_token(&self, userid: &str, tokenid: &str) -> Result<&Token, String> {
        self.check_user(userid)?
            .tokens
            .get(tokenid)
            .ok_or_else(|| format!("no such token '{tokenid}' for user '{userid}'"))
    }
}

/// `split_tokenid`: `user@realm!token` → (`user@realm`, `token`).
pub(crate) fn split_tokenid(tokenid: &str) -> Option<(&str, &str)> {
    let (user, token) = tokenid.rsplit_once('!')?;
    (user.contains('@') && !token.is_empty()).then_some((user, token))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TokenConfig;

    #[test]
    fn the_configuration_implies_users_tokens_and_their_standing() {
        let mut cfg = SimConfig::default();
        cfg.tokens.push(TokenConfig {
            userid: "audit@pve".into(),
            tokenid: "ro".into(),
            secret: "s".into(),
            read_only: true,
            withheld: vec![],
        });
        let reg = Registry::from_config(&cfg);
        assert!(reg.user(ROOT).is_some());
        assert_eq!(
            reg.token(ROOT, "fleet").map(|t| t.origin.clone()),
            Some(TokenOrigin::Config { read_only: false })
        );
        let audit = Member::User("audit@pve".into());
        assert_eq!(
            reg.acl.entries_of(&audit),
            [("/".to_string(), "PVEAuditor".to_string(), true)]
        );
        assert_eq!(
            reg.check_token("audit@pve", "rw").unwrap_err(),
            "no such token 'rw' for user 'audit@pve'"
        );
        assert_eq!(
            reg.check_user("nobody@pve").unwrap_err(),
            "no such user ('nobody@pve')"
        );
        assert_eq!(split_tokenid("a@pve!t"), Some(("a@pve", "t")));
        assert_eq!(split_tokenid("a@pve"), None);
    }
}
