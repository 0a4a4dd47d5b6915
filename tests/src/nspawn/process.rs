//! Host processes for the container harness: commands run with a deadline (a wedged
//! `systemctl` must fail the test, not hang it), signals sent by number through `kill(1)`
//! (the workspace forbids `unsafe`, so no `libc::kill`), and what `/proc` says about parents
//! and PID namespaces, which is how the container's PID 1 is found and how "nothing left
//! behind" is proven.

use std::io::{Read, Write};
use std::process::{Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// What a bounded command did.
#[derive(Debug)]
pub struct Finished {
    /// Its exit status and everything it printed.
    pub output: Output,
    /// Whether it was killed at the deadline.
    pub timed_out: bool,
}

/// Runs `cmd` with `stdin` (or /dev/null) and piped output; SIGKILLs it at `timeout`.
/// Errors only when it cannot be started.
pub fn run_bounded(
    cmd: &mut Command,
    stdin: Option<Vec<u8>>,
    timeout: Duration,
) -> std::io::Result<Finished> {
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn()?;
    // Writers and readers in threads: a child that fills one pipe while we feed the other
    // would otherwise deadlock with us.
    let feeder = match (child.stdin.take(), stdin) {
        (Some(mut pipe), Some(data)) => Some(std::thread::spawn(move || {
            let _ = pipe.write_all(&data);
        })),
        _ => None,
    };
    let out_reader = drain(child.stdout.take());
    let err_reader = drain(child.stderr.take());
    let deadline = Instant::now() + timeout;
    let mut timed_out = false;
    let status: ExitStatus = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if Instant::now() >= deadline {
            timed_out = true;
            let _ = child.kill();
            break child.wait()?;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if let Some(feeder) = feeder {
        let _ = feeder.join();
    }
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    Ok(Finished {
        output: Output {
            status,
            stdout,
            stderr,
        },
        timed_out,
    })
}

fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut buf);
        }
        buf
    })
}

/// Sends `signal` (`TERM`, `KILL`) to `pid`; a negative `pid` names a process group.
/// Whether `kill` reported success (false when the target is already gone).
pub fn send_signal(pid: i64, signal: &str) -> bool {
    Command::new("kill")
        .arg(format!("-{signal}"))
        .arg("--")
        .arg(pid.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The parent PID in a `/proc/PID/stat` line. The command name may hold spaces and
/// parentheses, so the fields are counted after its last `)`.
pub fn parse_stat_ppid(stat: &str) -> Option<u32> {
    let (_, rest) = stat.rsplit_once(')')?;
    // After the name: state, ppid, ...
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The PID namespace of a process (`pid:[4026531836]`), if it still exists.
pub fn pid_namespace(pid: u32) -> Option<String> {
    std::fs::read_link(format!("/proc/{pid}/ns/pid"))
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
}

/// The command name of a process, if it still exists.
pub fn comm(pid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|s| s.trim_end().to_string())
}

/// Whether a process with this PID exists (zombies included).
pub fn exists(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Every PID on the host now.
pub fn all_pids() -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// The children of `parent` now.
pub fn children_of(parent: u32) -> Vec<u32> {
    all_pids()
        .into_iter()
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| parse_stat_ppid(&s))
                == Some(parent)
        })
        .collect()
}

/// Every process in PID namespace `ns`, with its command name.
pub fn processes_in_namespace(ns: &str) -> Vec<(u32, String)> {
    all_pids()
        .into_iter()
        .filter(|&pid| pid_namespace(pid).as_deref() == Some(ns))
        .map(|pid| (pid, comm(pid).unwrap_or_default()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parent_pid_is_read_after_a_command_name_with_spaces_and_parentheses() {
        let stat = "4242 (my (odd) name) S 17 4242 4242 0 -1 4194560";
        assert_eq!(parse_stat_ppid(stat), Some(17));
        assert_eq!(parse_stat_ppid("1 (systemd) S 0 1 1 0"), Some(0));
        assert_eq!(parse_stat_ppid("garbage"), None);
    }

    #[test]
    fn a_command_past_its_deadline_is_killed_and_reported() {
        let done = run_bounded(
            Command::new("sleep").arg("30"),
            None,
            Duration::from_millis(200),
        )
        .expect("sleep starts");
        assert!(done.timed_out);
        assert!(!done.output.status.success());
    }

    #[test]
    fn stdin_is_fed_and_both_outputs_are_collected() {
        let done = run_bounded(
            Command::new("sh").args(["-c", "cat; echo oops >&2"]),
            Some(b"hello".to_vec()),
            Duration::from_secs(30),
        )
        .expect("sh starts");
        assert!(!done.timed_out);
        assert_eq!(done.output.stdout, b"hello");
        assert_eq!(done.output.stderr, b"oops\n");
    }

    #[test]
    fn this_process_is_found_among_its_parents_children() {
        let me = std::process::id();
        let parent = std::fs::read_to_string(format!("/proc/{me}/stat"))
            .ok()
            .and_then(|s| parse_stat_ppid(&s))
            .expect("own stat");
        assert!(children_of(parent).contains(&me));
        let ns = pid_namespace(me).expect("own pid namespace");
        assert!(processes_in_namespace(&ns).iter().any(|(p, _)| *p == me));
    }
}
