//! What the packaging test needs from the machine, checked before anything starts: root, and
//! the tools by name. A missing piece is a test failure whose message says how to fix it
//! (`.ci/run` installs the tools); the test never skips, because CI runs as root with them.

use std::path::{Path, PathBuf};

/// An external tool the packaging test runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// Builds the Debian root.
    Debootstrap,
    /// Boots it.
    SystemdNspawn,
    /// Enters it (util-linux).
    Nsenter,
    /// Ties the container's life to the test process (util-linux).
    Setpriv,
    /// Checks the package.
    Lintian,
    /// Builds the package (the cargo subcommand).
    CargoDeb,
    /// Reads the package's control fields.
    DpkgDeb,
}

impl Tool {
    /// Every tool the packaging test runs.
    pub const ALL: [Tool; 7] = [
        Tool::Debootstrap,
        Tool::SystemdNspawn,
        Tool::Nsenter,
        Tool::Setpriv,
        Tool::Lintian,
        Tool::CargoDeb,
        Tool::DpkgDeb,
    ];

    /// The program's file name.
    pub fn program(self) -> &'static str {
        match self {
            Tool::Debootstrap => "debootstrap",
            Tool::SystemdNspawn => "systemd-nspawn",
            Tool::Nsenter => "nsenter",
            Tool::Setpriv => "setpriv",
            Tool::Lintian => "lintian",
            Tool::CargoDeb => "cargo-deb",
            Tool::DpkgDeb => "dpkg-deb",
        }
    }

    /// The command that installs it on Debian.
    pub fn install_hint(self) -> &'static str {
        match self {
            Tool::Debootstrap => "apt-get install debootstrap",
            Tool::SystemdNspawn => "apt-get install systemd-container",
            Tool::Nsenter | Tool::Setpriv => "apt-get install util-linux",
            Tool::Lintian => "apt-get install lintian",
            Tool::CargoDeb => "cargo install cargo-deb --version 3.8.0 --locked",
            Tool::DpkgDeb => "apt-get install dpkg",
        }
    }
}

/// Why the machine cannot run the packaging test.
#[derive(Debug, thiserror::Error)]
pub enum PreflightError {
    /// Not running as root.
    #[error(
        "the packaging test must run as root (it debootstraps a Debian root and boots it with \
         systemd-nspawn; CI runs as root): run `make package-test` as root, e.g. `sudo make \
         package-test` (effective uid here: {uid})"
    )]
    NotRoot {
        /// The effective uid found.
        uid: u32,
    },
    /// Tools are missing.
    #[error(
        "the packaging test needs tools that are not installed: {}; `.ci/run` installs them, \
         or by hand: {}",
        missing.iter().map(|t| t.program()).collect::<Vec<_>>().join(", "),
        missing.iter().map(|t| t.install_hint()).collect::<Vec<_>>().join("; ")
    )]
    MissingTools {
        /// What is missing.
        missing: Vec<Tool>,
    },
}

/// Checks root, then that every tool of `tools` is found.
pub fn preflight(tools: &[Tool]) -> Result<(), PreflightError> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let uid = effective_uid(&status).unwrap_or(u32::MAX);
    if uid != 0 {
        return Err(PreflightError::NotRoot { uid });
    }
    let missing: Vec<Tool> = tools
        .iter()
        .copied()
        .filter(|t| find_program(t.program()).is_none())
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(PreflightError::MissingTools { missing })
    }
}

/// The effective uid in a `/proc/self/status` text (`Uid: real effective saved fs`).
pub fn effective_uid(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Where `program` is: on `PATH`, in the sbin directories a non-login root `PATH` may lack,
/// or in `~/.cargo/bin` (where cargo finds its subcommands).
pub fn find_program(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let cargo_bin = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))
        .map(|c| c.join("bin"));
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .chain(cargo_bin)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_effective_uid_is_the_second_uid_field() {
        let status = "Name:\tx\nUid:\t1000\t0\t0\t0\nGid:\t0\t0\t0\t0\n";
        assert_eq!(effective_uid(status), Some(0));
        assert_eq!(effective_uid("Name:\tx\n"), None);
    }

    #[test]
    fn missing_tools_are_named_with_how_to_install_them() {
        let text = PreflightError::MissingTools {
            missing: vec![Tool::Debootstrap, Tool::CargoDeb],
        }
        .to_string();
        assert!(text.contains("debootstrap, cargo-deb"), "{text}");
        assert!(text.contains("apt-get install debootstrap"), "{text}");
        assert!(
            text.contains("cargo install cargo-deb --version 3.8.0"),
            "{text}"
        );
        assert!(text.contains(".ci/run"), "{text}");
    }

    #[test]
    fn not_root_says_the_test_needs_root() {
        let text = PreflightError::NotRoot { uid: 1000 }.to_string();
        assert!(text.contains("must run as root"), "{text}");
        assert!(text.contains("1000"), "{text}");
    }

    #[test]
    fn a_program_that_does_not_exist_is_not_found() {
        assert!(find_program("sh").is_some());
        assert!(find_program("pvefleet-no-such-tool").is_none());
    }
}
