//! The `pve` client carries a full VM lifecycle against the simulator over every backend:
//! HTTPS with an API token (CA file), HTTPS with a root ticket (pinned fingerprint), the
//! `pvesh` backend through the simulator's `pvesh-sim` shim, and in process.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use std::net::Ipv4Addr;

use pve::Client;
use pve_sim::{Caller, SimConfig};
use pvefleet_tests::https_sim::HttpsSim;
use pvefleet_tests::lifecycle::{Plan, full_lifecycle};
use pvefleet_tests::sim_backend::SimBackend;

/// Tasks take 2% of their real duration: locks and task states stay observable, runs stay short.
fn config() -> SimConfig {
    SimConfig {
        time_scale: 0.02,
        agent_ip_delay_secs: 8.0,
        ..SimConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lifecycle_over_https_with_an_api_token() {
    let sim = HttpsSim::start(config()).await;
    let client = sim.token_client("pve1");
    let report = full_lifecycle(
        &client,
        &sim.sim,
        &Plan::default_cluster(Ipv4Addr::new(10, 20, 0, 5)),
        "web-token",
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(report.vmid >= 100);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lifecycle_over_https_with_a_root_ticket_and_pinned_certificate() {
    let sim = HttpsSim::start(config()).await;
    let client = sim.ticket_client("pve1");
    assert!(client.backend().is_root() || client.version().await.is_ok());
    full_lifecycle(
        &client,
        &sim.sim,
        &Plan::default_cluster(Ipv4Addr::new(10, 20, 0, 6)),
        "web-ticket",
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(client.backend().is_root(), "a root@pam ticket runs as root");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lifecycle_over_pvesh() {
    let sim = HttpsSim::start(config()).await;
    let client = sim.pvesh_client("pve1");
    let plan = Plan {
        with_password: false,
        ..Plan::default_cluster(Ipv4Addr::new(10, 20, 0, 7))
    };
    full_lifecycle(&client, &sim.sim, &plan, "web-pvesh")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lifecycle_in_process() {
    let sim = pve_sim::Sim::new(config()).unwrap();
    let client = Client::new(SimBackend::new(
        sim.clone(),
        Caller::token("root@pam", "fleet"),
        "pve1",
    ));
    full_lifecycle(
        &client,
        &sim,
        &Plan::default_cluster(Ipv4Addr::new(10, 20, 0, 8)),
        "web-inproc",
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lifecycle_in_quirks_mode_decodes_string_numbers() {
    let sim = pve_sim::Sim::new(SimConfig {
        quirks: true,
        ..config()
    })
    .unwrap();
    let client = Client::new(SimBackend::new(
        sim.clone(),
        Caller::token("root@pam", "fleet"),
        "pve1",
    ));
    full_lifecycle(
        &client,
        &sim,
        &Plan::default_cluster(Ipv4Addr::new(10, 20, 0, 9)),
        "web-quirks",
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
}
