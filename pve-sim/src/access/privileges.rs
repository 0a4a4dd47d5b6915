//! PVE's privileges and built-in roles, derived exactly as `PVE::AccessControl::create_roles`
//! derives them from `$privgroups` (pve-access-control 9.1): every privilege of a category's
//! `root`, `admin`, `user` and `audit` groups is valid, `PVE<Cat>Admin` holds admin + user +
//! audit, `PVE<Cat>User` user + audit (when the category has user privileges), `PVEAuditor`
//! every audit privilege, `PVEAdmin` every admin, user and audit privilege but
//! `Mapping.Modify`, `Administrator` all privileges and `NoAccess` none.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

/// One category of `$privgroups`: (name, root, admin, user, audit).
type Category = (
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
    &'static [&'static str],
    &'static [&'static str],
);

/// `$privgroups` of `PVE/AccessControl.pm`.
const CATEGORIES: &[Category] = &[
    (
        "VM",
        &[],
        &[
            "VM.Config.Disk",
            "VM.Config.CPU",
            "VM.Config.Memory",
            "VM.Config.Network",
            "VM.Config.HWType",
            "VM.Config.Options",
            "VM.Allocate",
            "VM.Clone",
            "VM.GuestAgent.Unrestricted",
            "VM.Migrate",
            "VM.Replicate",
            "VM.Snapshot",
            "VM.Snapshot.Rollback",
        ],
        &[
            "VM.Config.CDROM",
            "VM.Config.Cloudinit",
            "VM.Console",
            "VM.Backup",
            "VM.GuestAgent.FileRead",
            "VM.GuestAgent.FileSystemMgmt",
            "VM.GuestAgent.FileWrite",
            "VM.PowerMgmt",
        ],
        &["VM.Audit", "VM.GuestAgent.Audit"],
    ),
    (
        "Sys",
        &[
            "Sys.PowerMgmt",
            "Sys.Modify",
            "Sys.Incoming",
            "Sys.AccessNetwork",
        ],
        &["Sys.Console", "Sys.Syslog"],
        &[],
        &["Sys.Audit"],
    ),
    (
        "Datastore",
        &[],
        &["Datastore.Allocate", "Datastore.AllocateTemplate"],
        &["Datastore.AllocateSpace"],
        &["Datastore.Audit"],
    ),
    (
        "SDN",
        &[],
        &["SDN.Allocate", "SDN.Audit"],
        &["SDN.Use"],
        &["SDN.Audit"],
    ),
    (
        "User",
        &["Realm.Allocate"],
        &["User.Modify", "Group.Allocate", "Realm.AllocateUser"],
        &[],
        &[],
    ),
    (
        "Pool",
        &[],
        &["Pool.Allocate"],
        &["Pool.Audit"],
        &["Pool.Audit"],
    ),
    (
        "Mapping",
        &[],
        &["Mapping.Modify"],
        &["Mapping.Use"],
        &["Mapping.Audit"],
    ),
];

/// The one privilege outside every category.
const PERMISSIONS_MODIFY: &str = "Permissions.Modify";

/// A set of privilege names.
pub(crate) type PrivSet = BTreeSet<String>;

/// Every valid privilege name.
pub(crate) fn all() -> &'static BTreeSet<&'static str> {
    static ALL: OnceLock<BTreeSet<&'static str>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut set: BTreeSet<&'static str> = CATEGORIES
            .iter()
            .flat_map(|(_, root, admin, user, audit)| {
                root.iter()
                    .chain(*admin)
                    .chain(*user)
                    .chain(*audit)
                    .copied()
            })
            .collect();
        set.insert(PERMISSIONS_MODIFY);
        set
    })
}

/// `verify_privname`: whether `name` is a privilege PVE knows.
pub(crate) fn is_privilege(name: &str) -> bool {
    all().contains(name)
}

/// The built-in ("special") roles and their privileges.
pub(crate) fn builtin_roles() -> &'static BTreeMap<String, BTreeSet<&'static str>> {
    static ROLES: OnceLock<BTreeMap<String, BTreeSet<&'static str>>> = OnceLock::new();
    ROLES.get_or_init(|| {
        let mut roles: BTreeMap<String, BTreeSet<&'static str>> = BTreeMap::new();
        roles.insert("NoAccess".into(), BTreeSet::new());
        roles.insert("Administrator".into(), all().clone());
        for (cat, _, admin, user, audit) in CATEGORIES {
            let granted = || admin.iter().chain(*user).chain(*audit).copied();
            roles
                .entry(format!("PVE{cat}Admin"))
                .or_default()
                .extend(granted());
            roles
                .entry("PVEAdmin".into())
                .or_default()
                .extend(granted());
            if !user.is_empty() {
                roles
                    .entry(format!("PVE{cat}User"))
                    .or_default()
                    .extend(user.iter().chain(*audit).copied());
            }
            roles
                .entry("PVEAuditor".into())
                .or_default()
                .extend(audit.iter().copied());
        }
        if let Some(admin) = roles.get_mut("PVEAdmin") {
            admin.remove("Mapping.Modify");
        }
        roles.insert("PVETemplateUser".into(), ["VM.Clone", "VM.Audit"].into());
        roles
    })
}

/// `role_is_special`: a built-in role (it cannot be created, changed or deleted).
pub(crate) fn is_builtin_role(role: &str) -> bool {
    builtin_roles().contains_key(role)
}

/// The privileges of the read-only tokens the configuration declares: every `*.Audit`.
pub(crate) fn is_audit(privilege: &str) -> bool {
    privilege.ends_with(".Audit")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(name: &str) -> Vec<&'static str> {
        builtin_roles()[name].iter().copied().collect()
    }

    #[test]
    fn privilege_names_are_pves() {
        assert_eq!(all().len(), 47);
        for p in [
            "VM.Allocate",
            "VM.Migrate",
            "Sys.Incoming",
            "Datastore.AllocateSpace",
            "SDN.Use",
            "Permissions.Modify",
            "Mapping.Use",
        ] {
            assert!(is_privilege(p), "{p}");
        }
        assert!(!is_privilege("VM.Monitor"), "dropped in PVE 9");
        assert!(!is_privilege("vm.allocate"));
    }

    #[test]
    fn builtin_roles_follow_create_roles() {
        assert_eq!(role("NoAccess"), Vec::<&str>::new());
        assert_eq!(role("Administrator").len(), all().len());
        assert_eq!(
            role("PVEAuditor"),
            [
                "Datastore.Audit",
                "Mapping.Audit",
                "Pool.Audit",
                "SDN.Audit",
                "Sys.Audit",
                "VM.Audit",
                "VM.GuestAgent.Audit"
            ]
        );
        assert_eq!(
            role("PVEDatastoreUser"),
            ["Datastore.AllocateSpace", "Datastore.Audit"]
        );
        assert_eq!(role("PVESDNUser"), ["SDN.Audit", "SDN.Use"]);
        let vm_admin = role("PVEVMAdmin");
        assert_eq!(vm_admin.len(), 23);
        assert!(vm_admin.contains(&"VM.Migrate") && vm_admin.contains(&"VM.PowerMgmt"));
        assert!(!vm_admin.contains(&"Sys.Incoming"));
        assert!(!role("PVEAdmin").contains(&"Mapping.Modify"));
        assert!(
            !role("PVEAdmin").contains(&"Sys.Incoming"),
            "root-only group"
        );
        assert!(role("PVEMappingAdmin").contains(&"Mapping.Modify"));
        assert!(
            !builtin_roles().contains_key("PVESysUser"),
            "Sys has no user group"
        );
        assert!(is_builtin_role("PVETemplateUser") && !is_builtin_role("Migrator"));
    }
}
