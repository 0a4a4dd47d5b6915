//! The Debian roots the packaging test boots: one `debootstrap --variant=minbase` root per
//! suite, cached under `target/debootstrap/<suite>.base` between runs, and a throw-away copy
//! of it per container so a run never dirties the cache.
//!
//! The cache is built under a temporary name and renamed only when debootstrap succeeded, and
//! it counts only with a stamp naming what it was built with, so an interrupted or outdated
//! build is never booted. A lock file serialises builders of the same suite.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::process::{self, run_bounded};

/// Packages added to minbase: an init that boots (`systemd`, `systemd-sysv`), the bus
/// `systemctl` and logind need (`dbus`), what TLS clients expect (`ca-certificates`), and
/// the package's own dependency `nftables` (the container has no network for apt).
pub const INCLUDE: &str = "systemd,systemd-sysv,dbus,ca-certificates,nftables";
/// The mirror unless `PVEFLEET_DEBIAN_MIRROR` names another.
pub const DEFAULT_MIRROR: &str = "http://deb.debian.org/debian";
/// A debootstrap that has not finished by then is stuck (it takes about a minute here).
const DEBOOTSTRAP_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// Bumped when the way a root is made changes, so old caches are rebuilt.
const STAMP_FORMAT: u32 = 1;

/// A cached, never-booted Debian root of one suite.
#[derive(Debug, Clone)]
pub struct DebianRoot {
    suite: String,
    base: PathBuf,
}

/// What the stamp beside a cached root says it was built with.
pub fn stamp_text(suite: &str) -> String {
    format!("format={STAMP_FORMAT}\nsuite={suite}\nvariant=minbase\ninclude={INCLUDE}\n")
}

/// The cargo target directory of this build: the ancestor of the test executable holding
/// `CACHEDIR.TAG` (so `CARGO_TARGET_DIR` is honoured), else the workspace's `target/`.
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    exe.ancestors()
        .find(|d| d.join("CACHEDIR.TAG").is_file())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
}

impl DebianRoot {
    /// The cached root of `suite` (`bookworm`, `trixie`), built first if there is none or it
    /// was built differently. Panics (a test failure) with debootstrap's output if it fails.
    pub fn cached(suite: &str) -> DebianRoot {
        let dir = target_dir().join("debootstrap");
        fs::create_dir_all(&dir).expect("create target/debootstrap");
        let base = dir.join(format!("{suite}.base"));
        let stamp = dir.join(format!("{suite}.base.stamp"));
        let lock = File::create(dir.join(format!("{suite}.lock"))).expect("create the lock file");
        lock.lock().expect("lock the debootstrap cache");
        let fresh = fs::read_to_string(&stamp).ok().as_deref() == Some(&stamp_text(suite));
        if fresh && base.join("usr/lib/systemd/systemd").exists() {
            eprintln!("using the cached {suite} root {}", base.display());
        } else {
            build(suite, &dir, &base, &stamp);
        }
        DebianRoot {
            suite: suite.to_string(),
            base,
        }
    }

    /// The suite.
    pub fn suite(&self) -> &str {
        &self.suite
    }

    /// The cached root itself (never boot it: boot a [`fresh_copy`](Self::fresh_copy)).
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// A copy to boot, under `target/nspawn/`, removed when dropped. Copies left by runs that
    /// were killed are removed first.
    pub fn fresh_copy(&self) -> RootCopy {
        let runs = target_dir().join("nspawn");
        fs::create_dir_all(&runs).expect("create target/nspawn");
        remove_stale_copies(&runs);
        let dir = tempfile::Builder::new()
            .prefix(&format!("{}-{}-", self.suite, std::process::id()))
            .tempdir_in(&runs)
            .expect("a run directory under target/nspawn")
            .keep();
        let copy = RootCopy {
            root: dir.join("root"),
            dir,
        };
        let done = run_bounded(
            Command::new("cp")
                .args(["-a", "--reflink=auto"])
                .arg(&self.base)
                .arg(&copy.root),
            None,
            Duration::from_secs(600),
        )
        .expect("cp runs");
        assert!(
            done.output.status.success() && !done.timed_out,
            "copying {} to {} failed: {}",
            self.base.display(),
            copy.root.display(),
            String::from_utf8_lossy(&done.output.stderr)
        );
        copy
    }
}

fn build(suite: &str, dir: &Path, base: &Path, stamp: &Path) {
    let _ = fs::remove_file(stamp);
    remove_tree(base);
    let tmp = dir.join(format!("{suite}.base.tmp-{}", std::process::id()));
    // Temporary trees of builders that died (we hold the lock, so none is in progress).
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_name()
                .to_string_lossy()
                .starts_with(&format!("{suite}.base.tmp-"))
            {
                remove_tree(&e.path());
            }
        }
    }
    let mirror =
        std::env::var("PVEFLEET_DEBIAN_MIRROR").unwrap_or_else(|_| DEFAULT_MIRROR.to_string());
    eprintln!(
        "debootstrap {suite} into {} (cached for later runs) from {mirror}",
        base.display()
    );
    let done = run_bounded(
        Command::new(super::preflight::find_program("debootstrap").unwrap_or("debootstrap".into()))
            .args(["--variant=minbase", &format!("--include={INCLUDE}"), suite])
            .arg(&tmp)
            .arg(&mirror),
        None,
        DEBOOTSTRAP_TIMEOUT,
    )
    .expect("debootstrap runs");
    if !done.output.status.success() || done.timed_out {
        let log = fs::read_to_string(tmp.join("debootstrap/debootstrap.log")).unwrap_or_default();
        remove_tree(&tmp);
        panic!(
            "debootstrap {suite} failed{}: {}\n{}\ndebootstrap.log (end):\n{}",
            if done.timed_out { " (timed out)" } else { "" },
            String::from_utf8_lossy(&done.output.stderr),
            tail(&String::from_utf8_lossy(&done.output.stdout), 20),
            tail(&log, 40)
        );
    }
    fs::rename(&tmp, base).expect("move the finished root into place");
    fs::write(stamp, stamp_text(suite)).expect("write the stamp");
}

/// Removes run directories whose process is gone (a run killed before its cleanup).
fn remove_stale_copies(runs: &Path) {
    let Ok(entries) = fs::read_dir(runs) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(pid) = owner_pid(&name)
            && !process::exists(pid)
        {
            eprintln!("removing {} left by a killed run", e.path().display());
            remove_tree(&e.path());
        }
    }
}

/// The PID in a run directory's name `<suite>-<pid>-<random>`.
pub fn owner_pid(name: &str) -> Option<u32> {
    let mut parts = name.splitn(3, '-');
    let _suite = parts.next()?;
    let pid = parts.next()?.parse().ok()?;
    parts.next()?;
    Some(pid)
}

fn remove_tree(path: &Path) {
    if path.exists()
        && let Err(e) = fs::remove_dir_all(path)
    {
        eprintln!("cannot remove {}: {e}", path.display());
    }
}

/// The last `n` lines of `text`.
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// A per-run copy of a [`DebianRoot`]; dropping it removes it.
#[derive(Debug)]
pub struct RootCopy {
    dir: PathBuf,
    root: PathBuf,
}

impl RootCopy {
    /// The root file system to boot.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The run directory holding the root and the container's console log.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for RootCopy {
    fn drop(&mut self) {
        remove_tree(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stamp_names_the_suite_and_the_included_packages() {
        let stamp = stamp_text("trixie");
        assert!(stamp.contains("suite=trixie\n"));
        assert!(stamp.contains("include=systemd,systemd-sysv,dbus,ca-certificates,nftables\n"));
        assert_ne!(stamp, stamp_text("bookworm"));
    }

    #[test]
    fn a_run_directory_names_its_owner_process() {
        assert_eq!(owner_pid("bookworm-4242-a1B2c3"), Some(4242));
        assert_eq!(owner_pid("trixie-17-x-y"), Some(17));
        assert_eq!(owner_pid("bookworm-notapid-x"), None);
        assert_eq!(owner_pid("bookworm-4242"), None);
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(tail("a\nb\nc", 2), "b\nc");
        assert_eq!(tail("a", 5), "a");
    }
}
