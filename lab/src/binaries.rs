//! Where the lab finds the programs it runs: beside the running executable, as cargo builds
//! every binary of the workspace into one directory and the packages install them together
//! (`pvefleet` the product's in /usr/bin, `pvefleet-lab` its own and the simulator's beside
//! them). A test or bench executable lives one level down, in `deps/`; its programs are in the
//! directory above.

use std::path::{Path, PathBuf};

use crate::error::LabError;

/// The coordinator member binary.
pub const COORDINATOR: &str = "pvefleet-coordinator";
/// The node agent binary.
pub const AGENT: &str = "pvefleet-agent";
/// The operator CLI.
pub const CLI: &str = "pvefleet";
/// The lab's own command line (`demo`, `sim run`, `sim chaos`; the `lab-cli` crate), which
/// the tests and benches run as a process.
pub const LAB_CLI: &str = "pvefleet-lab";
/// The PVE simulator.
pub const PVE_SIM: &str = "pve-sim";
/// The simulator's `pvesh` stand-in.
pub const PVESH_SIM: &str = "pvesh-sim";
/// The disk-fault library a member runs under for the scenario runner's disk faults
/// (`LD_PRELOAD`; the `pvefleet-disk-fault` crate).
pub const DISK_FAULT_LIB: &str = "libpvefleet_disk_fault.so";

/// The directory holding the programs the lab runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binaries {
    /// Their directory (what a user puts on `PATH`).
    pub dir: PathBuf,
}

impl Binaries {
    /// The programs beside the running executable (or above its `deps/` directory).
    ///
    /// # Errors
    /// [`LabError::CurrentExe`] if the executable's path is unknown.
    pub fn beside_current_exe() -> Result<Binaries, LabError> {
        let exe = std::env::current_exe().map_err(LabError::CurrentExe)?;
        let mut dir = exe.parent().map(Path::to_path_buf).ok_or_else(|| {
            LabError::CurrentExe(std::io::Error::other("it has no parent directory"))
        })?;
        if dir.ends_with("deps") {
            dir.pop();
        }
        Ok(Binaries { dir })
    }

    /// The programs in `dir`.
    pub fn in_dir(dir: &Path) -> Binaries {
        Binaries {
            dir: dir.to_path_buf(),
        }
    }

    /// The path of program `name`, which must exist.
    ///
    /// # Errors
    /// [`LabError::MissingBinary`] naming the build command that makes it.
    pub fn path(&self, name: &str) -> Result<PathBuf, LabError> {
        let path = self.dir.join(name);
        if path.is_file() {
            Ok(path)
        } else {
            Err(LabError::MissingBinary {
                name: name.to_string(),
                dir: self.dir.clone(),
            })
        }
    }

    /// Checks that every program in `names` is there, before anything starts.
    ///
    /// # Errors
    /// [`LabError::MissingBinary`] for the first missing one.
    pub fn require(&self, names: &[&str]) -> Result<(), LabError> {
        names.iter().try_for_each(|n| self.path(n).map(drop))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_binary_is_named_with_the_build_command_that_makes_it() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join(COORDINATOR), "").unwrap();
        let bins = Binaries::in_dir(tmp.path());
        let e = bins.require(&[COORDINATOR, AGENT]).unwrap_err().to_string();
        assert!(e.contains("pvefleet-agent not found"), "{e}");
        assert!(e.contains("cargo build --release --bins"), "{e}");
        std::fs::write(tmp.path().join(AGENT), "").unwrap();
        bins.require(&[COORDINATOR, AGENT]).unwrap();
        assert_eq!(bins.path(AGENT).unwrap(), tmp.path().join(AGENT));
    }
}
