#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking
//! The inventory of a simulated node, read through the real `pve` client: storages with their
//! content types, bridges, the templates, and VMs the fleet owns next to a foreign one.

use std::collections::BTreeSet;
use std::time::Duration;

use node_agent::inventory::{self, HostProbe, Snapshot};
use protocol::agent::OWNERSHIP_TAG;
use pve::calls::{ConfigChanges, CreateOptions};
use pve_sim::config::{NodeConfig, StorageConfig, TemplateConfig};
use pve_sim::{Caller, Sim, SimBackend, SimConfig};
use tokio_util::sync::CancellationToken;

const BOUND: Duration = Duration::from_secs(20);

/// What the simulated node of a test has.
struct SimSettings {
    cpus: u32,
    memory_gib: u64,
    bridges: Vec<String>,
    ceph: bool,
}

impl Default for SimSettings {
    fn default() -> Self {
        SimSettings {
            cpus: 16,
            memory_gib: 64,
            bridges: vec!["vmbr0".into(), "vmbr1".into()],
            ceph: false,
        }
    }
}

/// A simulated node `hosta` and the client reaching it as `pvesh` would (root@pam).
struct PveBackend {
    client: pve::Client,
    node: String,
    sim: Sim,
}

fn sim(settings: SimSettings) -> PveBackend {
    let local = |id: &str, kind: &str, content: &[&str], gib: u64, shared: bool| StorageConfig {
        id: id.into(),
        kind: kind.into(),
        content: content.iter().map(|c| (*c).to_string()).collect(),
        shared,
        total: gib << 30,
        nodes: Vec::new(),
    };
    let mut storages = vec![
        local(
            "local",
            "dir",
            &["iso", "vztmpl", "backup", "snippets"],
            100,
            false,
        ),
        local("local-lvm", "lvmthin", &["images", "rootdir"], 1024, false),
    ];
    if settings.ceph {
        storages.push(local("ceph", "rbd", &["images", "rootdir"], 4096, true));
    }
    let template = |vmid: u32, name: &str| TemplateConfig {
        vmid,
        name: name.into(),
        node: "hosta".into(),
        storage: "local-lvm".into(),
        disk_gib: 8,
        memory_mib: 2048,
        agent: true,
    };
    let sim = Sim::new(SimConfig {
        nodes: vec![NodeConfig {
            name: "hosta".into(),
            cpus: settings.cpus,
            memory: settings.memory_gib << 30,
            bridges: settings.bridges,
            ip: None,
        }],
        storages,
        templates: vec![
            template(9000, "debian-12-cloud"),
            template(9001, "ubuntu-24.04-cloud"),
        ],
        ..SimConfig::fast()
    })
    .unwrap();
    let backend = SimBackend::new(sim.clone(), Caller::root(), "hosta");
    PveBackend {
        client: pve::Client::new(backend),
        node: "hosta".into(),
        sim,
    }
}

/// Creates VM `vmid` named `name` with `tags` directly through the API, as an operator
/// would (not through the agent's operations).
async fn create_vm(pve: &PveBackend, vmid: u32, name: &str, tags: &[&str]) {
    let mut config = ConfigChanges::new().name(name).memory_mib(1024).cores(2);
    if !tags.is_empty() {
        config = config.tags(tags);
    }
    let upid = pve
        .client
        .create_vm(&pve.node, vmid, &config, &CreateOptions::default())
        .await
        .unwrap();
    pve.client.wait_task(&upid, BOUND).await.unwrap();
}

#[tokio::test]
async fn a_simulated_node_reports_storages_bridges_templates_and_its_size() {
    let pve = sim(SimSettings {
        cpus: 12,
        memory_gib: 48,
        ..SimSettings::default()
    });
    let inv = inventory::collect(&pve.client, &pve.node, &HostProbe::new())
        .await
        .unwrap();
    assert_eq!(inv.pve.node, "hosta");
    assert_eq!((inv.pve.cpus, inv.pve.memory_total_bytes), (12, 48 << 30));
    assert!(!inv.pve.version.is_empty() && !inv.pve.version.contains('/'));
    let storages: Vec<_> = inv.storages.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(storages, ["local", "local-lvm"]);
    let local = &inv.storages[0];
    assert!(local.content.contains("snippets"), "{local:?}");
    assert!(!local.shared && local.active && local.available_bytes > 0);
    let lvm = &inv.storages[1];
    assert_eq!(
        lvm.content,
        BTreeSet::from(["images".to_string(), "rootdir".to_string()])
    );
    assert_eq!(
        inv.bridges,
        BTreeSet::from(["vmbr0".to_string(), "vmbr1".to_string()])
    );
    let templates: Vec<_> = inv
        .templates
        .iter()
        .map(|t| (t.vmid, t.name.as_str()))
        .collect();
    assert_eq!(
        templates,
        [(9000, "debian-12-cloud"), (9001, "ubuntu-24.04-cloud")]
    );
    assert!(inv.vms.is_empty(), "templates are not VMs: {:?}", inv.vms);
    // The operating system's view is this machine's.
    assert!(inv.resources.cpus >= 1 && inv.resources.memory_total_bytes > 0);
}

#[tokio::test]
async fn a_shared_ceph_storage_is_reported_when_configured() {
    let pve = sim(SimSettings {
        ceph: true,
        bridges: vec!["vmbr0".into()],
        ..SimSettings::default()
    });
    let inv = inventory::collect(&pve.client, &pve.node, &HostProbe::new())
        .await
        .unwrap();
    let ceph = inv.storages.iter().find(|s| s.id == "ceph").unwrap();
    assert!(ceph.shared && ceph.content.contains("images"), "{ceph:?}");
    assert_eq!(inv.bridges, BTreeSet::from(["vmbr0".to_string()]));
}

#[tokio::test]
async fn owned_and_foreign_vms_are_told_apart_by_the_fleet_tag() {
    let pve = sim(SimSettings::default());
    create_vm(&pve, 100, "web-1", &[OWNERSHIP_TAG, "web"]).await;
    create_vm(&pve, 101, "legacy-db", &[]).await;
    create_vm(&pve, 102, "not-ours", &["pvefleet-old"]).await;
    pve.sim.set_vm_running(101, true);
    let inv = inventory::collect(&pve.client, &pve.node, &HostProbe::new())
        .await
        .unwrap();
    let vms: Vec<_> = inv
        .vms
        .iter()
        .map(|v| (v.vmid, v.name.as_str(), v.owned, v.status.as_str()))
        .collect();
    assert_eq!(
        vms,
        [
            (100, "web-1", true, "stopped"),
            (101, "legacy-db", false, "running"),
            (102, "not-ours", false, "stopped"),
        ]
    );
    let web = &inv.vms[0];
    assert!(web.tags.contains(&"web".to_string()), "{web:?}");
    assert_eq!((web.cpus, web.memory_bytes), (2, 1024 << 20));
}

#[tokio::test]
async fn the_collector_publishes_and_refreshes_on_request() {
    let pve = sim(SimSettings::default());
    let (sender, mut feed) = inventory::feed();
    // A long period: only the first round and the requested refresh can publish.
    let collector = inventory::Collector::new(
        pve.client.clone(),
        pve.node.clone(),
        Duration::from_secs(3600),
        sender,
    );
    let stop = CancellationToken::new();
    let task = tokio::spawn(collector.run(stop.clone()));
    let first = wait_for(&mut feed, |s| s.inventory.vms.is_empty()).await;
    create_vm(&pve, 150, "late", &[OWNERSHIP_TAG]).await;
    feed.refresh();
    let second = wait_for(&mut feed, |s| s.inventory.vms.len() == 1).await;
    assert!(second.collected_at > first.collected_at);
    stop.cancel();
    tokio::time::timeout(BOUND, task).await.unwrap().unwrap();
}

async fn wait_for(
    feed: &mut inventory::InventoryFeed,
    cond: impl Fn(&Snapshot) -> bool,
) -> Snapshot {
    let start = tokio::time::Instant::now();
    loop {
        if let Some(s) = feed.latest().filter(|s| cond(s)) {
            return s;
        }
        assert!(start.elapsed() < BOUND, "no matching inventory published");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
