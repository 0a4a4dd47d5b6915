//! Table-driven checks of pool, VMID range and VIP validation: each bad field is named with
//! what it allows.

use super::*;

type PoolMutation = fn(&mut IpPoolSpec);

fn pool() -> IpPoolSpec {
    IpPoolSpec {
        name: "lan".into(),
        cidr: "10.0.0.0/24".into(),
        gateway: Some("10.0.0.1".into()),
        range_start: "10.0.0.100".into(),
        range_end: "10.0.0.200".into(),
        dns: vec!["10.0.0.53".into()],
    }
}

#[test]
fn pool_ranges_and_vips_refuse_bad_fields() {
    assert_eq!(validate_ip_pool(&pool()), Ok(()));
    let pools: &[(PoolMutation, &str, &str)] = &[
        (|p| p.name = "Lan".into(), "name", "DNS label"),
        (|p| p.cidr = "10.0.0.0".into(), "cidr", "CIDR"),
        (|p| p.cidr = "10.0.0.7/24".into(), "cidr", "10.0.0.0/24"),
        (
            |p| p.gateway = Some("10.0.1.1".into()),
            "gateway",
            "inside 10.0.0.0/24",
        ),
        (
            |p| p.range_start = "10.0.0.0".into(),
            "range_start",
            "not its network",
        ),
        (
            |p| p.range_end = "10.0.0.255".into(),
            "range_end",
            "broadcast",
        ),
        (
            |p| p.range_end = "10.0.0.99".into(),
            "range_end",
            "not below range_start",
        ),
        (
            |p| p.range_end = "fd00::1".into(),
            "range_end",
            "inside 10.0.0.0/24",
        ),
        (|p| p.dns = vec!["x".into()], "dns[0]", "IPv4 or IPv6"),
        (|p| p.dns = vec!["1.1.1.1".into(); 4], "dns", "at most 3"),
    ];
    for (mutate, field, allowed) in pools {
        let mut p = pool();
        mutate(&mut p);
        let err = validate_ip_pool(&p).expect_err(field);
        assert_eq!(err.field, *field, "{err}");
        assert!(err.allowed.contains(allowed), "{err}");
    }
    let v6 = IpPoolSpec {
        name: "v6".into(),
        cidr: "fd00:1::/64".into(),
        gateway: Some("fd00:1::1".into()),
        range_start: "fd00:1::100".into(),
        range_end: "fd00:1::1ff".into(),
        dns: vec![],
    };
    assert_eq!(validate_ip_pool(&v6), Ok(()));

    let range = VmidRangeSpec {
        name: "prod".into(),
        start: 1000,
        end: 1999,
    };
    assert_eq!(validate_vmid_range(&range), Ok(()));
    let ranges: &[(VmidRangeSpec, &str, &str)] = &[
        (
            VmidRangeSpec {
                start: 99,
                ..range.clone()
            },
            "start",
            "100-999999999",
        ),
        (
            VmidRangeSpec {
                end: 999,
                ..range.clone()
            },
            "end",
            "1000-999999999",
        ),
        (
            VmidRangeSpec {
                name: "a b".into(),
                ..range.clone()
            },
            "name",
            "DNS label",
        ),
    ];
    for (r, field, allowed) in ranges {
        let err = validate_vmid_range(r).expect_err(field);
        assert_eq!(err.field, *field, "{err}");
        assert!(err.allowed.contains(allowed), "{err}");
    }

    let vip = VipSpec::from(crate::spec::VipSpecV1 {
        name: "api".into(),
        address: "10.0.0.10/24".into(),
        interface: "vmbr0".into(),
        hosts: vec!["pve1".into(), "pve2".into()],
    });
    assert_eq!(validate_vip(&vip), Ok(()));
    let vips: &[(VipSpec, &str, &str)] = &[
        (
            VipSpec {
                address: "10.0.0.10".into(),
                ..vip.clone()
            },
            "address",
            "prefix length",
        ),
        (
            VipSpec {
                address: "10.0.0.0/24".into(),
                ..vip.clone()
            },
            "address",
            "host address",
        ),
        (
            VipSpec {
                interface: "vmbr0:1 x".into(),
                ..vip.clone()
            },
            "interface",
            "interface name",
        ),
        (
            VipSpec {
                hosts: vec!["pve1".into(), "PVE1".into()],
                ..vip.clone()
            },
            "hosts[1]",
            "each host once",
        ),
        (
            VipSpec {
                name: String::new(),
                ..vip.clone()
            },
            "name",
            "DNS label",
        ),
    ];
    for (v, field, allowed) in vips {
        let err = validate_vip(v).expect_err(field);
        assert_eq!(err.field, *field, "{err}");
        assert!(err.allowed.contains(allowed), "{err}");
    }
}

#[test]
fn an_ip_owner_is_printable_text_of_1_to_128_bytes() {
    for good in ["ci-runner", "Team Web (rack 4)", "東京", &"x".repeat(128)] {
        assert_eq!(validate_ip_owner(good), Ok(()), "{good:?}");
    }
    for bad in [
        "",
        "esc \u{1b}[2J",
        "cr\r",
        "nul\0",
        "new\nline",
        &"x".repeat(129),
    ] {
        let e = validate_ip_owner(bad).unwrap_err();
        assert_eq!(e.field, "owner");
        assert!(e.allowed.contains("without control characters"), "{e}");
    }
}
