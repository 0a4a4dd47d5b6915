//! Where a lab keeps everything: the members' and agents' data directories, the agents'
//! configuration files, the simulated PVE hosts' state, the CLI configuration and the logs.
//!
//! ```text
//!  DIR/cli.toml                    the CLI configuration (admin certificate, every member)
//!  DIR/coordinators/c1 .. cN       member data directories
//!  DIR/hosts/pve-a/ , pve-a.toml   agent data directory and configuration, one per host
//!  DIR/pve/pve-a/ , pve-a.toml     a pve-sim serve process's state and configuration
//!  DIR/logs/coordinator-1.log, agent-pve-a.log, pve-sim-pve-a.log
//! ```

use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};

use crate::error::LabError;

/// A lab's directory and whether it is removed at the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The root.
    pub root: PathBuf,
    /// Whether the lab made it (and its user removes it at exit).
    pub temporary: bool,
}

impl Layout {
    /// `dir` (created if needed, and it must be empty), or a new temporary directory named
    /// `<prefix>-<random>`.
    ///
    /// # Errors
    /// [`LabError::Dir`] naming what is wrong with the directory.
    pub fn create(dir: Option<&Path>, prefix: &str) -> Result<Layout, LabError> {
        let layout = match dir {
            Some(dir) => {
                let bad = |reason: String| LabError::Dir {
                    path: dir.to_path_buf(),
                    reason,
                };
                std::fs::create_dir_all(dir).map_err(|e| bad(format!("cannot create it: {e}")))?;
                let mut entries =
                    std::fs::read_dir(dir).map_err(|e| bad(format!("cannot read it: {e}")))?;
                if entries.next().is_some() {
                    return Err(bad(
                        "is not empty: give a new or empty directory to --dir (a demo's state \
                         cannot be restarted)"
                            .to_string(),
                    ));
                }
                Layout {
                    root: std::path::absolute(dir).map_err(|e| bad(e.to_string()))?,
                    temporary: false,
                }
            }
            None => Layout {
                root: new_temp_dir(prefix)?,
                temporary: true,
            },
        };
        for sub in [
            layout.logs(),
            layout.root.join("coordinators"),
            layout.root.join("hosts"),
            layout.root.join("pve"),
        ] {
            std::fs::create_dir_all(&sub)
                .map_err(|source| LabError::Write { path: sub, source })?;
        }
        Ok(layout)
    }

    /// The CLI configuration file.
    pub fn cli_config(&self) -> PathBuf {
        self.root.join("cli.toml")
    }

    /// The log directory.
    pub fn logs(&self) -> PathBuf {
        self.root.join("logs")
    }

    /// Member `n`'s data directory (not created: `init` and `join` create it).
    pub fn coordinator_dir(&self, n: u32) -> PathBuf {
        self.root.join("coordinators").join(format!("c{n}"))
    }

    /// Member `n`'s log.
    pub fn coordinator_log(&self, n: u32) -> PathBuf {
        self.logs().join(format!("coordinator-{n}.log"))
    }

    /// The agent data directory of `host` (not created: `join` creates it).
    pub fn agent_dir(&self, host: &str) -> PathBuf {
        self.root.join("hosts").join(host)
    }

    /// The agent configuration file of `host`.
    pub fn agent_config(&self, host: &str) -> PathBuf {
        self.root.join("hosts").join(format!("{host}.toml"))
    }

    /// The agent log of `host`.
    pub fn agent_log(&self, host: &str) -> PathBuf {
        self.logs().join(format!("agent-{host}.log"))
    }

    /// The state directory of the simulated PVE host `host` (created by `pve-sim serve`).
    pub fn pve_dir(&self, host: &str) -> PathBuf {
        self.root.join("pve").join(host)
    }

    /// The simulator configuration of the PVE host `host`.
    pub fn pve_config(&self, host: &str) -> PathBuf {
        self.root.join("pve").join(format!("{host}.toml"))
    }

    /// The log of the simulated PVE host `host`.
    pub fn pve_log(&self, host: &str) -> PathBuf {
        self.logs().join(format!("pve-sim-{host}.log"))
    }

    /// Removes the directory if the lab made it; `false` if that failed.
    pub fn remove_if_temporary(&self) -> bool {
        !self.temporary || std::fs::remove_dir_all(&self.root).is_ok()
    }
}

/// A fresh directory under the system's temporary directory.
fn new_temp_dir(prefix: &str) -> Result<PathBuf, LabError> {
    let base = std::env::temp_dir();
    let mut last = None;
    for _ in 0..16 {
        let path = base.join(format!("{prefix}-{:08x}", rand::random::<u32>()));
        match std::fs::create_dir(&path) {
            Ok(()) => return Ok(path),
            Err(e) => last = Some(e),
        }
    }
    Err(LabError::Dir {
        path: base,
        reason: format!(
            "cannot create a directory in it ({}): pass --dir DIR",
            last.map_or_else(String::new, |e| e.to_string())
        ),
    })
}

/// A free UDP port on 127.0.0.1 for a member's QUIC endpoint: bound, read and released (the
/// member binds it moments later; nothing else on a lab machine races for it in that instant).
///
/// # Errors
/// [`LabError::Spawn`] if no port can be bound.
pub fn free_loopback_addr() -> Result<SocketAddr, LabError> {
    UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map_err(|source| LabError::Spawn {
            what: "a coordinator (no free UDP port on 127.0.0.1)".to_string(),
            source,
        })
}

/// The name of the `i`-th simulated host (0-based): `pve-a`, `pve-b`, ...
pub fn host_name(i: u32) -> String {
    let letter = char::from_u32(u32::from(b'a') + i % 26).unwrap_or('x');
    if i < 26 {
        format!("pve-{letter}")
    } else {
        format!("pve-{letter}{}", i / 26)
    }
}

/// The zone label of the `i`-th host: `a` and `b` in turn, so the example fleet's VMs pinned
/// to a zone always find hosts.
pub fn host_zone(i: u32) -> &'static str {
    if i.is_multiple_of(2) { "a" } else { "b" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_named_by_letter_and_alternate_zones() {
        let names: Vec<String> = (0..3).map(host_name).collect();
        assert_eq!(names, ["pve-a", "pve-b", "pve-c"]);
        assert_eq!(host_name(26), "pve-a1");
        assert_eq!((host_zone(0), host_zone(1), host_zone(2)), ("a", "b", "a"));
    }

    #[test]
    fn a_given_directory_must_be_empty_and_is_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let layout = Layout::create(Some(tmp.path()), "lab").unwrap();
        assert!(!layout.temporary);
        assert!(layout.logs().is_dir());
        assert!(layout.remove_if_temporary());
        assert!(tmp.path().is_dir());
        let e = Layout::create(Some(tmp.path()), "lab")
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not empty"), "{e}");
    }

    #[test]
    fn a_temporary_directory_is_named_by_its_prefix_and_removed() {
        let layout = Layout::create(None, "pvefleet-lab-test").unwrap();
        assert!(layout.temporary);
        let name = layout
            .root
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(name.starts_with("pvefleet-lab-test-"), "{name}");
        assert!(layout.remove_if_temporary());
        assert!(!layout.root.exists());
    }
}
