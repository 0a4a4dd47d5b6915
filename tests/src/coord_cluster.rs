//! A coordinator cluster as real processes on loopback, for end-to-end tests: `init` the
//! founder, `join` further members with tokens from the CLI, `run` each as a child process,
//! SIGKILL and restart members, and drive the `pvefleet` CLI with `--output json`.

use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::sim_process::{ready_line, workspace_binary};

/// A free UDP port on 127.0.0.1 (QUIC listens on UDP). Bound and released: good enough on a
/// test machine where nothing else races for ports in the same instant.
pub fn free_udp_port() -> u16 {
    let sock = UdpSocket::bind("127.0.0.1:0").expect("bind a UDP port");
    sock.local_addr().expect("local addr").port()
}

/// What `pvefleet-coordinator run` prints when ready.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct ReadyLine {
    /// The member's node id.
    pub node_id: u64,
    /// Its QUIC address.
    pub listen: String,
    /// Its local HTTP address (`/metrics`, `/healthz`, `/readyz`).
    pub http: String,
}

/// One coordinator member: its data dir, address, and process while it runs.
pub struct Member {
    /// Data directory.
    pub dir: PathBuf,
    /// QUIC listen address.
    pub listen: SocketAddr,
    /// Node id (known once it ran).
    pub node_id: u64,
    /// HTTP address of the current run.
    pub http: Option<String>,
    child: Option<Child>,
    extra: Vec<String>,
}

impl Member {
    /// Whether its process is running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    /// Start `run` and wait for its ready line.
    pub fn start(&mut self) {
        assert!(
            self.child.is_none(),
            "member {} already running",
            self.node_id
        );
        let mut child = Command::new(workspace_binary("pvefleet-coordinator"))
            .arg("run")
            .arg("--data-dir")
            .arg(&self.dir)
            .args(["--http", "127.0.0.1:0"])
            .args(&self.extra)
            .env(
                "RUST_LOG",
                std::env::var("PVEFLEET_TEST_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("pvefleet-coordinator run starts");
        let line = ready_line(&mut child, &format!("member in {}", self.dir.display()));
        let ready: ReadyLine =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad ready line {line:?}: {e}"));
        self.node_id = ready.node_id;
        self.http = Some(ready.http);
        self.child = Some(child);
    }

    /// A gauge from this member's `/metrics` (plain HTTP/1.0 GET on its local HTTP port).
    pub fn metric(&self, name: &str) -> Option<f64> {
        use std::io::{Read, Write};
        let addr = self.http.as_ref()?;
        let mut stream = std::net::TcpStream::connect(addr).ok()?;
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .ok()?;
        stream
            .write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
            .ok()?;
        let mut body = String::new();
        stream.read_to_string(&mut body).ok()?;
        body.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
    }

    /// SIGKILL: no shutdown, no flush beyond what was already durable.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM and wait for a clean exit (bounded).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let pid = child.id().to_string();
            let _ = Command::new("kill").args(["-TERM", &pid]).status();
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!(
                        "member {} did not stop on SIGTERM within 30 s",
                        self.node_id
                    );
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// A cluster under test.
pub struct Cluster {
    /// Members in the order they were added (index 0 is the founder).
    pub members: Vec<Member>,
    /// The CLI config written by `init`.
    pub cli_config: PathBuf,
    root: tempfile::TempDir,
    extra: Vec<String>,
}

fn run_ok(cmd: &mut Command, what: &str) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

impl Cluster {
    /// `init` a founder and start it. `extra` is passed to every `run` (e.g. `--snapshot-logs 50`).
    pub fn found(extra: &[&str]) -> Self {
        let root = tempfile::tempdir().expect("temp dir");
        let dir = root.path().join("m1");
        let listen: SocketAddr = format!("127.0.0.1:{}", free_udp_port())
            .parse()
            .expect("addr");
        run_ok(
            Command::new(workspace_binary("pvefleet-coordinator"))
                .arg("init")
                .arg("--data-dir")
                .arg(&dir)
                .args(["--listen", &listen.to_string(), "--cluster-id", "e2e"]),
            "pvefleet-coordinator init",
        );
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let mut founder = Member {
            dir: dir.clone(),
            listen,
            node_id: 1,
            http: None,
            child: None,
            extra: extra.clone(),
        };
        founder.start();
        Self {
            members: vec![founder],
            cli_config: dir.join("pvefleet.toml"),
            root,
            extra,
        }
    }

    /// The CLI with `--output json` and this cluster's config.
    pub fn cli(&self, args: &[&str]) -> Output {
        Command::new(workspace_binary("pvefleet"))
            .arg("--config")
            .arg(&self.cli_config)
            .args(["--output", "json", "--timeout", "30"])
            .args(args)
            .output()
            .expect("pvefleet runs")
    }

    /// The CLI, which must succeed; its JSON output.
    pub fn cli_json(&self, args: &[&str]) -> serde_json::Value {
        let out = self.cli(args);
        assert!(
            out.status.success(),
            "pvefleet {args:?} failed ({}):\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "pvefleet {args:?}: not JSON ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        })
    }

    /// Create a one-use coordinator token through the CLI.
    pub fn coordinator_token(&self) -> String {
        let v = self.cli_json(&["token", "create", "--role", "coordinator", "--uses", "1"]);
        v["token"]
            .as_str()
            .unwrap_or_else(|| panic!("no token in {v}"))
            .to_string()
    }

    /// Join a new member through `via` (a member's address) and start it.
    pub fn join(&mut self, token: &str, via: SocketAddr) -> usize {
        let n = self.members.len() + 1;
        let dir = self.root.path().join(format!("m{n}"));
        let listen: SocketAddr = format!("127.0.0.1:{}", free_udp_port())
            .parse()
            .expect("addr");
        run_ok(
            Command::new(workspace_binary("pvefleet-coordinator"))
                .args(["join", token, &via.to_string(), "--data-dir"])
                .arg(&dir)
                .args(["--listen", &listen.to_string()]),
            "pvefleet-coordinator join",
        );
        let mut m = Member {
            dir,
            listen,
            node_id: 0,
            http: None,
            child: None,
            extra: self.extra.clone(),
        };
        m.start();
        self.members.push(m);
        self.write_cli_config();
        self.members.len() - 1
    }

    /// Point the CLI at every member (as an operator would after growing the cluster), so it
    /// can reach the cluster whichever member is down.
    pub fn write_cli_config(&self) {
        use bootstrap::cli_config::{CliConfig, CoordinatorAddr};
        let founder = &self.members[0].dir;
        let all = self
            .members
            .iter()
            .map(|m| CoordinatorAddr {
                addr: m.listen.to_string(),
                id: m.node_id,
            })
            .collect();
        CliConfig::for_node_dir(founder, all)
            .write(&self.cli_config)
            .expect("write CLI config");
    }

    /// Root of the temporary directories.
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// `cluster status` as JSON.
    pub fn status(&self) -> serde_json::Value {
        self.cli_json(&["cluster", "status"])
    }

    /// Wait until `cond(status)` holds (bounded).
    pub fn wait_status(
        &self,
        what: &str,
        timeout: Duration,
        cond: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        let deadline = Instant::now() + timeout;
        loop {
            let out = self.cli(&["cluster", "status"]);
            if out.status.success()
                && let Ok(v) = serde_json::from_slice::<serde_json::Value>(&out.stdout)
                && cond(&v)
            {
                return v;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: not reached within {timeout:?}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Index of the member that is leader now.
    pub fn leader_index(&self) -> usize {
        let v = self.wait_status("a leader", Duration::from_secs(60), |v| {
            v["leader"].as_u64().is_some()
        });
        let id = v["leader"].as_u64().expect("leader id");
        self.members
            .iter()
            .position(|m| m.node_id == id)
            .expect("leader is a member")
    }
}
