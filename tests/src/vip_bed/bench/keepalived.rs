//! One keepalived (the Debian bookworm package, 2.2.7) in a host namespace of the testbed, the
//! comparison of the VIP benchmark: its configuration (one `vrrp_instance` on `vmbr0` holding
//! the VIP; VRRPv2 with keepalived's defaults, or VRRPv3 with 0.1 s adverts) and its process.
//!
//! Several keepalived run side by side on one machine only with their own pid files (the
//! defaults under `/run` are shared: a second instance would think the first is itself), so
//! each gets its own, in the testbed's directory, and runs in the foreground (`--dont-fork`)
//! in a process group of its own: keepalived forks a VRRP child, and a host's death has to
//! take both at once. Killing only the parent would let the child notice (it is told of its
//! parent's death) and leave gracefully, sending the priority-0 advert a dead host never
//! sends.

use std::fs::File;
use std::net::Ipv4Addr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process, kill_process_group};

use crate::vip_bed::error::{BedError, io};
use crate::vip_bed::netns::Netns;

/// Where Debian puts keepalived (tried first: the `PATH` may lack `/usr/sbin`).
const KEEPALIVED: &str = "/usr/sbin/keepalived";
/// The VRRP router id of the benchmark's one instance.
const ROUTER_ID: u8 = 51;
/// How often a stopping keepalived is looked at.
const POLL: Duration = Duration::from_millis(10);

fn program() -> &'static str {
    if Path::new(KEEPALIVED).exists() {
        KEEPALIVED
    } else {
        "keepalived"
    }
}

/// `keepalived --version`'s first line (it prints on stderr), e.g. `Keepalived v2.2.7
/// (01/16,2022)`.
///
/// # Errors
/// [`BedError::Io`] if keepalived cannot be run, [`BedError::NoSuch`] if it says no version.
pub fn version() -> Result<String, BedError> {
    let out = Command::new(program())
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(io(
            "run keepalived --version (install it: apt-get install keepalived)",
        ))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    text.lines()
        .find(|l| l.starts_with("Keepalived v"))
        .map(str::to_string)
        .ok_or_else(|| BedError::NoSuch(format!("keepalived --version said: {text}")))
}

/// The two configurations compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VrrpSettings {
    /// keepalived's defaults: VRRPv2, one advert a second (a backup takes over after
    /// 3 × advert + skew, about 3.5 s).
    Defaults,
    /// VRRPv3 with an advert every 0.1 s (takes over after about 0.35 s).
    V3Fast,
}

impl VrrpSettings {
    /// Both, in the order printed.
    pub const ALL: [VrrpSettings; 2] = [VrrpSettings::Defaults, VrrpSettings::V3Fast];

    /// Its name in the tables.
    pub fn name(self) -> &'static str {
        match self {
            VrrpSettings::Defaults => "keepalived VRRPv2 advert_int 1 (defaults)",
            VrrpSettings::V3Fast => "keepalived VRRPv3 advert_int 0.1",
        }
    }

    /// Its advert interval.
    pub fn advert(self) -> Duration {
        match self {
            VrrpSettings::Defaults => Duration::from_secs(1),
            VrrpSettings::V3Fast => Duration::from_millis(100),
        }
    }

    /// A short name for a table column.
    pub fn short(self) -> &'static str {
        match self {
            VrrpSettings::Defaults => "keepalived v2/1s",
            VrrpSettings::V3Fast => "keepalived v3/0.1s",
        }
    }
}

/// The configuration of host `router` (its name) with `priority`: one instance on `vmbr0`
/// holding `vip/prefix_len`, every host starting as a backup (the highest priority is elected
/// and preempts when it comes back: keepalived's default), nothing else set.
pub fn config(
    router: &str,
    priority: u8,
    vip: Ipv4Addr,
    prefix_len: u8,
    settings: VrrpSettings,
) -> String {
    let (version, advert) = match settings {
        VrrpSettings::Defaults => ("", "1"),
        VrrpSettings::V3Fast => ("  vrrp_version 3\n", "0.1"),
    };
    format!(
        "global_defs {{
  router_id {router}
{version}}}

vrrp_instance VI_1 {{
  state BACKUP
  interface vmbr0
  virtual_router_id {ROUTER_ID}
  priority {priority}
  advert_int {advert}
  virtual_ipaddress {{
    {vip}/{prefix_len} dev vmbr0
  }}
}}
"
    )
}

/// A running keepalived; killed (with its children) when dropped.
#[derive(Debug)]
pub struct Keepalived {
    host: String,
    child: Child,
    group: Pid,
    log: PathBuf,
}

fn signal_failed(host: &str, what: &str) -> impl FnOnce(rustix::io::Errno) -> BedError {
    let what = format!("{what} keepalived of {host}");
    move |e| BedError::Io {
        what,
        source: e.into(),
    }
}

impl Keepalived {
    /// Starts keepalived in `netns` for host `host` with the configuration `config`, its files
    /// (configuration, pid files, log) in `dir` named after the host. The log is appended to,
    /// so a host's restarts are all in one file.
    ///
    /// # Errors
    /// [`BedError::Io`].
    pub fn spawn(
        netns: &Netns,
        host: &str,
        dir: &Path,
        config: &str,
    ) -> Result<Keepalived, BedError> {
        let file = |suffix: &str| dir.join(format!("keepalived-{host}.{suffix}"));
        // The instance before this one is dead, but a SIGKILLed keepalived leaves its pid files
        // and keepalived refuses to start ("daemon is already running") when one names a live
        // process; a host's reboot clears them with /run.
        for suffix in ["pid", "vrrp.pid", "checkers.pid", "bfd.pid"] {
            let stale = file(suffix);
            match std::fs::remove_file(&stale) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(io(format!("remove {}", stale.display()))(e));
                }
                _ => {}
            }
        }
        let conf = file("conf");
        std::fs::write(&conf, config).map_err(io(format!("write {}", conf.display())))?;
        let log = file("log");
        let out = File::options()
            .create(true)
            .append(true)
            .open(&log)
            .map_err(io(format!("open {}", log.display())))?;
        let err = out
            .try_clone()
            .map_err(io(format!("open {}", log.display())))?;
        let child = netns
            .command(program())
            .arg("--dont-fork")
            .arg("--log-console")
            .arg("--no-syslog")
            .arg("--vrrp")
            .arg("--use-file")
            .arg(&conf)
            .arg("--pid")
            .arg(file("pid"))
            .arg("--vrrp_pid")
            .arg(file("vrrp.pid"))
            .arg("--checkers_pid")
            .arg(file("checkers.pid"))
            .arg("--bfd_pid")
            .arg(file("bfd.pid"))
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            // Its own group, the VRRP child with it: `ip netns exec` execs keepalived, so the
            // group is keepalived's.
            .process_group(0)
            .spawn()
            .map_err(io(format!("start keepalived in {}", netns.name())))?;
        let group = i32::try_from(child.id())
            .ok()
            .and_then(Pid::from_raw)
            .ok_or_else(|| BedError::NoSuch(format!("keepalived's pid {}", child.id())))?;
        Ok(Keepalived {
            host: host.to_string(),
            child,
            group,
            log,
        })
    }

    /// Its exit status if it ended.
    ///
    /// # Errors
    /// [`BedError::Io`] if it cannot be asked.
    pub fn exited(&mut self) -> Result<Option<ExitStatus>, BedError> {
        self.child
            .try_wait()
            .map_err(io(format!("look at keepalived of {}", self.host)))
    }

    /// The last `lines` lines of its log, for an error message.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// SIGKILL to keepalived and its VRRP child at once (a host's death: nothing sent).
    ///
    /// # Errors
    /// [`BedError::Io`] if the signal cannot be sent or it cannot be reaped.
    pub fn kill(mut self) -> Result<(), BedError> {
        self.kill_group()
    }

    fn kill_group(&mut self) -> Result<(), BedError> {
        if self.exited()?.is_some() {
            return Ok(());
        }
        kill_process_group(self.group, Signal::KILL).map_err(signal_failed(&self.host, "kill"))?;
        self.child
            .wait()
            .map(drop)
            .map_err(io(format!("reap keepalived of {}", self.host)))
    }

    /// SIGTERM to keepalived (it sends a priority-0 advert, removes the VIP and exits) and
    /// waits up to `grace` for it to exit; after that it is killed and the error says so.
    ///
    /// # Errors
    /// [`BedError::Timeout`] if it did not exit in time, [`BedError::Io`].
    pub fn terminate(mut self, grace: Duration) -> Result<ExitStatus, BedError> {
        kill_process(self.group, Signal::TERM).map_err(signal_failed(&self.host, "stop"))?;
        let deadline = Instant::now() + grace;
        loop {
            // keepalived waits for its children before it exits.
            if let Some(status) = self.exited()? {
                return Ok(status);
            }
            if Instant::now() > deadline {
                self.kill_group()?;
                return Err(BedError::Timeout {
                    what: format!("keepalived of {} exiting on SIGTERM", self.host),
                    after: grace,
                    last: self.log_tail(5),
                });
            }
            std::thread::sleep(POLL);
        }
    }
}

impl Drop for Keepalived {
    fn drop(&mut self) {
        let _ = self.kill_group();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_configurations_differ_only_in_version_and_advert_interval() {
        let vip = Ipv4Addr::new(10, 62, 0, 100);
        let v2 = config("h1", 150, vip, 24, VrrpSettings::Defaults);
        let v3 = config("h1", 150, vip, 24, VrrpSettings::V3Fast);
        assert!(v2.contains("advert_int 1\n") && !v2.contains("vrrp_version"));
        assert!(v3.contains("advert_int 0.1\n") && v3.contains("vrrp_version 3"));
        for c in [&v2, &v3] {
            assert!(c.contains("priority 150\n"));
            assert!(c.contains("10.62.0.100/24 dev vmbr0"));
            assert!(c.contains("interface vmbr0"));
        }
    }
}
