//! Table tests of the configure plan: a VM configured as the base spec plans nothing, and each
//! single difference (in the spec or behind the fleet's back in PVE) plans exactly its change.

use std::net::{IpAddr, Ipv4Addr};

use protocol::agent::EnsureVm;
use protocol::fleet::NicAddress;
use protocol::spec::{
    Bios as SpecBios, CloudInitSpec, DiskOptions, DiskSpec, NicIp, NicSpec, TemplateSpec, VmSpec,
};
use serde_json::{Map, Value, json};

use super::*;
use crate::ops::desired::desired_vm;

const SNIPPET: &str = "local:snippets/pvefleet-web-1.yaml";

fn base_spec() -> VmSpec {
    let mut spec = VmSpec::new("web-1", 2048);
    spec.cores = 2;
    spec.tags = vec!["web".into()];
    spec.agent = true;
    spec.template = Some(TemplateSpec {
        name: Some("debian-12-cloud".into()),
        vmid: None,
        clone: Default::default(),
        storage: None,
    });
    spec.disks = vec![DiskSpec {
        slot: "scsi0".into(),
        storage: None,
        size_gib: 20,
        options: DiskOptions::default(),
    }];
    spec.nics = vec![NicSpec {
        model: Default::default(),
        bridge: "vmbr0".into(),
        vlan: Some(10),
        mac: None,
        firewall: true,
        mtu: None,
        ip: Some(NicIp::Pool("lan".into())),
    }];
    spec.cloud_init = Some(CloudInitSpec {
        user: Some("ops".into()),
        ssh_keys: vec!["ssh-ed25519 AAAAC3Nz ops@laptop".into()],
        dns_servers: vec![],
        search_domain: Some("fleet.example".into()),
        user_data: Some("#cloud-config\n".into()),
    });
    spec
}

fn cmd(spec: VmSpec) -> EnsureVm {
    EnsureVm {
        spec,
        generation: 3,
        vmid: 101,
        ips: vec![NicAddress {
            nic: 0,
            pool: "lan".into(),
            address: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 5)),
            prefix_len: 24,
            gateway: Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))),
        }],
        pool_dns: vec!["10.0.0.53".into()],
        ip_wait_secs: 0,
        take_over: None,
    }
}

fn desired(spec: VmSpec) -> DesiredVm {
    desired_vm(&cmd(spec), Some(SNIPPET.into())).unwrap()
}

/// What PVE holds for the base spec after clone and configure (as GET config returns it).
fn base_config() -> Map<String, Value> {
    let block = notes::render_block("web-1", 3, false);
    json!({
        "agent": "1",
        "boot": "order=scsi0",
        "cicustom": format!("user={SNIPPET}"),
        "ciuser": "ops",
        "cores": 2,
        "description": format!("{block}\n"),
        "digest": "0123456789abcdef0123456789abcdef01234567",
        "ide2": "local-lvm:vm-101-cloudinit,media=cdrom",
        "ipconfig0": "ip=10.0.0.5/24,gw=10.0.0.1",
        "memory": "2048",
        "name": "web-1",
        "nameserver": "10.0.0.53",
        "net0": "virtio=BC:24:11:AA:BB:CC,bridge=vmbr0,firewall=1,tag=10",
        "ostype": "l26",
        "scsi0": "local-lvm:base-9000-disk-0/vm-101-disk-0,size=20G",
        "scsihw": "virtio-scsi-single",
        "searchdomain": "fleet.example",
        "sshkeys": "ssh-ed25519%20AAAAC3Nz%20ops%40laptop",
        "tags": "pvefleet;web",
    })
    .as_object()
    .cloned()
    .unwrap()
}

fn config(map: Map<String, Value>) -> VmConfig {
    serde_json::from_value(Value::Object(map)).unwrap()
}

fn keys(plan: &ConfigPlan) -> Vec<&str> {
    plan.set.keys().map(String::as_str).collect()
}

#[test]
fn a_vm_configured_as_the_spec_plans_nothing() {
    let p = plan(&desired(base_spec()), &config(base_config()), true).unwrap();
    assert!(p.is_empty(), "{p:?}");
}

type SpecChange = fn(&mut VmSpec);
type ConfigChange = fn(&mut Map<String, Value>);
/// What changes, in the spec, in PVE, and the keys and values planned.
type Case = (
    &'static str,
    SpecChange,
    ConfigChange,
    Vec<(&'static str, &'static str)>,
);

#[test]
fn each_difference_plans_exactly_its_change() {
    let none: SpecChange = |_| {};
    let same: ConfigChange = |_| {};
    let cases: Vec<Case> = vec![
        (
            "memory drifted behind the fleet's back",
            none,
            |c| {
                c.insert("memory".into(), json!("4096"));
            },
            vec![("memory", "2048")],
        ),
        ("more cores", |s| s.cores = 4, same, vec![("cores", "4")]),
        (
            "ownership tag lost",
            none,
            |c| {
                c.insert("tags".into(), json!("web"));
            },
            vec![("tags", "pvefleet;web")],
        ),
        (
            "tags compare as sets, case-insensitively",
            |s| s.tags = vec!["WEB".into(), "web".into()],
            |c| {
                c.insert("tags".into(), json!("web;pvefleet;web"));
            },
            vec![],
        ),
        (
            "bridge and VLAN change keep the MAC PVE made",
            |s| {
                s.nics[0].bridge = "vmbr1".into();
                s.nics[0].vlan = None;
            },
            same,
            vec![("net0", "virtio=BC:24:11:AA:BB:CC,bridge=vmbr1,firewall=1")],
        ),
        (
            "firewall off",
            |s| s.nics[0].firewall = false,
            same,
            vec![(
                "net0",
                "virtio=BC:24:11:AA:BB:CC,bridge=vmbr0,firewall=0,tag=10",
            )],
        ),
        (
            "a fixed MAC replaces the generated one",
            |s| s.nics[0].mac = Some("02:00:00:00:00:01".into()),
            same,
            vec![(
                "net0",
                "virtio=02:00:00:00:00:01,bridge=vmbr0,firewall=1,tag=10",
            )],
        ),
        (
            "a second NIC is added",
            |s| {
                let mut nic = s.nics[0].clone();
                nic.ip = None;
                nic.vlan = None;
                nic.firewall = false;
                nic.mtu = Some(9000);
                s.nics.push(nic);
            },
            same,
            vec![("net1", "model=virtio,bridge=vmbr0,mtu=9000")],
        ),
        (
            "disk options change on the same volume",
            |s| {
                s.disks[0].options.ssd = true;
                s.disks[0].options.discard = true;
            },
            same,
            vec![(
                "scsi0",
                "local-lvm:base-9000-disk-0/vm-101-disk-0,discard=on,size=20G,ssd=1",
            )],
        ),
        (
            "a new disk on its storage",
            |s| {
                s.disks.push(DiskSpec {
                    slot: "scsi1".into(),
                    storage: Some("local-lvm".into()),
                    size_gib: 50,
                    options: DiskOptions {
                        iothread: true,
                        ..DiskOptions::default()
                    },
                });
            },
            same,
            vec![("scsi1", "local-lvm:50,iothread=1")],
        ),
        (
            "guest agent off keeps its other settings",
            |s| s.agent = false,
            |c| {
                c.insert("agent".into(), json!("1,fstrim_cloned_disks=1"));
            },
            vec![("agent", "0,fstrim_cloned_disks=1")],
        ),
        (
            "spec DNS servers win over the pool's",
            |s| {
                if let Some(ci) = s.cloud_init.as_mut() {
                    ci.dns_servers = vec!["1.1.1.1".into(), "9.9.9.9".into()];
                }
            },
            same,
            vec![("nameserver", "1.1.1.1 9.9.9.9")],
        ),
        (
            "a static address replaces the pool address",
            |s| {
                s.nics[0].ip = Some(NicIp::Static {
                    address: "192.168.1.10/24".into(),
                    gateway: Some("192.168.1.1".into()),
                })
            },
            same,
            vec![("ipconfig0", "ip=192.168.1.10/24,gw=192.168.1.1")],
        ),
        (
            "dhcp",
            |s| s.nics[0].ip = Some(NicIp::Dhcp),
            same,
            vec![("ipconfig0", "ip=dhcp")],
        ),
        (
            "ssh keys are stored URL-encoded",
            |s| {
                if let Some(ci) = s.cloud_init.as_mut() {
                    ci.ssh_keys.push("ssh-rsa AAAAB3 second@host".into());
                }
            },
            same,
            vec![(
                "sshkeys",
                "ssh-ed25519%20AAAAC3Nz%20ops%40laptop%0Assh-rsa%20AAAAB3%20second%40host",
            )],
        ),
        (
            "operator notes outside the block are kept; the generation moves",
            none,
            |c| {
                let text = format!(
                    "Owner: team web\n\n{}",
                    notes::render_block("web-1", 2, false)
                );
                c.insert("description".into(), json!(text));
            },
            vec![(
                "description",
                "Owner: team web\n\n<!-- pvefleet:managed -->\nManaged by pvefleet: vm=web-1 generation=3\n<!-- /pvefleet:managed -->",
            )],
        ),
        (
            "OVMF gets an EFI disk on the VM's disk storage",
            |s| s.bios = Some(SpecBios::Ovmf),
            same,
            vec![
                ("bios", "ovmf"),
                ("efidisk0", "local-lvm:1,efitype=4m,pre-enrolled-keys=0"),
            ],
        ),
        (
            "a missing cloud-init drive is added on ide2",
            none,
            |c| {
                c.remove("ide2");
            },
            vec![("ide2", "local-lvm:cloudinit,media=cdrom")],
        ),
        (
            "a cloud-init drive on a dir storage counts as present",
            none,
            |c| {
                c.insert(
                    "ide2".into(),
                    json!("local:101/vm-101-cloudinit.qcow2,media=cdrom,size=4M"),
                );
            },
            vec![],
        ),
        (
            "onboot and protection",
            |s| {
                s.onboot = true;
                s.protection = true;
            },
            same,
            vec![("onboot", "1"), ("protection", "1")],
        ),
        (
            "cpu type compares without flags",
            |s| s.cpu = Some("host".into()),
            |c| {
                c.insert("cpu".into(), json!("cputype=host,flags=+aes"));
            },
            vec![],
        ),
        (
            "balloon off",
            |s| s.balloon_mib = Some(0),
            same,
            vec![("balloon", "0")],
        ),
    ];
    for (what, spec_change, config_change, want) in cases {
        let mut spec = base_spec();
        spec_change(&mut spec);
        let mut cfg = base_config();
        config_change(&mut cfg);
        let p = plan(&desired(spec), &config(cfg), false).unwrap_or_else(|e| panic!("{what}: {e}"));
        let got: Vec<(&str, &str)> = p
            .set
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(got, want, "{what}");
        assert!(p.delete.is_empty() && p.resizes.is_empty(), "{what}: {p:?}");
    }
}

#[test]
fn growing_is_a_resize_and_shrinking_is_refused_naming_the_slot() {
    let mut spec = base_spec();
    spec.disks[0].size_gib = 32;
    let p = plan(&desired(spec), &config(base_config()), true).unwrap();
    assert_eq!(
        p.resizes,
        vec![Resize {
            slot: "scsi0".into(),
            from_bytes: 20 << 30,
            to_bytes: 32 << 30,
        }]
    );
    assert!(!p.has_config_changes());

    let mut spec = base_spec();
    spec.disks[0].size_gib = 8;
    let err = plan(&desired(spec), &config(base_config()), false).unwrap_err();
    assert_eq!(
        err,
        PlanError::Shrink {
            slot: "scsi0".into(),
            current_gib: 20,
            desired_gib: 8
        }
    );
    assert!(err.to_string().contains("scsi0"), "{err}");
}

#[test]
fn removed_nics_and_own_user_data_are_deleted() {
    let mut cfg = base_config();
    cfg.insert(
        "net1".into(),
        json!("virtio=BC:24:11:00:00:01,bridge=vmbr0"),
    );
    cfg.insert("net5".into(), json!("e1000=BC:24:11:00:00:02,bridge=vmbr0"));
    let mut spec = base_spec();
    if let Some(ci) = spec.cloud_init.as_mut() {
        ci.user_data = None;
    }
    let d = desired_vm(&cmd(spec), None).unwrap();
    let p = plan(&d, &config(cfg), false).unwrap();
    assert_eq!(p.delete, vec!["net1", "net5", "cicustom"]);
    assert!(p.set.is_empty(), "{p:?}");
    // Someone else's cicustom stays.
    let mut cfg = base_config();
    cfg.insert(
        "cicustom".into(),
        json!("user=local:snippets/hand-made.yaml"),
    );
    let p = plan(&d, &config(cfg), false).unwrap();
    assert!(p.is_empty(), "{p:?}");
}

#[test]
fn a_running_vm_keeps_only_cold_changes_pending() {
    let mut spec = base_spec();
    spec.cores = 4;
    spec.memory_mib = 4096;
    spec.nics[0].bridge = "vmbr1".into();
    spec.description = "now with text".into();
    let d = desired(spec);
    let running = plan(&d, &config(base_config()), true).unwrap();
    assert_eq!(keys(&running), ["cores", "description", "memory", "net0"]);
    assert_eq!(running.needs_restart, ["cores", "memory"]);
    let mut hot = base_config();
    hot.insert("hotplug".into(), json!("network,disk,memory"));
    let p = plan(&d, &config(hot), true).unwrap();
    assert_eq!(p.needs_restart, ["cores"]);
    let stopped = plan(&d, &config(base_config()), false).unwrap();
    assert!(stopped.needs_restart.is_empty());
}

#[test]
fn a_scratch_vm_is_planned_whole_against_an_empty_config() {
    let mut spec = base_spec();
    spec.template = None;
    spec.disks[0].storage = Some("local-lvm".into());
    spec.bios = Some(SpecBios::Ovmf);
    let p = plan(&desired(spec), &VmConfig::default(), false).unwrap();
    assert_eq!(
        keys(&p),
        [
            "agent",
            "bios",
            "cicustom",
            "ciuser",
            "cores",
            "description",
            "efidisk0",
            "ide2",
            "ipconfig0",
            "memory",
            "name",
            "nameserver",
            "net0",
            "scsi0",
            "searchdomain",
            "sshkeys",
            "tags"
        ]
    );
    assert_eq!(p.set["scsi0"], "local-lvm:20");
    assert_eq!(p.set["net0"], "model=virtio,bridge=vmbr0,firewall=1,tag=10");
    assert!(p.creation().validate().is_ok());
}

#[test]
fn unplannable_specs_name_what_is_missing() {
    let mut spec = base_spec();
    spec.disks.push(DiskSpec {
        slot: "scsi1".into(),
        storage: None,
        size_gib: 1,
        options: DiskOptions::default(),
    });
    let err = plan(&desired(spec), &config(base_config()), false).unwrap_err();
    assert!(
        matches!(err, PlanError::NoStorage { ref what } if what == "disk scsi1"),
        "{err}"
    );

    let mut spec = base_spec();
    spec.disks[0].slot = "ide2".into();
    spec.cloud_init = None;
    let err = plan(&desired(spec), &config(base_config()), false).unwrap_err();
    assert!(
        matches!(err, PlanError::SlotTaken { ref slot, .. } if slot == "ide2"),
        "{err}"
    );

    let mut spec = base_spec();
    spec.cpu = Some("not a cpu".into());
    let err = plan(&desired(spec), &config(base_config()), false).unwrap_err();
    assert!(
        matches!(err, PlanError::Invalid { ref field, ref reason } if field == "cpu" && reason.contains("not a cpu")),
        "{err}"
    );

    let mut ensure = cmd(base_spec());
    ensure.ips.clear();
    let err = desired_vm(&ensure, None).unwrap_err();
    assert_eq!(
        err,
        PlanError::MissingAddress {
            nic: 0,
            pool: "lan".into()
        }
    );
}

#[test]
fn an_ha_guest_never_starts_on_boot_by_itself() {
    use protocol::spec::{DesiredState, HaSpec, HaState};
    let with = |onboot: bool, ha: HaSpec| {
        let mut spec = base_spec();
        spec.onboot = onboot;
        if matches!(ha.state, Some(HaState::Stopped | HaState::Disabled)) {
            spec.state = DesiredState::Stopped;
        }
        spec.ha = ha;
        let d = desired(spec);
        (d.onboot, d.ha)
    };
    assert_eq!(with(true, HaSpec::none()), (true, false));
    assert_eq!(
        with(true, HaSpec::started()),
        (false, true),
        "fencing would be undone at boot"
    );
    assert_eq!(with(false, HaSpec::started()), (false, true));
    assert_eq!(
        with(true, HaSpec::with_state(HaState::Stopped)),
        (false, true),
        "a stopped HA guest is fenced too"
    );
    // Neither is fenced: no `ha=1` mark, and `onboot` is the spec's.
    for state in [HaState::Disabled, HaState::Ignored] {
        assert_eq!(
            with(true, HaSpec::with_state(state)),
            (true, false),
            "{state}"
        );
    }
}
