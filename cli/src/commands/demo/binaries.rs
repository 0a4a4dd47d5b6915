//! Where the demo finds the programs it runs: beside the running `pvefleet`, as cargo builds
//! every binary of the workspace into one directory (and a package installs them together).

use std::path::{Path, PathBuf};

use super::error::DemoError;

/// The coordinator member binary.
pub(crate) const COORDINATOR: &str = "pvefleet-coordinator";
/// The node agent binary.
pub(crate) const AGENT: &str = "pvefleet-agent";

/// The binaries the demo runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Binaries {
    /// `pvefleet-coordinator`.
    pub(crate) coordinator: PathBuf,
    /// `pvefleet-agent`.
    pub(crate) agent: PathBuf,
    /// Their directory (what the user puts on `PATH`).
    pub(crate) dir: PathBuf,
}

impl Binaries {
    /// The binaries beside the running executable.
    pub(crate) fn beside_current_exe() -> Result<Binaries, DemoError> {
        let exe = std::env::current_exe().map_err(DemoError::CurrentExe)?;
        let dir = exe.parent().map(Path::to_path_buf).ok_or_else(|| {
            DemoError::CurrentExe(std::io::Error::other("it has no parent directory"))
        })?;
        Binaries::in_dir(&dir)
    }

    /// The binaries in `dir`, each of which must exist.
    pub(crate) fn in_dir(dir: &Path) -> Result<Binaries, DemoError> {
        let find = |name: &'static str| {
            let path = dir.join(name);
            if path.is_file() {
                Ok(path)
            } else {
                Err(DemoError::MissingBinary {
                    name,
                    dir: dir.to_path_buf(),
                })
            }
        };
        Ok(Binaries {
            coordinator: find(COORDINATOR)?,
            agent: find(AGENT)?,
            dir: dir.to_path_buf(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_binary_is_named_with_the_build_command_that_makes_it() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join(COORDINATOR), "").unwrap();
        let e = Binaries::in_dir(tmp.path()).unwrap_err().to_string();
        assert!(e.contains("pvefleet-agent not found"), "{e}");
        assert!(e.contains("cargo build --release --bins"), "{e}");

        std::fs::write(tmp.path().join(AGENT), "").unwrap();
        let found = Binaries::in_dir(tmp.path()).unwrap();
        assert_eq!(found.agent, tmp.path().join(AGENT));
        assert_eq!(found.coordinator, tmp.path().join(COORDINATOR));
    }
}
