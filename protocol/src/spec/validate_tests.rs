//! Table-driven checks of spec validation: every field refuses a bad value, naming the field,
//! the value and what is allowed; good specs pass.

use super::*;

fn good() -> VmSpec {
    let mut s = VmSpec::new("web-1", 2048);
    s.description = "front end".into();
    s.tags = vec!["prod".into(), "web".into()];
    s.cores = 2;
    s.balloon_mib = Some(1024);
    s.cpu = Some("x86-64-v2-AES".into());
    s.machine = Some("q35".into());
    s.bios = Some(Bios::Ovmf);
    s.template = Some(TemplateSpec {
        name: Some("debian-12".into()),
        vmid: None,
        clone: CloneMode::Full,
        storage: Some("local-lvm".into()),
    });
    s.disks = vec![DiskSpec {
        slot: "scsi0".into(),
        storage: None,
        size_gib: 20,
        options: DiskOptions::default(),
    }];
    s.nics = vec![
        NicSpec {
            model: NicModel::Virtio,
            bridge: "vmbr0".into(),
            vlan: Some(20),
            mac: Some("BC:24:11:00:00:01".into()),
            firewall: true,
            mtu: Some(9000),
            ip: Some(NicIp::Pool("lan".into())),
        },
        NicSpec {
            model: NicModel::E1000,
            bridge: "vmbr1".into(),
            vlan: None,
            mac: None,
            firewall: false,
            mtu: None,
            ip: Some(NicIp::Static {
                address: "192.168.5.10/24".into(),
                gateway: Some("192.168.5.1".into()),
            }),
        },
    ];
    s.cloud_init = Some(CloudInitSpec {
        user: Some("ops".into()),
        ssh_keys: vec!["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGb8 ops@laptop".into()],
        dns_servers: vec!["10.0.0.53".into()],
        search_domain: Some("example.internal".into()),
        user_data: Some("#cloud-config\npackages: [nginx]\n".into()),
    });
    s.placement.hosts = vec!["pve1".into(), "pve2".into()];
    s.placement.exclude_hosts = vec!["pve3".into()];
    s.placement.labels.insert("zone".into(), "a".into());
    s.vmid_range = Some("prod".into());
    s
}

type Mutation = fn(&mut VmSpec);

#[test]
fn a_complete_spec_and_a_minimal_one_are_valid() {
    assert_eq!(validate_spec(&good()), Ok(()));
    assert_eq!(validate_spec(&VmSpec::new("a", 16)), Ok(()));
}

#[test]
fn every_field_refuses_a_bad_value_naming_field_value_and_allowed() {
    // (what is wrong, mutation, expected field, expected value, a fragment of `allowed`)
    let table: &[(&str, Mutation, &str, &str, &str)] = &[
        (
            "name not a label",
            |s| s.name = "Web_1".into(),
            "name",
            "\"Web_1\"",
            "DNS label",
        ),
        (
            "name empty",
            |s| s.name = String::new(),
            "name",
            "\"\"",
            "DNS label",
        ),
        (
            "description too long",
            |s| s.description = "x".repeat(8001),
            "description",
            "<8001 characters>",
            "at most 8000 characters",
        ),
        (
            "description with NUL",
            |s| s.description = "esc \u{1b} cr \r nul \0".into(),
            "description",
            "<NUL at character 15>",
            "without NUL",
        ),
        (
            "tag syntax",
            |s| s.tags[1] = "Web Tier".into(),
            "tags[1]",
            "\"Web Tier\"",
            "PVE tag",
        ),
        (
            "tag twice",
            |s| s.tags[1] = "prod".into(),
            "tags[1]",
            "\"prod\"",
            "once",
        ),
        ("zero cores", |s| s.cores = 0, "cores", "0", "1-256"),
        (
            "too many sockets",
            |s| s.sockets = 17,
            "sockets",
            "17",
            "1-16",
        ),
        (
            "too many vcpus",
            |s| (s.cores, s.sockets) = (256, 4),
            "cores",
            "256",
            "512 vCPUs",
        ),
        (
            "too little memory",
            |s| s.memory_mib = 8,
            "memory_mib",
            "8",
            "16-4194304",
        ),
        (
            "balloon above memory",
            |s| s.balloon_mib = Some(4096),
            "balloon_mib",
            "4096",
            "0 (no ballooning) or 16-2048",
        ),
        (
            "cpu model",
            |s| s.cpu = Some("host cpu".into()),
            "cpu",
            "\"host cpu\"",
            "QEMU CPU model",
        ),
        (
            "machine",
            |s| s.machine = Some("q36".into()),
            "machine",
            "\"q36\"",
            "QEMU machine type",
        ),
        (
            "template both name and vmid",
            |s| s.template.as_mut().unwrap().vmid = Some(9000),
            "template.vmid",
            "9000",
            "exactly one",
        ),
        (
            "template neither",
            |s| s.template.as_mut().unwrap().name = None,
            "template",
            "{}",
            "exactly one",
        ),
        (
            "template name",
            |s| s.template.as_mut().unwrap().name = Some("deb..12".into()),
            "template.name",
            "\"deb..12\"",
            "DNS name",
        ),
        (
            "template vmid",
            |s| {
                let t = s.template.as_mut().unwrap();
                (t.name, t.vmid) = (None, Some(99));
            },
            "template.vmid",
            "99",
            "100-999999999",
        ),
        (
            "linked clone with storage",
            |s| s.template.as_mut().unwrap().clone = CloneMode::Linked,
            "template.storage",
            "\"local-lvm\"",
            "linked",
        ),
        (
            "template storage id",
            |s| s.template.as_mut().unwrap().storage = Some("9bad".into()),
            "template.storage",
            "\"9bad\"",
            "storage id",
        ),
        (
            "disk slot",
            |s| s.disks[0].slot = "scsi31".into(),
            "disks[0].slot",
            "\"scsi31\"",
            "scsi0-scsi30",
        ),
        (
            "disk slot twice",
            |s| s.disks.push(s.disks[0].clone()),
            "disks[1].slot",
            "\"scsi0\"",
            "each slot once",
        ),
        (
            "disk on the cloud-init slot",
            |s| s.disks[0].slot = "ide2".into(),
            "disks[0].slot",
            "\"ide2\"",
            "cloud-init",
        ),
        (
            "scratch disk without storage",
            |s| s.template = None,
            "disks[0].storage",
            "(none)",
            "required",
        ),
        (
            "disk storage id",
            |s| s.disks[0].storage = Some("local lvm".into()),
            "disks[0].storage",
            "\"local lvm\"",
            "storage id",
        ),
        (
            "disk size",
            |s| s.disks[0].size_gib = 0,
            "disks[0].size_gib",
            "0",
            "1-65536",
        ),
        (
            "too many nics",
            |s| s.nics = vec![s.nics[1].clone(); 33],
            "nics",
            "33",
            "at most 32",
        ),
        (
            "bridge",
            |s| s.nics[0].bridge = "vmbr0 ".into(),
            "nics[0].bridge",
            "\"vmbr0 \"",
            "interface name",
        ),
        (
            "vlan",
            |s| s.nics[0].vlan = Some(5000),
            "nics[0].vlan",
            "5000",
            "1-4094",
        ),
        (
            "mac multicast",
            |s| s.nics[0].mac = Some("01:00:5E:00:00:01".into()),
            "nics[0].mac",
            "\"01:00:5E:00:00:01\"",
            "unicast",
        ),
        (
            "mac twice",
            |s| s.nics[1].mac = Some("bc:24:11:00:00:01".into()),
            "nics[1].mac",
            "\"bc:24:11:00:00:01\"",
            "used once",
        ),
        (
            "mtu on e1000",
            |s| s.nics[1].mtu = Some(1500),
            "nics[1].mtu",
            "1500",
            "VirtIO",
        ),
        (
            "mtu zero",
            |s| s.nics[0].mtu = Some(0),
            "nics[0].mtu",
            "0",
            "1-65520",
        ),
        (
            "ip without cloud-init",
            |s| s.cloud_init = None,
            "nics[0].ip",
            "{ pool = \"lan\" }",
            "cloud_init",
        ),
        (
            "pool name",
            |s| s.nics[0].ip = Some(NicIp::Pool("LAN".into())),
            "nics[0].ip.pool",
            "\"LAN\"",
            "DNS label",
        ),
        (
            "static without prefix",
            |s| {
                s.nics[1].ip = Some(NicIp::Static {
                    address: "192.168.5.10".into(),
                    gateway: None,
                })
            },
            "nics[1].ip.static.address",
            "\"192.168.5.10\"",
            "prefix length",
        ),
        (
            "static broadcast",
            |s| {
                s.nics[1].ip = Some(NicIp::Static {
                    address: "192.168.5.255/24".into(),
                    gateway: None,
                })
            },
            "nics[1].ip.static.address",
            "\"192.168.5.255/24\"",
            "host address",
        ),
        (
            "gateway outside",
            |s| {
                s.nics[1].ip = Some(NicIp::Static {
                    address: "192.168.5.10/24".into(),
                    gateway: Some("192.168.6.1".into()),
                })
            },
            "nics[1].ip.static.gateway",
            "\"192.168.6.1\"",
            "inside 192.168.5.0/24",
        ),
        (
            "gateway not an address",
            |s| {
                s.nics[1].ip = Some(NicIp::Static {
                    address: "192.168.5.10/24".into(),
                    gateway: Some("gw".into()),
                })
            },
            "nics[1].ip.static.gateway",
            "\"gw\"",
            "IPv4 or IPv6",
        ),
        (
            "cloud-init user",
            |s| s.cloud_init.as_mut().unwrap().user = Some("Admin".into()),
            "cloud_init.user",
            "\"Admin\"",
            "Unix user name",
        ),
        (
            "ssh key",
            |s| {
                s.cloud_init
                    .as_mut()
                    .unwrap()
                    .ssh_keys
                    .push("ssh-dss AAAAB3NzaC1kc3MAAACBAP".into())
            },
            "cloud_init.ssh_keys[1]",
            "\"ssh-dss AAAAB3NzaC1kc3MAAACBAP\"",
            "OpenSSH public key",
        ),
        (
            "too many dns servers",
            |s| s.cloud_init.as_mut().unwrap().dns_servers = vec!["1.1.1.1".into(); 4],
            "cloud_init.dns_servers",
            "4",
            "at most 3",
        ),
        (
            "dns server",
            |s| s.cloud_init.as_mut().unwrap().dns_servers = vec!["dns.example".into()],
            "cloud_init.dns_servers[0]",
            "\"dns.example\"",
            "IPv4 or IPv6",
        ),
        (
            "search domain",
            |s| s.cloud_init.as_mut().unwrap().search_domain = Some("a..b".into()),
            "cloud_init.search_domain",
            "\"a..b\"",
            "DNS name",
        ),
        (
            "user data header",
            |s| s.cloud_init.as_mut().unwrap().user_data = Some("packages: [nginx]".into()),
            "cloud_init.user_data",
            "\"packages: [nginx]\"... (17 bytes)",
            "#cloud-config",
        ),
        (
            "placement host",
            |s| s.placement.hosts[0] = "pve_1".into(),
            "placement.hosts[0]",
            "\"pve_1\"",
            "PVE node name",
        ),
        (
            "host allowed and excluded",
            |s| s.placement.exclude_hosts = vec!["PVE2".into()],
            "placement.exclude_hosts[0]",
            "\"PVE2\"",
            "not also listed",
        ),
        (
            "label key",
            |s| {
                s.placement.labels.insert("Zone".into(), "a".into());
            },
            "placement.labels",
            "\"Zone\"",
            "label key",
        ),
        (
            "label value",
            |s| {
                s.placement.labels.insert("zone".into(), "a b".into());
            },
            "placement.labels.zone",
            "\"a b\"",
            "label value",
        ),
        (
            "vmid range name",
            |s| s.vmid_range = Some("Prod".into()),
            "vmid_range",
            "\"Prod\"",
            "DNS label",
        ),
    ];
    for (what, mutate, field, value, allowed) in table {
        let mut spec = good();
        mutate(&mut spec);
        let err = validate_spec(&spec).expect_err(what);
        assert_eq!(err.field, *field, "{what}: {err}");
        assert_eq!(err.value, *value, "{what}: {err}");
        assert!(
            err.allowed.contains(allowed),
            "{what}: allowed was {:?}",
            err.allowed
        );
        let shown = err.to_string();
        for part in [field, value, allowed] {
            assert!(shown.contains(part), "{what}: {shown:?} lacks {part:?}");
        }
    }
}

#[test]
fn a_spec_error_can_be_placed_under_a_file_entry() {
    let err = SpecError::new("nics[0].vlan", 5000, "an integer 1-4094").within("vm[2]");
    assert_eq!(err.field, "vm[2].nics[0].vlan");
    assert_eq!(
        err.to_string(),
        "vm[2].nics[0].vlan = 5000 is not allowed: expected an integer 1-4094"
    );
}
