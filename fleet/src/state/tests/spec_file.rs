//! Spec files: a multi-VM TOML file parses into typed specs (and survives bincode), unknown
//! keys and bad values are refused with the key, invalid specs name their entry.

use protocol::spec::{CloneMode, DesiredState, NicIp, NicModel, RestartPolicy};

use protocol::spec::{SpecFileError, parse_fleet_file, parse_vm_file};

use crate::state::{Command, decode_command, encode_command};

const TWO_VMS: &str = r##"
[[vm]]
name = "web-1"
description = "front end"
tags = ["prod", "web"]
cores = 2
memory_mib = 2048
balloon_mib = 1024
cpu = "x86-64-v2-AES"
machine = "q35"
bios = "ovmf"
scsihw = "virtio-scsi-single"
ostype = "l26"
agent = true
onboot = true
state = "running"
restart = "allowed"
ha = true
vmid_range = "prod"
template = { name = "debian-12", clone = "linked" }
disks = [{ slot = "scsi0", size_gib = 20, options = { discard = true, ssd = true } }]

[[vm.nics]]
bridge = "vmbr0"
vlan = 20
firewall = true
ip = { pool = "lan" }

[[vm.nics]]
model = "e1000"
bridge = "vmbr1"
ip = { static = { address = "192.168.5.10/24", gateway = "192.168.5.1" } }

[[vm.nics]]
bridge = "vmbr2"
ip = "dhcp"

[vm.cloud_init]
user = "ops"
ssh_keys = ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGb8 ops@laptop"]
dns_servers = ["10.0.0.53"]
search_domain = "example.internal"
user_data = """
#cloud-config
packages: [nginx]
"""

[vm.placement]
hosts = ["pve1", "pve2"]
labels = { zone = "a" }

[[vm]]
name = "db-1"
memory_mib = 4096
state = "stopped"
disks = [{ slot = "virtio0", storage = "local-lvm", size_gib = 50 }]
"##;

#[test]
fn a_file_with_several_vms_parses_into_typed_specs() {
    let specs = parse_vm_file(TWO_VMS).unwrap();
    assert_eq!(specs.len(), 2);
    let web = &specs[0];
    assert_eq!(
        (web.name.as_str(), web.cores, web.sockets, web.memory_mib),
        ("web-1", 2, 1, 2048)
    );
    assert_eq!(web.template.as_ref().unwrap().clone, CloneMode::Linked);
    assert_eq!(web.nics[0].model, NicModel::Virtio, "the default model");
    assert_eq!(web.nics[0].ip, Some(NicIp::Pool("lan".into())));
    assert_eq!(web.nics[1].model, NicModel::E1000);
    assert!(
        matches!(&web.nics[1].ip, Some(NicIp::Static { gateway: Some(g), .. }) if g == "192.168.5.1")
    );
    assert_eq!(web.nics[2].ip, Some(NicIp::Dhcp));
    assert!(web.disks[0].options.discard && web.disks[0].storage.is_none());
    assert_eq!(web.restart, RestartPolicy::Allowed);
    let ci = web.cloud_init.as_ref().unwrap();
    assert!(ci.user_data.as_ref().unwrap().starts_with("#cloud-config"));
    assert_eq!(web.placement.labels["zone"], "a");
    let db = &specs[1];
    assert_eq!(
        (db.state, db.restart, db.cores),
        (DesiredState::Stopped, RestartPolicy::Never, 1)
    );

    // What TOML produced travels through the Raft log unchanged.
    let cmd = Command::apply_vm(web.clone(), 1);
    assert_eq!(
        decode_command(&encode_command(&cmd, protocol::version::CURRENT).unwrap()).unwrap(),
        cmd
    );
}

#[test]
fn one_vm_may_be_written_at_the_top_level() {
    let specs = parse_vm_file("name = \"solo\"\nmemory_mib = 512\n").unwrap();
    assert_eq!(specs.len(), 1);
    assert_eq!(specs[0].name, "solo");
}

#[test]
fn unknown_keys_and_values_outside_closed_sets_are_refused_with_the_key() {
    let table = [
        (
            "typo at the top",
            "[[vm]]\nname = \"a\"\nmemory_mb = 512\n",
            "memory_mb",
        ),
        (
            "typo in a nic",
            "[[vm]]\nname = \"a\"\nmemory_mib = 512\nnics = [{ bridge = \"vmbr0\", vlan_id = 3 }]\n",
            "vlan_id",
        ),
        (
            "typo in cloud-init",
            "[[vm]]\nname = \"a\"\nmemory_mib = 512\n[vm.cloud_init]\nusers = \"x\"\n",
            "users",
        ),
        (
            "unknown bios",
            "[[vm]]\nname = \"a\"\nmemory_mib = 512\nbios = \"uefi\"\n",
            "seabios",
        ),
        (
            "unknown clone mode",
            "[[vm]]\nname = \"a\"\nmemory_mib = 512\ntemplate = { vmid = 9000, clone = \"thin\" }\n",
            "linked",
        ),
        (
            "unknown top-level table",
            "[[vms]]\nname = \"a\"\nmemory_mib = 512\n",
            "vms",
        ),
        ("missing memory", "[[vm]]\nname = \"a\"\n", "memory_mib"),
    ];
    for (what, text, needle) in table {
        match parse_vm_file(text) {
            Err(SpecFileError::Toml(message)) => {
                assert!(
                    message.contains(needle),
                    "{what}: {needle:?} not in {message}"
                )
            }
            other => panic!("{what}: {other:?}"),
        }
    }
}

#[test]
fn an_invalid_spec_in_a_file_is_named_by_its_entry() {
    let text = "[[vm]]\nname = \"a\"\nmemory_mib = 512\n\n[[vm]]\nname = \"b\"\nmemory_mib = 512\nnics = [{ bridge = \"vmbr0\", vlan = 5000 }]\n";
    match parse_vm_file(text) {
        Err(SpecFileError::Invalid(e)) => {
            assert_eq!(e.field, "vm[1].nics[0].vlan");
            assert_eq!(e.value, "5000");
            assert!(e.to_string().contains("1-4094"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    let twice = "[[vm]]\nname = \"a\"\nmemory_mib = 512\n[[vm]]\nname = \"a\"\nmemory_mib = 1024\n";
    assert_eq!(
        parse_vm_file(twice),
        Err(SpecFileError::Duplicate {
            kind: "vm",
            name: "a".into()
        })
    );
}

#[test]
fn a_fleet_file_holds_pools_ranges_vips_and_vms() {
    let text = r#"
[[pool]]
name = "lan"
cidr = "10.0.0.0/24"
gateway = "10.0.0.1"
range_start = "10.0.0.100"
range_end = "10.0.0.200"
dns = ["10.0.0.53"]

[[vmid_range]]
name = "prod"
start = 1000
end = 1999

[[vip]]
name = "api"
address = "10.0.0.10/24"
interface = "vmbr0"

[[vm]]
name = "web-1"
memory_mib = 1024
"#;
    let file = parse_fleet_file(text).unwrap();
    assert_eq!(
        (
            file.pool.len(),
            file.vmid_range.len(),
            file.vip.len(),
            file.vm.len()
        ),
        (1, 1, 1, 1)
    );
    let bad = text.replace("start = 1000", "start = 10");
    match parse_fleet_file(&bad) {
        Err(SpecFileError::Invalid(e)) => assert_eq!(e.field, "vmid_range[0].start"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        parse_fleet_file("[[pool]]\nname = \"x\"\nsubnet = \"1\"\n"),
        Err(SpecFileError::Toml(_))
    ));
}
