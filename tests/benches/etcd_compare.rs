//! Benchmark (prints figures, never passes or fails on time): pvefleet's replicated store side
//! by side with etcd 3.4 (Debian's `etcd-server`). Each system runs 3 members as processes on
//! loopback with fsync on (pvefleet: sled flushed before every acknowledgement; etcd: its
//! default WAL fsync, `--unsafe-no-fsync` not given), and one load generator drives all three
//! columns the same way: closed-loop clients, each on its own connection to the leader, the
//! same payload sizes, the same duration.
//!
//! ```text
//!                  ┌─ pvefleet AdminClient ── QUIC, mutual TLS ──▶ 3 coordinators (openraft, sled)
//!  load generator ─┼─ gRPC (tonic) ── plain HTTP/2 ──────────────▶ 3 etcd members
//!                  └─ gRPC (tonic) ── TLS, client certificate ───▶ 3 etcd members (--client-cert-auth)
//! ```
//!
//! Workloads, each `PVEFLEET_BENCH_SECS` (default 60) per run, the median of
//! `PVEFLEET_BENCH_RUNS` (default 3) runs, the systems taking turns run by run:
//! - writes with 1 and 64 clients: each client creates its entry and deletes it in turn, one
//!   replicated write each (pvefleet: allocate an address of the `bench` pool to a 16-byte
//!   owner, release it; etcd: `Put` a 10-byte key with a 16-byte value, `DeleteRange` it), so
//!   the stores stay as small as they started;
//! - linearizable reads with 1 and 64 clients (pvefleet: the VMID ranges with
//!   `ReadMode::Linearizable`; etcd: `Range` of one key with `serializable = false`).
//!
//! Run: `make bench` (it builds the release binaries and installs etcd-server when missing),
//! or for a short look: `PVEFLEET_BENCH_SECS=3 PVEFLEET_BENCH_RUNS=1 cargo bench -p
//! pvefleet-tests --bench etcd_compare` after `cargo build --release --bins`.
#![allow(clippy::expect_used, clippy::unwrap_used)] // a broken run aborts: its figures mean nothing

// The modules live under etcd_compare/ so that cargo does not take them for benches.
#[path = "etcd_compare/etcd_api.rs"]
mod etcd_api;
#[path = "etcd_compare/etcd_certs.rs"]
mod etcd_certs;
#[path = "etcd_compare/etcd_cluster.rs"]
mod etcd_cluster;
#[path = "etcd_compare/etcd_store.rs"]
mod etcd_store;
#[path = "etcd_compare/fleet_store.rs"]
mod fleet_store;
#[path = "etcd_compare/load.rs"]
mod load;
#[path = "etcd_compare/table.rs"]
mod table;

use std::time::Duration;

use etcd_cluster::EtcdCluster;
use etcd_store::EtcdStore;
use fleet_store::FleetStore;
use load::{Sample, Store, WORKLOADS, Workload};

/// A positive whole number from the environment, or `default`.
fn setting(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => match v.trim().parse::<u64>() {
            Ok(n) if n > 0 => n,
            _ => panic!("{name}={v}: expected a positive whole number"),
        },
        Err(_) => default,
    }
}

/// One run of `workload` on `store`, reported on stderr as it ends.
fn measure<S: Store>(
    rt: &tokio::runtime::Runtime,
    store: &S,
    workload: Workload,
    duration: Duration,
    run: u64,
) -> Sample {
    let s = load::run(rt, store, workload, duration);
    eprintln!(
        "  run {run}: {:<9} {:<30} {:>8.0} ops/s  p50 {:.2} ms",
        store.name(),
        workload.label(),
        s.ops_per_sec,
        s.p50.as_secs_f64() * 1000.0
    );
    s
}

fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let secs = setting("PVEFLEET_BENCH_SECS", 60);
    let runs = setting("PVEFLEET_BENCH_RUNS", 3);
    let duration = Duration::from_secs(secs);
    let etcd_version = etcd_cluster::version().unwrap_or_else(|e| panic!("{e}"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();

    // Declared in this order so that a panic drops (stops) them all: each one's Drop kills
    // its processes and removes its directory.
    let fleet = FleetStore::start(&rt);
    let etcd = EtcdCluster::start(&rt, "plain", false)
        .and_then(|c| EtcdStore::new(&rt, "etcd", c))
        .unwrap_or_else(|e| panic!("etcd: {e}"));
    let etcd_mtls = EtcdCluster::start(&rt, "mtls", true)
        .and_then(|c| EtcdStore::new(&rt, "etcd-mTLS", c))
        .unwrap_or_else(|e| panic!("etcd with client mTLS: {e}"));

    let mut rows = Vec::new();
    for workload in WORKLOADS {
        let (mut f, mut e, mut m) = (Vec::new(), Vec::new(), Vec::new());
        // The systems take turns, so that a busy moment of the shared machine falls on each.
        for run in 1..=runs {
            f.push(measure(&rt, &fleet, workload, duration, run));
            e.push(measure(&rt, &etcd, workload, duration, run));
            m.push(measure(&rt, &etcd_mtls, workload, duration, run));
        }
        rows.push(table::Row {
            workload,
            fleet: load::median(&f),
            etcd: load::median(&e),
            etcd_mtls: load::median(&m),
        });
    }

    println!(
        "pvefleet vs {etcd_version}: 3 members each as processes on loopback, fsync on, {} cores \
         shared with the load generator",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "{secs} s per run, median of {runs} run(s); writes: create/delete one entry per client in \
         turn (10-byte key / 16-byte value); reads: linearizable; clients talk to the leader"
    );
    println!(
        "pvefleet: QUIC with mutual TLS always; etcd: plain gRPC; etcd mTLS: gRPC over TLS with \
         client certificates (peer traffic plain)"
    );
    for line in table::render(&rows) {
        println!("{line}");
    }
    drop(etcd_mtls);
    drop(etcd);
    drop(fleet);
}
