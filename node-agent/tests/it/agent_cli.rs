#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking
//! The `pvefleet-agent` binary as a process: help, configuration errors that name the field,
//! and `join` then `run` against a fake coordinator on loopback (Join and Agent services, a
//! cluster CA made by `bootstrap`), with the ready line on stdout and a clean SIGTERM exit;
//! the join token from a file, standard input or the environment, and never from argv.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bootstrap::ca::DEFAULT_LEAF_VALIDITY;
use bootstrap::{ClusterCa, JOIN_TOKEN_ENV, NodeDir, NodeKey};
use lab::process::{Process, Stderr};
use node_agent::daemon::ReadyLine;
use protocol::agent::{Heartbeat, HeartbeatAck};
use protocol::join::{JoinRequest, JoinResponse};
use protocol::{NodeId, Role};
use tokio::process::Command as TokioCommand;
use tokio_util::sync::CancellationToken;
use transport::{Endpoint, RemoteError, Router, Server, Service, TlsMaterial, TransportConfig};

const BOUND: Duration = Duration::from_secs(30);
const AGENT: &str = env!("CARGO_BIN_EXE_pvefleet-agent");

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn agent(args: &[&str]) -> Output {
    Command::new(AGENT).args(args).output().unwrap()
}

/// `pvefleet-agent join ARGS` with the token in the environment, as a script would give it.
fn agent_join(token: &str, args: &[&str]) -> Output {
    Command::new(AGENT)
        .arg("join")
        .args(args)
        .env(JOIN_TOKEN_ENV, token)
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn write_config(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("agent.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn help_names_the_subcommands_and_the_configuration() {
    let out = agent(&["--help"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("join") && text.contains("run"), "{text}");
    let out = agent(&["run", "--help"]);
    let text = String::from_utf8_lossy(&out.stdout);
    for word in [
        "--config",
        "heartbeat_ms",
        "token_file",
        "pvesh",
        "platform",
    ] {
        assert!(text.contains(word), "{word} missing from:\n{text}");
    }
    assert_eq!(agent(&["frobnicate"]).status.code(), Some(2));
}

#[test]
fn configuration_errors_exit_2_and_name_the_field() {
    let tmp = tempfile::tempdir().unwrap();
    let pvesh = "host_name = \"hosta\"\n[pve]\nbackend = \"pvesh\"\n";
    let table = [
        (format!("heartbeat_msec = 5\n{pvesh}"), "heartbeat_msec"),
        (format!("heartbeat_ms = 0\n{pvesh}"), "heartbeat_ms"),
        (format!("{pvesh}memory_gb = 4\n"), "memory_gb"),
        (
            "[pve]\nbackend = \"https\"\ntoken_file = \"/t\"\n".to_string(),
            "ca_file",
        ),
        // The agent has no simulator inside: a lab runs pve-sim beside it.
        ("[pve]\nbackend = \"sim\"\n".to_string(), "sim"),
        (
            format!("{pvesh}[fence]\nreset = \"simulated\"\n"),
            "fence.reset",
        ),
        (format!("platform = \"sim\"\n{pvesh}"), "platform"),
    ];
    for (text, field) in table {
        let path = write_config(tmp.path(), &text);
        let out = agent(&["run", "--config", path.to_str().unwrap()]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{text:?}: {err}");
        assert!(err.contains(field), "{text:?}: {err}");
        assert!(err.contains("agent.toml"), "{err}");
    }
    let missing = tmp.path().join("nope.toml");
    let out = agent(&["run", "--config", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("nope.toml"), "{}", stderr(&out));
}

#[test]
fn running_without_joining_says_to_join_first() {
    let tmp = tempfile::tempdir().unwrap();
    let text = format!(
        "data_dir = \"{}\"\nhost_name = \"hosta\"\n[pve]\nbackend = \"pvesh\"\n",
        tmp.path().join("data").display()
    );
    let path = write_config(tmp.path(), &text);
    let out = agent(&["run", "--config", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("pvefleet-agent join"),
        "{}",
        stderr(&out)
    );
}

/// A fake coordinator 1: Join issues certificates for `role`; Agent acks every beat.
struct Coordinator {
    ca: ClusterCa,
    addr: SocketAddr,
    beats: Arc<AtomicUsize>,
    stop: CancellationToken,
}

impl Coordinator {
    fn start(role: Role) -> Coordinator {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let ca = ClusterCa::create("lab", now_secs()).unwrap();
        let key = NodeKey::generate().unwrap();
        let cert = ca
            .issue(
                &key.csr_pem().unwrap(),
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
        let issuer = ClusterCa::load(ca.cert_pem(), ca.key_pem()).unwrap();
        let beats = Arc::new(AtomicUsize::new(0));
        let mut router = Router::new();
        let issuer = Arc::new(issuer);
        router.handle::<JoinRequest, _, _>(Service::Join, move |_caller, req| {
            let answer = join_answer(&issuer, role, &req, addr);
            async move { answer }
        });
        let counted = Arc::clone(&beats);
        router.handle::<Heartbeat, _, _>(Service::Agent, move |_caller, _hb| {
            counted.fetch_add(1, Ordering::SeqCst);
            async move {
                Ok(HeartbeatAck {
                    leader: 1,
                    term: 1,
                    lease_ms: 10_000,
                    need_inventory: false,
                    acked_results: Vec::new(),
                    commands: Vec::new(),
                    leave: None,
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
            beats,
            stop,
        }
    }

    /// A token pinning this coordinator's CA (the fake server accepts any id and secret).
    fn token(&self) -> String {
        format!(
            "pvf1.{}.abc123.{}",
            hex_of(&self.ca.sha256()),
            "s".repeat(32)
        )
    }
}

impl Drop for Coordinator {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

const JOINED_ID: NodeId = 42;

fn join_answer(
    ca: &ClusterCa,
    role: Role,
    req: &JoinRequest,
    addr: SocketAddr,
) -> Result<JoinResponse, RemoteError> {
    let cert = ca
        .issue(
            &req.csr_pem,
            role,
            JOINED_ID,
            DEFAULT_LEAF_VALIDITY,
            now_secs(),
        )
        .map_err(|e| RemoteError::bad_request(e.to_string()))?;
    Ok(JoinResponse {
        node_id: JOINED_ID,
        cert_pem: cert,
        ca_pem: ca.cert_pem().to_string(),
        cluster_id: "lab".into(),
        members: vec![(1, addr.to_string())],
        ca_key_pem: (role == Role::Coordinator).then(|| ca.key_pem().to_string()),
    })
}

/// Runs the blocking `f` off the runtime's threads, so the fake coordinator keeps serving.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_then_run_prints_the_ready_line_and_stops_cleanly_on_sigterm() {
    let coordinator = Coordinator::start(Role::Agent);
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("agent");
    let (token, via, data_arg) = (
        coordinator.token(),
        coordinator.addr.to_string(),
        data.to_str().unwrap().to_string(),
    );
    let out = blocking(move || agent_join(&token, &[&via, "--data-dir", &data_arg])).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("as agent 42"));
    let cluster = NodeDir::new(&data).read_cluster_config().unwrap();
    assert_eq!((cluster.node_id, cluster.role), (JOINED_ID, Role::Agent));
    assert_eq!(cluster.members.len(), 1);

    // No PVE behind it (`pvesh` is `false`): the agent still beats, and says its reads fail.
    // VIPs recorded only: a test never touches the machine's interfaces.
    let config = write_config(
        tmp.path(),
        &format!(
            "data_dir = \"{}\"\nhost_name = \"hosta\"\nheartbeat_ms = 200\nvip_holding = \
             \"simulated\"\n[labels]\nzone = \"a\"\n[pve]\nbackend = \"pvesh\"\nprogram = \
             \"/bin/false\"\n",
            data.display()
        ),
    );
    let mut run = TokioCommand::new(AGENT);
    run.args(["run", "--config", config.to_str().unwrap()]);
    let log = tmp.path().join("agent.log");
    let (agent, line) = Process::start("agent", run, &log, Stderr::Inherit, BOUND)
        .await
        .unwrap();
    let code = agent.stop(BOUND).await.exit_code();
    let ready: ReadyLine = serde_json::from_str(line.trim()).unwrap();
    assert_eq!(
        ready,
        ReadyLine {
            node_id: JOINED_ID,
            host: "hosta".into(),
            backend: "pvesh".into(),
        }
    );
    assert!(coordinator.beats.load(Ordering::SeqCst) >= 1);
    assert_eq!(code, Some(0), "a clean stop on SIGTERM");
    // The journal was created in the data directory.
    assert!(data.join("journal").is_dir());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_for_another_role_is_refused_and_nothing_is_written() {
    let coordinator = Coordinator::start(Role::Coordinator);
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("agent");
    let (token, via, data_arg) = (
        coordinator.token(),
        coordinator.addr.to_string(),
        data.to_str().unwrap().to_string(),
    );
    let out = blocking(move || agent_join(&token, &[&via, "--data-dir", &data_arg])).await;
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("coordinator role, not agent"), "{err}");
    assert!(err.contains("--role agent"), "{err}");
    assert_eq!(NodeDir::new(&data).existing_node_file(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_pinning_another_ca_is_refused() {
    let coordinator = Coordinator::start(Role::Agent);
    let other = ClusterCa::create("other", now_secs()).unwrap();
    let token = format!("pvf1.{}.abc123.{}", hex_of(&other.sha256()), "s".repeat(32));
    let tmp = tempfile::tempdir().unwrap();
    let (via, data_arg) = (
        coordinator.addr.to_string(),
        tmp.path().join("agent").to_str().unwrap().to_string(),
    );
    let out = blocking(move || agent_join(&token, &[&via, "--data-dir", &data_arg])).await;
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not of the cluster"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_old_positional_token_is_refused_without_showing_it_and_nothing_is_written() {
    let coordinator = Coordinator::start(Role::Agent);
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("agent");
    let (token, via, data_arg) = (
        coordinator.token(),
        coordinator.addr.to_string(),
        data.to_str().unwrap().to_string(),
    );
    let forms = [
        vec!["join", &token, &via, "--data-dir", &data_arg],
        vec!["join", &token, "--data-dir", &data_arg],
    ];
    for form in forms {
        let form: Vec<String> = form.into_iter().map(str::to_string).collect();
        let out = blocking(move || {
            let args: Vec<&str> = form.iter().map(String::as_str).collect();
            agent(&args)
        })
        .await;
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            !err.contains(&"s".repeat(16)) && !err.contains("abc123"),
            "{err}"
        );
        for way in ["--token-file", JOIN_TOKEN_ENV] {
            assert!(err.contains(way), "{way} missing from {err}");
        }
    }
    assert_eq!(NodeDir::new(&data).existing_node_file(), None);
    // Without any token: the ways to give one.
    let (via, data_arg) = (coordinator.addr.to_string(), data_arg.clone());
    let out = blocking(move || {
        Command::new(AGENT)
            .args(["join", &via, "--data-dir", &data_arg])
            .env_remove(JOIN_TOKEN_ENV)
            .output()
            .unwrap()
    })
    .await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no join token given"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_token_file_joins_and_one_others_can_read_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let coordinator = Coordinator::start(Role::Agent);
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("join.token");
    std::fs::write(&file, format!("{}\n", coordinator.token())).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let data = tmp.path().join("agent");
    let args = |data: &Path| {
        [
            "join".to_string(),
            "--token-file".to_string(),
            file.to_str().unwrap().to_string(),
            coordinator.addr.to_string(),
            "--data-dir".to_string(),
            data.to_str().unwrap().to_string(),
        ]
    };
    let wide = args(&data);
    let out = blocking(move || {
        Command::new(AGENT)
            .args(wide)
            .env_remove(JOIN_TOKEN_ENV)
            .output()
            .unwrap()
    })
    .await;
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("chmod 600"), "{err}");
    assert!(!err.contains(&"s".repeat(16)), "{err}");
    assert_eq!(NodeDir::new(&data).existing_node_file(), None);

    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let private = args(&data);
    let out = blocking(move || {
        Command::new(AGENT)
            .args(private)
            .env_remove(JOIN_TOKEN_ENV)
            .output()
            .unwrap()
    })
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(data.join("node.pem").is_file());
}

/// The documented interactive form: `join --token-file - ADDR` waits for the token on standard
/// input; meanwhile its /proc/PID/cmdline, which every local user can read, holds no token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_on_standard_input_joins_and_never_appears_in_proc_cmdline() {
    use tokio::io::AsyncWriteExt;
    let coordinator = Coordinator::start(Role::Agent);
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("agent");
    let mut child = TokioCommand::new(AGENT)
        .args(["join", "--token-file", "-", &coordinator.addr.to_string()])
        .arg("--data-dir")
        .arg(&data)
        .env_remove(JOIN_TOKEN_ENV)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    // Right after fork the child still shows the test's command line: wait (bounded) for the
    // exec of the agent before reading what every local user would see.
    let mut cmdline = String::new();
    for _ in 0..500 {
        let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        cmdline = String::from_utf8_lossy(&raw).replace('\0', " ");
        if cmdline.contains("join --token-file") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(
        cmdline.contains("join --token-file - 127.0.0.1:"),
        "{cmdline}"
    );
    assert!(
        !cmdline.contains("pvf1") && !cmdline.contains("abc123"),
        "{cmdline}"
    );
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(format!("{}\n", coordinator.token()).as_bytes())
        .await
        .unwrap();
    drop(stdin);
    let out = tokio::time::timeout(BOUND, child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(data.join("node.pem").is_file());
}
