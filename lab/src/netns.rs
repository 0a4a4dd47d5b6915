//! Running a lab's child in a network namespace: `ip netns exec NS PROGRAM ARGS..`. `ip`
//! enters the namespace and then execs the program (it does not fork), so the child's pid is
//! the program's own and the lab's signals (SIGKILL, SIGSTOP, SIGCONT, SIGTERM) reach it as
//! they would without a namespace.
//!
//! The caller makes the namespace and its network (the VIP testbed does: a bridge per host, a
//! switch between them) and brings its loopback up, since a member's local HTTP endpoint
//! listens on 127.0.0.1 inside it. The lab's own admin calls ([`crate::Lab::client`], and so
//! [`crate::Lab::token`], [`crate::Lab::wait_voters`], [`crate::Lab::wait_hosts_online`])
//! run in the calling thread's namespace: with members in namespaces, the caller makes its
//! tokens and checks through the CLI run in a namespace that reaches them.

use std::path::Path;

use tokio::process::Command;

/// Where Debian's iproute2 puts `ip` (tried first: a test may run with a `PATH` without
/// `/usr/sbin`).
const IP: &str = "/usr/sbin/ip";

/// The command that runs `program` in the network namespace `netns`, or in the lab's own when
/// `None`; its arguments follow.
pub fn command_in(netns: Option<&str>, program: &Path) -> Command {
    match netns {
        None => Command::new(program),
        Some(ns) => {
            let ip = if Path::new(IP).exists() { IP } else { "ip" };
            let mut cmd = Command::new(ip);
            cmd.args(["netns", "exec", ns]).arg(program);
            cmd
        }
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
