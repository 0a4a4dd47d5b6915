//! The host effects that differ between a PVE host and a lab, chosen once at start-up from the
//! configuration's `platform` and handed to the parts that need them. The agent talks to PVE
//! the same way on both (the `[pve]` backend: the API over HTTPS, or `pvesh`); only what PVE's
//! API does not cover differs, and nothing outside this module asks which platform it is on.
//!
//! | effect                                   | `host`                       | `lab`                                          |
//! |------------------------------------------|------------------------------|------------------------------------------------|
//! | the fence guard's reset                  | reboot(2), no sync           | SIGKILL the agent, reset the node (control API) |
//! | who runs the guard (`guard = "auto"`)    | its systemd unit             | the agent, as its child                         |
//! | VIPs (`vip_holding = "auto"`)            | on the host's interfaces     | recorded only                                   |
//! | why the agent stops                      | systemd's job queue (D-Bus)  | a file the lab writes ([`crate::leave_probe::LEAVE_FILE`]) |
//! | a fenced node's VM config taken over     | pmxcfs under `/etc/pve`      | the control API (`/_sim/pmxcfs/...`)            |
//! | cloud-init snippets                      | the storage's directory      | the control API (`/_sim/snippets/...`)          |
//!
//! The lab's control API is the one of the `pve-sim` process behind the `[pve]` backend
//! ([`lab_control::LabControl::of`]): the agent needs no simulator code to use it.

pub mod lab_control;
pub mod lab_snippets;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lab_control::LabControl;
use lab_snippets::LabSnippetWriter;

use crate::config::{AgentConfig, PlatformKind, VipHolding};
use crate::fence::reset::{ChosenReset, HostReboot, SimulatedReset};
use crate::fence::settings::{Guard, Reset};
use crate::leave_probe::LeaveProbe;
use crate::ops::cluster_fs::ClusterFs;
use crate::ops::{FsSnippetWriter, SnippetWriter};

/// Where PVE keeps the cluster filesystem on a host.
const PMXCFS_ROOT: &str = "/etc/pve";

/// The platform the agent runs on, resolved.
#[derive(Debug, Clone)]
pub struct Platform {
    /// The simulator's control API (the lab platform); `None` on a host.
    control: Option<LabControl>,
    guard: Guard,
    vips_on_interfaces: bool,
}

/// Why the platform of a configuration cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum PlatformError {
    /// The lab platform with a backend that does not say where the simulator is.
    #[error(
        "platform = \"lab\" with backend = \"{backend}\": the simulator's control API is unknown; \
         set PVESIM_URL and PVESIM_PASSWORD_FILE (and PVESIM_CA) as for pvesh-sim, or use \
         backend = \"https\""
    )]
    NoControl {
        /// The `[pve]` backend.
        backend: &'static str,
    },
}

impl Platform {
    /// The platform `config` names for node `node` (its PVE node name); `env` reads the
    /// environment (the `pvesh` backend's simulator is named there).
    pub fn new(
        config: &AgentConfig,
        node: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Platform, PlatformError> {
        let lab = config.platform == PlatformKind::Lab;
        let control = if lab {
            Some(
                LabControl::of(&config.pve, node, env).ok_or(PlatformError::NoControl {
                    backend: config.pve.kind(),
                })?,
            )
        } else {
            None
        };
        Ok(Platform {
            control,
            guard: config.fence.guard(lab),
            vips_on_interfaces: match config.vip_holding {
                VipHolding::Auto => !lab,
                VipHolding::Host => true,
                VipHolding::Simulated => false,
            },
        })
    }

    /// A PVE host with the default `[fence]` (a guard started without a configuration).
    pub fn host() -> Platform {
        Platform {
            control: None,
            guard: Guard::Unit,
            vips_on_interfaces: true,
        }
    }

    /// `host` or `lab`, for the log.
    pub fn name(&self) -> &'static str {
        if self.control.is_some() {
            "lab"
        } else {
            "host"
        }
    }

    /// How the guard resets the host.
    pub fn reset(&self) -> ChosenReset {
        match &self.control {
            Some(control) => ChosenReset::Simulated(SimulatedReset::new(control.clone())),
            None => ChosenReset::Host(HostReboot),
        }
    }

    /// The kind of [`Platform::reset`].
    pub fn reset_kind(&self) -> Reset {
        if self.control.is_some() {
            Reset::Simulated
        } else {
            Reset::Host
        }
    }

    /// Who runs the guard.
    pub fn guard(&self) -> Guard {
        self.guard
    }

    /// Whether VIPs are held on the host's interfaces (else only recorded).
    pub fn holds_vips_on_interfaces(&self) -> bool {
        self.vips_on_interfaces
    }

    /// How the agent learns why it is being stopped; `data_dir` holds the lab's file.
    pub fn leave_probe(&self, data_dir: &Path) -> LeaveProbe {
        match self.control {
            Some(_) => LeaveProbe::File(data_dir.join(crate::leave_probe::LEAVE_FILE)),
            None => LeaveProbe::Systemd,
        }
    }

    /// Where a fenced node's VM configuration is taken over.
    pub fn cluster_fs(&self) -> ClusterFs {
        match &self.control {
            Some(control) => ClusterFs::Simulator(control.clone()),
            None => ClusterFs::Pmxcfs(PathBuf::from(PMXCFS_ROOT)),
        }
    }

    /// Where cloud-init snippets are written.
    pub fn snippets(&self) -> Arc<dyn SnippetWriter> {
        match &self.control {
            Some(control) => Arc::new(LabSnippetWriter::new(control.clone())),
            None => Arc::new(FsSnippetWriter::default()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn config(text: &str) -> AgentConfig {
        let base = "host_name = \"pve-a\"\n[pve]\nbackend = \"https\"\nurl = \"https://127.0.0.1:9\"\ntoken_file = \"/t\"\ninsecure = true\n";
        AgentConfig::from_toml(&format!("{text}\n{base}"), Path::new("agent.toml")).unwrap()
    }

    #[test]
    fn a_host_reboots_asks_systemd_and_holds_vips_for_real() {
        let p = Platform::new(&config(""), "pve-a", |_| None).unwrap();
        assert_eq!(p.name(), "host");
        assert_eq!((p.reset_kind(), p.guard()), (Reset::Host, Guard::Unit));
        assert!(p.holds_vips_on_interfaces());
        assert_eq!(p.leave_probe(Path::new("/d")), LeaveProbe::Systemd);
        assert!(matches!(p.cluster_fs(), ClusterFs::Pmxcfs(root) if root == Path::new("/etc/pve")));
        assert!(matches!(p.reset(), ChosenReset::Host(_)));
    }

    #[test]
    fn a_lab_resets_through_the_simulator_and_records_vips() {
        let p = Platform::new(&config("platform = \"lab\""), "pve-a", |_| None).unwrap();
        assert_eq!(p.name(), "lab");
        assert_eq!(
            (p.reset_kind(), p.guard()),
            (Reset::Simulated, Guard::Child)
        );
        assert!(!p.holds_vips_on_interfaces());
        assert_eq!(
            p.leave_probe(Path::new("/d")),
            LeaveProbe::File(PathBuf::from("/d/leaving"))
        );
        assert!(
            matches!(p.cluster_fs(), ClusterFs::Simulator(c) if c.url == "https://127.0.0.1:9" && c.node == "pve-a")
        );
        let held = Platform::new(
            &config("platform = \"lab\"\nvip_holding = \"host\""),
            "pve-a",
            |_| None,
        )
        .unwrap();
        assert!(held.holds_vips_on_interfaces(), "the namespace testbed");
        let simulated =
            Platform::new(&config("vip_holding = \"simulated\""), "pve-a", |_| None).unwrap();
        assert!(!simulated.holds_vips_on_interfaces());
    }

    #[test]
    fn a_lab_with_pvesh_needs_the_simulator_named_in_the_environment() {
        let text = "platform = \"lab\"\nhost_name = \"pve-a\"\n[pve]\nbackend = \"pvesh\"\n";
        let c = AgentConfig::from_toml(text, Path::new("agent.toml")).unwrap();
        let err = Platform::new(&c, "pve-a", |_| None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("PVESIM_URL"), "{err}");
        let env = |k: &str| match k {
            "PVESIM_URL" => Some("https://127.0.0.1:9".to_string()),
            "PVESIM_PASSWORD_FILE" => Some("/pw".to_string()),
            _ => None,
        };
        assert_eq!(Platform::new(&c, "pve-a", env).unwrap().name(), "lab");
    }
}
