//! The shipped examples stay valid: `examples/fleet.toml` (what `pvefleet-lab demo` applies)
//! parses and validates as the CLI reads it, holds the shapes the README promises, and every VM
//! of it finds a host among the demo's five simulated hosts; `examples/vm.toml` parses as a VM
//! file.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use std::collections::BTreeSet;
use std::path::PathBuf;

use fleet::scheduler::{HostUsage, HostView, StorageView, TemplateView, place};
use protocol::fleet::{Capacity, Settings};
use protocol::spec::{
    CloneMode, DesiredState, FleetSpecFile, NicIp, validate_ip_pool, validate_spec, validate_vip,
    validate_vmid_range,
};
use protocol::spec::{parse_fleet_file, parse_vm_file, read_vm_file};

fn example(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn fleet() -> FleetSpecFile {
    parse_fleet_file(&example("fleet.toml")).unwrap_or_else(|e| panic!("examples/fleet.toml: {e}"))
}

#[test]
fn the_example_fleet_parses_and_every_entry_is_valid() {
    let file = fleet();
    for pool in &file.pool {
        validate_ip_pool(pool).unwrap_or_else(|e| panic!("pool {}: {e}", pool.name));
    }
    for range in &file.vmid_range {
        validate_vmid_range(range).unwrap_or_else(|e| panic!("range {}: {e}", range.name));
    }
    for vip in &file.vip {
        validate_vip(vip).unwrap_or_else(|e| panic!("vip {}: {e}", vip.name));
    }
    for vm in &file.vm {
        validate_spec(vm).unwrap_or_else(|e| panic!("vm {}: {e}", vm.name));
    }
    // Its groups are expanded, and `vm apply -f` reads the same VMs from it.
    assert_eq!(
        file.groups,
        [("web".to_string(), 4), ("worker".to_string(), 3)]
    );
    let (vms, groups) = read_vm_file(&example("fleet.toml")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((vms, groups), (file.vm.clone(), file.groups.clone()));
    let web: Vec<&str> = file
        .vm
        .iter()
        .filter(|v| v.group.as_ref().is_some_and(|g| g.group == "web"))
        .map(|v| v.name.as_str())
        .collect();
    assert_eq!(web, ["web-1", "web-2", "web-3", "web-4"]);
}

#[test]
fn the_example_fleet_has_the_promised_shapes() {
    let file = fleet();
    assert!(file.vm.len() >= 12, "only {} VMs", file.vm.len());
    assert_eq!(file.pool.len(), 1, "one IP pool");
    assert_eq!(file.pool[0].cidr, "10.20.0.0/24");
    assert!(file.pool[0].gateway.is_some() && !file.pool[0].dns.is_empty());
    assert!(!file.vmid_range.is_empty(), "a VMID range");
    assert_eq!(file.vip.len(), 1, "one VIP");
    assert_eq!(file.vip[0].interface, "vmbr0");

    let template = |vm: &protocol::spec::VmSpec| vm.template.as_ref().and_then(|t| t.name.clone());
    let count =
        |pred: &dyn Fn(&protocol::spec::VmSpec) -> bool| file.vm.iter().filter(|v| pred(v)).count();
    assert!(
        count(&|v| v.name.starts_with("web-")
            && template(v).as_deref() == Some("debian-12-cloud")
            && v.template.as_ref().unwrap().clone == CloneMode::Linked
            && v.pool_nics().count() == 1)
            >= 4,
        "4 web servers: linked clones of debian-12-cloud with a pool address"
    );
    assert!(
        count(&|v| v.name.starts_with("db-")
            && v.template
                .as_ref()
                .is_some_and(|t| t.clone == CloneMode::Full)
            && v.disks.iter().any(|d| d.storage.is_some())
            && v.memory_mib >= 8192)
            >= 2,
        "2 databases: full clones with a data disk and more memory"
    );
    assert!(count(&|v| v.name.starts_with("cache")) >= 1, "a cache");
    assert!(
        count(&|v| template(v).as_deref() == Some("ubuntu-24.04-cloud")) >= 3,
        "workers from ubuntu-24.04-cloud"
    );
    assert!(count(&|v| v.template.is_none()) >= 1, "a VM from scratch");
    assert!(
        count(&|v| v.state == DesiredState::Stopped) >= 1,
        "a VM kept stopped"
    );
    assert!(
        count(&|v| v
            .cloud_init
            .as_ref()
            .and_then(|c| c.user_data.as_deref())
            .is_some_and(|d| d.starts_with("#cloud-config")))
            >= 1,
        "a VM with cloud-config user data"
    );
    assert!(
        count(&|v| !v.placement.labels.is_empty()) >= 1
            && count(&|v| !v.placement.exclude_hosts.is_empty()) >= 1,
        "placement by labels and by excluded hosts"
    );
    // Every pool a NIC names is defined in the file, so applying it in order never fails on a
    // missing reference.
    let pools: BTreeSet<&str> = file.pool.iter().map(|p| p.name.as_str()).collect();
    for vm in &file.vm {
        for nic in &vm.nics {
            if let Some(NicIp::Pool(p)) = &nic.ip {
                assert!(
                    pools.contains(p.as_str()),
                    "{}: pool {p} undefined",
                    vm.name
                );
            }
        }
    }
}

/// The hosts `pvefleet-lab demo` starts, as their agents report them: pve-a.. with zone a/b in
/// turn, 16 CPUs, 64 GiB, the two simulated templates, `local` (snippets, no disk images) and
/// `local-lvm` storages, bridge `vmbr0`.
fn demo_hosts(n: u64) -> Vec<HostView> {
    (0..n)
        .map(|i| {
            let letter = char::from(b'a' + u8::try_from(i).unwrap());
            let mut h = HostView::new(
                100 + i,
                format!("pve-{letter}"),
                Capacity {
                    cpus: 16,
                    memory_mib: 64 * 1024,
                },
            );
            h.labels
                .insert("zone".into(), if i % 2 == 0 { "a" } else { "b" }.into());
            h.bridges.insert("vmbr0".into());
            for (id, content) in [
                ("local", "backup iso snippets vztmpl"),
                ("local-lvm", "images rootdir"),
            ] {
                h.storages.push(StorageView {
                    id: id.into(),
                    content: content.split(' ').map(String::from).collect(),
                    free_bytes: 400 << 30,
                });
            }
            h.templates = vec![
                TemplateView {
                    vmid: 9000,
                    name: "debian-12-cloud".into(),
                },
                TemplateView {
                    vmid: 9001,
                    name: "ubuntu-24.04-cloud".into(),
                },
            ];
            h
        })
        .collect()
}

#[test]
fn every_vm_of_the_example_fleet_finds_a_host_among_the_demo_hosts() {
    let file = fleet();
    let mut hosts = demo_hosts(5);
    let settings = Settings::default();
    let mut used_hosts = BTreeSet::new();
    for vm in &file.vm {
        let decision = place(vm, &hosts, &settings).unwrap_or_else(|e| panic!("{e}"));
        let host = hosts.iter_mut().find(|h| h.id == decision.host_id).unwrap();
        if let Some(zone) = vm.placement.labels.get("zone") {
            assert_eq!(host.labels.get("zone"), Some(zone), "{}", vm.name);
        }
        assert!(
            !vm.placement.exclude_hosts.contains(&host.name),
            "{}",
            vm.name
        );
        host.usage = HostUsage {
            vcpus: host.usage.vcpus + u64::from(vm.cores * vm.sockets),
            memory_mib: host.usage.memory_mib + vm.memory_mib,
            vm_count: host.usage.vm_count + 1,
        };
        used_hosts.insert(decision.host_name);
    }
    assert_eq!(used_hosts.len(), 5, "the fleet spreads over every host");
}

#[test]
fn the_single_vm_example_parses_as_a_vm_file() {
    let specs = parse_vm_file(&example("vm.toml")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(specs.len(), 1);
}

/// The README's VIP example (the PVE API behind one address) is a valid fleet file, with its
/// HTTPS check as the text explains it.
#[test]
fn the_readme_vip_example_parses_and_is_valid() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let block = readme
        .split("```toml\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .find(|b| b.contains("[[vip]]"))
        .expect("a TOML block with [[vip]] in the README");
    let file = parse_fleet_file(block).unwrap_or_else(|e| panic!("README VIP example: {e}"));
    let vip = &file.vip[0];
    validate_vip(vip).unwrap();
    assert_eq!(vip.hosts, ["pve1", "pve2", "pve3"]);
    assert!(!vip.preempt, "preemption is off unless asked for");
    let check = &vip.checks[0];
    assert_eq!(check.kind, protocol::spec::CheckType::Https);
    assert_eq!((check.port, check.expect_status), (Some(8006), Some(401)));
}
