//! The `LD_PRELOAD` libraries a scenario's processes run under, chosen once from its events:
//! libfaketime when an event steps a host's clock (the host's agent and member follow the
//! host's clock file; their monotonic clocks run on, as a real step leaves them), and the
//! disk-fault library (`pvefleet-disk-fault`) when an event slows or fails a member's disk
//! (the member's syncs of its journal follow the host's disk file). A scenario without such
//! events runs every process as it is.

use std::path::{Path, PathBuf};

use crate::binaries::{Binaries, DISK_FAULT_LIB};
use crate::error::LabError;

use super::error::ScenarioError;
use super::model::{Action, Scenario};

/// libfaketime in Debian's `libfaketime` (the multithreaded one).
pub const FAKETIME_LIB: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";

/// The file holding host `host`'s wall-clock offset for libfaketime (re-read every second).
pub fn clock_file(root: &Path, host: &str) -> PathBuf {
    root.join("clock").join(format!("{host}.rc"))
}

/// The file saying what host `host`'s member's disk does (`ok`, `slow MS`, `fail`), read at
/// every sync of its journal.
pub fn disk_file(root: &Path, host: &str) -> PathBuf {
    root.join("disk").join(format!("{host}.ctl"))
}

/// The libraries of one run.
#[derive(Debug, Clone)]
pub struct Preload {
    root: PathBuf,
    clocks: bool,
    disk_lib: Option<PathBuf>,
}

impl Preload {
    /// What `scenario`'s events need, in a lab rooted at `root` with its programs in
    /// `binaries`.
    ///
    /// # Errors
    /// [`ScenarioError::Start`] naming the missing library and how to get it.
    pub fn for_scenario(
        scenario: &Scenario,
        root: &Path,
        binaries: &Binaries,
    ) -> Result<Preload, ScenarioError> {
        let missing = |what: String| ScenarioError::Start {
            source: LabError::NoSuchPart(what),
        };
        let clocks = scenario
            .events
            .iter()
            .any(|e| matches!(e.action, Action::ClockStep(..)));
        if clocks && !Path::new(FAKETIME_LIB).exists() {
            return Err(missing(format!(
                "clock-step needs libfaketime ({FAKETIME_LIB} is missing: apt-get install \
                 libfaketime)"
            )));
        }
        let disks = scenario.events.iter().any(|e| {
            matches!(
                e.action,
                Action::SlowDisk(..) | Action::FailDisk(_) | Action::HealDisk(_)
            )
        });
        let disk_lib = if disks {
            let lib = binaries.dir.join(DISK_FAULT_LIB);
            if !lib.is_file() {
                return Err(missing(format!(
                    "slow-disk and fail-disk need {} (build it: cargo build -p \
                     pvefleet-disk-fault)",
                    lib.display()
                )));
            }
            Some(lib)
        } else {
            None
        };
        Ok(Preload {
            root: root.to_path_buf(),
            clocks,
            disk_lib,
        })
    }

    /// Writes host `host`'s control files (its clock at +0 s, its disk fine).
    ///
    /// # Errors
    /// [`LabError::Write`].
    pub fn prepare(&self, host: &str) -> Result<(), LabError> {
        if self.clocks {
            write(&clock_file(&self.root, host), "+0s\n")?;
        }
        if self.disk_lib.is_some() {
            write(&disk_file(&self.root, host), "ok\n")?;
        }
        Ok(())
    }

    /// The environment of host `host`'s agent.
    pub fn agent_env(&self, host: &str) -> Vec<(String, String)> {
        let mut env = Libraries::default();
        if self.clocks {
            env.faketime(&clock_file(&self.root, host));
        }
        env.into_vars()
    }

    /// The environment of the member on host `host`, whose data directory is `dir` (its
    /// journal in `raft/journal/`).
    pub fn member_env(&self, host: &str, dir: &Path) -> Vec<(String, String)> {
        let mut env = Libraries::default();
        if self.clocks {
            env.faketime(&clock_file(&self.root, host));
        }
        if let Some(lib) = &self.disk_lib {
            env.libs.push(lib.display().to_string());
            env.vars.extend([
                (
                    "PVEFLEET_DISK_FAULT".to_string(),
                    disk_file(&self.root, host).display().to_string(),
                ),
                (
                    "PVEFLEET_DISK_FAULT_UNDER".to_string(),
                    dir.join("raft").join("journal").display().to_string(),
                ),
            ]);
        }
        env.into_vars()
    }
}

/// The libraries and variables of one process.
#[derive(Default)]
struct Libraries {
    libs: Vec<String>,
    vars: Vec<(String, String)>,
}

impl Libraries {
    fn faketime(&mut self, file: &Path) {
        self.libs.push(FAKETIME_LIB.to_string());
        self.vars.extend(
            [
                ("FAKETIME_TIMESTAMP_FILE", file.display().to_string()),
                ("FAKETIME_CACHE_DURATION", "1".to_string()),
                ("FAKETIME_DONT_FAKE_MONOTONIC", "1".to_string()),
            ]
            .map(|(k, v)| (k.to_string(), v)),
        );
    }

    fn into_vars(mut self) -> Vec<(String, String)> {
        if !self.libs.is_empty() {
            // ld.so takes a list separated by spaces or colons.
            self.vars
                .push(("LD_PRELOAD".to_string(), self.libs.join(" ")));
        }
        self.vars
    }
}

/// Writes `text` to `path`, its directory made first.
pub(crate) fn write(path: &Path, text: &str) -> Result<(), LabError> {
    let fail = |source| LabError::Write {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    std::fs::write(path, text).map_err(fail)
}
