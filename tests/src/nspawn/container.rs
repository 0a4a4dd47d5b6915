//! A booted container: `systemd-nspawn --boot` on a [`RootCopy`], commands run inside with
//! `nsenter` into its PID 1's namespaces, and a cleanup that always runs.
//!
//! This host's PID 1 is not systemd, so nspawn runs with `--register=no --keep-unit` (no
//! machined, no scope unit on a bus that does not exist) and `--private-network` (only a
//! loopback inside). nspawn runs in its own process group under `setpriv --pdeathsig TERM`, so
//! even a test process killed outright powers the container off. Dropping the handle (also
//! while a panic unwinds) prints the container's failed units and journal if the test failed,
//! SIGTERMs nspawn (a clean poweroff), SIGKILLs its process group and the container's PID 1
//! (which ends the whole PID namespace) if that takes too long, and removes the copy.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::process::{self, run_bounded};
use super::root::{RootCopy, tail};
use super::systemd::{SHOW_PROPERTIES, SystemState, UnitState};

/// How long a command inside may take unless the caller says otherwise.
pub const EXEC_TIMEOUT: Duration = Duration::from_secs(120);
/// From nspawn's start until the container's systemd runs.
const LEADER_TIMEOUT: Duration = Duration::from_secs(60);
/// From the container's systemd running until boot finished.
const BOOT_TIMEOUT: Duration = Duration::from_secs(180);
/// For the clean poweroff after SIGTERM (a few seconds here).
const POWEROFF_TIMEOUT: Duration = Duration::from_secs(60);
/// `PATH` inside; the host's is not the container's business.
const PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// A running container.
#[derive(Debug)]
pub struct Container {
    name: String,
    child: Option<Child>,
    nspawn_pid: u32,
    leader: u32,
    pid_ns: String,
    console: PathBuf,
    copy: Option<RootCopy>,
}

/// What a container is on the host, kept to prove after its drop that nothing is left.
#[derive(Debug, Clone)]
pub struct Footprint {
    nspawn_pid: u32,
    pid_ns: String,
    dir: PathBuf,
    name: String,
}

impl Footprint {
    /// Whatever of the container still exists: processes in its PID namespace, the nspawn
    /// process, its run directory, mounts under it, nspawn's runtime directory. Empty when
    /// the cleanup was complete.
    pub fn leftovers(&self) -> Vec<String> {
        let mut left: Vec<String> = process::processes_in_namespace(&self.pid_ns)
            .into_iter()
            .map(|(pid, comm)| format!("process {pid} ({comm}) in the container's PID namespace"))
            .collect();
        if process::comm(self.nspawn_pid).as_deref() == Some("systemd-nspawn") {
            left.push(format!("systemd-nspawn (pid {})", self.nspawn_pid));
        }
        if self.dir.exists() {
            left.push(format!("run directory {}", self.dir.display()));
        }
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let dir = self.dir.to_string_lossy();
        left.extend(
            mounts
                .lines()
                .filter(|l| l.contains(dir.as_ref()))
                .map(|l| format!("mount {l}")),
        );
        let propagate = Path::new("/run/systemd/nspawn/propagate").join(&self.name);
        if propagate.exists() {
            left.push(format!("{}", propagate.display()));
        }
        left
    }
}

impl Container {
    /// Boots `copy` as machine `name` and waits until its systemd finished booting
    /// (`running`, or `degraded` with the failed units printed). Panics with the console's
    /// last lines if it does not boot; the container is cleaned up either way.
    pub fn boot(copy: RootCopy, name: &str) -> Container {
        let console = copy.dir().join("console.log");
        let log = File::create(&console).expect("create the console log");
        let mut cmd = Command::new("setpriv");
        cmd.args(["--pdeathsig", "TERM", "--"])
            .arg("systemd-nspawn")
            .arg("-D")
            .arg(copy.root())
            .args([
                "--boot",
                "--register=no",
                "--keep-unit",
                "--private-network",
                &format!("--machine={name}"),
                "--console=passive",
            ])
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("console log handle"))
            .stderr(log);
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let child = cmd.spawn().expect("systemd-nspawn starts");
        let mut container = Container {
            name: name.to_string(),
            nspawn_pid: child.id(),
            child: Some(child),
            leader: 0,
            pid_ns: String::new(),
            console,
            copy: Some(copy),
        };
        container.find_leader();
        container.wait_booted();
        container
    }

    /// The machine name (also its host name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The host PID of the container's systemd.
    pub fn leader_pid(&self) -> u32 {
        self.leader
    }

    /// What to check after the drop.
    pub fn footprint(&self) -> Footprint {
        Footprint {
            nspawn_pid: self.nspawn_pid,
            pid_ns: self.pid_ns.clone(),
            dir: self
                .copy
                .as_ref()
                .map(|c| c.dir().to_path_buf())
                .unwrap_or_default(),
            name: self.name.clone(),
        }
    }

    fn console_tail(&self, n: usize) -> String {
        tail(
            &std::fs::read_to_string(&self.console).unwrap_or_default(),
            n,
        )
    }

    fn find_leader(&mut self) {
        let own_ns = process::pid_namespace(std::process::id()).unwrap_or_default();
        let deadline = Instant::now() + LEADER_TIMEOUT;
        loop {
            for pid in process::children_of(self.nspawn_pid) {
                if process::comm(pid).as_deref() == Some("systemd")
                    && let Some(ns) = process::pid_namespace(pid)
                    && ns != own_ns
                {
                    self.leader = pid;
                    self.pid_ns = ns;
                    return;
                }
            }
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                panic!(
                    "systemd-nspawn exited ({status}) before the container's systemd ran:\n{}",
                    self.console_tail(40)
                );
            }
            assert!(
                Instant::now() < deadline,
                "the container's systemd did not start within {LEADER_TIMEOUT:?}:\n{}",
                self.console_tail(40)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn wait_booted(&self) {
        let deadline = Instant::now() + BOOT_TIMEOUT;
        loop {
            let out = self.exec_timeout(
                &["systemctl", "is-system-running", "--wait"],
                None,
                Duration::from_secs(60),
            );
            let state = SystemState::parse(&String::from_utf8_lossy(&out.stdout));
            if state == SystemState::Degraded {
                let failed = self.exec(&["systemctl", "--failed", "--no-legend", "--plain"]);
                eprintln!(
                    "[{}] booted degraded; failed units:\n{}",
                    self.name,
                    String::from_utf8_lossy(&failed.stdout)
                );
            }
            if state.booted() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the container did not finish booting within {BOOT_TIMEOUT:?} (last state {state:?}, \
                 {}):\n{}",
                String::from_utf8_lossy(&out.stderr).trim(),
                self.console_tail(40)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Runs `cmd` inside (bounded by [`EXEC_TIMEOUT`]).
    pub fn exec(&self, cmd: &[&str]) -> Output {
        self.exec_timeout(cmd, None, EXEC_TIMEOUT)
    }

    /// Runs `cmd` inside with `stdin` (or /dev/null), bounded by `timeout`: `timeout(1)`
    /// inside ends the command itself (exit status 124), and the host side is killed a little
    /// later in case the container no longer answers.
    pub fn exec_timeout(&self, cmd: &[&str], stdin: Option<Vec<u8>>, timeout: Duration) -> Output {
        let secs = timeout.as_secs().max(1).to_string();
        let done = run_bounded(
            Command::new("nsenter")
                .env_clear()
                .envs([
                    ("PATH", PATH),
                    ("HOME", "/root"),
                    ("LANG", "C.UTF-8"),
                    ("TERM", "dumb"),
                    ("SYSTEMD_PAGER", "cat"),
                    ("SYSTEMD_COLORS", "0"),
                    ("DEBIAN_FRONTEND", "noninteractive"),
                ])
                .args(["-t", &self.leader.to_string(), "-a", "--"])
                .args(["timeout", "-k", "5", &secs])
                .args(cmd),
            stdin,
            timeout + Duration::from_secs(15),
        )
        .expect("nsenter starts");
        done.output
    }

    /// Runs `cmd` inside, which must succeed; its standard output.
    pub fn run_ok(&self, cmd: &[&str]) -> String {
        let out = self.exec(cmd);
        expect_success(&out, cmd)
    }

    /// Runs a shell script inside, which must succeed; its standard output.
    pub fn sh_ok(&self, script: &str) -> String {
        self.run_ok(&["sh", "-ec", script])
    }

    /// Writes `content` to `path` inside with permission bits `mode` (e.g. `"0644"`), creating
    /// the parent directory. Through the container's own mounts, so its `/tmp` and symlinks
    /// are its own.
    pub fn write_file(&self, path: &str, content: &[u8], mode: &str) {
        let cmd = [
            "sh",
            "-ec",
            "umask 077; mkdir -p \"$(dirname \"$1\")\"; cat > \"$1\"; chmod \"$2\" \"$1\"",
            "write_file",
            path,
            mode,
        ];
        let out = self.exec_timeout(&cmd, Some(content.to_vec()), EXEC_TIMEOUT);
        expect_success(&out, &cmd);
    }

    /// Copies the host file `host` to `path` inside (mode 0644).
    pub fn copy_in(&self, host: &Path, path: &str) {
        let content =
            std::fs::read(host).unwrap_or_else(|e| panic!("cannot read {}: {e}", host.display()));
        self.write_file(path, &content, "0644");
    }

    /// `systemctl show` of `unit`.
    pub fn unit(&self, unit: &str) -> UnitState {
        let mut cmd = vec!["systemctl", "show", unit];
        for p in SHOW_PROPERTIES {
            cmd.extend(["-p", p]);
        }
        UnitState::parse(&self.run_ok(&cmd))
    }

    /// Waits (bounded) until `unit` satisfies `cond`; panics with its state and journal if
    /// it does not in time.
    pub fn wait_unit(
        &self,
        unit: &str,
        what: &str,
        timeout: Duration,
        cond: impl Fn(&UnitState) -> bool,
    ) -> UnitState {
        let deadline = Instant::now() + timeout;
        loop {
            let state = self.unit(unit);
            if cond(&state) {
                return state;
            }
            if Instant::now() >= deadline {
                panic!(
                    "{unit}: not {what} within {timeout:?}: {}\n{}",
                    state.summary(),
                    self.journal(unit, 60)
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The last `lines` journal lines of `unit` (for messages).
    pub fn journal(&self, unit: &str, lines: usize) -> String {
        let n = lines.to_string();
        let out = self.exec_timeout(
            &[
                "journalctl",
                "--no-pager",
                "-o",
                "short-monotonic",
                "-n",
                &n,
                "-u",
                unit,
            ],
            None,
            Duration::from_secs(20),
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn dump_diagnostics(&self) {
        let failed = self.exec_timeout(
            &["systemctl", "--failed", "--no-legend", "--plain"],
            None,
            Duration::from_secs(20),
        );
        let journal = self.exec_timeout(
            &[
                "journalctl",
                "--no-pager",
                "-o",
                "short-monotonic",
                "-n",
                "150",
            ],
            None,
            Duration::from_secs(20),
        );
        eprintln!(
            "[{}] a step panicked while the container ran; its failed units:\n{}{}\njournal (end):\n{}{}\nconsole (end):\n{}",
            self.name,
            String::from_utf8_lossy(&failed.stdout),
            String::from_utf8_lossy(&failed.stderr),
            String::from_utf8_lossy(&journal.stdout),
            String::from_utf8_lossy(&journal.stderr),
            self.console_tail(30)
        );
    }

    fn shutdown(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        process::send_signal(i64::from(self.nspawn_pid), "TERM");
        let deadline = Instant::now() + POWEROFF_TIMEOUT;
        let mut exited = false;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                exited = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if !exited {
            eprintln!(
                "[{}] no clean poweroff within {POWEROFF_TIMEOUT:?}: SIGKILL",
                self.name
            );
            process::send_signal(-i64::from(self.nspawn_pid), "KILL");
        }
        // The container's systemd is in its own session; killing it ends its namespace.
        if !self.pid_ns.is_empty()
            && process::pid_namespace(self.leader).as_deref() == Some(self.pid_ns.as_str())
        {
            process::send_signal(i64::from(self.leader), "KILL");
        }
        let _ = child.wait();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.pid_ns.is_empty()
            && !process::processes_in_namespace(&self.pid_ns).is_empty()
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        if std::thread::panicking() && self.leader != 0 {
            self.dump_diagnostics();
        }
        self.shutdown();
        self.copy.take();
    }
}

/// The standard output of a command that must have succeeded; otherwise a panic naming the
/// command, its status (and a timeout) and both outputs.
pub fn expect_success(out: &Output, cmd: &[&str]) -> String {
    assert!(
        out.status.success(),
        "`{}` failed ({}{}):\nstdout: {}\nstderr: {}",
        cmd.join(" "),
        out.status,
        if out.status.code() == Some(124) {
            ", timed out"
        } else {
            ""
        },
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
