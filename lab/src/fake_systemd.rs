//! systemd's end of the notification protocol, for tests of a daemon under `Type=notify`: a
//! datagram socket given to the child as NOTIFY_SOCKET (in the child's environment only, so it
//! never leaks into other tests), and bounded waits for what the child sends (READY=1,
//! WATCHDOG=1, STATUS=..., STOPPING=1).

use std::io;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::LabError;

/// How long one receive blocks before the wait checks its deadline.
const RECV_SLICE: Duration = Duration::from_millis(200);

/// The notification socket and every message received on it.
#[derive(Debug)]
pub struct FakeSystemd {
    socket: UnixDatagram,
    /// The socket's path: the child's NOTIFY_SOCKET.
    pub path: PathBuf,
    /// Every message received so far, in order.
    pub seen: Vec<String>,
}

impl FakeSystemd {
    /// Binds `notify.sock` in `dir`.
    ///
    /// # Errors
    /// The socket's error.
    pub fn bind(dir: &Path) -> io::Result<FakeSystemd> {
        let path = dir.join("notify.sock");
        let socket = UnixDatagram::bind(&path)?;
        socket.set_read_timeout(Some(RECV_SLICE))?;
        Ok(FakeSystemd {
            socket,
            path,
            seen: Vec::new(),
        })
    }

    /// A command running `program` under this socket, as systemd starts a `Type=notify` unit
    /// with `WatchdogSec=`: NOTIFY_SOCKET, WATCHDOG_USEC = `watchdog_usec`, and WATCHDOG_PID
    /// naming the program's own pid (set by a shell that then execs it, so the pid is the
    /// program's). Arguments follow with `.args`.
    pub fn command(&self, program: &Path, watchdog_usec: u64) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new("sh");
        cmd.arg("-c")
            .arg("WATCHDOG_PID=$$ exec \"$0\" \"$@\"")
            .arg(program)
            .env("NOTIFY_SOCKET", &self.path)
            .env("WATCHDOG_USEC", watchdog_usec.to_string());
        cmd
    }

    /// Receives until `done` holds for the messages seen so far, for at most `bound`.
    ///
    /// # Errors
    /// [`LabError::NotReady`] naming `what` and listing what was received.
    pub fn until(
        &mut self,
        what: &str,
        bound: Duration,
        done: impl Fn(&[String]) -> bool,
    ) -> Result<(), LabError> {
        let start = Instant::now();
        let mut buf = [0u8; 4096];
        while !done(&self.seen) {
            if start.elapsed() >= bound {
                return Err(LabError::NotReady {
                    what: format!("the notification socket {}", self.path.display()),
                    problem: format!(
                        "got no {what} within {} s; it got: {:?}",
                        bound.as_secs(),
                        self.seen
                    ),
                    log: self.path.clone(),
                    tail: String::new(),
                });
            }
            if let Ok(n) = self.socket.recv(&mut buf) {
                self.seen
                    .push(String::from_utf8_lossy(&buf[..n]).into_owned());
            }
        }
        Ok(())
    }

    /// How many messages in `seen` hold the line `line` (e.g. `READY=1`).
    pub fn count(seen: &[String], line: &str) -> usize {
        seen.iter().filter(|m| m.lines().any(|l| l == line)).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_collected_until_the_condition_holds_and_a_silent_socket_times_out() {
        let tmp = tempfile::tempdir().unwrap();
        let mut systemd = FakeSystemd::bind(tmp.path()).unwrap();
        let child = UnixDatagram::unbound().unwrap();
        child.send_to(b"READY=1\nSTATUS=up", &systemd.path).unwrap();
        child.send_to(b"WATCHDOG=1", &systemd.path).unwrap();
        systemd
            .until("a pet", Duration::from_secs(10), |seen| {
                FakeSystemd::count(seen, "WATCHDOG=1") == 1
            })
            .unwrap();
        assert_eq!(FakeSystemd::count(&systemd.seen, "READY=1"), 1);
        let e = systemd
            .until("STOPPING=1", Duration::from_millis(300), |seen| {
                FakeSystemd::count(seen, "STOPPING=1") == 1
            })
            .unwrap_err()
            .to_string();
        assert!(e.contains("got no STOPPING=1"), "{e}");
    }
}
