//! Where the demo keeps everything, and what it writes there: the members' and agents' data
//! directories, the agents' configuration files, the CLI configuration and the logs.
//!
//! ```text
//!  DIR/cli.toml                    the CLI configuration (admin certificate, every member)
//!  DIR/coordinators/c1 .. cN       member data directories
//!  DIR/hosts/pve-a/ , pve-a.toml   agent data directory and configuration, one per host
//!  DIR/logs/coordinator-1.log, agent-pve-a.log
//! ```

use std::collections::BTreeMap;
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::error::DemoError;

/// The demo's directory and whether it is removed at the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    /// The root.
    pub(crate) root: PathBuf,
    /// Whether the demo made it (and removes it at exit).
    pub(crate) temporary: bool,
}

impl Layout {
    /// `dir` (created if needed, and it must be empty), or a new temporary directory.
    pub(crate) fn create(dir: Option<&Path>) -> Result<Layout, DemoError> {
        let layout = match dir {
            Some(dir) => {
                let bad = |reason: String| DemoError::Dir {
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
                root: new_temp_dir()?,
                temporary: true,
            },
        };
        for sub in [
            layout.logs(),
            layout.root.join("coordinators"),
            layout.root.join("hosts"),
        ] {
            std::fs::create_dir_all(&sub)
                .map_err(|source| DemoError::Write { path: sub, source })?;
        }
        Ok(layout)
    }

    /// The CLI configuration file.
    pub(crate) fn cli_config(&self) -> PathBuf {
        self.root.join("cli.toml")
    }

    /// The log directory.
    pub(crate) fn logs(&self) -> PathBuf {
        self.root.join("logs")
    }

    /// Member `n`'s data directory (not created: `init` and `join` create it).
    pub(crate) fn coordinator_dir(&self, n: u32) -> PathBuf {
        self.root.join("coordinators").join(format!("c{n}"))
    }

    /// Member `n`'s log.
    pub(crate) fn coordinator_log(&self, n: u32) -> PathBuf {
        self.logs().join(format!("coordinator-{n}.log"))
    }

    /// The agent data directory of `host` (not created: `join` creates it).
    pub(crate) fn agent_dir(&self, host: &str) -> PathBuf {
        self.root.join("hosts").join(host)
    }

    /// The agent configuration file of `host`.
    pub(crate) fn agent_config(&self, host: &str) -> PathBuf {
        self.root.join("hosts").join(format!("{host}.toml"))
    }

    /// The agent log of `host`.
    pub(crate) fn agent_log(&self, host: &str) -> PathBuf {
        self.logs().join(format!("agent-{host}.log"))
    }

    /// Removes the directory if the demo made it; `false` if that failed.
    pub(crate) fn remove_if_temporary(&self) -> bool {
        !self.temporary || std::fs::remove_dir_all(&self.root).is_ok()
    }
}

/// A fresh directory under the system's temporary directory.
fn new_temp_dir() -> Result<PathBuf, DemoError> {
    let base = std::env::temp_dir();
    let mut last = None;
    for _ in 0..16 {
        let path = base.join(format!("pvefleet-demo-{:08x}", rand::random::<u32>()));
        match std::fs::create_dir(&path) {
            Ok(()) => return Ok(path),
            Err(e) => last = Some(e),
        }
    }
    Err(DemoError::Dir {
        path: base,
        reason: format!(
            "cannot create a directory in it ({}): pass --dir DIR",
            last.map_or_else(String::new, |e| e.to_string())
        ),
    })
}

/// A free UDP port on 127.0.0.1 for a member's QUIC endpoint: bound, read and released (the
/// member binds it moments later; nothing else on a demo machine races for it).
pub(crate) fn free_loopback_addr() -> Result<SocketAddr, DemoError> {
    UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map_err(|source| DemoError::Spawn {
            what: "a coordinator (no free UDP port on 127.0.0.1)".to_string(),
            source,
        })
}

/// The name of the `i`-th simulated host (0-based): `pve-a`, `pve-b`, ...
pub(crate) fn host_name(i: u32) -> String {
    let letter = char::from_u32(u32::from(b'a') + i % 26).unwrap_or('x');
    if i < 26 {
        format!("pve-{letter}")
    } else {
        format!("pve-{letter}{}", i / 26)
    }
}

/// The zone label of the `i`-th host: `a` and `b` in turn, so the example fleet's VMs pinned
/// to a zone always find hosts.
pub(crate) fn host_zone(i: u32) -> &'static str {
    if i.is_multiple_of(2) { "a" } else { "b" }
}

/// One simulated host's agent configuration (`pvefleet-agent run --config FILE`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct AgentConfig {
    /// The agent's data directory (made by `pvefleet-agent join`).
    pub(crate) data_dir: PathBuf,
    /// The PVE node name the agent reports.
    pub(crate) host_name: String,
    /// How often it beats.
    pub(crate) heartbeat_ms: u64,
    /// Labels placement matches.
    pub(crate) labels: BTreeMap<String, String>,
    /// The simulated PVE node.
    pub(crate) pve: SimPve,
}

/// The `[pve]` table of a simulated host.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct SimPve {
    /// Always `sim`.
    pub(crate) backend: &'static str,
    /// Logical CPUs of the simulated node.
    pub(crate) cpus: u32,
    /// Its memory in GiB.
    pub(crate) memory_gib: u64,
    /// Task duration multiplier (1.0 = like real PVE).
    pub(crate) time_scale: f64,
    /// Seconds (before scaling) from a VM's start until its guest agent reports addresses.
    pub(crate) agent_ip_delay_secs: f64,
}

impl AgentConfig {
    /// The `i`-th demo host, with tasks `speed` times faster than real PVE.
    pub(crate) fn demo_host(layout: &Layout, i: u32, speed: u32) -> AgentConfig {
        let host_name = host_name(i);
        AgentConfig {
            data_dir: layout.agent_dir(&host_name),
            labels: BTreeMap::from([("zone".to_string(), host_zone(i).to_string())]),
            host_name,
            heartbeat_ms: 1000,
            pve: SimPve {
                backend: "sim",
                cpus: 16,
                memory_gib: 64,
                time_scale: 1.0 / f64::from(speed.max(1)),
                agent_ip_delay_secs: 8.0,
            },
        }
    }

    /// Writes the configuration as TOML to `path`.
    pub(crate) fn write(&self, path: &Path) -> Result<(), DemoError> {
        let text = toml::to_string(self).map_err(|e| DemoError::Write {
            path: path.to_path_buf(),
            source: std::io::Error::other(e),
        })?;
        std::fs::write(path, text).map_err(|source| DemoError::Write {
            path: path.to_path_buf(),
            source,
        })
    }
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
        let layout = Layout::create(Some(tmp.path())).unwrap();
        assert!(!layout.temporary);
        assert!(layout.logs().is_dir());
        assert!(layout.remove_if_temporary());
        assert!(tmp.path().is_dir());
        let e = Layout::create(Some(tmp.path())).unwrap_err().to_string();
        assert!(e.contains("is not empty"), "{e}");
    }

    #[test]
    fn the_agent_configuration_names_the_host_its_zone_and_the_simulated_node() {
        let tmp = tempfile::tempdir().unwrap();
        let layout = Layout::create(Some(tmp.path())).unwrap();
        let config = AgentConfig::demo_host(&layout, 1, 10);
        let path = layout.agent_config("pve-b");
        config.write(&path).unwrap();
        let back: toml::Table = std::fs::read_to_string(&path).unwrap().parse().unwrap();
        assert_eq!(back["host_name"].as_str(), Some("pve-b"));
        assert_eq!(back["labels"]["zone"].as_str(), Some("b"));
        assert_eq!(back["pve"]["backend"].as_str(), Some("sim"));
        assert_eq!(back["pve"]["time_scale"].as_float(), Some(0.1));
        assert_eq!(
            back["data_dir"].as_str(),
            Some(layout.agent_dir("pve-b").to_str().unwrap())
        );
    }
}
