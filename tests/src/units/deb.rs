//! Building the packages with `make deb` (the product `pvefleet` and the lab `pvefleet-lab`)
//! and judging them with lintian.
//!
//! Builds are serialised across test processes by a lock file (they share target/packaging
//! and target/debian), and each result is copied to target/deb-builds/: cargo-deb deletes the
//! other versions of a package from target/debian, and an upgrade test needs two.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::workspace_root;

/// One line of lintian's verdict: `E: pvefleet: no-changelog usr/share/doc/...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LintianTag {
    /// `E` error, `W` warning, `I` info, `P` pedantic, `X` experimental, `O` overridden.
    pub severity: char,
    /// The tag's name.
    pub tag: String,
    /// What follows the tag (usually the file concerned).
    pub detail: String,
}

/// What lintian said of a package.
#[derive(Debug, Clone)]
pub struct LintianReport {
    /// lintian's exit status was 0 (`--fail-on error`: no error-level tag).
    pub success: bool,
    /// Every tag it printed.
    pub tags: Vec<LintianTag>,
    /// Its whole output (stdout, then stderr).
    pub output: String,
}

impl LintianReport {
    /// The error-level tags.
    pub fn errors(&self) -> Vec<&LintianTag> {
        self.with_severity('E')
    }

    /// The warning-level tags.
    pub fn warnings(&self) -> Vec<&LintianTag> {
        self.with_severity('W')
    }

    fn with_severity(&self, severity: char) -> Vec<&LintianTag> {
        self.tags
            .iter()
            .filter(|t| t.severity == severity)
            .collect()
    }
}

/// The two packages one `make deb` builds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltDebs {
    /// `pvefleet`: the product (CLI, coordinator, agent).
    pub product: PathBuf,
    /// `pvefleet-lab`: the lab's binary and the PVE simulator.
    pub lab: PathBuf,
}

/// Runs `make deb DEB_VERSION=<version>` in the workspace and returns copies of both packages
/// under target/deb-builds/ (which later builds leave alone). Panics with the build's output
/// when it fails or does not name both packages.
pub fn build_deb(version: &str) -> BuiltDebs {
    let root = workspace_root();
    let target = root.join("target");
    std::fs::create_dir_all(&target).expect("target directory");
    let lock = std::fs::File::create(target.join("deb-build.lock")).expect("deb build lock file");
    lock.lock().expect("lock target/deb-build.lock");

    let out = Command::new("make")
        .arg("-C")
        .arg(&root)
        .arg("deb")
        .arg(format!("DEB_VERSION={version}"))
        // A `make verify` around us must not lend its jobserver to this make.
        .env_remove("MAKEFLAGS")
        .env_remove("MFLAGS")
        .env_remove("MAKELEVEL")
        .env_remove("CARGO_MAKEFLAGS")
        .output()
        .unwrap_or_else(|e| panic!("cannot run make ({e}): apt-get install make"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "make deb DEB_VERSION={version} failed ({}):\n{stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    // cargo-deb prints each package's path; the Makefile prints the lab's again after it
    // narrowed its dependency.
    let built = |package: &str| -> PathBuf {
        let prefix = format!("{package}_");
        let path = stdout
            .lines()
            .rev()
            .map(str::trim)
            .filter(|l| l.ends_with(".deb"))
            .map(PathBuf::from)
            .find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&prefix))
            })
            .unwrap_or_else(|| panic!("make deb printed no path of {package}_*.deb:\n{stdout}"));
        let path = if path.is_absolute() {
            path
        } else {
            root.join(path)
        };
        let keep_dir = target.join("deb-builds");
        std::fs::create_dir_all(&keep_dir).expect("target/deb-builds");
        let kept = keep_dir.join(path.file_name().expect("a .deb file name"));
        std::fs::copy(&path, &kept)
            .unwrap_or_else(|e| panic!("copy {} to {}: {e}", path.display(), kept.display()));
        kept
    };
    BuiltDebs {
        product: built("pvefleet"),
        lab: built("pvefleet-lab"),
    }
}

/// `lintian --fail-on error` on a package, every tag shown.
pub fn lintian(deb: &Path) -> LintianReport {
    let out = Command::new("lintian")
        .args(["--fail-on", "error", "--tag-display-limit", "0"])
        .arg(deb)
        .output()
        .unwrap_or_else(|e| panic!("cannot run lintian ({e}): apt-get install lintian"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    LintianReport {
        success: out.status.success(),
        tags: stdout.lines().filter_map(parse_tag).collect(),
        output: format!("{stdout}{}", String::from_utf8_lossy(&out.stderr)),
    }
}

/// One tag line: `S: PACKAGE[ TYPE]: TAG[ DETAIL]`; `None` for anything else.
pub fn parse_tag(line: &str) -> Option<LintianTag> {
    let (severity, rest) = line.split_once(": ")?;
    let mut chars = severity.chars();
    let severity = chars.next().filter(|c| "EWIPXOC".contains(*c))?;
    if chars.next().is_some() {
        return None;
    }
    let (_package, rest) = rest.split_once(": ")?;
    let (tag, detail) = rest.split_once(' ').unwrap_or((rest, ""));
    Some(LintianTag {
        severity,
        tag: tag.to_string(),
        detail: detail.trim().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::{LintianTag, parse_tag};

    #[test]
    fn tag_lines_are_parsed_and_other_lines_ignored() {
        assert_eq!(
            parse_tag("E: pvefleet: no-changelog usr/share/doc/pvefleet/changelog.gz"),
            Some(LintianTag {
                severity: 'E',
                tag: "no-changelog".into(),
                detail: "usr/share/doc/pvefleet/changelog.gz".into(),
            })
        );
        assert_eq!(
            parse_tag("W: pvefleet: hardening-no-fortify-functions"),
            Some(LintianTag {
                severity: 'W',
                tag: "hardening-no-fortify-functions".into(),
                detail: String::new(),
            })
        );
        assert_eq!(parse_tag("N: a note: with colons"), None);
        assert_eq!(
            parse_tag("running with root privileges is not recommended!"),
            None
        );
    }
}
