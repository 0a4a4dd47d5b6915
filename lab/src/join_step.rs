//! The lab's `join` steps: `pvefleet-coordinator join` and `pvefleet-agent join` with the token
//! on the child's standard input (`--token-file -`), never among its arguments, which every
//! local user can read in `/proc/PID/cmdline` (the daemons refuse a token there anyway).
//!
//! ```text
//!  join_command(binary, via, data_dir) ─▶ BINARY join --token-file - VIA --data-dir DIR [..]
//!  join_command_in(netns, ..)           ─▶ the same, run in a network namespace
//!  run_join(what, command, token)      ─▶ spawn, write "TOKEN\n" to stdin, close, wait
//! ```

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;

use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use crate::error::LabError;
use crate::netns::command_in;
use crate::process::step_result;

/// The `join` command of `binary` through the member at `via` into `data_dir`; callers add
/// their own flags (`--listen`). The token is not in it: [`run_join`] feeds it.
pub fn join_command(binary: &Path, via: SocketAddr, data_dir: &Path) -> Command {
    join_command_in(None, binary, via, data_dir)
}

/// [`join_command`] run in the network namespace `netns` (`None`: the lab's own), from which
/// `via` must be reachable.
pub fn join_command_in(
    netns: Option<&str>,
    binary: &Path,
    via: SocketAddr,
    data_dir: &Path,
) -> Command {
    let mut join = command_in(netns, binary);
    join.args(["join", "--token-file", "-", &via.to_string()])
        .arg("--data-dir")
        .arg(data_dir);
    join
}

/// Runs the join step `join` to completion with `token` on its standard input; its standard
/// output on success.
///
/// # Errors
/// [`LabError::Spawn`] if it cannot start, [`LabError::Step`] with its output if it fails.
pub async fn run_join(what: &str, mut join: Command, token: &str) -> Result<String, LabError> {
    let spawn_err = |source| LabError::Spawn {
        what: what.to_string(),
        source,
    };
    let mut child = join
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("NO_COLOR", "1")
        .kill_on_drop(true)
        .spawn()
        .map_err(spawn_err)?;
    if let Some(mut stdin) = child.stdin.take() {
        // A child that exits before reading (a usage error) closes the pipe: the write fails
        // and its output, below, says why.
        let _ = stdin.write_all(format!("{token}\n").as_bytes()).await;
    }
    let out = child.wait_with_output().await.map_err(spawn_err)?;
    step_result(what, out)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    const TOKEN: &str = "pvf1.abababababababababababababababababababababababababababababababab.abc123.s3cretsecretsecretsecretsecret12";

    #[test]
    fn the_join_command_never_carries_the_token() {
        let join = join_command(
            Path::new("/usr/bin/pvefleet-agent"),
            "127.0.0.1:7400".parse().unwrap(),
            Path::new("/tmp/a"),
        );
        let args: Vec<String> = join
            .as_std()
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args,
            [
                "join",
                "--token-file",
                "-",
                "127.0.0.1:7400",
                "--data-dir",
                "/tmp/a"
            ]
        );
    }

    /// A stand-in `join` (a shell script) records its own /proc/PID/cmdline and the standard
    /// input it was given: the token arrives on stdin and is nowhere in the process's argv.
    #[tokio::test]
    async fn the_join_step_feeds_the_token_on_stdin_and_never_in_proc_cmdline() {
        let tmp = tempfile::tempdir().unwrap();
        let script = tmp.path().join("fake-join");
        let cmdline = tmp.path().join("cmdline");
        let stdin = tmp.path().join("stdin");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\ntr '\\0' ' ' < /proc/$$/cmdline > {}\nhead -n 1 > {}\necho joined\n",
                cmdline.display(),
                stdin.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let join = join_command(&script, "127.0.0.1:7400".parse().unwrap(), tmp.path());
        let out = run_join("fake join", join, TOKEN).await.unwrap();
        assert_eq!(out, "joined\n");
        let seen = std::fs::read_to_string(&cmdline).unwrap();
        assert!(
            seen.contains("join --token-file - 127.0.0.1:7400"),
            "{seen}"
        );
        assert!(
            !seen.contains("s3cret") && !seen.contains("abc123"),
            "{seen}"
        );
        assert_eq!(
            std::fs::read_to_string(&stdin).unwrap(),
            format!("{TOKEN}\n")
        );
    }
}
