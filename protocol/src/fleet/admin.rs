//! [`AdminRecord`]: an operator identity (an admin certificate's id) as the fleet state records
//! it: who it is for, how long its certificate lives, how far renewals may push that, and
//! whether it was revoked. Revocation is by id: every certificate ever issued for a revoked
//! id is refused, whatever its expiry.

use serde::{Deserialize, Serialize};

use super::UnixMillis;
use crate::identity::NodeId;

/// One admin identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdminRecord {
    /// The id in its certificates (`admin-<id>.pvefleet`).
    pub id: NodeId,
    /// Who or what it is for (free text chosen by the operator who added it).
    pub name: String,
    /// When its first certificate was issued.
    pub issued_at: UnixMillis,
    /// When its newest certificate expires.
    pub expires_at: UnixMillis,
    /// The latest expiry a renewal may give it; past this an operator must add a new admin.
    pub renew_until: UnixMillis,
    /// When it was revoked; its certificates are refused from then on.
    pub revoked_at: Option<UnixMillis>,
}

impl AdminRecord {
    /// Whether its certificates are refused.
    pub fn is_revoked(&self) -> bool {
        self.revoked_at.is_some()
    }
}

/// Checks the operator-chosen name of an admin: 1-64 printable characters.
///
/// # Errors
/// A message naming the field and what is allowed.
pub fn validate_admin_name(name: &str) -> Result<(), String> {
    let len = name.chars().count();
    if !(1..=64).contains(&len) || name.chars().any(char::is_control) {
        return Err(format!(
            "name = {name:?} is not allowed: expected 1 to 64 printable characters (e.g. \
             \"alice\" or \"ci-deploy\")"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_short_printable_text() {
        assert!(validate_admin_name("alice").is_ok());
        assert!(validate_admin_name("ci deploy (prod)").is_ok());
        for bad in ["", "a\u{1b}[2J", &"x".repeat(65)] {
            let why = validate_admin_name(bad).unwrap_err();
            assert!(why.contains("1 to 64 printable"), "{why}");
        }
    }
}
