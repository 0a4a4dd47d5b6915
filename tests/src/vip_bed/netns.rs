//! One network namespace of the testbed: made with `ip netns add` under a name unique to this
//! process and run (`pvf-<pid>-<n>-<role>`), its loopback up, and deleted when dropped, even
//! when a test fails. Threads of the testbed move into it with setns (a socket made by a
//! thread afterwards belongs to the namespace for good), and commands run in it through
//! `ip netns exec`. The `ip` and `nft` commands are only run, never their output parsed.

use std::ffi::OsStr;
use std::fs::File;
use std::io::Write;
use std::os::fd::AsFd;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use super::error::{BedError, io};

/// Where Debian puts `ip` and `nft` (tried first: a test may run with a `PATH` without
/// `/usr/sbin`).
const IP: &str = "/usr/sbin/ip";
const NFT: &str = "/usr/sbin/nft";

/// The number of the next testbed in this process, so two testbeds never share a name.
static NEXT: AtomicU32 = AtomicU32::new(0);

fn program(path: &'static str, name: &'static str) -> &'static str {
    if Path::new(path).exists() { path } else { name }
}

/// A fresh prefix for the namespaces of one testbed: `pvf-<pid>-<n>`.
pub fn unique_prefix() -> String {
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("pvf-{}-{n}", std::process::id())
}

/// Runs `ip ARGS`, which must succeed.
///
/// # Errors
/// [`BedError::Ip`] with its status and output.
pub fn ip(args: &[&str]) -> Result<(), BedError> {
    let out = Command::new(program(IP, "ip"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| BedError::Ip {
            args: args.join(" "),
            reason: e.to_string(),
        })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(BedError::Ip {
            args: args.join(" "),
            reason: format!("{}: {}", out.status, String::from_utf8_lossy(&out.stderr)),
        })
    }
}

/// A network namespace, deleted on drop.
#[derive(Debug)]
pub struct Netns {
    name: String,
}

impl Netns {
    /// Makes the namespace `name` with its loopback up.
    ///
    /// # Errors
    /// [`BedError::Ip`].
    pub fn create(name: String) -> Result<Netns, BedError> {
        ip(&["netns", "add", &name])?;
        // From here on the namespace is deleted if anything below fails.
        let ns = Netns { name };
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs `ip -n NAME ARGS`, which must succeed.
    ///
    /// # Errors
    /// [`BedError::Ip`].
    pub fn ip(&self, args: &[&str]) -> Result<(), BedError> {
        let mut all = vec!["-n", self.name.as_str()];
        all.extend_from_slice(args);
        ip(&all)
    }

    /// Runs the nftables script `script` in the namespace (`nft -f -`: one transaction).
    ///
    /// # Errors
    /// [`BedError::Nft`] with what nft said.
    pub fn nft(&self, script: &str) -> Result<(), BedError> {
        let failed = |reason: String| BedError::Nft {
            netns: self.name.clone(),
            reason,
        };
        let mut child = self
            .command(program(NFT, "nft"))
            .args(["-f", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| failed(e.to_string()))?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(script.as_bytes())
                .map_err(|e| failed(e.to_string()))?;
        }
        let out = child
            .wait_with_output()
            .map_err(|e| failed(e.to_string()))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(failed(format!(
                "{}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            )))
        }
    }

    /// The command that runs `program_path` in the namespace (`ip netns exec NAME PROGRAM`).
    pub fn command(&self, program_path: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new(program(IP, "ip"));
        cmd.args(["netns", "exec", &self.name]).arg(program_path);
        cmd
    }

    /// Moves the calling thread into the namespace (for good: sockets it makes from now on
    /// belong to it).
    ///
    /// # Errors
    /// [`BedError::Enter`].
    pub fn enter(&self) -> Result<(), BedError> {
        enter(&self.name)
    }
}

/// Moves the calling thread into the namespace named `name`.
///
/// # Errors
/// [`BedError::Enter`].
pub fn enter(name: &str) -> Result<(), BedError> {
    let failed = |source| BedError::Enter {
        netns: name.to_string(),
        source,
    };
    let file = File::open(format!("/run/netns/{name}")).map_err(failed)?;
    rustix::thread::move_into_link_name_space(
        file.as_fd(),
        Some(rustix::thread::LinkNameSpaceType::Network),
    )
    .map_err(|e| failed(e.into()))
}

/// Spawns a thread named `thread` that moves into the namespace `netns` and runs `body`
/// there.
///
/// # Errors
/// [`BedError::Io`] if the thread cannot be spawned; the thread's own result (a failed move
/// included) is its join handle's.
pub fn spawn_in<T: Send + 'static>(
    netns: &str,
    thread: &str,
    body: impl FnOnce() -> Result<T, BedError> + Send + 'static,
) -> Result<std::thread::JoinHandle<Result<T, BedError>>, BedError> {
    let netns = netns.to_string();
    std::thread::Builder::new()
        .name(thread.to_string())
        .spawn(move || {
            enter(&netns)?;
            body()
        })
        .map_err(io(format!("spawn thread {thread}")))
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Its interfaces (veth ends, bridges) go with it; a process still inside keeps it
        // alive, unnamed, until it exits.
        let _ = Command::new(program(IP, "ip"))
            .args(["netns", "del", &self.name])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}
