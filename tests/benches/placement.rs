//! Benchmark (figures, not pass/fail): placing 10,000 VMs one after another on 1,000 hosts,
//! each placement seeing the usage of those before it, as the reconciler does. Hosts differ in
//! size, zone label and templates so the filters do work. Twice: with
//! `fleet::scheduler::choose_with` (what the reconciler and recovery call: the host only) and
//! with `place` (every host's verdict too, what `vm explain` shows); both must make the same
//! choices (same digest).
//!
//! `cargo bench -p pvefleet-tests --bench placement`
#![allow(clippy::expect_used)] // a broken run aborts: its figures mean nothing

use std::time::{Duration, Instant};

use fleet::scheduler::{HostUsage, HostView, StorageView, TemplateView, choose_with, place};
use protocol::fleet::{Capacity, Settings};
use protocol::identity::NodeId;
use protocol::spec::{CloneMode, NicSpec, TemplateSpec, VmSpec};

const HOSTS: u64 = 1_000;
const VMS: usize = 10_000;

fn hosts() -> Vec<HostView> {
    (0..HOSTS)
        .map(|i| {
            let mut h = HostView::new(
                i + 1,
                format!("pve-{i:04}"),
                Capacity {
                    cpus: [32, 64, 128][(i % 3) as usize],
                    memory_mib: [256, 512, 1024][(i % 3) as usize] * 1024,
                },
            );
            h.labels
                .insert("zone".into(), ["a", "b", "c"][(i % 3) as usize].into());
            h.bridges.insert("vmbr0".into());
            h.storages.push(StorageView {
                id: "local-lvm".into(),
                content: ["images".to_string()].into(),
                free_bytes: 4 << 40,
            });
            h.templates.push(TemplateView {
                vmid: 9000,
                name: "debian-12-cloud".into(),
            });
            if i % 2 == 0 {
                h.templates.push(TemplateView {
                    vmid: 9001,
                    name: "ubuntu-24.04-cloud".into(),
                });
            }
            h
        })
        .collect()
}

fn vm(i: usize) -> VmSpec {
    let mut spec = VmSpec::new(format!("vm-{i:05}"), [1024, 2048, 4096, 8192][i % 4]);
    spec.cores = [1, 2, 4][i % 3];
    spec.template = Some(TemplateSpec {
        name: Some(
            if i.is_multiple_of(5) {
                "ubuntu-24.04-cloud"
            } else {
                "debian-12-cloud"
            }
            .into(),
        ),
        vmid: None,
        clone: CloneMode::Linked,
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
    if i.is_multiple_of(7) {
        spec.placement
            .labels
            .insert("zone".into(), ["a", "b", "c"][i % 3].into());
    }
    spec
}

fn main() {
    let vms: Vec<VmSpec> = (0..VMS).map(vm).collect();
    let settings = Settings::default();
    let chosen = run("choose_with (host only)", &vms, |spec, hosts| {
        choose_with(spec, &[], hosts, &settings)
            .map(|c| c.host_id)
            .map_err(|e| e.to_string())
    });
    let placed = run("place (with every verdict)", &vms, |spec, hosts| {
        place(spec, hosts, &settings)
            .map(|d| d.host_id)
            .map_err(|e| e.to_string())
    });
    assert_eq!(chosen, placed, "choose_with and place chose differently");
}

/// Places every VM with `place_one`; prints the figures, returns the choices' digest.
fn run(
    label: &str,
    vms: &[VmSpec],
    place_one: impl Fn(&VmSpec, &[HostView]) -> Result<NodeId, String>,
) -> u64 {
    let mut hosts = hosts();
    let mut placed = 0usize;
    let mut slowest = Duration::ZERO;
    let mut digest: u64 = 0xcbf2_9ce4_8422_2325;
    let start = Instant::now();
    for spec in vms {
        let one = Instant::now();
        match place_one(spec, &hosts) {
            Ok(host_id) => {
                digest = host_id.to_le_bytes().iter().fold(digest, |h, b| {
                    (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
                });
                let host = hosts
                    .iter_mut()
                    .find(|h| h.id == host_id)
                    .expect("the chosen host exists");
                host.usage = HostUsage {
                    vcpus: host.usage.vcpus + u64::from(spec.cores * spec.sockets),
                    memory_mib: host.usage.memory_mib + spec.memory_mib,
                    vm_count: host.usage.vm_count + 1,
                };
                placed += 1;
            }
            Err(e) => eprintln!("{}: {e}", spec.name),
        }
        slowest = slowest.max(one.elapsed());
    }
    let total = start.elapsed();
    let used = hosts.iter().filter(|h| h.usage.vm_count > 0).count();
    let busiest = hosts.iter().map(|h| h.usage.vm_count).max().unwrap_or(0);
    println!("placement with {label}:");
    println!(
        "  {placed} of {VMS} VMs placed on {HOSTS} hosts ({used} hosts used, at most {busiest} VMs on one)"
    );
    println!("  choices digest {digest:#018x}");
    println!(
        "  total {:.3} s, {:.1} µs per VM on average, slowest {:.1} µs",
        total.as_secs_f64(),
        total.as_secs_f64() * 1e6 / VMS as f64,
        slowest.as_secs_f64() * 1e6
    );
    digest
}
