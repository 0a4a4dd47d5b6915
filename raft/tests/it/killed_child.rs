//! The crash of the crash tests: a child process that runs the real code under test and is
//! killed with SIGKILL at a step the test chooses.
//!
//! The child is this test binary run again on one `#[ignore]`d test, its *child mode*, which
//! finds its data directory in [`CHILD_DIR_ENV`]. It performs one operation per step, prints an
//! acknowledgement line once the code under test has returned (that is, once the code claims the
//! operation durable), then blocks until the parent lets it go on. So the parent can kill it
//! right after an acknowledgement, before any later flush could make the earlier write durable
//! by accident, or just after letting it go on, in the middle of the next operation.
//!
//! A SIGKILL loses whatever sled still holds in its user-space buffers (sled writes them to
//! the file when it flushes, or when a later batch seals them), but not what reached the
//! kernel: this catches a missing flush, not a missing `fsync` (docs/design/durability-tests.md).

#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// Set in the child's environment: the directory its data lives in.
pub const CHILD_DIR_ENV: &str = "PVEFLEET_CRASH_CHILD_DIR";

/// Prefix of an acknowledgement line (found anywhere in a line: libtest may print on the same
/// line first).
const ACK: &str = "crash-ack step=";

/// Longest wait for one acknowledgement (and for a killed child to be reaped): a step is a few
/// sled writes and a flush or two, so this only bounds a hung child.
const ACK_TIMEOUT: Duration = Duration::from_secs(30);

/// A running child; killed (SIGKILL) and reaped in the background if dropped, so a failing test
/// never leaves one behind.
pub struct KilledChild {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl KilledChild {
    /// Starts the child-mode test `test_name` (its full path in this binary) on `dir`.
    pub fn spawn(test_name: &str, dir: &Path) -> KilledChild {
        let exe = std::env::current_exe().expect("path of the test binary");
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
            .expect("spawn the child-mode test");
        let stdin = child.stdin.take().expect("child stdin");
        let stdout = BufReader::new(child.stdout.take().expect("child stdout")).lines();
        KilledChild {
            child,
            stdin,
            stdout,
        }
    }

    /// Waits for the next acknowledgement and returns its step. Panics if the child exits or
    /// stays silent for [`ACK_TIMEOUT`].
    pub async fn ack(&mut self) -> usize {
        let deadline = tokio::time::Instant::now() + ACK_TIMEOUT;
        loop {
            let line = tokio::time::timeout_at(deadline, self.stdout.next_line())
                .await
                .expect("the child acknowledges within the timeout")
                .expect("read the child's stdout")
                .expect("the child exited before acknowledging");
            if let Some((_, step)) = line.split_once(ACK) {
                return step
                    .trim()
                    .parse()
                    .expect("an acknowledgement names its step");
            }
        }
    }

    /// Waits for the acknowledgement of `step`.
    pub async fn ack_step(&mut self, step: usize) {
        assert_eq!(
            self.ack().await,
            step,
            "acknowledgements come in step order"
        );
    }

    /// Lets the child go on to its next step.
    pub async fn go_on(&mut self) {
        self.stdin
            .write_all(b"go\n")
            .await
            .expect("write to the child");
        self.stdin.flush().await.expect("flush the child's stdin");
    }

    /// SIGKILLs the child and reaps it.
    pub async fn kill(mut self) {
        // An error only means it already exited (possible after its last step): reaped below.
        let _ = self.child.start_kill();
        tokio::time::timeout(ACK_TIMEOUT, self.child.wait())
            .await
            .expect("a killed child is reaped")
            .expect("wait for the child");
    }
}

/// In the child: the directory to work in, or `None` when this is not a child (a plain
/// `--ignored` run), in which case the child-mode test returns at once.
pub fn child_dir() -> Option<PathBuf> {
    std::env::var_os(CHILD_DIR_ENV).map(PathBuf::from)
}

/// In the child: reports `step` as done and durable, then waits for the parent. Returns `false`
/// when the parent closed the pipe (the child should stop).
pub fn acknowledge_and_wait(step: usize) -> bool {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{ACK}{step}").expect("write the acknowledgement");
    out.flush().expect("flush the acknowledgement");
    drop(out);
    let mut line = String::new();
    matches!(std::io::stdin().lock().read_line(&mut line), Ok(n) if n > 0)
}
