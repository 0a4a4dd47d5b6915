//! Benchmark (prints figures, never passes or fails on time): a 3-member coordinator cluster
//! of real processes on loopback, fsync on (the journal's `fdatasync` before every
//! acknowledgement):
//! write throughput and p50/p99 latency with 1 and with 64 concurrent clients, linearizable
//! read throughput, and the time from SIGKILL of the leader to the first write the new
//! leader accepts (three kills for a client of the survivors, three for one listing every
//! member; medians).
//!
//! Run: `make bench` (it builds the release binaries this needs first).
//! `PVEFLEET_BENCH_SCALE=N` makes N times as many writes (longer phases, for profiling).
#![allow(clippy::expect_used, clippy::unwrap_used)] // a broken run aborts: its figures mean nothing

use std::sync::Arc;
use std::time::{Duration, Instant};

use bootstrap::cli_config::CliConfig;
use client::AdminClient;
use protocol::admin::{AllocateIp, PoolApply, ReadMode, VmidRangeList};
use protocol::spec::IpPoolSpec;
use pvefleet_tests::coord_cluster::Cluster;

fn client(rt: &tokio::runtime::Runtime, cluster: &Cluster) -> AdminClient {
    let _inside = rt.enter();
    let cfg = CliConfig::load(&cluster.cli_config).unwrap();
    AdminClient::new(&cfg.load_material().unwrap(), cfg.coordinators.clone())
        .unwrap()
        .with_timeout(Duration::from_secs(30))
}

fn percentile(sorted: &[Duration], p: usize) -> f64 {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)].as_secs_f64() * 1000.0
}

/// `clients` writers doing `per_client` writes each; returns (writes/s, p50 ms, p99 ms).
fn writes(
    rt: &tokio::runtime::Runtime,
    cluster: &Cluster,
    clients: usize,
    per_client: usize,
    tag: &str,
) -> (f64, f64, f64) {
    let handles: Vec<AdminClient> = (0..clients).map(|_| client(rt, cluster)).collect();
    let started = Instant::now();
    let mut lat: Vec<Duration> = rt.block_on(async {
        let mut tasks = Vec::new();
        for (k, c) in handles.into_iter().enumerate() {
            let tag = tag.to_string();
            tasks.push(tokio::spawn(async move {
                let mut out = Vec::with_capacity(per_client);
                for i in 0..per_client {
                    let t = Instant::now();
                    c.call(&AllocateIp {
                        pool: "bench".into(),
                        owner: format!("{tag}-{k}-{i}"),
                    })
                    .await
                    .unwrap();
                    out.push(t.elapsed());
                }
                out
            }));
        }
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.unwrap());
        }
        all
    });
    let elapsed = started.elapsed();
    lat.sort();
    (
        (clients * per_client) as f64 / elapsed.as_secs_f64(),
        percentile(&lat, 50),
        percentile(&lat, 99),
    )
}

fn reads(
    rt: &tokio::runtime::Runtime,
    cluster: &Cluster,
    clients: usize,
    duration: Duration,
) -> f64 {
    let handles: Vec<AdminClient> = (0..clients).map(|_| client(rt, cluster)).collect();
    let count = Arc::new(std::sync::atomic::AtomicU64::new(0));
    rt.block_on(async {
        let deadline = Instant::now() + duration;
        let mut tasks = Vec::new();
        for c in handles {
            let count = Arc::clone(&count);
            tasks.push(tokio::spawn(async move {
                while Instant::now() < deadline {
                    c.call(&VmidRangeList {
                        read: ReadMode::Linearizable,
                    })
                    .await
                    .unwrap();
                    count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
    count.load(std::sync::atomic::Ordering::Relaxed) as f64 / duration.as_secs_f64()
}

/// Kill the leader and time the first accepted write; the killed member is restarted after.
fn failover(rt: &tokio::runtime::Runtime, cluster: &mut Cluster, survivors_only: bool) -> Duration {
    let leader = cluster.leader_index();
    let c = {
        let _inside = rt.enter();
        let cfg = CliConfig::load(&cluster.cli_config).unwrap();
        let dead = cluster.member(leader).node_id;
        let members = cfg
            .coordinators
            .iter()
            .filter(|m| !survivors_only || m.id != dead)
            .cloned()
            .collect();
        AdminClient::new(&cfg.load_material().unwrap(), members)
            .unwrap()
            .with_timeout(Duration::from_secs(30))
    };
    // Warm the client's connection first, as a running client would have one.
    let warm = AllocateIp {
        pool: "bench".into(),
        owner: format!("pre-{survivors_only}"),
    };
    rt.block_on(c.call(&warm)).unwrap();
    let killed = Instant::now();
    cluster.kill9(leader);
    // The calls made meanwhile, with when they ran and why they failed: printed when the
    // failover took longer than the target, to see where the time went.
    let mut failed: Vec<String> = Vec::new();
    let took = rt.block_on(async {
        let mut i = 0;
        loop {
            i += 1;
            let owner = format!("failover-{survivors_only}-{i}");
            let started = killed.elapsed();
            match c
                .call(&AllocateIp {
                    pool: "bench".into(),
                    owner,
                })
                .await
            {
                Ok(_) => {
                    failed.push(format!(
                        "call {i}: {:.0} ms-: accepted",
                        started.as_secs_f64() * 1000.0
                    ));
                    return killed.elapsed();
                }
                Err(e) => failed.push(format!(
                    "call {i}: {:.0}-{:.0} ms: {e}",
                    started.as_secs_f64() * 1000.0,
                    killed.elapsed().as_secs_f64() * 1000.0
                )),
            }
        }
    });
    if took > Duration::from_millis(1500) {
        let kind = if survivors_only {
            "client of the survivors"
        } else {
            "client listing all members"
        };
        println!(
            "  (failover of {:.0} ms, {kind}; the calls:",
            took.as_secs_f64() * 1000.0
        );
        for line in &failed {
            println!("     {line}");
        }
        println!("  )");
    }
    cluster.start(leader);
    cluster.wait_status("the killed member back", Duration::from_secs(60), |v| {
        v["members"].as_array().is_some_and(|m| m.len() == 3)
    });
    // Let the restarted member catch up before the next kill.
    std::thread::sleep(Duration::from_secs(2));
    took
}

fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut cluster = Cluster::found(&[]);
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
    let admin = client(&rt, &cluster);
    rt.block_on(admin.call(&PoolApply {
        spec: IpPoolSpec {
            name: "bench".into(),
            cidr: "10.0.0.0/8".into(),
            gateway: None,
            range_start: "10.0.0.10".into(),
            range_end: "10.255.255.250".into(),
            dns: vec![],
        },
    }))
    .unwrap();
    writes(&rt, &cluster, 4, 25, "warm");

    let scale: usize = std::env::var("PVEFLEET_BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let (w1, p50_1, p99_1) = writes(&rt, &cluster, 1, 300 * scale, "one");
    let (w64, p50_64, p99_64) = writes(&rt, &cluster, 64, 20 * scale, "many");
    let r1 = reads(&rt, &cluster, 1, Duration::from_secs(3));
    let r64 = reads(&rt, &cluster, 64, Duration::from_secs(3));

    // Failover: SIGKILL the leader, then write until the new leader accepts. Measured with a
    // client that knows only the survivors (the cluster's own failover) and, on a second kill,
    // with one listing every member (what an operator's CLI sees).
    // Three kills of each kind, alternating, so one slow election does not make the figure.
    let mut cluster_failover = Vec::new();
    let mut cli_failover = Vec::new();
    for _ in 0..FAILOVER_ROUNDS {
        cluster_failover.push(failover(&rt, &mut cluster, true));
        cli_failover.push(failover(&rt, &mut cluster, false));
    }

    println!(
        "coordinator: 3 members as processes on loopback, fsync on, 2 cores (client in the same box)"
    );
    println!("  writes, 1 client:      {w1:>8.0} writes/s   p50 {p50_1:.2} ms   p99 {p99_1:.2} ms");
    println!(
        "  writes, 64 clients:    {w64:>8.0} writes/s   p50 {p50_64:.2} ms   p99 {p99_64:.2} ms"
    );
    println!("  linearizable reads, 1 client:   {r1:>8.0} reads/s");
    println!("  linearizable reads, 64 clients: {r64:>8.0} reads/s");
    println!(
        "  SIGKILL leader -> first write accepted by the new leader, median (all {FAILOVER_ROUNDS}):"
    );
    println!(
        "    client of the survivors:       {}",
        failover_figures(&mut cluster_failover)
    );
    println!(
        "    client listing all members:    {}",
        failover_figures(&mut cli_failover)
    );
}

/// Leader kills of each kind.
const FAILOVER_ROUNDS: usize = 3;

/// "median ms (each, in ms)".
fn failover_figures(samples: &mut [Duration]) -> String {
    let each: Vec<String> = samples
        .iter()
        .map(|d| format!("{:.0}", d.as_secs_f64() * 1000.0))
        .collect();
    samples.sort();
    format!(
        "{:.0} ms ({} ms)",
        samples[samples.len() / 2].as_secs_f64() * 1000.0,
        each.join(", ")
    )
}
