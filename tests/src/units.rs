//! The Debian packages' static checks: their systemd units as `systemd-analyze` sees them
//! ([`analyze`]), the packages as `make deb` builds them and lintian judges them ([`deb`]), and
//! what they hold: files, and no trace of the simulator in the product's programs
//! ([`contents`]).
//!
//! ```text
//!  packaging/systemd/*.service ──▶ systemd-analyze verify (temporary root with /usr/bin/<daemon>)
//!                              ──▶ systemd-analyze security --offline ──▶ exposure score
//!  make deb DEB_VERSION=V ──▶ target/debian/pvefleet{,-lab}_V_<arch>.deb ──▶ copies in target/deb-builds/
//!                                                                        ──▶ lintian ──▶ LintianReport
//!                                                                        ──▶ dpkg-deb -c / -x ──▶ files, traces
//! ```
//!
//! The install-and-boot test (`tests/tests/packaging.rs`) builds and lints its packages with
//! [`build_deb`] and [`lintian`]; `tests/tests/it/units.rs` runs the unit checks.

pub mod analyze;
pub mod contents;
pub mod deb;

use std::path::PathBuf;

pub use analyze::{SecurityReport, VerifyReport, security, security_with_dropin, verify};
pub use deb::{BuiltDebs, LintianReport, LintianTag, build_deb, lintian};

/// The agent's unit (enabled by the package).
pub const AGENT_UNIT: &str = "pvefleet-agent.service";
/// The agent's fence guard (enabled by the package; docs/design/fencing-agent.md).
pub const GUARD_UNIT: &str = "pvefleet-agent-guard.service";
/// The coordinator's unit (installed, not enabled).
pub const COORDINATOR_UNIT: &str = "pvefleet-coordinator.service";
/// The drop-in that lifts the agent's sandbox for the `pvesh` backend (shipped as an example).
pub const PVESH_DROPIN: &str = "pvefleet-agent-pvesh.conf";

/// The workspace's root directory.
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default()
}

/// A file of `packaging/systemd/` (a unit or the drop-in).
pub fn systemd_file(name: &str) -> PathBuf {
    workspace_root().join("packaging/systemd").join(name)
}

/// The values of `key` in a unit file's text, in order (comments skipped, no section logic:
/// our units use each key in one section only).
pub fn unit_values<'a>(text: &'a str, key: &str) -> Vec<&'a str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with(['#', ';']))
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| k.trim() == key)
        .map(|(_, v)| v.trim())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::unit_values;

    #[test]
    fn unit_values_skip_comments_and_keep_order() {
        let text = "[Service]\n# ExecStart=/nope\nExecStart=/usr/bin/a run\n; X=1\n\
                    ReadWritePaths=/a\nReadWritePaths = -/b -/c\n";
        assert_eq!(unit_values(text, "ExecStart"), ["/usr/bin/a run"]);
        assert_eq!(unit_values(text, "ReadWritePaths"), ["/a", "-/b -/c"]);
        assert!(unit_values(text, "X").is_empty());
    }
}
