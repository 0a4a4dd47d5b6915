//! The access control list as `user.cfg` keeps it (path → member → role → propagate) and as
//! `PVE::AccessControl::roles` reads it: walking from `/` down to the checked path, the roles a
//! member holds on a node replace everything inherited from above (a role set on an ancestor
//! counts only with `propagate`); a final set containing `NoAccess` grants nothing else.
//! Groups are not modelled, so only the member's own entries count.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use regex::Regex;

/// Who an ACL entry is for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Member {
    /// A user, `name@realm`.
    User(String),
    /// An API token, `name@realm!tokenid`.
    Token(String),
}

/// Roles of one member on one path, with their propagate flag.
pub(crate) type RoleFlags = BTreeMap<String, bool>;

/// Every ACL entry, by normalized path.
#[derive(Debug, Clone, Default)]
pub(crate) struct Acl {
    entries: BTreeMap<String, BTreeMap<Member, RoleFlags>>,
}

impl Acl {
    /// Grant `role` to `member` on `path` (replacing its propagate flag).
    pub(crate) fn set(&mut self, path: &str, member: Member, role: &str, propagate: bool) {
        self.entries
            .entry(path.to_string())
            .or_default()
            .entry(member)
            .or_default()
            .insert(role.to_string(), propagate);
    }

    /// Take `role` away from `member` on `path` (nothing happens when it was not granted).
    pub(crate) fn remove(&mut self, path: &str, member: &Member, role: &str) {
        if let Some(members) = self.entries.get_mut(path) {
            if let Some(roles) = members.get_mut(member) {
                roles.remove(role);
                if roles.is_empty() {
                    members.remove(member);
                }
            }
            if members.is_empty() {
                self.entries.remove(path);
            }
        }
    }

    /// Every entry of `member` (a deleted token's: PVE drops ACL entries of tokens that no
    /// longer exist when it reads `user.cfg`).
    pub(crate) fn remove_member(&mut self, member: &Member) {
        for members in self.entries.values_mut() {
            members.remove(member);
        }
        self.entries.retain(|_, members| !members.is_empty());
    }

    /// The entries of `member`: (path, role, propagate), in path order.
    #[cfg(test)]
    pub(crate) fn entries_of(&self, member: &Member) -> Vec<(String, String, bool)> {
        self.entries
            .iter()
            .filter_map(|(path, members)| members.get(member).map(|roles| (path, roles)))
            .flat_map(|(path, roles)| {
                roles
                    .iter()
                    .map(move |(role, propagate)| (path.clone(), role.clone(), *propagate))
            })
            .collect()
    }

    /// Every path with an entry, in order.
    pub(crate) fn paths(&self) -> impl Iterator<Item = String> + '_ {
        self.entries.keys().cloned()
    }

    /// `roles($cfg, $member, $path)` for the member's own entries.
    pub(crate) fn roles(&self, member: &Member, path: &str) -> RoleFlags {
        let mut roles = RoleFlags::new();
        let nodes = ancestors(path);
        let last = nodes.len().saturating_sub(1);
        for (i, node) in nodes.iter().enumerate() {
            let Some(held) = self.entries.get(node).and_then(|m| m.get(member)) else {
                continue;
            };
            let applied: RoleFlags = held
                .iter()
                .filter(|(_, propagate)| i == last || **propagate)
                .map(|(role, propagate)| (role.clone(), *propagate))
                .collect();
            if !applied.is_empty() {
                roles = applied;
            }
        }
        match roles.get("NoAccess") {
            Some(flag) => RoleFlags::from([("NoAccess".to_string(), *flag)]),
            None => roles,
        }
    }
}

/// `/`, `/vms`, `/vms/100` for `/vms/100`.
fn ancestors(path: &str) -> Vec<String> {
    let mut out = vec!["/".to_string()];
    let mut current = String::new();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        current.push('/');
        current.push_str(part);
        out.push(current.clone());
    }
    out
}

/// `normalize_path`: collapse `//`, drop a trailing `/`, add the leading one; `None` for an
/// empty path or one with characters outside `[[:alnum:]._/-]`.
pub(crate) fn normalize_path(path: &str) -> Option<String> {
    if path.is_empty() {
        return None;
    }
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let normalized = format!("/{}", parts.join("/"));
    normalized
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._-/".contains(c))
        .then_some(normalized)
}

/// `check_path`: the ACL paths PVE accepts new entries on.
pub(crate) fn check_path(path: &str) -> bool {
    static PATHS: OnceLock<Option<Regex>> = OnceLock::new();
    let re = PATHS.get_or_init(|| {
        let alts = [
            "/",
            "/access",
            "/access/groups",
            "/access/groups/[[:alnum:]._-]+",
            "/access/realm",
            "/access/realm/[[:alnum:]._-]+",
            "/nodes",
            "/nodes/[[:alnum:]._-]+",
            "/pool",
            "/pool/[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+){0,2}",
            "/sdn",
            "/sdn/controllers",
            "/sdn/controllers/[[:alnum:]_-]+",
            "/sdn/dns",
            "/sdn/dns/[[:alnum:]]+",
            "/sdn/fabrics",
            "/sdn/fabrics/[[:alnum:]]+",
            "/sdn/ipams",
            "/sdn/ipams/[[:alnum:]]+",
            "/sdn/prefix-lists",
            "/sdn/prefix-lists/[[:alnum:]]+",
            "/sdn/route-maps",
            "/sdn/route-maps/[[:alnum:]]+",
            "/sdn/zones",
            "/sdn/zones/[[:alnum:]._-]+",
            "/sdn/zones/[[:alnum:]._-]+/[[:alnum:]._-]+",
            "/sdn/zones/[[:alnum:]._-]+/[[:alnum:]._-]+/[1-9][0-9]{0,3}",
            "/storage",
            "/storage/[[:alnum:]._-]+",
            "/vms",
            "/vms/[1-9][0-9]{2,}",
            "/mapping",
            "/mapping/[[:alnum:]._-]+",
            "/mapping/[[:alnum:]._-]+/[[:alnum:]._-]+",
        ];
        Regex::new(&format!("^(?:{})$", alts.join("|"))).ok()
    });
    re.as_ref().is_some_and(|re| re.is_match(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token() -> Member {
        Member::Token("mig@pve!t".into())
    }

    fn names(flags: &RoleFlags) -> Vec<&str> {
        flags.keys().map(String::as_str).collect()
    }

    #[test]
    fn the_most_specific_entry_replaces_inherited_roles() {
        let mut acl = Acl::default();
        acl.set("/", token(), "PVEAuditor", true);
        acl.set("/vms/100", token(), "PVEVMAdmin", true);
        assert_eq!(names(&acl.roles(&token(), "/vms/100")), ["PVEVMAdmin"]);
        assert_eq!(names(&acl.roles(&token(), "/vms/101")), ["PVEAuditor"]);
        assert_eq!(names(&acl.roles(&token(), "/")), ["PVEAuditor"]);
    }

    #[test]
    fn propagate_0_applies_to_the_path_only_and_no_access_wins() {
        let mut acl = Acl::default();
        acl.set("/", token(), "Migrator", false);
        assert_eq!(names(&acl.roles(&token(), "/")), ["Migrator"]);
        assert!(acl.roles(&token(), "/vms/100").is_empty());
        acl.set("/storage", token(), "PVEDatastoreUser", true);
        acl.set("/storage/local", token(), "NoAccess", true);
        acl.set("/storage/local", token(), "PVEAuditor", true);
        assert_eq!(names(&acl.roles(&token(), "/storage/local")), ["NoAccess"]);
        assert_eq!(
            names(&acl.roles(&token(), "/storage/ceph")),
            ["PVEDatastoreUser"]
        );
        acl.remove_member(&token());
        assert!(acl.entries_of(&token()).is_empty());
    }

    #[test]
    fn paths_normalize_and_check_like_pve() {
        assert_eq!(normalize_path("//vms//100/").as_deref(), Some("/vms/100"));
        assert_eq!(normalize_path("vms").as_deref(), Some("/vms"));
        assert_eq!(normalize_path("/").as_deref(), Some("/"));
        assert_eq!(normalize_path("/vms/1 0"), None);
        assert!(check_path("/sdn/zones/localnetwork/vmbr0"));
        assert!(check_path("/vms/100") && check_path("/storage/local-lvm"));
        assert!(!check_path("/vms/99") && !check_path("/foo"));
    }
}
