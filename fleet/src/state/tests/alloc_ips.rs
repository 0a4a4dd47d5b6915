//! Address allocation: lowest free, never the gateway, unique across pools, all or nothing,
//! exhaustion named, stale addresses kept until released, external holders.

use std::net::IpAddr;

use protocol::spec::{NicIp, VipSpecV1};

use super::{Fleet, pool_spec, vm_with_pools};
use crate::state::{Command, CommandReply, StateError};

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn ips(f: &mut Fleet, vm: &str) -> Result<Vec<IpAddr>, StateError> {
    match f.run(Command::AllocateIps {
        vm: vm.into(),
        now: 1,
    }) {
        CommandReply::Ips { addresses } => Ok(addresses.iter().map(|a| a.address).collect()),
        CommandReply::Refused(e) => Err(e),
        other => panic!("{other:?}"),
    }
}

#[test]
fn addresses_are_lowest_free_skip_the_gateway_and_are_stable_per_vm() {
    let mut f = Fleet::new();
    f.pool(pool_spec(
        "lan",
        "10.0.0.0/24",
        Some("10.0.0.101"),
        "10.0.0.100",
        "10.0.0.110",
    ));
    f.put_vm(vm_with_pools("a", &["lan", "lan"]));
    assert_eq!(
        ips(&mut f, "a"),
        Ok(vec![ip("10.0.0.100"), ip("10.0.0.102")])
    );
    assert_eq!(
        ips(&mut f, "a"),
        Ok(vec![ip("10.0.0.100"), ip("10.0.0.102")]),
        "asked again: same"
    );
    let rec = f.state.vm("a").unwrap();
    assert_eq!(rec.assignment.ips[1].nic, 1);
    assert_eq!(rec.assignment.ips[1].prefix_len, 24);
    assert_eq!(rec.assignment.ips[1].gateway, Some(ip("10.0.0.101")));
}

#[test]
fn pools_never_overlap_so_addresses_are_unique_across_pools() {
    let mut f = Fleet::new();
    f.pool(pool_spec(
        "a",
        "10.0.0.0/24",
        Some("10.0.0.1"),
        "10.0.0.10",
        "10.0.0.19",
    ));
    // Same subnet, another range: allowed; an overlapping range or another pool's gateway: no.
    f.pool(pool_spec(
        "b",
        "10.0.0.0/24",
        Some("10.0.0.1"),
        "10.0.0.20",
        "10.0.0.29",
    ));
    let refused = [
        pool_spec("c", "10.0.0.0/24", None, "10.0.0.15", "10.0.0.25"),
        pool_spec("c", "10.0.0.0/16", None, "10.0.0.2", "10.0.0.255"),
        pool_spec("c", "10.0.0.0/24", None, "10.0.0.1", "10.0.0.5"),
    ];
    for spec in refused {
        let e = f.err(Command::PutPool {
            spec: spec.clone(),
            now: 1,
        });
        assert!(matches!(e, StateError::Conflict(_)), "{spec:?}: {e}");
    }
    f.put_vm(vm_with_pools("x", &["a", "b"]));
    f.put_vm(vm_with_pools("y", &["b", "a"]));
    assert_eq!(ips(&mut f, "x"), Ok(vec![ip("10.0.0.10"), ip("10.0.0.20")]));
    assert_eq!(ips(&mut f, "y"), Ok(vec![ip("10.0.0.21"), ip("10.0.0.11")]));
    // A VIP inside a range, or a pool range over a VIP, is refused too.
    let vip = |address: &str| VipSpecV1 {
        name: "api".into(),
        address: address.into(),
        interface: "vmbr0".into(),
        hosts: vec![],
    };
    assert!(matches!(
        f.err(Command::PutVip {
            spec: vip("10.0.0.15/24"),
            now: 1
        }),
        StateError::Conflict(_)
    ));
    f.ok(Command::PutVip {
        spec: vip("10.0.0.50/24"),
        now: 1,
    });
    let over_vip = pool_spec("d", "10.0.0.0/24", None, "10.0.0.40", "10.0.0.60");
    assert!(
        f.err(Command::PutPool {
            spec: over_vip,
            now: 1
        })
        .to_string()
        .contains("VIP api")
    );
}

#[test]
fn exhaustion_names_the_pool_and_allocates_nothing() {
    let mut f = Fleet::new();
    f.pool(pool_spec(
        "tiny",
        "192.168.1.0/24",
        None,
        "192.168.1.10",
        "192.168.1.11",
    ));
    f.pool(pool_spec(
        "big",
        "192.168.2.0/24",
        None,
        "192.168.2.10",
        "192.168.2.99",
    ));
    f.put_vm(vm_with_pools("a", &["tiny"]));
    f.put_vm(vm_with_pools("b", &["big", "tiny", "tiny"]));
    assert_eq!(ips(&mut f, "a"), Ok(vec![ip("192.168.1.10")]));
    let e = ips(&mut f, "b").unwrap_err();
    assert_eq!(
        e,
        StateError::IpsExhausted {
            pool: "tiny".into(),
            start: ip("192.168.1.10"),
            end: ip("192.168.1.11")
        }
    );
    assert!(e.to_string().contains("\"tiny\" is exhausted"), "{e}");
    assert!(
        f.state.vm("b").unwrap().assignment.ips.is_empty(),
        "all or nothing"
    );
    assert!(
        f.state.ip_pools()["big"].allocations.is_empty(),
        "all or nothing"
    );
    f.delete_and_release("a");
    assert_eq!(
        ips(&mut f, "b"),
        Ok(vec![
            ip("192.168.2.10"),
            ip("192.168.1.10"),
            ip("192.168.1.11")
        ]),
        "released addresses are reused"
    );
}

#[test]
fn a_changed_nic_keeps_its_old_address_until_stale_ones_are_released() {
    let mut f = Fleet::new();
    f.pool(pool_spec(
        "a",
        "10.1.0.0/24",
        None,
        "10.1.0.10",
        "10.1.0.19",
    ));
    f.pool(pool_spec(
        "b",
        "10.2.0.0/24",
        None,
        "10.2.0.10",
        "10.2.0.19",
    ));
    f.put_vm(vm_with_pools("x", &["a"]));
    assert_eq!(ips(&mut f, "x"), Ok(vec![ip("10.1.0.10")]));
    let mut moved = vm_with_pools("x", &["b"]);
    moved.nics[0].ip = Some(NicIp::Pool("b".into()));
    f.put_vm(moved);
    assert_eq!(ips(&mut f, "x"), Ok(vec![ip("10.2.0.10")]));
    // The old address stays held (the guest may still use it) ...
    assert!(
        f.state.ip_pools()["a"]
            .allocations
            .contains_key(&ip("10.1.0.10"))
    );
    f.put_vm(vm_with_pools("y", &["a"]));
    assert_eq!(ips(&mut f, "y"), Ok(vec![ip("10.1.0.11")]));
    // ... until released explicitly.
    f.ok(Command::ReleaseStaleIps {
        vm: "x".into(),
        now: 1,
    });
    assert!(
        !f.state.ip_pools()["a"]
            .allocations
            .contains_key(&ip("10.1.0.10"))
    );
    assert_eq!(f.state.vm("x").unwrap().assignment.ips.len(), 1);
}

#[test]
fn external_holders_allocate_and_release_but_cannot_free_a_vm_address() {
    let mut f = Fleet::new();
    f.pool(pool_spec(
        "v6",
        "fd00:1::/64",
        Some("fd00:1::1"),
        "fd00:1::1",
        "fd00:1::3",
    ));
    let alloc = |owner: &str| Command::AllocateIp {
        pool: "v6".into(),
        owner: owner.into(),
        now: 1,
    };
    assert_eq!(
        f.ok(alloc("test-1")),
        CommandReply::Ip {
            address: ip("fd00:1::2"),
            prefix_len: 64,
            gateway: Some(ip("fd00:1::1"))
        }
    );
    f.put_vm(vm_with_pools("x", &["v6"]));
    assert_eq!(ips(&mut f, "x"), Ok(vec![ip("fd00:1::3")]));
    assert!(matches!(
        f.err(alloc("test-2")),
        StateError::IpsExhausted { .. }
    ));
    let e = f.err(Command::ReleaseIp {
        pool: "v6".into(),
        address: ip("fd00:1::3"),
        now: 1,
    });
    assert!(e.to_string().contains("held by VM \"x\""), "{e}");
    f.ok(Command::ReleaseIp {
        pool: "v6".into(),
        address: ip("fd00:1::2"),
        now: 1,
    });
    assert!(matches!(
        f.err(Command::ReleaseIp {
            pool: "v6".into(),
            address: ip("fd00:1::2"),
            now: 1
        }),
        StateError::NotFound { .. }
    ));
    assert!(matches!(f.err(alloc("")), StateError::Invalid(_)));
    let e = f.err(Command::DeletePool {
        name: "v6".into(),
        now: 1,
    });
    assert!(e.to_string().contains("still has 1 addresses"), "{e}");
}
