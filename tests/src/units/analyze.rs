//! `systemd-analyze` on the package's unit files: `verify` in a temporary root laid out as
//! the package installs it (the unit under /etc/systemd/system, the workspace's build of the
//! daemon it starts at /usr/bin, this host's own units for the targets it names), and
//! `security --offline` for the exposure score.
//!
//! `verify` exits 0 on unknown keys and unparsable values (it only prints them), so a clean
//! result is success AND no output at all.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{systemd_file, unit_values};
use crate::test_lab::workspace_binary;

/// What `systemd-analyze verify` said of a unit.
#[derive(Debug, Clone)]
pub struct VerifyReport {
    /// Its exit status was 0.
    pub success: bool,
    /// Everything it printed (stdout, then stderr).
    pub output: String,
}

impl VerifyReport {
    /// Exit status 0 and not a single warning.
    pub fn is_clean(&self) -> bool {
        self.success && self.output.trim().is_empty()
    }
}

/// What `systemd-analyze security --offline=true` said of a unit.
#[derive(Debug, Clone)]
pub struct SecurityReport {
    /// The overall exposure, 0.0 (sealed) to 10.0 (no sandbox at all).
    pub exposure: f64,
    /// systemd's word for it (`OK`, `MEDIUM`, `EXPOSED`, `UNSAFE`, ...).
    pub verdict: String,
    /// The whole table it printed, one line per check.
    pub table: String,
}

impl SecurityReport {
    /// The table line of the check named `name` (e.g. `CapabilityBoundingSet=~CAP_SYS_ADMIN`).
    pub fn check(&self, name: &str) -> Option<&str> {
        self.table.lines().find(|l| {
            l.split_whitespace()
                .nth(1)
                .is_some_and(|check| check == name)
        })
    }
}

/// `systemd-analyze verify` of `unit` (a file of packaging/systemd/), with `dropin` (a file
/// of packaging/systemd/) installed as `<unit>.d/<dropin>` when given.
pub fn verify(unit: &str, dropin: Option<&str>) -> VerifyReport {
    let text = read(&systemd_file(unit));
    let program = unit_values(&text, "ExecStart")
        .first()
        .and_then(|line| line.split_whitespace().next())
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("{unit} has no ExecStart="));
    let name = program
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_else(|| panic!("{unit}: ExecStart program {}", program.display()));
    let binary = workspace_binary(name);
    // Beside the binary, so it can be hard-linked instead of copied.
    let root = tempfile::tempdir_in(binary.parent().unwrap_or(Path::new(".")))
        .expect("temporary root beside the built binaries");
    let unit_dir = install_unit(root.path(), unit, dropin);
    let installed = root
        .path()
        .join(program.strip_prefix("/").unwrap_or(&program));
    if let Some(dir) = installed.parent() {
        std::fs::create_dir_all(dir).expect("bin directory in the temporary root");
    }
    if std::fs::hard_link(&binary, &installed).is_err() {
        std::fs::copy(&binary, &installed).expect("copy the daemon into the temporary root");
    }
    copy_tree(
        &host_unit_dir(),
        &root.path().join("usr/lib/systemd/system"),
    );
    let out = systemd_analyze(&[
        "verify".as_ref(),
        "--man=no".as_ref(),
        root_arg(root.path()).as_ref(),
        unit_dir.join(unit).as_os_str(),
    ]);
    VerifyReport {
        success: out.status.success(),
        output: format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// `systemd-analyze security --offline=true` of a unit file of packaging/systemd/.
pub fn security(unit: &str) -> SecurityReport {
    let out = systemd_analyze(&[
        "security".as_ref(),
        "--offline=true".as_ref(),
        "--no-pager".as_ref(),
        systemd_file(unit).as_os_str(),
    ]);
    security_report(unit, &out)
}

/// `systemd-analyze security --offline=true` of `unit` with `dropin` installed beside it (in a
/// temporary root, which is how offline mode finds drop-ins).
pub fn security_with_dropin(unit: &str, dropin: &str) -> SecurityReport {
    let root = tempfile::tempdir().expect("temporary root");
    install_unit(root.path(), unit, Some(dropin));
    let out = systemd_analyze(&[
        "security".as_ref(),
        "--offline=true".as_ref(),
        "--no-pager".as_ref(),
        root_arg(root.path()).as_ref(),
        unit.as_ref(),
    ]);
    security_report(unit, &out)
}

/// The score and verdict from `security`'s last line: `→ Overall exposure level for
/// UNIT: 2.1 OK 🙂`.
pub fn parse_exposure(table: &str) -> Option<(f64, String)> {
    let line = table
        .lines()
        .find(|l| l.contains("Overall exposure level for"))?;
    let (_, tail) = line.rsplit_once(": ")?;
    let mut words = tail.split_whitespace();
    let exposure = words.next()?.parse().ok()?;
    Some((exposure, words.next()?.to_string()))
}

fn security_report(unit: &str, out: &std::process::Output) -> SecurityReport {
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    let (exposure, verdict) = parse_exposure(&table).unwrap_or_else(|| {
        panic!(
            "systemd-analyze security {unit}: no overall exposure ({}):\n{table}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
    });
    SecurityReport {
        exposure,
        verdict,
        table,
    }
}

/// Puts `unit` (and `dropin` as `<unit>.d/<dropin>`) under `root`/etc/systemd/system.
fn install_unit(root: &Path, unit: &str, dropin: Option<&str>) -> PathBuf {
    let dir = root.join("etc/systemd/system");
    std::fs::create_dir_all(&dir).expect("unit directory in the temporary root");
    std::fs::copy(systemd_file(unit), dir.join(unit)).expect("copy the unit");
    if let Some(dropin) = dropin {
        let d = dir.join(format!("{unit}.d"));
        std::fs::create_dir_all(&d).expect("drop-in directory");
        std::fs::copy(systemd_file(dropin), d.join(dropin)).expect("copy the drop-in");
    }
    dir
}

/// This host's systemd units (merged /usr or not).
fn host_unit_dir() -> PathBuf {
    ["/usr/lib/systemd/system", "/lib/systemd/system"]
        .into_iter()
        .map(PathBuf::from)
        .find(|d| d.join("sysinit.target").exists())
        .expect("no systemd units on this host (/usr/lib/systemd/system): apt-get install systemd")
}

/// Copies a directory of units: files copied, symbolic links (aliases) recreated as they are.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create a unit directory copy");
    let entries = std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
    for entry in entries.flatten() {
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_symlink() {
            if let Ok(target) = std::fs::read_link(&src) {
                let _ = std::os::unix::fs::symlink(target, &dst);
            }
        } else if kind.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        }
    }
}

fn root_arg(root: &Path) -> String {
    format!("--root={}", root.display())
}

fn systemd_analyze(args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new("systemd-analyze")
        .args(args)
        .env("SYSTEMD_COLORS", "0")
        .output()
        .unwrap_or_else(|e| panic!("cannot run systemd-analyze ({e}): apt-get install systemd"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::parse_exposure;

    #[test]
    fn the_overall_exposure_is_read_from_the_last_line() {
        let table = "  NAME  DESCRIPTION  EXPOSURE\n✗ PrivateNetwork=  x  0.5\n\n\
                     → Overall exposure level for pvefleet-agent.service: 2.1 OK 🙂\n";
        assert_eq!(parse_exposure(table), Some((2.1, "OK".to_string())));
        assert_eq!(parse_exposure("no score here\n"), None);
    }
}
