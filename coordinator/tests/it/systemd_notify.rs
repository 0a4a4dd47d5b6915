#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking
//! `pvefleet-coordinator run` under a fake systemd: a datagram socket as NOTIFY_SOCKET, given
//! to the binary as a child process (so the environment never leaks into other tests). A
//! joined member whose only voter is down pets the watchdog but is not ready; once the voter
//! is back and promotes it, READY=1 arrives with the ready line; SIGTERM brings STOPPING=1.
//! The members are made and run through configuration files (`--config`), as the units do.

use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use bootstrap::CliConfig;
use client::AdminClient;
use lab::fake_systemd::FakeSystemd;
use lab::process::{Process, Stderr};
use protocol::Role;
use protocol::admin::TokenCreate;
use tokio::process::Command as TokioCommand;
use tokio::runtime::Runtime;

const BOUND: Duration = Duration::from_secs(60);
const COORDINATOR: &str = env!("CARGO_BIN_EXE_pvefleet-coordinator");

fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The runtime the members' processes live on (the launcher's processes are tokio's).
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Spawns `cmd` through the launcher (killed when dropped: a failed test leaves nothing
/// behind), its stderr in the test's output, its later stdout in `DIR/<what>.log`.
fn spawn(rt: &Runtime, dir: &Path, what: &str, mut cmd: TokioCommand) -> Process {
    let _inside = rt.enter();
    cmd.env("RUST_LOG", "warn");
    Process::spawn(what, cmd, &dir.join(format!("{what}.log")), Stderr::Inherit).unwrap()
}

/// `pvefleet-coordinator run --config FILE` (not under systemd).
fn run(rt: &Runtime, dir: &Path, what: &str, config: &Path) -> Process {
    let mut cmd = TokioCommand::new(COORDINATOR);
    cmd.arg("run")
        .arg("--config")
        .arg(config)
        .env_remove("NOTIFY_SOCKET");
    spawn(rt, dir, what, cmd)
}

/// The ready line (bounded).
fn ready_line(rt: &Runtime, process: &mut Process) -> serde_json::Value {
    let line = rt.block_on(process.ready_line(BOUND)).unwrap();
    serde_json::from_str(&line).unwrap()
}

/// SIGTERM; the exit code (`None`: it had to be killed, or a signal ended it).
fn terminate(rt: &Runtime, process: Process) -> Option<i32> {
    rt.block_on(process.stop(BOUND)).exit_code()
}

fn ok(out: Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// A member's configuration file: its directory, address, and any free HTTP port.
fn write_config(root: &Path, name: &str) -> (PathBuf, PathBuf) {
    let dir = root.join(name);
    let config = root.join(format!("{name}.toml"));
    std::fs::write(
        &config,
        format!(
            "data_dir = \"{}\"\nlisten = \"127.0.0.1:{}\"\nhttp = \"127.0.0.1:0\"\n",
            dir.display(),
            free_udp_port()
        ),
    )
    .unwrap();
    (dir, config)
}

#[test]
fn ready_waits_for_the_settled_membership_and_the_watchdog_is_petted_meanwhile() {
    let tmp = tempfile::tempdir().unwrap();
    let (m1_dir, m1_config) = write_config(tmp.path(), "m1");
    let init = ok(
        Command::new(COORDINATOR)
            .args(["init", "--cluster-id", "sd", "--config"])
            .arg(&m1_config)
            .output()
            .unwrap(),
        "init",
    );
    assert!(
        init.lines()
            .last()
            .unwrap()
            .starts_with("start it:            pvefleet-coordinator run --data-dir "),
        "{init}"
    );
    let rt = runtime();
    let mut m1 = run(&rt, tmp.path(), "m1", &m1_config);
    let ready = ready_line(&rt, &mut m1);
    let via = ready["listen"].as_str().unwrap().to_string();
    let token = coordinator_token(&m1_dir.join("pvefleet.toml"));
    let (m2_dir, m2_config) = write_config(tmp.path(), "m2");
    let join = ok(
        Command::new(COORDINATOR)
            .args(["join", &via, "--config"])
            .arg(&m2_config)
            .env(bootstrap::JOIN_TOKEN_ENV, &token)
            .output()
            .unwrap(),
        "join",
    );
    assert!(m2_dir.join("node.pem").is_file(), "{join}");
    assert!(
        join.contains(&format!(
            "start it: pvefleet-coordinator run --data-dir {} --config {}",
            m2_dir.display(),
            m2_config.display()
        )),
        "{join}"
    );
    // The only voter goes away: the new member cannot be promoted.
    assert_eq!(terminate(&rt, m1), Some(0));

    let mut systemd = FakeSystemd::bind(tmp.path()).unwrap();
    let mut cmd = systemd.command(Path::new(COORDINATOR), 300_000);
    cmd.args(["run", "--config"]).arg(&m2_config);
    let mut m2 = spawn(&rt, tmp.path(), "m2", cmd);
    systemd
        .until("three WATCHDOG=1", BOUND, |seen| {
            FakeSystemd::count(seen, "WATCHDOG=1") >= 3
        })
        .unwrap();
    assert_eq!(
        FakeSystemd::count(&systemd.seen, "READY=1"),
        0,
        "{:?}",
        systemd.seen
    );
    assert!(
        systemd
            .seen
            .iter()
            .any(|m| m.contains("STATUS=settling membership")),
        "{:?}",
        systemd.seen
    );
    assert_eq!(m2.try_ready_line(), None, "a ready line before READY");

    // The voter is back and promotes it.
    let mut m1 = run(&rt, tmp.path(), "m1-again", &m1_config);
    ready_line(&rt, &mut m1);
    systemd
        .until("READY=1", BOUND, |seen| {
            FakeSystemd::count(seen, "READY=1") == 1
        })
        .unwrap();
    assert_eq!(ready_line(&rt, &mut m2)["node_id"], 2);
    systemd
        .until("a status naming the leader", BOUND, |seen| {
            seen.iter()
                .any(|m| m.contains("STATUS=leader 1, term ") && m.contains("this is node 2"))
        })
        .unwrap();
    let pets = FakeSystemd::count(&systemd.seen, "WATCHDOG=1");
    systemd
        .until("more WATCHDOG=1 once ready", BOUND, |seen| {
            FakeSystemd::count(seen, "WATCHDOG=1") > pets
        })
        .unwrap();
    assert_eq!(terminate(&rt, m2), Some(0));
    systemd
        .until("STOPPING=1", BOUND, |seen| {
            FakeSystemd::count(seen, "STOPPING=1") == 1
        })
        .unwrap();
    assert_eq!(FakeSystemd::count(&systemd.seen, "READY=1"), 1);
    assert_eq!(terminate(&rt, m1), Some(0));
}

#[test]
fn a_watchdog_meant_for_another_process_is_not_petted() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, config) = write_config(tmp.path(), "m1");
    ok(
        Command::new(COORDINATOR)
            .args(["init", "--config"])
            .arg(&config)
            .output()
            .unwrap(),
        "init",
    );
    let mut systemd = FakeSystemd::bind(tmp.path()).unwrap();
    let rt = runtime();
    let mut cmd = TokioCommand::new(COORDINATOR);
    cmd.args(["run", "--config"])
        .arg(&config)
        .env("NOTIFY_SOCKET", &systemd.path)
        .env("WATCHDOG_USEC", "300000")
        // PID 1 is never this member.
        .env("WATCHDOG_PID", "1");
    let member = spawn(&rt, tmp.path(), "m1", cmd);
    systemd
        .until("READY=1", BOUND, |seen| {
            FakeSystemd::count(seen, "READY=1") == 1
        })
        .unwrap();
    assert_eq!(terminate(&rt, member), Some(0));
    systemd
        .until("STOPPING=1", BOUND, |seen| {
            FakeSystemd::count(seen, "STOPPING=1") == 1
        })
        .unwrap();
    // The first notification carries the first pet if there is one to give.
    assert_eq!(
        FakeSystemd::count(&systemd.seen, "WATCHDOG=1"),
        0,
        "{:?}",
        systemd.seen
    );
}

/// A coordinator join token, through the admin client `pvefleet token create` uses.
fn coordinator_token(config: &Path) -> String {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = AdminClient::from_config(&CliConfig::load(config).unwrap()).unwrap();
        let request = TokenCreate {
            role: Role::Coordinator,
            ttl_secs: None,
            uses: None,
        };
        let reply = client.call(&request).await.unwrap();
        client.close().await;
        reply.token
    })
}
