//! [`AccessControl`]: the live registry behind one lock, read as cheap snapshots and changed as
//! `lock_user_config` changes `user.cfg` (on a copy that replaces the original only when the
//! whole change succeeded, errors prefixed with the operation's message), plus API-token
//! authentication against it.

use std::sync::{Arc, Mutex};

use super::grants::Grants;
use super::registry::{Registry, TokenOrigin, split_tokenid};
use crate::api::{ApiError, Caller};
use crate::config::SimConfig;

/// The users, tokens, roles and ACL of one simulated cluster.
#[derive(Debug)]
pub(crate) struct AccessControl {
    registry: Mutex<Arc<Registry>>,
}

impl AccessControl {
    /// The registry a configuration implies.
    pub(crate) fn new(config: &SimConfig) -> Self {
        Self {
            registry: Mutex::new(Arc::new(Registry::from_config(config))),
        }
    }

    /// The registry as it is now (later changes do not show in it).
    pub(crate) fn snapshot(&self) -> Arc<Registry> {
        // A poisoned lock only means a panicking test thread; the registry stays usable.
        Arc::clone(&self.registry.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// What `caller` may do, against the registry as it is now.
    pub(crate) fn grants(&self, caller: &Caller) -> Grants {
        Grants::of(caller, self.snapshot())
    }

    /// What the user or token `authid` (`user@realm` or `user@realm!tokenid`) may do, against
    /// the registry as it is now (a configured read-only token keeps its `*.Audit` standing).
    pub(crate) fn grants_of(&self, authid: &str) -> Grants {
        let registry = self.snapshot();
        let caller = match split_tokenid(authid) {
            Some((userid, tokenid)) => {
                let mut caller = Caller::token(userid, tokenid);
                caller.read_only = registry
                    .token(userid, tokenid)
                    .is_some_and(|t| t.origin == TokenOrigin::Config { read_only: true });
                caller
            }
            None => Caller {
                userid: authid.to_string(),
                tokenid: None,
                read_only: false,
            },
        };
        Grants::of(&caller, registry)
    }

    /// `lock_user_config($code, $errmsg)`: run `change` on a copy of the registry and keep it
    /// only if it succeeds; a failure is a 500 `<errmsg>: <text>`.
    pub(crate) fn update<R>(
        &self,
        errmsg: &str,
        change: impl FnOnce(&mut Registry) -> Result<R, String>,
    ) -> Result<R, ApiError> {
        let mut guard = self.registry.lock().unwrap_or_else(|e| e.into_inner());
        let mut copy = Registry::clone(&guard);
        let out = change(&mut copy).map_err(|e| ApiError::internal(format!("{errmsg}: {e}")))?;
        *guard = Arc::new(copy);
        Ok(out)
    }

    /// `verify_token`: `USER@REALM!TOKENID=SECRET` (split at the last `=`) of an enabled,
    /// unexpired user whose token exists, has not expired at `now` and has this secret.
    pub(crate) fn verify_token(&self, value: &str, now: i64) -> Option<Caller> {
        let (tokenid, secret) = value.rsplit_once('=')?;
        let (userid, name) = tokenid.split_once('!')?;
        let reg = self.snapshot();
        let user = reg.user(userid).filter(|u| u.usable(now))?;
        let token = user.tokens.get(name)?;
        if (token.expire != 0 && token.expire < now) || token.secret != secret {
            return None;
        }
        let mut caller = Caller::token(userid, name);
        caller.read_only = token.origin == TokenOrigin::Config { read_only: true };
        Some(caller)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_update_changes_nothing() {
        let ac = AccessControl::new(&SimConfig::default());
        let err = ac
            .update("create user failed", |reg| {
                reg.users.remove("root@pam");
                Err::<(), _>("user 'x' already exists".to_string())
            })
            .unwrap_err();
        assert_eq!(
            (err.status, err.message.as_str()),
            (500, "create user failed: user 'x' already exists")
        );
        assert!(ac.snapshot().user("root@pam").is_some());
    }

    #[test]
    fn configured_tokens_authenticate_with_their_standing() {
        let ac = AccessControl::new(&SimConfig::default());
        let c = ac
            .verify_token("root@pam!fleet=3f8a4c1e-5b2d-4e6f-9a7b-1c2d3e4f5a6b", 0)
            .unwrap();
        assert_eq!(
            (c.upid_user(), c.read_only),
            ("root@pam!fleet".into(), false)
        );
        assert!(ac.verify_token("root@pam!fleet=wrong", 0).is_none());
    }
}
