//! `[vm_defaults]` and `[[vm_group]]` in fleet and VM files: expansion into members named by
//! the pattern, defaults under every entry, errors naming the entry, and what a group refuses.

use super::{GroupMember, NicIp, parse_fleet_file, read_vm_file};

const FILE: &str = r#"
[vm_defaults]
cores = 2
agent = true

[[vm]]
name = "db-1"
memory_mib = 4096
cores = 4

[[vm_group]]
name = "web"
replicas = 3
memory_mib = 1024
tags = ["web"]
nics = [{ bridge = "vmbr0", ip = { pool = "lan" } }]
cloud_init = { user = "ops" }

[[vm_group]]
name = "worker"
replicas = 2
name_pattern = "batch-{n}-w"
spread = false
memory_mib = 512
"#;

#[test]
fn groups_expand_into_members_over_the_defaults() {
    let (vms, groups) = read_vm_file(FILE).unwrap();
    let names: Vec<&str> = vms.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(
        names,
        ["db-1", "web-1", "web-2", "web-3", "batch-1-w", "batch-2-w"]
    );
    assert_eq!(groups, [("web".to_string(), 3), ("worker".to_string(), 2)]);
    // A key an entry gives replaces the default; the others come from it.
    assert_eq!((vms[0].cores, vms[0].agent), (4, true));
    assert_eq!(
        (vms[1].cores, vms[1].agent, vms[1].memory_mib),
        (2, true, 1024)
    );
    assert_eq!(vms[0].group, None);
    assert_eq!(
        vms[2].group,
        Some(GroupMember {
            group: "web".into(),
            index: 2,
            pattern: "web-{n}".into(),
            spread: true,
        })
    );
    assert!(matches!(vms[3].nics[0].ip, Some(NicIp::Pool(_))));
    assert_eq!(vms[1].spread_group(), Some("web"));
    assert_eq!(vms[4].spread_group(), None);
    // A fleet file reads the same, its groups noted.
    let fleet = parse_fleet_file(&format!(
        "[[vmid_range]]\nname = \"main\"\nstart = 100\nend = 199\n{FILE}"
    ))
    .unwrap();
    assert_eq!(fleet.vm, vms);
    assert_eq!(fleet.groups.len(), 2);
    // Zero replicas: a group with no member (scaled to nothing).
    let (vms, groups) =
        read_vm_file("[[vm_group]]\nname = \"web\"\nreplicas = 0\nmemory_mib = 512\n").unwrap();
    assert!(vms.is_empty());
    assert_eq!(groups, [("web".to_string(), 0)]);
}

#[test]
fn what_a_group_refuses_is_named() {
    let err = |text: &str| read_vm_file(text).unwrap_err().to_string();
    let e = err("[[vm_group]]\nname = \"web\"\nmemory_mib = 512\n");
    assert!(e.contains("vm_group[0].replicas"), "{e}");
    let e = err(
        "[[vm_group]]\nname = \"web\"\nreplicas = 2\nname_pattern = \"web\"\nmemory_mib = 512\n",
    );
    assert!(
        e.contains("vm_group[0].name_pattern") && e.contains("{n}"),
        "{e}"
    );
    let e = err("[[vm_group]]\nname = \"web\"\nreplicas = 2\nmemory_mib = 1\n");
    assert!(e.contains("vm_group[0].memory_mib"), "{e}");
    let e = err(
        "[[vm_group]]\nname = \"web\"\nreplicas = 2\nmemory_mib = 512\n\
         cloud_init = { user = \"ops\" }\n\
         nics = [{ bridge = \"vmbr0\", ip = { static = { address = \"10.0.0.5/24\" } } }]\n",
    );
    assert!(e.contains("vm_group[0].nics[0].ip"), "{e}");
    let e = err(
        "[vm_defaults]\nname = \"x\"\n[[vm_group]]\nname = \"web\"\nreplicas = 1\nmemory_mib = 512\n",
    );
    assert!(e.contains("vm_defaults"), "{e}");
    // A member and a [[vm]] of the same name.
    let e = err(
        "[[vm]]\nname = \"web-1\"\nmemory_mib = 512\n[[vm_group]]\nname = \"web\"\nreplicas = 1\nmemory_mib = 512\n",
    );
    assert!(e.contains("web-1") && e.contains("twice"), "{e}");
    let e = err("[[vm_group]]\nname = \"web\"\nreplicas = 1001\nmemory_mib = 512\n");
    assert!(e.contains("0-1000"), "{e}");
    let e = err("[vm_defaults]\ncores = 2\n[[vm]]\nname = \"a\"\nmemory_mib = 512\nhots = 1\n");
    assert!(e.contains("vm[0]") && e.contains("hots"), "{e}");
}

#[test]
fn a_hand_written_membership_must_match_its_name() {
    let e = read_vm_file(
        "[[vm]]\nname = \"web-7\"\nmemory_mib = 512\n\
         group = { group = \"web\", index = 2, pattern = \"web-{n}\", spread = true }\n",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("web-2"), "{e}");
}
