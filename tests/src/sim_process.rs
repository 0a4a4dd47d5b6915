//! Running the real `pve-sim` binary as a process for end-to-end tests: start it on a free
//! loopback port with its state in a temporary directory, read the JSON line it prints when
//! ready, and kill it when the handle is dropped.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A built binary of this workspace (`pve-sim`, `pvesh-sim`), found next to the test
/// executable's `deps/` directory (cargo builds every workspace binary for `--workspace` test runs).
pub fn workspace_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    let mut dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    if dir.ends_with("deps") {
        dir.pop();
    }
    let path = dir.join(name);
    assert!(
        path.exists(),
        "{} not built; run the tests with `cargo nextest run --workspace` (or `cargo build -p pve-sim --bins` first)",
        path.display()
    );
    path
}

/// The first line a just-spawned child prints on its piped stdout (its "ready" line), waiting
/// at most 60 s; its further output is drained so it never blocks on a full pipe. Panics
/// (a test failure) if the child exits first or says nothing in time.
pub fn ready_line(child: &mut Child, what: &str) -> String {
    let stdout = child.stdout.take().expect("stdout piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        if let Some(Ok(line)) = lines.next() {
            let _ = tx.send(line);
        }
        for _ in lines {}
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(100)) {
            return line;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{what} exited before it was ready: {status}");
        }
        assert!(
            Instant::now() < deadline,
            "{what} printed no ready line in 60 s"
        );
    }
}

/// What `pve-sim serve` prints when it is ready.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Ready {
    /// `127.0.0.1:PORT`.
    pub listen: String,
    /// Node answering on that address.
    pub node: String,
    /// Server certificate (PEM) to trust.
    pub cert: PathBuf,
    /// SHA-256 fingerprint of the certificate, `AA:BB:...`.
    pub fingerprint: String,
    /// File holding `root@pam!fleet=SECRET` (mode 0600).
    pub token_file: PathBuf,
    /// File holding the root password (mode 0600).
    pub password_file: PathBuf,
}

/// A running simulator process.
pub struct SimProcess {
    child: Child,
    /// Its ready line.
    pub ready: Ready,
    _dir: tempfile::TempDir,
}

impl SimProcess {
    /// Start `pve-sim serve` with extra arguments (e.g. `--time-scale 0.2`).
    pub fn start(extra: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut child = Command::new(workspace_binary("pve-sim"))
            .arg("serve")
            .args(["--listen", "127.0.0.1:0", "--state-dir"])
            .arg(dir.path())
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("pve-sim starts");
        let line = ready_line(&mut child, "pve-sim");
        let ready: Ready =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad ready line {line:?}: {e}"));
        Self {
            child,
            ready,
            _dir: dir,
        }
    }

    /// Host part of the listen address.
    pub fn host(&self) -> &str {
        self.ready
            .listen
            .rsplit_once(':')
            .map(|(h, _)| h)
            .unwrap_or("127.0.0.1")
    }

    /// Port of the listen address.
    pub fn port(&self) -> u16 {
        self.ready
            .listen
            .rsplit_once(':')
            .and_then(|(_, p)| p.parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for SimProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
