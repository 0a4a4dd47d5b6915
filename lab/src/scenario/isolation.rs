//! Where a scenario's processes live. Partitions are nftables rules by address
//! ([`crate::partition`]); they must touch nothing but the scenario, so every process of a
//! run lives in a private network namespace. `pvefleet-lab sim run` not yet inside one re-executes
//! itself under `unshare --net` (root) or `unshare --net --map-root-user` (not root), with
//! [`ENV`] naming the method; inside, it brings `lo` up (`ip link set lo up`) and gives host N
//! the address 127.0.1.N. When neither works the run stays in the machine's namespace and a
//! scenario with partition events is refused with an honest message.
//!
//! ```text
//!  pvefleet-lab sim run F ─ ENV set? ─ yes ─▶ ip link set lo up ─▶ run (links cut by nftables)
//!                           │ no
//!                           ├─ unshare --net true ok ─────────────▶ re-exec under unshare --net
//!                           ├─ unshare --net --map-root-user true ok ▶ re-exec under it
//!                           └─ neither ─▶ run here, partitions refused
//! ```

use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;

use tokio::process::Command;

use super::error::ScenarioError;

/// Set (to the method, or `none: WHY`) in the environment of a run that has chosen where it
/// lives.
pub const ENV: &str = "PVEFLEET_SCENARIO_NETNS";
/// Where Debian puts `ip` (tried first: a `PATH` without `/usr/sbin`).
const IP: &str = "/usr/sbin/ip";
/// Where util-linux puts `unshare`.
const UNSHARE: &str = "/usr/bin/unshare";

/// Where this run lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Isolation {
    /// In a private network namespace entered by `how` (`unshare --net`).
    Namespace {
        /// The method.
        how: String,
    },
    /// In the machine's own namespace: no partitions.
    Shared {
        /// Why no namespace could be had.
        why: String,
    },
}

impl Isolation {
    /// Whether links can be cut.
    pub fn partitions(&self) -> bool {
        matches!(self, Isolation::Namespace { .. })
    }

    /// How links are cut, for the header and the report.
    pub fn describe(&self) -> String {
        match self {
            Isolation::Namespace { how } => format!(
                "cut by nftables rules by address (host N = 127.0.1.N) in a private network \
                 namespace ({how})"
            ),
            Isolation::Shared { why } => format!(
                "not cut: no private network namespace ({why}); partition events are refused"
            ),
        }
    }

    /// The isolation [`ENV`] says this process already has, if it says.
    pub fn from_env() -> Option<Isolation> {
        let value = std::env::var(ENV).ok()?;
        Some(parse_env(&value))
    }
}

/// [`ENV`]'s value read back.
fn parse_env(value: &str) -> Isolation {
    match value.strip_prefix("none: ") {
        Some(why) => Isolation::Shared {
            why: why.to_string(),
        },
        None => Isolation::Namespace {
            how: value.to_string(),
        },
    }
}

/// A way into a private network namespace: the `unshare` options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Method {
    /// `--net`, and `--map-root-user` when not root.
    pub options: Vec<&'static str>,
}

impl Method {
    /// `unshare --net ...` in words.
    pub fn describe(&self) -> String {
        format!("unshare {}", self.options.join(" "))
    }
}

/// The methods to try, in order: root needs no user namespace.
pub fn methods(root: bool) -> Vec<Method> {
    let net = Method {
        options: vec!["--net"],
    };
    let user = Method {
        options: vec!["--net", "--map-root-user"],
    };
    if root { vec![net, user] } else { vec![user] }
}

fn unshare() -> &'static str {
    if Path::new(UNSHARE).exists() {
        UNSHARE
    } else {
        "unshare"
    }
}

/// The first method that works here (`unshare OPTIONS true` succeeds), or why none does.
pub async fn choose() -> Result<Method, String> {
    let root = rustix::process::geteuid().is_root();
    let mut tried = Vec::new();
    for m in methods(root) {
        let status = Command::new(unshare())
            .args(&m.options)
            .arg("true")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .await;
        match status {
            Ok(s) if s.success() => return Ok(m),
            Ok(s) => tried.push(format!("{} failed ({s})", m.describe())),
            Err(e) => tried.push(format!("{}: {e}", m.describe())),
        }
    }
    Err(tried.join("; "))
}

/// Runs this program again, with the same arguments, under `method`, and waits for it. A
/// SIGTERM is passed on; a Ctrl-C reaches it from the terminal as it reaches this process.
///
/// # Errors
/// [`ScenarioError::Namespace`] if it cannot be started.
pub async fn reexec(method: &Method) -> Result<std::process::ExitStatus, ScenarioError> {
    use tokio::signal::unix::{SignalKind, signal};
    let fail = |e: std::io::Error| ScenarioError::Namespace(format!("{}: {e}", method.describe()));
    let program = std::env::current_exe().map_err(fail)?;
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let mut child = Command::new(unshare())
        .args(&method.options)
        .arg("--")
        .arg(program)
        .args(args)
        .env(ENV, method.describe())
        .spawn()
        .map_err(fail)?;
    let (mut term, mut int) = (
        signal(SignalKind::terminate()).map_err(fail)?,
        signal(SignalKind::interrupt()).map_err(fail)?,
    );
    loop {
        tokio::select! {
            status = child.wait() => return status.map_err(fail),
            _ = term.recv() => {
                // unshare execs the program: the child's pid is the run's own.
                if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()).and_then(rustix::process::Pid::from_raw) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
                }
            }
            _ = int.recv() => {}
        }
    }
}

/// Inside the new namespace: brings `lo` up (a new namespace's loopback is down).
///
/// # Errors
/// [`ScenarioError::Namespace`] with what `ip` said.
pub async fn prepare() -> Result<(), ScenarioError> {
    let ip = if Path::new(IP).exists() { IP } else { "ip" };
    let out = Command::new(ip)
        .args(["link", "set", "lo", "up"])
        .stdin(Stdio::null())
        .output()
        .await
        .map_err(|e| ScenarioError::Namespace(format!("{ip} link set lo up: {e}")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(ScenarioError::Namespace(format!(
            "{ip} link set lo up failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_tries_a_plain_network_namespace_first_and_others_a_user_namespace() {
        let root: Vec<String> = methods(true).iter().map(Method::describe).collect();
        assert_eq!(root, ["unshare --net", "unshare --net --map-root-user"]);
        let user: Vec<String> = methods(false).iter().map(Method::describe).collect();
        assert_eq!(user, ["unshare --net --map-root-user"]);
    }

    #[test]
    fn the_environment_says_the_method_or_why_there_is_none() {
        assert_eq!(
            parse_env("unshare --net"),
            Isolation::Namespace {
                how: "unshare --net".into()
            }
        );
        let shared = parse_env("none: unshare --net failed");
        assert!(!shared.partitions());
        assert!(shared.describe().contains("partition events are refused"));
    }
}
