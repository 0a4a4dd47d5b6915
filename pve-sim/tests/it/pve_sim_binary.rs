//! The `pve-sim` binary: the default configuration round-trips through TOML, and `serve`
//! announces itself with one JSON line, writes its credentials and stops on SIGTERM.

// Test helpers outside #[test] functions may unwrap: a panic is the failure report.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::time::Duration;

use lab::process::{Process, Stderr};
use pve_sim::SimConfig;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_pve-sim");

#[tokio::test]
async fn print_config_prints_the_default_as_toml() {
    let out = tokio::process::Command::new(BIN)
        .arg("print-config")
        .output()
        .await
        .unwrap();
    assert!(out.status.success());
    let parsed: SimConfig = toml::from_str(&String::from_utf8(out.stdout).unwrap()).unwrap();
    assert_eq!(parsed, SimConfig::default());
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_announces_itself_and_stops_on_sigterm() {
    use std::os::unix::fs::PermissionsExt;

    let dir = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.args([
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--time-scale",
        "0",
        "--per-node-listen",
        "0",
    ])
    .arg("--state-dir")
    .arg(dir.path());
    let log = logs.path().join("pve-sim.log");
    let (process, line) = Process::start(
        "pve-sim",
        cmd,
        &log,
        Stderr::Inherit,
        Duration::from_secs(60),
    )
    .await
    .unwrap();
    let ready: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(ready["node"], "pve1");
    assert_eq!(ready["nodes"].as_array().unwrap().len(), 3);
    let token_file = ready["token_file"].as_str().unwrap();
    assert_eq!(std::fs::read_to_string(token_file).unwrap(), common::TOKEN);
    let mode = std::fs::metadata(token_file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let password = std::fs::read_to_string(ready["password_file"].as_str().unwrap()).unwrap();
    assert_eq!(password, "simulator");
    let ca_pem = std::fs::read_to_string(ready["cert"].as_str().unwrap()).unwrap();
    assert_eq!(
        common::fingerprint_of_pem(&ca_pem),
        ready["fingerprint"].as_str().unwrap()
    );

    let client = reqwest::Client::builder()
        .tls_backend_preconfigured(common::client_tls(&ca_pem))
        .build()
        .unwrap();
    for listen in std::iter::once(&ready["listen"]).chain(
        ready["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| &n["listen"]),
    ) {
        let url = format!(
            "https://{}/api2/json/nodes/localhost/status",
            listen.as_str().unwrap()
        );
        let resp = client
            .get(url)
            .header("Authorization", common::token_header(common::TOKEN))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
    }

    // A clean exit on SIGTERM, within the grace period.
    let stopped = process.stop(Duration::from_secs(30)).await;
    assert_eq!(stopped.exit_code(), Some(0), "{stopped:?}");
}
