//! Where `vm migrate` sends a VM across PVE clusters: its own cluster first, another cluster
//! only when no node of its own can take it; a remote migration judged without template or
//! named storage but with room, bridges and a free VMID on the target's cluster; a rebuild
//! judged as a placement.

use protocol::NodeId;
use protocol::agent::StorageInfo;
use protocol::fleet::{Capacity, HostFacts, HostState, MoveKind, PVE_CLUSTER_LABEL};
use protocol::spec::{HaSpec, NicSpec, RecoveryMode, TemplateSpec, VmSpec};

use super::*;
use crate::state::Command;
use crate::test_world::{World, alpha};
use crate::views::host_views;

/// pve-a, pve-b, pve-c of cluster alpha; pve-x of cluster beta with vmbr0 and a big
/// `tank`; its facts can list `foreign` VMIDs.
fn two_clusters(foreign: Vec<u32>) -> World {
    let mut w = alpha();
    beta_host(&mut w, 9, "pve-x", foreign);
    w
}

fn beta_host(w: &mut World, id: NodeId, name: &str, foreign: Vec<u32>) {
    w.ok(Command::RegisterHost {
        id,
        name: name.into(),
        labels: [(PVE_CLUSTER_LABEL.to_string(), "beta".to_string())].into(),
        capacity: Capacity {
            cpus: 32,
            memory_mib: 131_072,
        },
        now: 1,
    });
    w.ok(Command::SetHostFacts {
        id,
        facts: Box::new(HostFacts {
            pve_version: "9.1.1".into(),
            storages: vec![StorageInfo {
                id: "tank".into(),
                kind: "zfspool".into(),
                content: ["images".to_string()].into(),
                active: true,
                total_bytes: 1 << 42,
                available_bytes: 1 << 42,
                ..StorageInfo::default()
            }],
            bridges: ["vmbr0".to_string()].into(),
            foreign_vmids: foreign,
            ..HostFacts::default()
        }),
    });
    w.ok(Command::SetHostState {
        id,
        state: HostState::Online,
        now: 1,
    });
}

fn maintenance(w: &mut World, id: NodeId) {
    w.ok(Command::SetHostState {
        id,
        state: HostState::Maintenance,
        now: 3,
    });
}

/// A VM from template debian-12, one NIC on vmbr0.
fn spec(name: &str, recreate: bool) -> VmSpec {
    let mut spec = VmSpec::new(name, 1024);
    spec.template = Some(TemplateSpec {
        name: Some("debian-12".into()),
        vmid: None,
        clone: Default::default(),
        storage: None,
    });
    spec.nics = vec![NicSpec {
        model: Default::default(),
        bridge: "vmbr0".into(),
        vlan: None,
        mac: None,
        firewall: false,
        mtu: None,
        ip: None,
    }];
    if recreate {
        spec.ha = HaSpec {
            recovery: Some(RecoveryMode::Recreate),
            ..HaSpec::started()
        };
    }
    spec
}

#[test]
fn its_own_cluster_first_another_only_when_none_of_its_nodes_can_take_it() {
    let mut w = two_clusters(vec![]);
    w.spec_on(spec("web", false), 1);
    // pve-b and pve-c have no vmbr0: the bridge filter refuses them, so only a remote move.
    let t = target(&w.state, host_views(&w.state), "web", None).unwrap();
    assert_eq!((t.to_name.as_str(), t.kind), ("pve-x", MoveKind::Remote));
    assert!(t.chosen.contains("remote migration"), "{}", t.chosen);
    // Every host was judged: the local ones first.
    let judged: Vec<&str> = t.verdicts.iter().map(|v| v.host_name.as_str()).collect();
    assert_eq!(judged, ["pve-b", "pve-c", "pve-x"]);
    // A VM without NICs goes to a node of its own cluster.
    w.vm("plain", 1);
    let t = target(&w.state, host_views(&w.state), "plain", None).unwrap();
    assert_eq!(t.kind, MoveKind::Local);
    assert_ne!(t.to_name, "pve-x");
    // Unless they are in maintenance: then it leaves the cluster too.
    maintenance(&mut w, 2);
    maintenance(&mut w, 3);
    let t = target(&w.state, host_views(&w.state), "plain", None).unwrap();
    assert_eq!((t.to_name.as_str(), t.kind), ("pve-x", MoveKind::Remote));
}

#[test]
fn a_remote_migration_needs_no_template_but_a_free_vmid_and_a_rebuild_needs_the_template() {
    // pve-x has no template debian-12: copied disks do not need it.
    let mut w = two_clusters(vec![]);
    w.spec_on(spec("web", false), 1);
    let t = target(&w.state, host_views(&w.state), "web", Some("pve-x")).unwrap();
    assert_eq!(t.kind, MoveKind::Remote);
    // A rebuild clones it again: refused, naming the template.
    w.spec_on(spec("cattle", true), 1);
    let err = target(&w.state, host_views(&w.state), "cattle", Some("pve-x")).unwrap_err();
    assert!(err.contains("template") && err.contains("rebuilt"), "{err}");
    // The VMID is used on beta by someone else's guest: neither kind may go there.
    let vmid = w.state.vm("web").unwrap().assignment.vmid.unwrap();
    let mut w2 = two_clusters(vec![vmid]);
    w2.spec_on(spec("web", false), 1);
    let err = target(&w2.state, host_views(&w2.state), "web", Some("pve-x")).unwrap_err();
    assert!(
        err.contains("vmid") && err.contains(&vmid.to_string()),
        "{err}"
    );
}

#[test]
fn a_remote_target_without_the_bridge_or_room_is_excluded_by_that_filter() {
    let mut w = two_clusters(vec![]);
    let mut big = spec("big", false);
    big.disks = vec![protocol::spec::DiskSpec {
        slot: "scsi0".into(),
        storage: Some("local-lvm".into()),
        size_gib: 1 << 14, // 16 TiB: more than tank's 4 TiB
        options: Default::default(),
    }];
    w.spec_on(big, 1);
    let err = target(&w.state, host_views(&w.state), "big", Some("pve-x")).unwrap_err();
    assert!(err.contains("excluded by storage"), "{err}");
    let mut other = spec("other", false);
    other.nics[0].bridge = "vmbr7".into();
    w.spec_on(other, 1);
    let err = target(&w.state, host_views(&w.state), "other", Some("pve-x")).unwrap_err();
    assert!(err.contains("vmbr7"), "{err}");
}

#[test]
fn an_operators_named_host_beats_a_loose_node_preference_but_not_a_strict_one() {
    let mut w = alpha();
    let mut db = VmSpec::new("db", 1024);
    db.placement.node_affinity = Some(protocol::spec::NodeAffinity {
        nodes: [("pve-a".to_string(), 2), ("pve-b".to_string(), 1)].into(),
        strict: false,
        failback: true,
    });
    w.spec_on(db.clone(), 1);
    // Unnamed, the preference decides (pve-b, the next listed).
    let t = target(&w.state, host_views(&w.state), "db", None).unwrap();
    assert_eq!(t.to_name, "pve-b");
    // Named: taken, and said so.
    let t = target(&w.state, host_views(&w.state), "db", Some("pve-c")).unwrap();
    assert_eq!(t.to_name, "pve-c");
    assert!(t.chosen.contains("over its node affinity"), "{}", t.chosen);
    // A strict rule still refuses a host it does not list.
    let mut strict = db.clone();
    strict.name = "pinned".into();
    if let Some(na) = strict.placement.node_affinity.as_mut() {
        na.strict = true;
    }
    w.spec_on(strict, 1);
    let err = target(&w.state, host_views(&w.state), "pinned", Some("pve-c")).unwrap_err();
    assert!(err.contains("node-affinity"), "{err}");
}
