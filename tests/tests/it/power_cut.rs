//! The whole cluster loses power while writes are in flight: every member is SIGKILLed at
//! once (nothing gets to flush on its way out), each member's Raft store is reopened from its
//! data directory, and the logs must be whole and agree with each other; restarted, the
//! cluster must hold every write it acknowledged. (A SIGKILL keeps the page cache, so it stands
//! for a power cut only where every acknowledgement waited for an `fsync`; the journal's own
//! tests cut the power under it, `raft/src/store/journal/tests.rs`.)

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bootstrap::cli_config::{CliConfig, CoordinatorAddr};
use client::AdminClient;
use openraft::storage::RaftLogStorage;
use openraft::{EntryPayload, RaftLogReader};
use protocol::admin::{AllocateIp, PoolApply, PoolList, ReadMode};
use protocol::fleet::AllocationOwner;
use protocol::spec::IpPoolSpec;
use pvefleet_tests::coord_cluster::Cluster;
use raft::types::Entry;

/// Any snapshot is fine: only the log is looked at here.
struct Opaque;

impl raft::Machine for Opaque {
    fn apply(&mut self, _index: u64, _command: &[u8]) -> Result<Vec<u8>, String> {
        Ok(Vec::new())
    }
    fn snapshot(&self) -> Result<Vec<u8>, String> {
        Ok(Vec::new())
    }
    fn restore(&mut self, _snapshot: &[u8]) -> Result<(), String> {
        Ok(())
    }
}

fn client(rt: &tokio::runtime::Runtime, cluster: &Cluster, only: Option<usize>) -> AdminClient {
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

/// A member's log as its store holds it after the crash: (purge point, entries after it).
fn log_of(dir: &Path, rt: &tokio::runtime::Runtime) -> (Option<u64>, BTreeMap<u64, Entry>) {
    let store = dir.join(coordinator::config::RAFT_DIR);
    let (mut log, _sm) = raft::store::open(&store, Opaque)
        .unwrap_or_else(|e| panic!("{} does not reopen: {e}", store.display()));
    rt.block_on(async {
        let state = log.get_log_state().await.unwrap();
        let purged = state.last_purged_log_id.map(|id| id.index);
        let entries = log.try_get_log_entries(0..).await.unwrap();
        let indexes: Vec<u64> = entries.iter().map(|e| e.log_id.index).collect();
        assert!(
            indexes.windows(2).all(|w| w[1] == w[0] + 1),
            "{}: a hole in the log: {indexes:?}",
            store.display()
        );
        let entries = entries
            .into_iter()
            .filter(|e| Some(e.log_id.index) > purged)
            .map(|e| (e.log_id.index, e))
            .collect();
        (purged, entries)
    })
}

fn payload(e: &Entry) -> String {
    match &e.payload {
        EntryPayload::Normal(c) => format!("{c:?}:{:?}", c.0),
        other => format!("{other:?}"),
    }
}

#[test]
fn after_a_power_cut_of_every_member_the_logs_agree_and_nothing_acknowledged_is_lost() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut cluster = Cluster::found(&["--snapshot-logs", "100"]);
    for _ in 0..2 {
        let token = cluster.coordinator_token();
        let via = cluster.member(0).listen;
        cluster.join(&token, via);
    }
    cluster.wait_status("three voters", Duration::from_secs(90), |v| {
        v["members"]
            .as_array()
            .is_some_and(|m| m.iter().filter(|m| m["role"] == "voter").count() == 3)
    });
    let admin = client(&rt, &cluster, None);
    rt.block_on(admin.call(&PoolApply {
        spec: IpPoolSpec {
            name: "cut".into(),
            cidr: "10.60.0.0/16".into(),
            gateway: None,
            range_start: "10.60.0.10".into(),
            range_end: "10.60.250.250".into(),
            dns: vec![],
        },
    }))
    .unwrap();

    let acks: Arc<Mutex<BTreeMap<String, IpAddr>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..8)
        .map(|k| {
            let c = client(&rt, &cluster, None).with_timeout(Duration::from_secs(2));
            let (acks, stop) = (Arc::clone(&acks), Arc::clone(&stop));
            rt.spawn(async move {
                for i in 0..100_000 {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let owner = format!("w{k}-{i}");
                    let asked = AllocateIp {
                        pool: "cut".into(),
                        owner: owner.clone(),
                    };
                    if let Ok(r) = c.call(&asked).await {
                        acks.lock().unwrap().insert(owner, r.address);
                    }
                }
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    while acks.lock().unwrap().len() < 300 {
        assert!(Instant::now() < deadline, "too few writes acknowledged");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The power goes: every member at once, with the writers still writing.
    for i in 0..cluster.members().len() {
        cluster.kill9(i);
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        rt.block_on(w).unwrap();
    }
    let acks = std::mem::take(&mut *acks.lock().unwrap());

    // Each log is whole, and where two logs hold the same log id they hold the same entry
    // (Raft's log matching).
    let logs: Vec<_> = cluster
        .members()
        .iter()
        .map(|m| log_of(&m.dir, &rt))
        .collect();
    for (a, (_, left)) in logs.iter().enumerate() {
        for (b, (_, right)) in logs.iter().enumerate().skip(a + 1) {
            for (index, l) in left {
                if let Some(r) = right.get(index)
                    && r.log_id == l.log_id
                {
                    assert_eq!(
                        payload(l),
                        payload(r),
                        "members {a} and {b} disagree on entry {}",
                        l.log_id
                    );
                }
            }
        }
    }

    // Restarted, the cluster holds every acknowledged write, on every member.
    for i in 0..cluster.members().len() {
        cluster.start(i);
    }
    cluster.wait_status(
        "a leader after the power cut",
        Duration::from_secs(90),
        |v| v["leader"].as_u64().is_some(),
    );
    for i in 0..cluster.members().len() {
        let c = client(&rt, &cluster, Some(i));
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let missing: Vec<String> = match rt.block_on(c.call(&PoolList {
                read: ReadMode::Linearizable,
            })) {
                Ok(pools) => {
                    let held: BTreeMap<IpAddr, String> = pools
                        .pools
                        .iter()
                        .flat_map(|p| {
                            p.allocations.iter().map(|(ip, a)| {
                                let (AllocationOwner::Vm(o) | AllocationOwner::External(o)) =
                                    &a.owner;
                                (*ip, o.clone())
                            })
                        })
                        .collect();
                    acks.iter()
                        .filter(|(owner, ip)| {
                            !held.get(ip).is_some_and(|o| o.contains(owner.as_str()))
                        })
                        .map(|(owner, ip)| format!("{ip} of {owner}"))
                        .collect()
                }
                Err(e) => vec![format!("read failed: {e}")],
            };
            if missing.is_empty() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "member {i} lacks {} of {} acknowledged writes, e.g. {:?}",
                missing.len(),
                acks.len(),
                &missing[..missing.len().min(5)]
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}
