//! `pvefleet-lab demo` as a child process, for tests and benches that need the demo's fleet
//! itself: started with `--output json`, it prints one document once the fleet is ready (the
//! CLI configuration, every process, the dashboard's login link) and runs until SIGTERM, on
//! which it stops its own children. Dropping a [`DemoProcess`] sends SIGTERM and waits for it.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::test_lab::workspace_binary;
use lab::binaries::LAB_CLI;

/// How long the demo may take to print its document.
const READY_WAIT: Duration = Duration::from_secs(300);
/// How long the demo may take to stop its children after SIGTERM.
const STOP_WAIT: Duration = Duration::from_secs(60);

/// A running `pvefleet-lab demo`.
pub struct DemoProcess {
    child: Option<Child>,
    /// The document it printed when ready.
    pub ready: serde_json::Value,
}

impl DemoProcess {
    /// Starts the demo in `dir` (new or empty) with `extra` arguments and waits for its document.
    pub async fn start(dir: &Path, extra: &[&str]) -> DemoProcess {
        let mut child = Command::new(workspace_binary(LAB_CLI))
            .args(["--output", "json", "demo", "--task-speed", "100", "--dir"])
            .arg(dir)
            .args(extra)
            .env_remove("PVEFLEET_CONFIG")
            .env_remove("PVEFLEET_DASHBOARD_URL")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("start pvefleet-lab demo");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let mut text = String::new();
        let read = async {
            while let Ok(Some(line)) = lines.next_line().await {
                text.push_str(&line);
                text.push('\n');
                if let Ok(doc) = serde_json::from_str::<serde_json::Value>(&text) {
                    return Some(doc);
                }
            }
            None
        };
        let ready = match tokio::time::timeout(READY_WAIT, read).await {
            Ok(Some(doc)) => doc,
            other => {
                stop(&mut child).await;
                panic!("pvefleet-lab demo printed no ready document ({other:?})");
            }
        };
        // Keep draining stdout so the demo never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        DemoProcess {
            child: Some(child),
            ready,
        }
    }

    /// The CLI configuration of the demo's cluster.
    pub fn cli_config(&self) -> PathBuf {
        PathBuf::from(self.ready["cli_config"].as_str().expect("cli_config"))
    }

    /// The dashboard's base address (`https://127.0.0.1:PORT`).
    pub fn dashboard_base(&self) -> String {
        self.ready["dashboard"]["base"]
            .as_str()
            .expect("the demo names its dashboard")
            .to_string()
    }

    /// The one-time login link the demo printed.
    pub fn login_link(&self) -> String {
        self.ready["dashboard"]["login"]
            .as_str()
            .expect("the demo prints a login link")
            .to_string()
    }

    /// The process id of coordinator `i` (0 = the founder, whose dashboard the demo names).
    pub fn member_pid(&self, i: usize) -> u32 {
        let pid = self.ready["coordinators"][i]["pid"].as_u64().expect("pid");
        u32::try_from(pid).expect("a pid")
    }

    /// Stops the demo (SIGTERM, then SIGKILL after a grace period).
    pub async fn stop(mut self) {
        if let Some(mut child) = self.child.take() {
            stop(&mut child).await;
        }
    }
}

impl Drop for DemoProcess {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut()
            && let Some(pid) = child.id()
        {
            // SIGTERM: the demo stops its children (SIGKILL would orphan them).
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
            let deadline = std::time::Instant::now() + STOP_WAIT;
            while std::time::Instant::now() < deadline {
                if matches!(child.try_wait(), Ok(Some(_))) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = child.start_kill();
        }
    }
}

async fn stop(child: &mut Child) {
    if let Some(pid) = child.id() {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status();
    }
    if tokio::time::timeout(STOP_WAIT, child.wait()).await.is_err() {
        let _ = child.kill().await;
    }
}
