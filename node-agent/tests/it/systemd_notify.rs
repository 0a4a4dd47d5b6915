#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking
//! `pvefleet-agent run` under a fake systemd: a datagram socket as NOTIFY_SOCKET, given to the
//! binary as a child process (so the environment never leaks into other tests). While no
//! leader acknowledges its beats the agent pets the watchdog but is not ready; the first ack
//! brings READY=1 (with the ready line on stdout); SIGTERM brings STOPPING=1. The agent is
//! joined through `join --config FILE`, whose data_dir it uses.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bootstrap::ca::DEFAULT_LEAF_VALIDITY;
use bootstrap::{ClusterCa, NodeKey};
use lab::fake_systemd::FakeSystemd;
use lab::process::{Process, Stderr};
use node_agent::daemon::ReadyLine;
use protocol::Role;
use protocol::agent::{Heartbeat, HeartbeatAck, LeaveAction, LeaveAnswer};
use protocol::join::{JoinRequest, JoinResponse};
use tokio::process::Command as TokioCommand;
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;
use transport::{Endpoint, RemoteError, Router, Server, Service, TlsMaterial, TransportConfig};

const BOUND: Duration = Duration::from_secs(30);
const AGENT: &str = env!("CARGO_BIN_EXE_pvefleet-agent");
const JOINED_ID: u64 = 42;

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Spawns `cmd` through the launcher (killed when dropped: a failed test leaves nothing
/// behind), its stderr in the test's output, its later stdout in `DIR/agent.log`. Called from
/// a blocking task of the test's runtime, whose handle the process is tied to.
fn spawn(dir: &Path, mut cmd: TokioCommand) -> Process {
    cmd.env("RUST_LOG", "warn");
    Process::spawn("agent", cmd, &dir.join("agent.log"), Stderr::Inherit).unwrap()
}

/// SIGTERM; the exit code (`None`: it had to be killed, or a signal ended it).
fn terminate(process: Process) -> Option<i32> {
    Handle::current().block_on(process.stop(BOUND)).exit_code()
}

/// A fake coordinator 1: Join issues agent certificates; Agent acks beats once `accepting`.
struct Coordinator {
    ca: ClusterCa,
    addr: SocketAddr,
    accepting: Arc<AtomicBool>,
    stop: CancellationToken,
}

impl Coordinator {
    fn start() -> Coordinator {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let ca = ClusterCa::create("lab", now_secs()).unwrap();
        let key = NodeKey::generate().unwrap();
        let csr = key.csr_pem().unwrap();
        let cert = ca
            .issue(
                &csr,
                Role::Coordinator,
                1,
                DEFAULT_LEAF_VALIDITY,
                now_secs(),
            )
            .unwrap();
        let tls = TlsMaterial::new(ca.cert_pem(), cert, key.private_key_pem());
        let endpoint = Endpoint::server(
            (Ipv4Addr::LOCALHOST, 0).into(),
            &tls,
            &[Service::Agent, Service::Join],
            TransportConfig::default(),
        )
        .unwrap();
        let addr = endpoint.local_addr().unwrap();
        let issuer = Arc::new(ClusterCa::load(ca.cert_pem(), ca.key_pem()).unwrap());
        let mut router = Router::new();
        router.handle::<JoinRequest, _, _>(Service::Join, move |_caller, req| {
            let answer = issuer
                .issue(
                    &req.csr_pem,
                    Role::Agent,
                    JOINED_ID,
                    DEFAULT_LEAF_VALIDITY,
                    now_secs(),
                )
                .map(|cert_pem| JoinResponse {
                    node_id: JOINED_ID,
                    cert_pem,
                    ca_pem: issuer.cert_pem().to_string(),
                    cluster_id: "lab".into(),
                    members: vec![(1, addr.to_string())],
                    ca_key_pem: None,
                })
                .map_err(|e| RemoteError::bad_request(e.to_string()));
            async move { answer }
        });
        let accepting = Arc::new(AtomicBool::new(false));
        let gate = Arc::clone(&accepting);
        router.handle::<Heartbeat, _, _>(Service::Agent, move |_caller, hb| {
            let accept = gate.load(Ordering::SeqCst);
            async move {
                if !accept {
                    return Err(RemoteError::not_leader(None));
                }
                // A leaving agent (stopped by SIGTERM: a restart) is let go at once, frozen.
                let leave = hb.leaving.map(|_| LeaveAnswer {
                    action: LeaveAction::Freeze,
                    go: true,
                    left: 0,
                    message: "frozen".into(),
                });
                Ok(HeartbeatAck {
                    leader: 1,
                    term: 1,
                    lease_ms: 10_000,
                    need_inventory: false,
                    acked_results: Vec::new(),
                    commands: Vec::new(),
                    leave,
                    leader_clock_ms: None,
                })
            }
        });
        let stop = CancellationToken::new();
        let server = Server::new(endpoint, router);
        let token = stop.clone();
        tokio::spawn(async move { server.run(token).await });
        Coordinator {
            ca,
            addr,
            accepting,
            stop,
        }
    }

    /// A token pinning this coordinator's CA (the fake server accepts any id and secret).
    fn token(&self) -> String {
        let hex: String = self
            .ca
            .sha256()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        format!("pvf1.{hex}.abc123.{}", "s".repeat(32))
    }
}

impl Drop for Coordinator {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Runs the blocking `f` off the runtime's threads, so the fake coordinator keeps serving.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_follows_the_first_acknowledged_beat_and_the_watchdog_is_petted_meanwhile() {
    let coordinator = Coordinator::start();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("agent");
    let config = tmp.path().join("agent.toml");
    std::fs::write(
        &config,
        format!(
            "data_dir = \"{}\"\nhost_name = \"hosta\"\nheartbeat_ms = 100\nlog = \"warn\"\n\
             vip_holding = \"simulated\"\n[pve]\nbackend = \"pvesh\"\nprogram = \"/bin/false\"\n",
            data.display()
        ),
    )
    .unwrap();

    // join takes the data directory from the configuration it is given.
    let (token, via, config_arg) = (
        coordinator.token(),
        coordinator.addr.to_string(),
        config.to_str().unwrap().to_string(),
    );
    let out = blocking(move || {
        Command::new(AGENT)
            .args(["join", &via, "--config", &config_arg])
            .env(bootstrap::JOIN_TOKEN_ENV, &token)
            .output()
            .unwrap()
    })
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(data.join("node.pem").is_file(), "{stdout}");
    assert_eq!(
        stdout.lines().last().unwrap(),
        format!("start it: pvefleet-agent run --config {}", config.display())
    );

    let accepting = Arc::clone(&coordinator.accepting);
    let (seen, ready, code) = blocking(move || {
        let mut systemd = FakeSystemd::bind(tmp.path()).unwrap();
        let mut cmd = systemd.command(Path::new(AGENT), 300_000);
        cmd.args(["run", "--config", config.to_str().unwrap()]);
        let mut agent = spawn(tmp.path(), cmd);
        // Alive (petting) but refused by the coordinator: not ready.
        systemd
            .until("three WATCHDOG=1", BOUND, |seen| {
                FakeSystemd::count(seen, "WATCHDOG=1") >= 3
            })
            .unwrap();
        assert_eq!(FakeSystemd::count(&systemd.seen, "READY=1"), 0);
        assert!(
            systemd
                .seen
                .iter()
                .any(|m| m.contains("STATUS=looking for the leader")),
            "{:?}",
            systemd.seen
        );
        assert_eq!(agent.try_ready_line(), None, "a ready line before READY");

        accepting.store(true, Ordering::SeqCst);
        systemd
            .until("READY=1", BOUND, |seen| {
                FakeSystemd::count(seen, "READY=1") == 1
            })
            .unwrap();
        let ready = Handle::current().block_on(agent.ready_line(BOUND)).unwrap();
        systemd
            .until("the connected status", BOUND, |seen| {
                seen.iter()
                    .any(|m| m.contains("STATUS=connected to coordinator 1 (term 1), lease valid"))
            })
            .unwrap();
        let pets = FakeSystemd::count(&systemd.seen, "WATCHDOG=1");
        systemd
            .until("more WATCHDOG=1 once ready", BOUND, |seen| {
                FakeSystemd::count(seen, "WATCHDOG=1") > pets
            })
            .unwrap();
        let code = terminate(agent);
        systemd
            .until("STOPPING=1", BOUND, |seen| {
                FakeSystemd::count(seen, "STOPPING=1") == 1
            })
            .unwrap();
        (systemd.seen, ready, code)
    })
    .await;
    let ready: ReadyLine = serde_json::from_str(&ready).unwrap();
    assert_eq!((ready.node_id, ready.host.as_str()), (JOINED_ID, "hosta"));
    assert_eq!(code, Some(0), "a clean stop on SIGTERM");
    assert_eq!(FakeSystemd::count(&seen, "READY=1"), 1, "{seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watchdog_meant_for_another_process_is_not_petted() {
    let coordinator = Coordinator::start();
    coordinator.accepting.store(true, Ordering::SeqCst);
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("agent");
    let (token, via, data_arg) = (
        coordinator.token(),
        coordinator.addr.to_string(),
        data.to_str().unwrap().to_string(),
    );
    let out = blocking(move || {
        Command::new(AGENT)
            .args(["join", &via, "--data-dir", &data_arg])
            .env(bootstrap::JOIN_TOKEN_ENV, &token)
            .output()
            .unwrap()
    })
    .await;
    assert!(out.status.success());
    let config = tmp.path().join("agent.toml");
    std::fs::write(
        &config,
        format!(
            "data_dir = \"{}\"\nhost_name = \"hosta\"\nheartbeat_ms = 100\n\
             vip_holding = \"simulated\"\n[pve]\nbackend = \"pvesh\"\nprogram = \"/bin/false\"\n",
            data.display()
        ),
    )
    .unwrap();
    let seen = blocking(move || {
        let mut systemd = FakeSystemd::bind(tmp.path()).unwrap();
        let mut cmd = TokioCommand::new(AGENT);
        cmd.args(["run", "--config", config.to_str().unwrap()])
            .env("NOTIFY_SOCKET", &systemd.path)
            .env("WATCHDOG_USEC", "300000")
            // PID 1 is never this agent.
            .env("WATCHDOG_PID", "1");
        let agent = spawn(tmp.path(), cmd);
        systemd
            .until("READY=1", BOUND, |seen| {
                FakeSystemd::count(seen, "READY=1") == 1
            })
            .unwrap();
        assert_eq!(terminate(agent), Some(0));
        systemd
            .until("STOPPING=1", BOUND, |seen| {
                FakeSystemd::count(seen, "STOPPING=1") == 1
            })
            .unwrap();
        systemd.seen
    })
    .await;
    // The first notification carries the first pet if there is one to give.
    assert_eq!(FakeSystemd::count(&seen, "WATCHDOG=1"), 0, "{seen:?}");
}
