//! The coordinator as real processes on loopback: a 3-member cluster keeps every acknowledged
//! write through two leader SIGKILLs and a full kill-and-restart, never handing out a VMID or
//! an IP twice nor two IPs to one owner; a 4th member joins by token and catches up by snapshot after compaction; a
//! removed member's certificate is refused afterwards.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bootstrap::cli_config::{CliConfig, CoordinatorAddr};
use client::AdminClient;
use protocol::admin::{
    AllocateIp, AllocateVmid, PoolApply, PoolList, ReadMode, VmApply, VmList, VmidRangeApply,
};
use protocol::spec::{IpPoolSpec, VmSpec, VmidRangeSpec};
use pvefleet_tests::coord_cluster::Cluster;

/// What writers were told succeeded.
#[derive(Default)]
struct Acks {
    vms: BTreeSet<String>,
    vmids: BTreeMap<String, u32>,
    ips: BTreeMap<String, IpAddr>,
}

fn client_for(rt: &tokio::runtime::Runtime, cluster: &Cluster, only: Option<usize>) -> AdminClient {
    let _inside = rt.enter();
    let cfg = CliConfig::load(&cluster.cli_config).unwrap();
    let members = match only {
        Some(i) => {
            let m = cluster.member(i);
            vec![CoordinatorAddr {
                addr: m.listen.to_string(),
                id: m.node_id,
            }]
        }
        None => cfg.coordinators.clone(),
    };
    AdminClient::new(&cfg.load_material().unwrap(), members)
        .unwrap()
        .with_timeout(Duration::from_secs(30))
}

fn setup_resources(rt: &tokio::runtime::Runtime, cluster: &Cluster) {
    let client = client_for(rt, cluster, None);
    rt.block_on(async {
        client
            .call(&PoolApply {
                spec: IpPoolSpec {
                    name: "lan".into(),
                    cidr: "10.50.0.0/16".into(),
                    gateway: Some("10.50.0.1".into()),
                    range_start: "10.50.0.10".into(),
                    range_end: "10.50.250.250".into(),
                    dns: vec![],
                },
            })
            .await
            .unwrap();
        client
            .call(&VmidRangeApply {
                spec: VmidRangeSpec {
                    name: "fleet".into(),
                    start: 1000,
                    end: 900_000,
                },
            })
            .await
            .unwrap();
    });
}

/// Writers that create a VM record, allocate its VMID and an IP, over and over, recording
/// what was acknowledged. Errors (a leader just died) are simply retried with the next item.
fn start_writers(
    rt: &tokio::runtime::Runtime,
    cluster: &Cluster,
    n: usize,
    acks: Arc<Mutex<Acks>>,
    stop: Arc<AtomicBool>,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..n)
        .map(|k| {
            let client = client_for(rt, cluster, None);
            let acks = Arc::clone(&acks);
            let stop = Arc::clone(&stop);
            rt.spawn(async move {
                let mut i = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    let name = format!("w{k}-{i}");
                    if client
                        .call(&VmApply {
                            spec: VmSpec::new(name.clone(), 512),
                        })
                        .await
                        .is_err()
                    {
                        continue;
                    }
                    acks.lock().unwrap().vms.insert(name.clone());
                    if let Ok(r) = client.call(&AllocateVmid { vm: name.clone() }).await {
                        acks.lock().unwrap().vmids.insert(name.clone(), r.vmid);
                    }
                    if let Ok(r) = client
                        .call(&AllocateIp {
                            pool: "lan".into(),
                            owner: name.clone(),
                        })
                        .await
                    {
                        acks.lock().unwrap().ips.insert(name, r.address);
                    }
                }
            })
        })
        .collect()
}

fn wait_acks(acks: &Mutex<Acks>, at_least: usize, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while acks.lock().unwrap().ips.len() < at_least {
        assert!(
            Instant::now() < deadline,
            "{what}: only {} writes acknowledged",
            acks.lock().unwrap().ips.len()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every acknowledged write is in this member's state (read with `mode` from it alone).
fn check_member_has(
    rt: &tokio::runtime::Runtime,
    cluster: &Cluster,
    i: usize,
    acks: &Acks,
    mode: ReadMode,
) {
    let client = client_for(rt, cluster, Some(i));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (vms, pools) = rt.block_on(async {
            (
                client.call(&VmList { read: mode }).await,
                client.call(&PoolList { read: mode }).await,
            )
        });
        let missing = match (&vms, &pools) {
            (Ok(vms), Ok(pools)) => {
                let by_name: BTreeMap<&str, Option<u32>> = vms
                    .vms
                    .iter()
                    .map(|v| (v.spec.name.as_str(), v.assignment.vmid))
                    .collect();
                let held: BTreeMap<IpAddr, String> = pools
                    .pools
                    .iter()
                    .flat_map(|p| p.allocations.iter().map(|(ip, a)| (*ip, format!("{a:?}"))))
                    .collect();
                let mut missing = Vec::new();
                for name in &acks.vms {
                    if !by_name.contains_key(name.as_str()) {
                        missing.push(format!("vm {name}"));
                    }
                }
                for (name, vmid) in &acks.vmids {
                    if by_name.get(name.as_str()) != Some(&Some(*vmid)) {
                        missing.push(format!("vmid {vmid} of {name}"));
                    }
                }
                for (name, ip) in &acks.ips {
                    if !held
                        .get(ip)
                        .is_some_and(|owner| owner.contains(name.as_str()))
                    {
                        missing.push(format!("ip {ip} of {name}"));
                    }
                }
                // No VMID twice in the state itself.
                let vmids: Vec<u32> = vms.vms.iter().filter_map(|v| v.assignment.vmid).collect();
                let unique: BTreeSet<u32> = vmids.iter().copied().collect();
                assert_eq!(
                    unique.len(),
                    vmids.len(),
                    "member {i}: a VMID is assigned twice"
                );
                // No owner got two addresses: a retried allocation (its leader died between
                // commit and reply) answers the first one (tests/tests/it/retried_writes.rs).
                let mut per_owner: BTreeMap<String, usize> = BTreeMap::new();
                for a in pools.pools.iter().flat_map(|p| p.allocations.values()) {
                    *per_owner
                        .entry(format!("{} (nic {:?})", a.owner, a.nic))
                        .or_default() += 1;
                }
                let twice: Vec<_> = per_owner.iter().filter(|(_, n)| **n > 1).collect();
                assert!(
                    twice.is_empty(),
                    "member {i}: owners with two addresses: {twice:?}"
                );
                missing
            }
            _ => vec![format!("read failed: {:?} {:?}", vms.err(), pools.err())],
        };
        if missing.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "member {i} lacks acknowledged writes ({} missing), e.g. {:?}",
            missing.len(),
            &missing[..missing.len().min(5)]
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn voters(v: &serde_json::Value) -> usize {
    v["members"]
        .as_array()
        .map(|m| m.iter().filter(|m| m["role"] == "voter").count())
        .unwrap_or(0)
}

fn three_members() -> Cluster {
    let mut cluster = Cluster::found(&["--snapshot-logs", "200"]);
    for _ in 0..2 {
        let token = cluster.coordinator_token();
        let via = cluster.member(0).listen;
        cluster.join(&token, via);
    }
    cluster.wait_status("three voters", Duration::from_secs(90), |v| voters(v) == 3);
    cluster
}

#[test]
fn acknowledged_writes_survive_leader_sigkills_and_a_full_restart() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut cluster = three_members();
    setup_resources(&rt, &cluster);
    let acks = Arc::new(Mutex::new(Acks::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let writers = start_writers(&rt, &cluster, 4, Arc::clone(&acks), Arc::clone(&stop));

    let mut target = 40;
    for round in 1..=2 {
        wait_acks(&acks, target, "before the kill");
        let leader = cluster.leader_index();
        cluster.kill9(leader);
        let new_leader = cluster.wait_status("a new leader", Duration::from_secs(60), |v| {
            v["leader"]
                .as_u64()
                .is_some_and(|l| l != cluster.member(leader).node_id)
        });
        assert_ne!(
            new_leader["leader"].as_u64(),
            Some(cluster.member(leader).node_id),
            "round {round}"
        );
        target = acks.lock().unwrap().ips.len() + 40;
        wait_acks(&acks, target, "after the kill");
        cluster.start(leader);
        target += 20;
    }
    wait_acks(&acks, target, "after the restarts");
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        rt.block_on(w).unwrap();
    }
    let acks = std::mem::take(&mut *acks.lock().unwrap());
    assert!(
        acks.ips.len() >= 100,
        "too few writes to mean anything: {}",
        acks.ips.len()
    );
    let ips: BTreeSet<IpAddr> = acks.ips.values().copied().collect();
    assert_eq!(ips.len(), acks.ips.len(), "an IP was handed out twice");
    let vmids: BTreeSet<u32> = acks.vmids.values().copied().collect();
    assert_eq!(vmids.len(), acks.vmids.len(), "a VMID was handed out twice");

    for i in 0..cluster.members().len() {
        check_member_has(&rt, &cluster, i, &acks, ReadMode::Stale);
    }

    // Everything killed at once, then restarted: the state is intact.
    for i in 0..cluster.members().len() {
        cluster.kill9(i);
    }
    for i in 0..cluster.members().len() {
        cluster.start(i);
    }
    cluster.wait_status(
        "a leader after the full restart",
        Duration::from_secs(90),
        |v| v["leader"].as_u64().is_some(),
    );
    for i in 0..cluster.members().len() {
        check_member_has(&rt, &cluster, i, &acks, ReadMode::Linearizable);
    }
}

#[test]
fn a_fourth_member_catches_up_by_snapshot_and_a_removed_member_is_refused() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut cluster = three_members();
    setup_resources(&rt, &cluster);
    // Enough writes for several snapshots (every 200 entries) and a compacted log.
    let client = client_for(&rt, &cluster, None);
    let mut acks = Acks::default();
    rt.block_on(async {
        for i in 0..600 {
            let owner = format!("pre-{i}");
            let r = client
                .call(&AllocateIp {
                    pool: "lan".into(),
                    owner: owner.clone(),
                })
                .await
                .unwrap();
            acks.ips.insert(owner, r.address);
        }
    });
    // The leader has compacted its log: entries from the start are gone, so a new member can
    // only be brought up to date by a snapshot.
    let leader = cluster.leader_index();
    let deadline = Instant::now() + Duration::from_secs(60);
    while cluster
        .metric(leader, "pvefleet_raft_purged_index")
        .unwrap_or(0.0)
        < 1.0
    {
        assert!(
            Instant::now() < deadline,
            "the leader never compacted its log"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let token = cluster.coordinator_token();
    let via = cluster.member(1).listen;
    let fourth = cluster.join(&token, via);
    cluster.wait_status("four voters", Duration::from_secs(90), |v| voters(v) == 4);
    check_member_has(&rt, &cluster, fourth, &acks, ReadMode::Stale);
    let snap = cluster
        .metric(fourth, "pvefleet_raft_snapshot_index")
        .unwrap_or(0.0);
    assert!(
        snap >= 1.0,
        "the fourth member holds no snapshot (index {snap})"
    );

    // The token was for one use only.
    let dir = cluster.root().join("reuse");
    let out = std::process::Command::new(pvefleet_tests::test_lab::workspace_binary(
        "pvefleet-coordinator",
    ))
    .args(["join", &via.to_string(), "--data-dir"])
    .arg(&dir)
    .args(["--listen", "127.0.0.1:1"])
    .env(bootstrap::JOIN_TOKEN_ENV, &token)
    .output()
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("token create"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Remove the fourth member: its still-valid certificate is refused from then on.
    let id = cluster.member(fourth).node_id;
    let removed = bootstrap::paths::NodeDir::new(&cluster.member(fourth).dir)
        .load_node_material()
        .unwrap();
    cluster.cli_json(&["member", "remove", &id.to_string()]);
    cluster.wait_status("three voters again", Duration::from_secs(60), |v| {
        voters(v) == 3
    });
    let leader = cluster.leader_index();
    let addr = cluster.member(leader).listen;
    let leader_id = cluster.member(leader).node_id;
    let refused = rt.block_on(async {
        let endpoint =
            transport::Endpoint::client(&removed, transport::TransportConfig::default()).unwrap();
        let peer = transport::PeerIdentity::coordinator(leader_id);
        match endpoint
            .connect(addr, peer, transport::Service::Admin)
            .await
        {
            Ok(conn) => conn
                .call(&VmList {
                    read: ReadMode::Stale,
                })
                .await
                .err(),
            Err(e) => Some(e),
        }
    });
    assert!(
        matches!(refused, Some(transport::TransportError::Refused { .. })),
        "a removed member's certificate must be refused: {refused:?}"
    );
    cluster.kill9(fourth);
}
