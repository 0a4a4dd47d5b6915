#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking
//! `pvefleet-coordinator run` under a fake systemd: a datagram socket as NOTIFY_SOCKET, given
//! to the binary as a child process (so the environment never leaks into other tests). A
//! joined member whose only voter is down pets the watchdog but is not ready; once the voter
//! is back and promotes it, READY=1 arrives with the ready line; SIGTERM brings STOPPING=1.
//! The members are made and run through configuration files (`--config`), as the units do.

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use bootstrap::CliConfig;
use client::AdminClient;
use lab::fake_systemd::FakeSystemd;
use protocol::Role;
use protocol::admin::TokenCreate;

const BOUND: Duration = Duration::from_secs(60);
const COORDINATOR: &str = env!("CARGO_BIN_EXE_pvefleet-coordinator");

fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A child process killed when dropped (a failed test leaves nothing behind).
struct Proc {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Proc {
    /// Spawns `cmd` with its stdout read line by line.
    fn spawn(mut cmd: Command) -> Proc {
        let mut child = cmd
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Proc { child, lines }
    }

    /// `pvefleet-coordinator run --config FILE` (not under systemd).
    fn run(config: &Path) -> Proc {
        let mut cmd = Command::new(COORDINATOR);
        cmd.arg("run")
            .arg("--config")
            .arg(config)
            .env_remove("NOTIFY_SOCKET");
        Proc::spawn(cmd)
    }

    /// `pvefleet-coordinator run --config FILE` under the fake systemd, with a watchdog of
    /// `watchdog_usec` meant for the member's own pid (WATCHDOG_PID set by the shell that
    /// execs it).
    fn run_under_systemd(notify: &Path, watchdog_usec: u64, config: &Path) -> Proc {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg("WATCHDOG_PID=$$ exec \"$0\" \"$@\"")
            .arg(COORDINATOR)
            .args(["run", "--config"])
            .arg(config)
            .env("NOTIFY_SOCKET", notify)
            .env("WATCHDOG_USEC", watchdog_usec.to_string());
        Proc::spawn(cmd)
    }

    /// The next line on stdout (bounded; the ready line is the first).
    fn line(&mut self, what: &str) -> String {
        let start = Instant::now();
        loop {
            if let Ok(line) = self.lines.recv_timeout(Duration::from_millis(100)) {
                return line;
            }
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("{what} exited ({status}) before printing a line");
            }
            assert!(start.elapsed() < BOUND, "{what} printed no line in time");
        }
    }

    fn terminate(&mut self) -> i32 {
        let pid = self.child.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap()
                .success()
        );
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().expect("exited by a signal");
            }
            assert!(start.elapsed() < BOUND, "no exit after SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
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
    let mut m1 = Proc::run(&m1_config);
    let ready: serde_json::Value = serde_json::from_str(&m1.line("m1")).unwrap();
    let via = ready["listen"].as_str().unwrap().to_string();
    let token = coordinator_token(&m1_dir.join("pvefleet.toml"));
    let (m2_dir, m2_config) = write_config(tmp.path(), "m2");
    let join = ok(
        Command::new(COORDINATOR)
            .args(["join", &token, &via, "--config"])
            .arg(&m2_config)
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
    assert_eq!(m1.terminate(), 0);

    let mut systemd = FakeSystemd::bind(tmp.path()).unwrap();
    let mut m2 = Proc::run_under_systemd(&systemd.path, 300_000, &m2_config);
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
    assert!(m2.lines.try_recv().is_err(), "a ready line before READY");

    // The voter is back and promotes it.
    let mut m1 = Proc::run(&m1_config);
    m1.line("m1 again");
    systemd
        .until("READY=1", BOUND, |seen| {
            FakeSystemd::count(seen, "READY=1") == 1
        })
        .unwrap();
    let ready: serde_json::Value = serde_json::from_str(&m2.line("m2")).unwrap();
    assert_eq!(ready["node_id"], 2);
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
    assert_eq!(m2.terminate(), 0);
    systemd
        .until("STOPPING=1", BOUND, |seen| {
            FakeSystemd::count(seen, "STOPPING=1") == 1
        })
        .unwrap();
    assert_eq!(FakeSystemd::count(&systemd.seen, "READY=1"), 1);
    assert_eq!(m1.terminate(), 0);
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
    let mut cmd = Command::new(COORDINATOR);
    cmd.args(["run", "--config"])
        .arg(&config)
        .env("NOTIFY_SOCKET", &systemd.path)
        .env("WATCHDOG_USEC", "300000")
        // PID 1 is never this member.
        .env("WATCHDOG_PID", "1");
    let mut member = Proc::spawn(cmd);
    systemd
        .until("READY=1", BOUND, |seen| {
            FakeSystemd::count(seen, "READY=1") == 1
        })
        .unwrap();
    assert_eq!(member.terminate(), 0);
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
