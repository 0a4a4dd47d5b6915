//! The crash of the crash tests (`raft` and `node-agent` durability): a child process that runs
//! the real code under test and is killed with SIGKILL at a step the test chooses.
//!
//! The child is the test binary run again on one `#[ignore]`d test, its *child mode*, which
//! finds its data directory in [`CHILD_DIR_ENV`]. It performs one operation per step, prints an
//! acknowledgement line once the code under test has returned (that is, once the code claims the
//! operation durable), then blocks until the parent lets it go on. So the parent can kill it
//! right after an acknowledgement, before any later flush could make the earlier write durable
//! by accident, or just after letting it go on, in the middle of the next operation
//! ([`KillPoint`], [`CrashChild::run_to`]).
//!
//! A SIGKILL loses whatever sled still holds in its user-space buffers (sled writes them to
//! the file when it flushes, or when a later batch seals them), but not what reached the
//! kernel: this catches a missing flush, not a missing `fsync` (docs/design/durability-tests.md).

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::error::LabError;

/// Set in the child's environment: the directory its data lives in.
pub const CHILD_DIR_ENV: &str = "PVEFLEET_CRASH_CHILD_DIR";

/// Prefix of an acknowledgement line (found anywhere in a line: libtest may print on the same
/// line first).
const ACK: &str = "crash-ack step=";

/// Longest wait for one acknowledgement (and for a killed child to be reaped): a step is a few
/// sled writes and a flush or two, so this only bounds a hung child.
pub const ACK_TIMEOUT: Duration = Duration::from_secs(30);

/// Where the parent kills the child, relative to the acknowledgement of the chosen step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillPoint {
    /// Right after the acknowledgement, while the child waits: nothing later has flushed.
    AfterAck,
    /// Just after letting it go on: somewhere in the next step (or before it starts).
    DuringNext,
}

fn failed(what: impl Into<String>) -> LabError {
    LabError::NoSuchPart(format!("crash child: {}", what.into()))
}

/// A running child; killed (SIGKILL) and reaped in the background if dropped, so a failing test
/// never leaves one behind.
#[derive(Debug)]
pub struct CrashChild {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl CrashChild {
    /// Starts the child-mode test `test_name` (its full path in the running test binary) on
    /// `dir`.
    ///
    /// # Errors
    /// [`LabError::CurrentExe`] or [`LabError::Spawn`].
    pub fn spawn(test_name: &str, dir: &Path) -> Result<CrashChild, LabError> {
        let exe = std::env::current_exe().map_err(LabError::CurrentExe)?;
        let mut child = Command::new(exe)
            .args([
                test_name,
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_DIR_ENV, dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| LabError::Spawn {
                what: format!("crash child {test_name}"),
                source,
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(failed("its pipes were not set up"));
        };
        Ok(CrashChild {
            child,
            stdin,
            stdout: BufReader::new(stdout).lines(),
        })
    }

    /// Waits for the next acknowledgement and returns its step.
    ///
    /// # Errors
    /// The child exited, stayed silent for [`ACK_TIMEOUT`], or printed a malformed line.
    pub async fn ack(&mut self) -> Result<usize, LabError> {
        let deadline = tokio::time::Instant::now() + ACK_TIMEOUT;
        loop {
            let line = tokio::time::timeout_at(deadline, self.stdout.next_line())
                .await
                .map_err(|_| failed(format!("no acknowledgement within {ACK_TIMEOUT:?}")))?
                .map_err(|e| failed(format!("reading its stdout: {e}")))?
                .ok_or_else(|| failed("it exited before acknowledging"))?;
            if let Some((_, step)) = line.split_once(ACK) {
                return step
                    .trim()
                    .parse()
                    .map_err(|_| failed(format!("a malformed acknowledgement {line:?}")));
            }
        }
    }

    /// Waits for the acknowledgement of `step`.
    ///
    /// # Errors
    /// As [`CrashChild::ack`], or another step was acknowledged.
    pub async fn ack_step(&mut self, step: usize) -> Result<(), LabError> {
        match self.ack().await? {
            got if got == step => Ok(()),
            got => Err(failed(format!("acknowledged step {got}, expected {step}"))),
        }
    }

    /// Lets the child go on to its next step.
    ///
    /// # Errors
    /// The child's stdin is closed.
    pub async fn go_on(&mut self) -> Result<(), LabError> {
        self.stdin
            .write_all(b"go\n")
            .await
            .map_err(|e| failed(format!("writing to it: {e}")))?;
        self.stdin
            .flush()
            .await
            .map_err(|e| failed(format!("flushing its stdin: {e}")))
    }

    /// SIGKILLs the child and reaps it.
    ///
    /// # Errors
    /// It was not reaped within [`ACK_TIMEOUT`].
    pub async fn kill(mut self) -> Result<(), LabError> {
        // An error only means it already exited (possible after its last step): reaped below.
        let _ = self.child.start_kill();
        tokio::time::timeout(ACK_TIMEOUT, self.child.wait())
            .await
            .map_err(|_| failed("not reaped after SIGKILL"))?
            .map_err(|e| failed(format!("waiting for it: {e}")))?;
        Ok(())
    }

    /// Runs child-mode test `test_name` on `dir` through steps `0..=last_acked` and kills it at
    /// `kill` relative to the acknowledgement of `last_acked`.
    ///
    /// # Errors
    /// As the steps above.
    pub async fn run_to(
        test_name: &str,
        dir: &Path,
        last_acked: usize,
        kill: KillPoint,
    ) -> Result<(), LabError> {
        let mut child = CrashChild::spawn(test_name, dir)?;
        for step in 0..last_acked {
            child.ack_step(step).await?;
            child.go_on().await?;
        }
        child.ack_step(last_acked).await?;
        if kill == KillPoint::DuringNext {
            child.go_on().await?;
        }
        child.kill().await
    }
}

/// In the child: the directory to work in, or `None` when this is not a child (a plain
/// `--ignored` run), in which case the child-mode test returns at once.
pub fn child_dir() -> Option<PathBuf> {
    std::env::var_os(CHILD_DIR_ENV).map(PathBuf::from)
}

/// In the child: reports `step` as done and durable, then waits for the parent. Returns `false`
/// when the parent closed the pipe or the acknowledgement could not be written (the child
/// should stop).
pub fn acknowledge_and_wait(step: usize) -> bool {
    let mut out = std::io::stdout().lock();
    if writeln!(out, "{ACK}{step}")
        .and_then(|()| out.flush())
        .is_err()
    {
        return false;
    }
    drop(out);
    let mut line = String::new();
    matches!(std::io::stdin().lock().read_line(&mut line), Ok(n) if n > 0)
}
