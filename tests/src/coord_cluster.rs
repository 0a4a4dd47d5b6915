//! A coordinator cluster as real processes on loopback, for end-to-end tests: the `lab`
//! launcher's fleet driven synchronously (a test is a plain `#[test]`), plus the `pvefleet` CLI
//! with `--output json` and a member's `/metrics`. Setting up what cannot be set up is a test
//! failure, so this panics with the launcher's message.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use lab::binaries::CLI;
use lab::{Lab, Member, Part};

use crate::test_lab::{install_crypto, test_lab_options, test_runtime};

/// A cluster under test. Dropping it kills every process (agents first).
pub struct Cluster {
    /// The launcher holding the processes (declared first: dropped before the runtime).
    pub lab: Lab,
    /// The CLI configuration (every member).
    pub cli_config: PathBuf,
    /// The runtime the lab's processes were started on (crate-visible so the fleet can drive
    /// its agents while borrowing the lab mutably).
    pub(crate) rt: tokio::runtime::Runtime,
    root: tempfile::TempDir,
}

impl Cluster {
    /// `init` a founder and start it. `extra` is passed to every `run` (e.g. `--snapshot-logs 50`).
    pub fn found(extra: &[&str]) -> Self {
        install_crypto();
        let root = tempfile::tempdir().expect("temp dir");
        let mut options = test_lab_options(root.path(), "e2e");
        options.member_args = extra.iter().map(|s| (*s).to_string()).collect();
        let rt = test_runtime();
        let mut lab = Lab::new(options).unwrap_or_else(|e| panic!("{e}"));
        rt.block_on(lab.found())
            .unwrap_or_else(|e| panic!("founding the cluster: {e}"));
        Self {
            cli_config: lab.cli_config(),
            lab,
            rt,
            root,
        }
    }

    /// Runs a future on the cluster's runtime.
    pub fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    /// The members, founder first.
    pub fn members(&self) -> &[Member] {
        self.lab.members()
    }

    /// Member `i`.
    pub fn member(&self, i: usize) -> &Member {
        self.lab.member(i).unwrap_or_else(|e| panic!("{e}"))
    }

    /// SIGKILL member `i`: no shutdown, no flush beyond what was already durable.
    pub fn kill9(&mut self, i: usize) {
        self.rt.block_on(self.lab.kill(Part::Member(i)));
    }

    /// SIGTERM member `i` and wait for its exit (bounded).
    pub fn stop(&mut self, i: usize) {
        let stopped = self.rt.block_on(self.lab.terminate(Part::Member(i)));
        assert!(
            !matches!(stopped, Some(lab::Stopped::Killed)),
            "member {i} did not stop on SIGTERM and was killed"
        );
    }

    /// SIGSTOP member `i` (frozen mid-flight, as a hung host looks to its peers).
    pub fn pause(&mut self, i: usize) {
        self.rt
            .block_on(self.lab.pause(Part::Member(i)))
            .unwrap_or_else(|e| panic!("freezing member {i}: {e}"));
    }

    /// SIGCONT member `i` after [`Cluster::pause`].
    pub fn resume(&mut self, i: usize) {
        self.rt
            .block_on(self.lab.resume(Part::Member(i)))
            .unwrap_or_else(|e| panic!("thawing member {i}: {e}"));
    }

    /// Runs member `i` again and waits for its ready line.
    pub fn start(&mut self, i: usize) {
        self.rt
            .block_on(self.lab.start_member(i))
            .unwrap_or_else(|e| panic!("restarting member {i}: {e}"));
    }

    /// Whether member `i` runs.
    pub fn is_running(&mut self, i: usize) -> bool {
        self.lab.runs(Part::Member(i))
    }

    /// A gauge from member `i`'s `/metrics` (plain HTTP/1.0 GET on its local HTTP port).
    pub fn metric(&self, i: usize, name: &str) -> Option<f64> {
        use std::io::{Read, Write};
        let addr = self.member(i).http.as_ref()?;
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

    /// The `pvefleet` binary the tests run.
    pub fn cli_program(&self) -> PathBuf {
        self.lab
            .binaries()
            .path(CLI)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// The CLI with `--output json` and this cluster's config.
    pub fn cli(&self, args: &[&str]) -> Output {
        let program = self
            .lab
            .binaries()
            .path(CLI)
            .unwrap_or_else(|e| panic!("{e}"));
        Command::new(program)
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

    /// Join a new member with `token` through `via` (a member's address) and start it; its
    /// index. The CLI configuration then names every member.
    pub fn join(&mut self, token: &str, via: SocketAddr) -> usize {
        self.rt
            .block_on(self.lab.join_member_with(token, via))
            .unwrap_or_else(|e| panic!("joining a member: {e}"))
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
        self.members()
            .iter()
            .position(|m| m.node_id == id)
            .expect("leader is a member")
    }
}
