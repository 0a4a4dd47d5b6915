// TEMPORARY measurement scaffold (removed before hand-off).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use fleet::reconcile::batch::by_vm;
use fleet::reconcile::{Clock, Inflight, LiveHost, LiveView, Policy, plan};
use fleet::state::{Command, CommandReply, FleetState};
use protocol::admin::FleetApply;
use protocol::agent::{StorageInfo, TemplateInfo};
use protocol::fleet::{Capacity, HostFacts, HostState};
use protocol::spec::*;

fn vm(name: &str) -> VmSpec {
    let mut spec = VmSpec::new(name, 512);
    spec.agent = true;
    spec.template = Some(TemplateSpec { name: Some("debian-12-cloud".into()), vmid: None, clone: CloneMode::Linked, storage: None });
    spec.nics = vec![NicSpec { model: NicModel::Virtio, bridge: "vmbr0".into(), vlan: None, mac: None, firewall: false, mtu: None, ip: Some(NicIp::Pool("lan".into())) }];
    spec.cloud_init = Some(CloudInitSpec { user: Some("ops".into()), ..CloudInitSpec::default() });
    spec
}

#[test]
#[ignore]
fn scratch_timing() {
    let n: usize = std::env::var("N").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let hosts: u64 = std::env::var("H").ok().and_then(|v| v.parse().ok()).unwrap_or(200);
    let mut s = FleetState::new();
    let mut idx = 0u64;
    let now = 1_800_000_000_000u64;
    let mut run = |s: &mut FleetState, c: Command| { idx += 1; let r = s.apply(idx, c); if let CommandReply::Refused(e) = &r { panic!("{e}"); } r };
    for h in 1..=hosts {
        let id = h + 10;
        run(&mut s, Command::RegisterHost { id, name: format!("sim{h:03}"), labels: Default::default(), capacity: Capacity { cpus: 16, memory_mib: 65536 }, now });
        run(&mut s, Command::SetHostState { id, state: HostState::Online, now });
        run(&mut s, Command::SetHostFacts { id, facts: Box::new(HostFacts {
            pve_version: "9.1".into(),
            storages: vec![StorageInfo { id: "local-lvm".into(), kind: "lvmthin".into(), content: ["images".to_string()].into(), shared: false, active: true, total_bytes: 1 << 40, available_bytes: 1 << 40 }],
            bridges: ["vmbr0".to_string()].into(),
            templates: vec![TemplateInfo { vmid: 9000, name: "debian-12-cloud".into() }],
            foreign_vmids: vec![], updated_at: now }) });
    }
    let req = FleetApply {
        pools: vec![IpPoolSpec { name: "lan".into(), cidr: "10.30.0.0/16".into(), gateway: Some("10.30.0.1".into()), range_start: "10.30.0.10".into(), range_end: "10.30.250.250".into(), dns: vec![] }],
        vmid_ranges: vec![VmidRangeSpec { name: "fleet".into(), start: 1000, end: 99_999 }],
        vms: (1..=n).map(|i| vm(&format!("vm-{i:05}"))).collect(),
        ..FleetApply::default()
    };
    let t = Instant::now();
    let bytes = fleet::state::encode_command(&Command::ApplyFleet { request: Box::new(req.clone()), now }, protocol::version::CURRENT).unwrap();
    println!("encode ApplyFleet: {:?} ({} bytes)", t.elapsed(), bytes.len());
    let t = Instant::now();
    run(&mut s, Command::ApplyFleet { request: Box::new(req), now });
    println!("apply ApplyFleet {n}: {:?}", t.elapsed());
    let live = LiveView { leading_since_ms: 0, hosts: (1..=hosts).map(|h| (h + 10, LiveHost { last_beat_ms: 100_000, inventory_ms: Some(100_000), vms: Arc::new(BTreeMap::new()) })).collect() };
    let policy = Policy { lease_ms: 10_000, resync_ms: 60_000, ip_wait_secs: 60 };
    let clock = Clock { mono_ms: 100_100, unix_ms: now + 1000 };
    for pass in 1..=3 {
        let t = Instant::now();
        let actions = plan(&s, &live, &Inflight::default(), &policy, clock);
        println!("plan pass {pass}: {:?}, {} actions", t.elapsed(), actions.len());
        let steps = by_vm(actions);
        let t = Instant::now();
        let mut entries = 0;
        let mut biggest = 0;
        for chunk in steps.chunks(500) {
            let chains: Vec<Vec<Command>> = chunk.iter().map(|c| c.chain(now + 1000)).collect();
            if chains.iter().all(Vec::is_empty) { continue; }
            let c = Command::Batch { chains };
            let b = fleet::state::encode_command(&c, protocol::version::CURRENT).unwrap();
            biggest = biggest.max(b.len());
            run(&mut s, c);
            entries += 1;
        }
        println!("  applied {entries} batch entries (largest {biggest} bytes): {:?}", t.elapsed());
    }
    let t = Instant::now();
    let snap = fleet::state::encode_snapshot(&s, protocol::version::CURRENT).unwrap();
    println!("snapshot: {:?} ({} bytes)", t.elapsed(), snap.len());
}
