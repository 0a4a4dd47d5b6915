//! Tests of [`ConfigChanges`]: exact parameters, every validation error naming its field.

use std::net::{IpAddr, Ipv4Addr};

use super::*;
use crate::props::{AgentType, DiskCache, NetModel};

fn field_of(c: &ConfigChanges) -> String {
    c.to_params()
        .unwrap_err()
        .invalid_field()
        .map(str::to_string)
        .unwrap_or_else(|| panic!("not Invalid"))
}

#[test]
fn typed_setters_produce_exact_params() {
    let c = ConfigChanges::new()
        .name("web1")
        .cores(2)
        .sockets(1)
        .memory_mib(2048)
        .balloon_mib(1024)
        .cpu("x86-64-v2-AES")
        .machine("q35")
        .bios(Bios::Ovmf)
        .scsihw(ScsiHw::VirtioScsiSingle)
        .ostype(OsType::L26)
        .net(
            0,
            &NetDevice {
                firewall: Some(true),
                tag: Some(10),
                ..NetDevice::virtio("vmbr0")
            },
        )
        .disk(
            DiskBus::Scsi,
            0,
            &Disk {
                iothread: Some(true),
                ..Disk::new_volume("local-lvm", 32)
            },
        )
        .disk(DiskBus::Ide, 2, &Disk::cdrom(None))
        .ipconfig(
            0,
            &IpConfig::static_v4(
                Ipv4Addr::new(10, 0, 0, 5),
                24,
                Some(Ipv4Addr::new(10, 0, 0, 1)),
            ),
        )
        .agent(&AgentConfig {
            kind: Some(AgentType::Virtio),
            ..AgentConfig::enabled()
        })
        .boot(&BootOrder::new(&["scsi0", "net0"]).unwrap())
        .onboot(true)
        .protection(false)
        .tags(&["web", "prod"])
        .description("line 1\nline 2")
        .ciuser("admin")
        .cipassword("s3cret")
        .sshkeys("ssh-ed25519 AAAA+/= me@host\nssh-rsa BBBB you@host")
        .nameserver(&[
            IpAddr::V4(Ipv4Addr::new(1, 1, 1, 1)),
            "2606:4700::1111".parse().unwrap(),
        ])
        .searchdomain(&["example.com", "lan"])
        .cicustom("user=local:snippets/user.yaml,network=local:snippets/net.yaml")
        .hotplug(&[HotplugFeature::Network, HotplugFeature::Disk])
        .raw("numa", "1");
    let params = c.to_params().unwrap();
    let expect: Vec<(&str, &str)> = vec![
        ("agent", "1,type=virtio"),
        ("balloon", "1024"),
        ("bios", "ovmf"),
        ("boot", "order=scsi0;net0"),
        (
            "cicustom",
            "user=local:snippets/user.yaml,network=local:snippets/net.yaml",
        ),
        ("cipassword", "s3cret"),
        ("ciuser", "admin"),
        ("cores", "2"),
        ("cpu", "x86-64-v2-AES"),
        ("description", "line 1\nline 2"),
        ("hotplug", "network,disk"),
        ("ide2", "none,media=cdrom"),
        ("ipconfig0", "ip=10.0.0.5/24,gw=10.0.0.1"),
        ("machine", "q35"),
        ("memory", "2048"),
        ("name", "web1"),
        ("nameserver", "1.1.1.1 2606:4700::1111"),
        ("net0", "model=virtio,bridge=vmbr0,firewall=1,tag=10"),
        ("numa", "1"),
        ("onboot", "1"),
        ("ostype", "l26"),
        ("protection", "0"),
        ("scsi0", "local-lvm:32,iothread=1"),
        ("scsihw", "virtio-scsi-single"),
        ("searchdomain", "example.com lan"),
        ("sockets", "1"),
        (
            "sshkeys",
            "ssh-ed25519%20AAAA%2B%2F%3D%20me%40host%0Assh-rsa%20BBBB%20you%40host",
        ),
        ("tags", "prod;web"),
    ];
    let got: Vec<(&str, &str)> = params
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(got, expect);
}

#[test]
fn update_controls_come_last() {
    let c = ConfigChanges::new()
        .cores(4)
        .delete(&["net1", "scsi1"])
        .revert(&["memory"])
        .digest("0123456789abcdef0123456789abcdef01234567")
        .force(true)
        .skiplock(true);
    let got = c.to_params().unwrap();
    let keys: Vec<&str> = got.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        ["cores", "delete", "revert", "digest", "force", "skiplock"]
    );
    assert_eq!(got[1].1, "net1,scsi1");
    assert_eq!(c.first_update_control(), Some("delete"));
    assert_eq!(ConfigChanges::new().cores(1).first_update_control(), None);
}

#[test]
fn sshkeys_encoding_uses_only_pve_urlencoded_characters() {
    let c = ConfigChanges::new().sshkeys("ssh-ed25519 AAAAC3Nza+/x== user@h\n");
    let v = c.get("sshkeys").unwrap();
    assert!(
        v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-%_.!~*'()".contains(&b)),
        "{v}"
    );
    assert_eq!(
        percent_encoding::percent_decode_str(v)
            .decode_utf8()
            .unwrap(),
        "ssh-ed25519 AAAAC3Nza+/x== user@h\n"
    );
}

#[test]
fn every_validation_error_names_its_field() {
    let cases: Vec<(ConfigChanges, &str)> = vec![
        (ConfigChanges::new().name("web_1"), "name"),
        (ConfigChanges::new().cores(0), "cores"),
        (ConfigChanges::new().sockets(0), "sockets"),
        (ConfigChanges::new().memory_mib(15), "memory"),
        (
            ConfigChanges::new().memory_mib(1024).balloon_mib(2048),
            "balloon",
        ),
        (ConfigChanges::new().cpu("host,flags=+aes"), "cpu"),
        (ConfigChanges::new().machine("q36"), "machine"),
        (
            ConfigChanges::new().net(32, &NetDevice::virtio("vmbr0")),
            "net32",
        ),
        (
            ConfigChanges::new().net(
                1,
                &NetDevice {
                    tag: Some(5000),
                    ..NetDevice::new(NetModel::E1000)
                },
            ),
            "net1.tag",
        ),
        (
            ConfigChanges::new().disk(DiskBus::Virtio, 16, &Disk::new_volume("local-lvm", 8)),
            "virtio16",
        ),
        (
            ConfigChanges::new().disk(
                DiskBus::Sata,
                0,
                &Disk {
                    iothread: Some(true),
                    ..Disk::new_volume("local-lvm", 8)
                },
            ),
            "sata0.iothread",
        ),
        (
            ConfigChanges::new().disk(
                DiskBus::Virtio,
                0,
                &Disk {
                    ssd: Some(true),
                    ..Disk::new_volume("local-lvm", 8)
                },
            ),
            "virtio0.ssd",
        ),
        (
            ConfigChanges::new().disk(
                DiskBus::Scsi,
                1,
                &Disk {
                    cache: Some(DiskCache::None),
                    ..Disk::volume("bad")
                },
            ),
            "scsi1.file",
        ),
        (
            ConfigChanges::new().ipconfig(32, &IpConfig::dhcp()),
            "ipconfig32",
        ),
        (
            ConfigChanges::new().ipconfig(
                0,
                &IpConfig {
                    gw: Some(Ipv4Addr::LOCALHOST),
                    ..IpConfig::dhcp()
                },
            ),
            "ipconfig0.gw",
        ),
        (
            ConfigChanges::new().boot(&BootOrder {
                order: vec!["scsi0".into(), "scsi0".into()],
                legacy: None,
            }),
            "boot.order",
        ),
        (ConfigChanges::new().tags(&["ok", "not ok"]), "tags"),
        (
            ConfigChanges::new().description(&"x".repeat(8193)),
            "description",
        ),
        (ConfigChanges::new().ciuser("a b"), "ciuser"),
        (ConfigChanges::new().cipassword(""), "cipassword"),
        (ConfigChanges::new().sshkeys(" "), "sshkeys"),
        (ConfigChanges::new().nameserver(&[]), "nameserver"),
        (
            ConfigChanges::new().searchdomain(&["bad_domain"]),
            "searchdomain",
        ),
        (
            ConfigChanges::new().cicustom("user=nocolon"),
            "cicustom.user",
        ),
        (
            ConfigChanges::new().cicustom("other=local:snippets/x"),
            "cicustom",
        ),
        (ConfigChanges::new().raw("net32", "virtio"), "net32"),
        (ConfigChanges::new().raw("digest", "x"), "digest"),
        (ConfigChanges::new().raw("numa", ""), "numa"),
        (
            ConfigChanges::new().raw("description", "a\0b"),
            "description",
        ),
        (ConfigChanges::new().description("a\0b"), "description"),
        (ConfigChanges::new().delete(&["bogus"]), "delete"),
        (ConfigChanges::new().revert(&["net99"]), "revert"),
        (ConfigChanges::new().digest("xyz"), "digest"),
        (ConfigChanges::new().digest(&"a".repeat(41)), "digest"),
        (ConfigChanges::new().cores(2).delete(&["cores"]), "cores"),
        (ConfigChanges::new().cores(2).force(true), "force"),
    ];
    for (c, field) in cases {
        assert_eq!(field_of(&c), field, "{c:?}");
    }
}

#[test]
fn first_error_wins_and_later_setters_do_not_hide_it() {
    let c = ConfigChanges::new().cores(0).name("ok").memory_mib(1);
    assert_eq!(field_of(&c), "cores");
}

#[test]
fn later_value_replaces_earlier_and_empty_is_reported() {
    let c = ConfigChanges::new().cores(2).cores(4);
    assert_eq!(c.get("cores"), Some("4"));
    assert!(ConfigChanges::new().is_empty());
    assert!(!ConfigChanges::new().delete(&["net0"]).is_empty());
    assert_eq!(ConfigChanges::new().hotplug(&[]).get("hotplug"), Some("0"));
}

#[test]
fn descriptions_keep_control_characters_pve_accepts() {
    let text = "line 1\r\nline 2\t\u{1b}[1mbold\u{1b}[0m";
    let typed = ConfigChanges::new().description(text);
    assert_eq!(typed.get("description"), Some(text));
    let raw = ConfigChanges::new().raw("description", text);
    assert_eq!(raw.get("description"), Some(text));
}
