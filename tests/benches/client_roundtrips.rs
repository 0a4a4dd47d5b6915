//! Benchmark (prints figures, never passes or fails on time): `pve` client round trips per
//! second against the in-process simulator and its HTTPS server, sequential and 16 in flight,
//! and the cost of one clone → configure → start → guest-IPs cycle with zero task latency.
//!
//! Run: `make bench` (or `cargo bench -p pvefleet-tests --bench client_roundtrips`).
//! A failed call aborts the run: figures of a broken run mean nothing.
#![allow(clippy::expect_used)]

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use pve::Client;
use pve_sim::{Caller, Sim, SimConfig};
use pvefleet_tests::https_sim::HttpsSim;
use pvefleet_tests::lifecycle::{Plan, clone_to_ready};
use pvefleet_tests::sim_backend::SimBackend;

const TEMPLATE: u32 = 9000;

async fn round_trips(client: &Client, calls: usize, in_flight: usize) -> f64 {
    let started = Instant::now();
    let per_worker = calls / in_flight;
    let mut workers = Vec::new();
    for _ in 0..in_flight {
        let c = client.clone();
        workers.push(tokio::spawn(async move {
            for _ in 0..per_worker {
                c.vm_status("pve1", TEMPLATE).await.expect("status read");
            }
        }));
    }
    for w in workers {
        w.await.expect("worker");
    }
    (per_worker * in_flight) as f64 / started.elapsed().as_secs_f64()
}

async fn cycles(client: &Client, sim: &Sim, n: u32, base_ip: u8) -> Vec<Duration> {
    let mut out = Vec::new();
    for i in 0..n {
        let plan = Plan::default_cluster(Ipv4Addr::new(10, 30, base_ip, (i % 250) as u8 + 2));
        let started = Instant::now();
        clone_to_ready(client, sim, &plan, &format!("bench-{base_ip}-{i}"))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        out.push(started.elapsed());
    }
    out
}

fn summary(mut d: Vec<Duration>) -> String {
    d.sort();
    let ms = |x: Duration| x.as_secs_f64() * 1000.0;
    let mean = d.iter().map(|x| ms(*x)).sum::<f64>() / d.len() as f64;
    format!(
        "n={} mean {:.2} ms  p50 {:.2} ms  p99 {:.2} ms",
        d.len(),
        mean,
        ms(d[d.len() / 2]),
        ms(d[(d.len() * 99 / 100).min(d.len() - 1)])
    )
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let fast = SimConfig {
            time_scale: 0.0,
            agent_ip_delay_secs: 0.0,
            ..SimConfig::default()
        };

        let sim = Sim::new(fast.clone()).expect("sim");
        let inproc = Client::new(SimBackend::new(
            sim.clone(),
            Caller::token("root@pam", "fleet"),
            "pve1",
        ));
        round_trips(&inproc, 2_000, 1).await; // warm-up
        let in_seq = round_trips(&inproc, 20_000, 1).await;
        let in_par = round_trips(&inproc, 20_000, 16).await;

        let https = HttpsSim::start(fast.clone()).await;
        let tls = https.token_client("pve1");
        round_trips(&tls, 500, 1).await; // warm-up (connection, TLS session)
        let tls_seq = round_trips(&tls, 3_000, 1).await;
        let tls_par = round_trips(&tls, 6_000, 16).await;

        let in_cycles = cycles(&inproc, &sim, 200, 1).await;
        let tls_cycles = cycles(&tls, &https.sim, 100, 2).await;

        println!("pve client round trips (GET status/current, 2 tokio workers, loopback)");
        println!("  in-process simulator, sequential   {in_seq:>10.0} calls/s");
        println!("  in-process simulator, 16 in flight {in_par:>10.0} calls/s");
        println!("  HTTPS simulator, sequential        {tls_seq:>10.0} calls/s");
        println!("  HTTPS simulator, 16 in flight      {tls_par:>10.0} calls/s");
        println!("clone -> configure -> resize -> start -> guest IPs, zero task latency");
        println!("  in-process: {}", summary(in_cycles));
        println!("  HTTPS:      {}", summary(tls_cycles));
    });
}
