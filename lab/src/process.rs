//! The lab's child processes: one-shot steps (`init`, `join`) and long-running members,
//! agents and simulators. A long-running child gets its own process group (so a terminal's
//! Ctrl-C reaches only the launcher, which stops the children in order), its stderr goes to
//! its log file (or the launcher's stderr, for tests), its first stdout line is its ready line
//! and the rest of its stdout goes to the log. Stopping is SIGTERM, a grace period, then
//! SIGKILL; a child dropped without being stopped is killed.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::oneshot;

use crate::error::LabError;

/// How many log lines an error shows.
const TAIL_LINES: usize = 20;
/// How long a child whose stdout closed without a ready line gets to exit.
const EXIT_AFTER_EOF: Duration = Duration::from_secs(2);
/// How long a SIGSTOP or SIGCONT may take to reach every thread of a child.
pub const SIGNAL_SETTLE: Duration = Duration::from_secs(5);
/// How often the threads' states are read meanwhile.
const SETTLE_POLL: Duration = Duration::from_millis(2);

/// Where a long-running child's stderr goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Stderr {
    /// Its log file (the demo: the terminal stays readable).
    #[default]
    Log,
    /// The launcher's own stderr (tests: the harness shows it with a failure).
    Inherit,
}

/// A running child process of the lab.
#[derive(Debug)]
pub struct Process {
    /// What it is, for messages (`coordinator 2`, `agent pve-a`).
    pub what: String,
    /// Its log file.
    pub log: PathBuf,
    child: Child,
    /// The first stdout line, until [`Process::ready_line`] takes it.
    ready: Option<oneshot::Receiver<String>>,
}

/// How a child ended when it was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// It exited on SIGTERM within the grace period (or had already exited).
    Exited(ExitStatus),
    /// It had to be killed.
    Killed,
}

impl Stopped {
    /// The exit code of a child that exited on its own or on SIGTERM; `None` if it had to be
    /// killed or ended by a signal.
    pub fn exit_code(self) -> Option<i32> {
        match self {
            Stopped::Exited(status) => status.code(),
            Stopped::Killed => None,
        }
    }
}

/// Runs a one-shot step to completion; its standard output on success.
///
/// # Errors
/// [`LabError::Spawn`] if it cannot start, [`LabError::Step`] with its output if it fails.
pub async fn run_step(what: &str, mut cmd: Command) -> Result<String, LabError> {
    let out = cmd
        .stdin(Stdio::null())
        .env("NO_COLOR", "1")
        .output()
        .await
        .map_err(|source| LabError::Spawn {
            what: what.to_string(),
            source,
        })?;
    step_result(what, out)
}

/// A finished step's standard output on success, else [`LabError::Step`] with its output.
pub(crate) fn step_result(what: &str, out: std::process::Output) -> Result<String, LabError> {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        Ok(stdout)
    } else {
        Err(LabError::Step {
            what: what.to_string(),
            status: out.status,
            output: format!("{stdout}{}", String::from_utf8_lossy(&out.stderr)),
        })
    }
}

impl Process {
    /// Spawns `cmd` with its stderr per `stderr` and its stdout after the first line in
    /// `log`; the first line is kept for [`Process::ready_line`].
    ///
    /// # Errors
    /// [`LabError::Spawn`], [`LabError::Write`] (the log).
    pub fn spawn(
        what: &str,
        mut cmd: Command,
        log: &Path,
        stderr: Stderr,
    ) -> Result<Process, LabError> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|source| LabError::Write {
                path: log.to_path_buf(),
                source,
            })?;
        let stderr = match stderr {
            Stderr::Log => Stdio::from(file),
            Stderr::Inherit => Stdio::inherit(),
        };
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .env("NO_COLOR", "1")
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| LabError::Spawn {
                what: what.to_string(),
                source,
            })?;
        let (tx, rx) = oneshot::channel();
        if let Some(stdout) = child.stdout.take() {
            tokio::spawn(forward_stdout(stdout, log.to_path_buf(), tx));
        }
        Ok(Process {
            what: what.to_string(),
            log: log.to_path_buf(),
            child,
            ready: Some(rx),
        })
    }

    /// Waits up to `wait` for the first stdout line (the ready line). A child that exits or
    /// stays silent is reported with its log's tail (and, if silent, killed).
    ///
    /// # Errors
    /// [`LabError::NotReady`]; [`LabError::NoSuchPart`] if the line was taken already.
    pub async fn ready_line(&mut self, wait: Duration) -> Result<String, LabError> {
        let rx = self.ready.take().ok_or_else(|| {
            LabError::NoSuchPart(format!("the ready line of {} was read", self.what))
        })?;
        let not_ready = |process: &Process, problem: String| LabError::NotReady {
            what: process.what.clone(),
            problem,
            log: process.log.clone(),
            tail: log_tail(&process.log),
        };
        let exited = |process: &Process, status: std::io::Result<ExitStatus>| {
            let status = status.map_or_else(|e| e.to_string(), |s| s.to_string());
            not_ready(process, format!("exited before it was ready ({status})"))
        };
        let line = tokio::select! {
            line = rx => match line {
                Ok(line) => Some(line),
                // Its stdout closed without a ready line: it is exiting (or closed stdout on
                // purpose); an exit is reported as one, not as a missing line.
                Err(_) => match tokio::time::timeout(EXIT_AFTER_EOF, self.child.wait()).await {
                    Ok(status) => return Err(exited(self, status)),
                    Err(_) => None,
                },
            },
            status = self.child.wait() => return Err(exited(self, status)),
            () = tokio::time::sleep(wait) => None,
        };
        match line {
            Some(line) => Ok(line),
            None => {
                let _ = self.child.kill().await;
                Err(not_ready(
                    self,
                    format!("printed no ready line within {} s", wait.as_secs()),
                ))
            }
        }
    }

    /// The ready line if it has arrived, without waiting (it is taken: a later
    /// [`Process::ready_line`] fails).
    pub fn try_ready_line(&mut self) -> Option<String> {
        let line = self.ready.as_mut()?.try_recv().ok()?;
        self.ready = None;
        Some(line)
    }

    /// Spawns `cmd` ([`Process::spawn`]) and waits up to `wait` for its ready line, which is
    /// returned.
    ///
    /// # Errors
    /// [`LabError::Spawn`], [`LabError::Write`] (the log), [`LabError::NotReady`].
    pub async fn start(
        what: &str,
        cmd: Command,
        log: &Path,
        stderr: Stderr,
        wait: Duration,
    ) -> Result<(Process, String), LabError> {
        let mut process = Process::spawn(what, cmd, log, stderr)?;
        let line = process.ready_line(wait).await?;
        Ok((process, line))
    }

    /// Its process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Its exit status if it has exited (without waiting).
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Sends `signal` to it; `false` if it has exited (or cannot be signalled).
    fn signal(&self, signal: Signal) -> bool {
        self.child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .and_then(Pid::from_raw)
            .is_some_and(|pid| kill_process(pid, signal).is_ok())
    }

    /// SIGSTOP, and waits until every thread of it is stopped: when this returns it is frozen
    /// mid-flight (a hung host, as far as its peers can tell). Signal delivery is
    /// asynchronous, so without the wait a caller could still see it run.
    ///
    /// # Errors
    /// [`LabError::NoSuchPart`] if it has exited; [`LabError::Signal`] if it is not frozen
    /// within [`SIGNAL_SETTLE`].
    pub async fn pause(&self) -> Result<(), LabError> {
        self.signal_and_settle(Signal::STOP, true).await
    }

    /// SIGCONT after [`Process::pause`], and waits until no thread of it is stopped.
    ///
    /// # Errors
    /// [`LabError::NoSuchPart`] if it has exited; [`LabError::Signal`] if it still is stopped
    /// after [`SIGNAL_SETTLE`].
    pub async fn resume(&self) -> Result<(), LabError> {
        self.signal_and_settle(Signal::CONT, false).await
    }

    async fn signal_and_settle(&self, signal: Signal, frozen: bool) -> Result<(), LabError> {
        let gone = || LabError::NoSuchPart(format!("{} is not running", self.what));
        let pid = self.pid().ok_or_else(gone)?;
        if !self.signal(signal) {
            return Err(gone());
        }
        let deadline = tokio::time::Instant::now() + SIGNAL_SETTLE;
        loop {
            match threads_stopped(pid) {
                None => return Err(gone()),
                Some(stopped) if stopped == frozen => return Ok(()),
                Some(_) if tokio::time::Instant::now() >= deadline => {
                    return Err(LabError::Signal {
                        what: self.what.clone(),
                        wanted: if frozen { "stopped" } else { "running" },
                        after: SIGNAL_SETTLE,
                    });
                }
                Some(_) => tokio::time::sleep(SETTLE_POLL).await,
            }
        }
    }

    /// SIGKILL and reap: no shutdown, nothing flushed beyond what was already durable.
    pub async fn kill(mut self) -> Option<ExitStatus> {
        let _ = self.child.kill().await;
        self.exited()
    }

    /// SIGTERM, up to `grace` for it to exit, then SIGKILL. A paused child is resumed first,
    /// or it could not act on SIGTERM.
    pub async fn stop(mut self, grace: Duration) -> Stopped {
        if let Some(status) = self.exited() {
            return Stopped::Exited(status);
        }
        let _ = self.signal(Signal::CONT);
        if self.signal(Signal::TERM)
            && let Ok(Ok(status)) = tokio::time::timeout(grace, self.child.wait()).await
        {
            return Stopped::Exited(status);
        }
        let _ = self.child.kill().await;
        Stopped::Killed
    }
}

/// Sends the first stdout line to `ready`, then appends every further line to `log`.
async fn forward_stdout(
    stdout: tokio::process::ChildStdout,
    log: PathBuf,
    ready: oneshot::Sender<String>,
) {
    let mut lines = BufReader::new(stdout).lines();
    let Ok(Some(first)) = lines.next_line().await else {
        return;
    };
    let _ = ready.send(first);
    let Ok(mut file) = tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .await
    else {
        // Without its log the output is dropped; draining still keeps the child from
        // blocking on a full pipe.
        while let Ok(Some(_)) = lines.next_line().await {}
        return;
    };
    while let Ok(Some(line)) = lines.next_line().await {
        let _ = file.write_all(format!("{line}\n").as_bytes()).await;
    }
}

/// The last lines of a log file (empty if it cannot be read).
pub fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n")
}

/// Whether every thread of process `pid` is stopped (`T`, or `t` under a tracer) — `Some(false)`
/// if any runs or sleeps, `None` once the process is gone (or only its zombie is left). Every thread is read because a
/// group stop reaches each thread when it next handles the signal, the main one not last.
fn threads_stopped(pid: u32) -> Option<bool> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut stopped = false;
    for task in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue; // a thread that ended meanwhile
        };
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next());
        match state {
            Some('T' | 't') => stopped = true,
            Some('Z' | 'X') | None => {}
            Some(_) => return Some(false),
        }
    }
    // Only zombies left: the process has exited and is neither frozen nor running.
    stopped.then_some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", script]);
        cmd
    }

    const WAIT: Duration = Duration::from_secs(10);

    #[tokio::test]
    async fn the_first_line_is_the_ready_line_and_the_rest_goes_to_the_log() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("child.log");
        let script = "echo '{\"ready\":1}'; echo later; echo oops >&2; exec sleep 30";
        let (process, line) = Process::start("child", sh(script), &log, Stderr::Log, WAIT)
            .await
            .unwrap();
        assert_eq!(line, "{\"ready\":1}");
        let deadline = tokio::time::Instant::now() + WAIT;
        while !log_tail(&log).contains("later") || !log_tail(&log).contains("oops") {
            assert!(tokio::time::Instant::now() < deadline, "{}", log_tail(&log));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // sleep exits on SIGTERM: a clean stop, no SIGKILL needed.
        assert!(matches!(process.stop(WAIT).await, Stopped::Exited(_)));
    }

    #[tokio::test]
    async fn a_child_that_ignores_sigterm_is_killed_after_the_grace_period() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("child.log");
        let script = "trap '' TERM; echo ready; while true; do sleep 0.05; done";
        let (process, _) = Process::start("stubborn", sh(script), &log, Stderr::Log, WAIT)
            .await
            .unwrap();
        assert_eq!(
            process.stop(Duration::from_millis(300)).await,
            Stopped::Killed
        );
    }

    #[tokio::test]
    async fn a_paused_child_stops_cleanly_and_a_killed_one_is_reaped() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("child.log");
        let (process, _) = Process::start(
            "a",
            sh("echo ready; exec sleep 30"),
            &log,
            Stderr::Log,
            WAIT,
        )
        .await
        .unwrap();
        let pid = process.pid().unwrap();
        process.pause().await.unwrap();
        assert_eq!(
            threads_stopped(pid),
            Some(true),
            "frozen when pause returns"
        );
        process.resume().await.unwrap();
        assert_eq!(
            threads_stopped(pid),
            Some(false),
            "thawed when resume returns"
        );
        process.pause().await.unwrap();
        assert!(matches!(process.stop(WAIT).await, Stopped::Exited(_)));
        assert_eq!(threads_stopped(pid), None, "gone once stopped");
        let (process, _) = Process::start(
            "b",
            sh("echo ready; exec sleep 30"),
            &log,
            Stderr::Log,
            WAIT,
        )
        .await
        .unwrap();
        let status = process.kill().await.expect("reaped");
        assert!(!status.success());
    }

    #[tokio::test]
    async fn a_child_that_exits_before_it_is_ready_is_reported_with_its_log() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("child.log");
        let e = Process::start(
            "coordinator 9",
            sh("echo 'error: port in use' >&2; exit 3"),
            &log,
            Stderr::Log,
            WAIT,
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("coordinator 9 exited before it was ready"),
            "{e}"
        );
        assert!(e.contains("error: port in use"), "{e}");
    }

    #[tokio::test]
    async fn the_ready_line_can_be_awaited_later_and_only_once() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("child.log");
        let script = "sleep 0.2; echo '{\"late\":1}'; exec sleep 30";
        let mut process = Process::spawn("late", sh(script), &log, Stderr::Log).unwrap();
        assert!(process.exited().is_none());
        assert_eq!(process.ready_line(WAIT).await.unwrap(), "{\"late\":1}");
        let e = process.ready_line(WAIT).await.unwrap_err().to_string();
        assert!(e.contains("was read"), "{e}");
        assert!(matches!(process.stop(WAIT).await, Stopped::Exited(_)));
    }

    #[tokio::test]
    async fn a_failed_step_reports_its_status_and_output() {
        let e = run_step("join", sh("echo 'token expired' >&2; exit 3"))
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("join failed"), "{e}");
        assert!(e.contains("token expired"), "{e}");
    }
}
