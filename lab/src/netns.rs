//! Network namespaces of a lab: running a child in one (`ip netns exec NS PROGRAM ARGS..`;
//! `ip` enters the namespace and then execs the program, it does not fork, so the child's pid
//! is the program's own and the lab's signals reach it as they would without a namespace), and
//! making one ([`Netns`]: `ip netns add` under a name unique to the run, its loopback up,
//! deleted when dropped, even when a test fails).
//!
//! The caller makes the namespaces and their network (the VIP testbed: a bridge per host, a
//! switch between them; the scenario runner: [`crate::host_network`]) and brings loopback up,
//! since a member's local HTTP endpoint listens on 127.0.0.1 inside it. The lab's own admin
//! calls ([`crate::Lab::client`], and so [`crate::Lab::token`], [`crate::Lab::wait_voters`],
//! [`crate::Lab::wait_hosts_online`]) run in the calling thread's namespace: with members in
//! namespaces, the caller's namespace must reach them. The `ip` and `nft` commands are only
//! run, never their output parsed.

use std::fs::File;
use std::io::Write as _;
use std::os::fd::AsFd;
use std::process::Stdio;

use std::path::Path;

use tokio::process::Command;

use crate::error::LabError;

/// Where Debian's iproute2 puts `ip` and nftables `nft` (tried first: a test may run with a
/// `PATH` without `/usr/sbin`).
const IP: &str = "/usr/sbin/ip";
const NFT: &str = "/usr/sbin/nft";

fn program(path: &'static str, name: &'static str) -> &'static str {
    if Path::new(path).exists() { path } else { name }
}

/// The command that runs `program` in the network namespace `netns`, or in the lab's own when
/// `None`; its arguments follow.
pub fn command_in(netns: Option<&str>, program_path: &Path) -> Command {
    match netns {
        None => Command::new(program_path),
        Some(ns) => {
            let mut cmd = Command::new(program(IP, "ip"));
            cmd.args(["netns", "exec", ns]).arg(program_path);
            cmd
        }
    }
}

/// The blocking command that runs `program_path` in the namespace named `netns` (`ip netns
/// exec NAME PROGRAM`).
pub fn blocking_command_in(
    netns: &str,
    program_path: impl AsRef<std::ffi::OsStr>,
) -> std::process::Command {
    let mut cmd = std::process::Command::new(program(IP, "ip"));
    cmd.args(["netns", "exec", netns]).arg(program_path);
    cmd
}

/// Runs `ip ARGS`, which must succeed.
///
/// # Errors
/// [`LabError::Ip`] with its status and output.
pub fn ip(args: &[&str]) -> Result<(), LabError> {
    let out = std::process::Command::new(program(IP, "ip"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| LabError::Ip {
            args: args.join(" "),
            reason: e.to_string(),
        })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(LabError::Ip {
            args: args.join(" "),
            reason: format!(
                "{}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
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
    /// [`LabError::Ip`].
    pub fn create(name: String) -> Result<Netns, LabError> {
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
    /// [`LabError::Ip`].
    pub fn ip(&self, args: &[&str]) -> Result<(), LabError> {
        let mut all = vec!["-n", self.name.as_str()];
        all.extend_from_slice(args);
        ip(&all)
    }

    /// Runs the nftables script `script` in the namespace (`nft -f -`: one transaction).
    ///
    /// # Errors
    /// [`LabError::Nft`] with what nft said.
    pub fn nft(&self, script: &str) -> Result<(), LabError> {
        let failed = |reason: String| LabError::Nft {
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
                String::from_utf8_lossy(&out.stderr).trim()
            )))
        }
    }

    /// The blocking command that runs `program_path` in the namespace (`ip netns exec NAME
    /// PROGRAM`).
    pub fn command(&self, program_path: impl AsRef<std::ffi::OsStr>) -> std::process::Command {
        blocking_command_in(&self.name, program_path)
    }

    /// Moves the calling thread into the namespace (for good: sockets it makes from now on
    /// belong to it).
    ///
    /// # Errors
    /// [`LabError::Enter`].
    pub fn enter(&self) -> Result<(), LabError> {
        enter(&self.name)
    }
}

/// Moves the calling thread into the namespace named `name`.
///
/// # Errors
/// [`LabError::Enter`].
pub fn enter(name: &str) -> Result<(), LabError> {
    let failed = |source| LabError::Enter {
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

impl Drop for Netns {
    fn drop(&mut self) {
        // Its interfaces (veth ends, bridges) go with it; a process still inside keeps it
        // alive, unnamed, until it exits.
        let _ = std::process::Command::new(program(IP, "ip"))
            .args(["netns", "del", &self.name])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(cmd: &Command) -> Vec<String> {
        let std = cmd.as_std();
        std::iter::once(std.get_program())
            .chain(std.get_args())
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn a_child_in_a_namespace_is_the_program_run_by_ip_netns_exec() {
        let program = Path::new("/bin/agent");
        assert_eq!(argv(&command_in(None, program)), ["/bin/agent"]);
        let wrapped = argv(&command_in(Some("pvf-1-h1"), program));
        assert!(wrapped[0].ends_with("ip"), "{wrapped:?}");
        assert_eq!(wrapped[1..], ["netns", "exec", "pvf-1-h1", "/bin/agent"]);
    }
}
