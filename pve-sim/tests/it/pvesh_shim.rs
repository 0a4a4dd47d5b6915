//! `pvesh-sim` against a served simulator: JSON output, foreground tasks and error exits.

// Test helpers outside #[test] functions may unwrap: a panic is the failure report.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::Path;
use std::process::Output;

use pve_sim::faults::TaskFault;
use serde_json::Value;

struct Env {
    served: common::Served,
    dir: tempfile::TempDir,
}

async fn env() -> Env {
    let served = common::serve().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ca.pem"), &served.ca_pem).unwrap();
    std::fs::write(dir.path().join("password"), "simulator\n").unwrap();
    Env { served, dir }
}

async fn pvesh(env: &Env, args: &[&str]) -> Output {
    let dir: &Path = env.dir.path();
    tokio::process::Command::new(env!("CARGO_BIN_EXE_pvesh-sim"))
        .args(args)
        .env(
            "PVESIM_URL",
            format!("https://127.0.0.1:{}", env.served.addr.port()),
        )
        .env("PVESIM_CA", dir.join("ca.pem"))
        .env("PVESIM_PASSWORD_FILE", dir.join("password"))
        .output()
        .await
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_prints_only_the_data_as_canonical_json() {
    let e = env().await;
    let out = pvesh(&e, &["get", "/nodes", "--output-format", "json"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let nodes: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(nodes.as_array().unwrap().len(), 3);
    // Canonical: keys sorted at every level.
    let first = stdout.trim_start_matches("[{");
    let keys: Vec<&str> = nodes[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    assert_eq!(keys, sorted);
    assert!(first.starts_with(&format!("\"{}\"", sorted[0])), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_runs_the_task_in_the_foreground_and_prints_the_upid() {
    let e = env().await;
    let out = pvesh(
        &e,
        &[
            "create",
            "/nodes/pve1/qemu",
            "--vmid",
            "210",
            "--memory",
            "512",
            "--start",
            "no",
            "--output-format",
            "json",
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let last = stdout.lines().last().unwrap();
    let upid: String = serde_json::from_str(last).unwrap();
    assert!(
        upid.starts_with("UPID:pve1:") && upid.contains(":qmcreate:210:root@pam:"),
        "{upid}"
    );
    assert!(stdout.lines().any(|l| l == "TASK OK"), "{stdout}");
    assert_eq!(e.served.sim.vm_node(210).as_deref(), Some("pve1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_task_still_exits_zero_with_the_error_on_stderr() {
    let e = env().await;
    // Failing task by fault injection on a fresh VM.
    let out = pvesh(
        &e,
        &[
            "create",
            "/nodes/pve1/qemu",
            "--vmid",
            "220",
            "--memory",
            "512",
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    e.served.sim.faults().fail_task(TaskFault {
        vmid: Some(220),
        task_type: "qmstart".into(),
        message: "simulated start failure".into(),
        remaining: Some(1),
    });
    let out = pvesh(&e, &["create", "/nodes/pve1/qemu/220/status/start"]).await;
    assert_eq!(out.status.code(), Some(0));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("TASK ERROR: simulated start failure"),
        "{stderr}"
    );
    assert!(
        text(&out.stdout)
            .trim_end()
            .lines()
            .last()
            .unwrap()
            .starts_with("UPID:pve1:")
    );
    // A task failing on its own (a template cannot start) behaves the same.
    let out = pvesh(&e, &["create", "/nodes/pve1/qemu/9000/status/start"]).await;
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains("TASK ERROR: you can't start a vm if it's a template"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        text(&out.stdout)
            .trim_end()
            .lines()
            .last()
            .unwrap()
            .starts_with("UPID:pve1:")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parameter_errors_go_to_stderr_with_exit_255() {
    let e = env().await;
    let out = pvesh(
        &e,
        &["create", "/nodes/pve1/qemu", "--vmid", "abc", "--start"],
    )
    .await;
    assert_eq!(out.status.code(), Some(255));
    let stderr = text(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines[0], "400 Parameter verification failed.");
    assert_eq!(lines[1], "vmid: type check ('integer') failed - got 'abc'");
    assert_eq!(text(&out.stdout), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_booleans_are_normalized() {
    let e = env().await;
    for flag in [["--start", "off"], ["--start", "false"]] {
        let mut args = vec!["create", "/nodes/pve1/qemu", "--vmid", "abc"];
        args.extend(flag);
        let out = pvesh(&e, &args).await;
        let stderr = text(&out.stderr);
        assert!(!stderr.contains("start:"), "{stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn null_results_print_nothing() {
    let e = env().await;
    let out = pvesh(
        &e,
        &[
            "set",
            "/nodes/pve1/qemu/9000/config",
            "--description",
            "hello",
            "--output-format",
            "json",
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "");
}
