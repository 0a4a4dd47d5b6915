//! The terms a new join token may have: how long it lives and how many joins it allows, from
//! what `token create` asked (either may be absent: an older CLI, or the operator's default).
//!
//! Defaults are one use and [`DEFAULT_TOKEN_TTL`]: a token is for one host joining now, and a
//! token that is copied, pasted and forgotten (shell history, a ticket, a chat) must be dead by
//! the time someone finds it. Wider terms are asked for explicitly (`--uses`, `--ttl`).
//!
//! A coordinator token is a kind of its own: the node that joins with it receives the cluster
//! CA's private key, that is, the power to issue any certificate. It is always one use and
//! lives at most [`MAX_COORDINATOR_TOKEN_TTL`], so a used or stale one is worthless.
//!
//! The policy is applied by the coordinator that creates the token (the CLI's defaults only
//! spell it out), so an older CLI that sends no terms gets the same safe ones.

use std::time::Duration;

use protocol::Role;
use protocol::admin::UNLIMITED_USES;

/// How long a token lives when its creator does not say: long enough to copy it to a host and
/// run `join` there, short enough that a forgotten one does not stay a way in.
pub const DEFAULT_TOKEN_TTL: Duration = Duration::from_secs(3600);
/// How many joins a token allows when its creator does not say.
pub const DEFAULT_TOKEN_USES: u32 = 1;
/// The longest lifetime any token may be given (a year): tokens are for joining soon.
pub const MAX_TOKEN_TTL: Duration = Duration::from_secs(366 * 24 * 3600);
/// The longest lifetime of a coordinator token, which carries the CA key to its user.
pub const MAX_COORDINATOR_TOKEN_TTL: Duration = Duration::from_secs(24 * 3600);

/// The terms a token is created with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenTerms {
    /// How long it is accepted.
    pub ttl: Duration,
    /// How many joins it allows; `None` for no limit before it expires.
    pub uses: Option<u32>,
}

/// Why a token cannot be created with the terms asked. Each message says what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenTermsError {
    /// Admin certificates are not issued through tokens.
    #[error(
        "role = \"admin\" is not allowed: expected coordinator or agent (admin certificates are \
         not issued through join tokens)"
    )]
    AdminRole,
    /// A lifetime of zero or past the maximum for the role.
    #[error("ttl_secs = {asked} is not allowed for a {role} token: expected 1 to {max} seconds")]
    Ttl {
        /// The role asked.
        role: Role,
        /// The lifetime asked (seconds).
        asked: u64,
        /// The longest allowed (seconds).
        max: u64,
    },
    /// Zero uses: a token nothing could use.
    #[error("uses = 0 is not allowed: a token must allow at least one join")]
    NoUses,
    /// A coordinator token for more than one join.
    #[error(
        "a coordinator token allows exactly one join (it hands the cluster CA key to the node \
         that uses it), not {asked}: create one token per new member, with `pvefleet member add`"
    )]
    CoordinatorUses {
        /// The uses asked, as the operator would write them.
        asked: String,
    },
}

/// The terms for a new `role` token given the lifetime (`ttl_secs`) and uses asked; absent
/// means the default. `uses` of [`UNLIMITED_USES`] asks for no limit before expiry.
pub fn token_terms(
    role: Role,
    ttl_secs: Option<u64>,
    uses: Option<u32>,
) -> Result<TokenTerms, TokenTermsError> {
    let max = match role {
        Role::Admin => return Err(TokenTermsError::AdminRole),
        Role::Coordinator => MAX_COORDINATOR_TOKEN_TTL,
        Role::Agent => MAX_TOKEN_TTL,
    };
    let ttl = ttl_secs.map_or(DEFAULT_TOKEN_TTL, Duration::from_secs);
    if ttl.is_zero() || ttl > max {
        return Err(TokenTermsError::Ttl {
            role,
            asked: ttl.as_secs(),
            max: max.as_secs(),
        });
    }
    let uses = match uses.unwrap_or(DEFAULT_TOKEN_USES) {
        0 => return Err(TokenTermsError::NoUses),
        UNLIMITED_USES => None,
        n => Some(n),
    };
    if role == Role::Coordinator && uses != Some(1) {
        return Err(TokenTermsError::CoordinatorUses {
            asked: uses.map_or_else(|| "unlimited".to_string(), |n| n.to_string()),
        });
    }
    Ok(TokenTerms { ttl, uses })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: u64 = 3600;

    #[test]
    fn terms_default_to_one_use_for_an_hour_and_widen_only_when_asked() {
        let ok = |ttl: u64, uses: Option<u32>| {
            Ok(TokenTerms {
                ttl: Duration::from_secs(ttl),
                uses,
            })
        };
        let cases = [
            // What an older CLI sends: no terms, the safe defaults.
            (Role::Agent, None, None, ok(HOUR, Some(1))),
            (Role::Coordinator, None, None, ok(HOUR, Some(1))),
            (
                Role::Agent,
                Some(7 * 24 * HOUR),
                Some(5),
                ok(7 * 24 * HOUR, Some(5)),
            ),
            (Role::Agent, None, Some(UNLIMITED_USES), ok(HOUR, None)),
            (
                Role::Agent,
                Some(366 * 24 * HOUR),
                None,
                ok(366 * 24 * HOUR, Some(1)),
            ),
            (
                Role::Coordinator,
                Some(24 * HOUR),
                Some(1),
                ok(24 * HOUR, Some(1)),
            ),
            (
                Role::Agent,
                Some(0),
                None,
                Err(TokenTermsError::Ttl {
                    role: Role::Agent,
                    asked: 0,
                    max: 366 * 24 * HOUR,
                }),
            ),
            (
                Role::Agent,
                Some(366 * 24 * HOUR + 1),
                None,
                Err(TokenTermsError::Ttl {
                    role: Role::Agent,
                    asked: 366 * 24 * HOUR + 1,
                    max: 366 * 24 * HOUR,
                }),
            ),
            (
                Role::Coordinator,
                Some(24 * HOUR + 1),
                None,
                Err(TokenTermsError::Ttl {
                    role: Role::Coordinator,
                    asked: 24 * HOUR + 1,
                    max: 24 * HOUR,
                }),
            ),
            (Role::Agent, None, Some(0), Err(TokenTermsError::NoUses)),
            (
                Role::Coordinator,
                None,
                Some(2),
                Err(TokenTermsError::CoordinatorUses { asked: "2".into() }),
            ),
            (
                Role::Coordinator,
                None,
                Some(UNLIMITED_USES),
                Err(TokenTermsError::CoordinatorUses {
                    asked: "unlimited".into(),
                }),
            ),
            (Role::Admin, None, None, Err(TokenTermsError::AdminRole)),
        ];
        for (role, ttl, uses, expected) in cases {
            assert_eq!(
                token_terms(role, ttl, uses),
                expected,
                "{role} ttl {ttl:?} uses {uses:?}"
            );
        }
    }

    #[test]
    fn refusals_say_what_is_allowed() {
        let msg = token_terms(Role::Coordinator, None, Some(3))
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("exactly one join") && msg.contains("member add"),
            "{msg}"
        );
        let msg = token_terms(Role::Coordinator, Some(2 * 24 * HOUR), None)
            .unwrap_err()
            .to_string();
        assert!(msg.contains("1 to 86400 seconds"), "{msg}");
    }
}
