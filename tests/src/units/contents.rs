//! What a built package holds, read on the host without installing it: its file list
//! (`dpkg-deb -c`), its files unpacked (`dpkg-deb -x`), and the traces the simulator or the lab
//! leave in a program that links them.
//!
//! A trace is a string the compiler keeps in a stripped release binary whenever a crate's code
//! is linked: the source paths of its panic locations (`pve-sim/src/...`, `lab/src/...`) and
//! the module paths of its log call sites (`pve_sim::...`). The product's programs must carry
//! none; the lab's programs carry them (the tests check that too, so a change that made the
//! traces vanish, such as remapped source paths, fails instead of passing silently).

use std::path::Path;
use std::process::Command;

/// The strings that show the PVE simulator or the lab launcher linked into a program.
pub const SIMULATOR_TRACES: [&str; 3] = ["pve-sim/src/", "pve_sim::", "lab/src/"];

/// The paths a package installs, as `/usr/bin/pvefleet` (directories end with `/`).
pub fn package_files(deb: &Path) -> Vec<String> {
    let out = Command::new("dpkg-deb")
        .arg("-c")
        .arg(deb)
        .output()
        .expect("dpkg-deb runs");
    assert!(
        out.status.success(),
        "dpkg-deb -c {}: {}",
        deb.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(listed_path)
        .collect()
}

/// The path of one `dpkg-deb -c` line (`-rwxr-xr-x root/root 123 2024-01-01 00:00
/// ./usr/bin/pvefleet`, a link with ` -> target`), absolute.
pub fn listed_path(line: &str) -> Option<String> {
    let rest = line.split_whitespace().nth(5)?;
    let start = line.find(rest)?;
    let path = line[start..].split(" -> ").next()?;
    let path = path.strip_prefix('.').unwrap_or(path);
    (!path.is_empty()).then(|| path.to_string())
}

/// The programs a package installs in `/usr/bin`, by name, sorted.
pub fn programs(files: &[String]) -> Vec<String> {
    let mut names: Vec<String> = files
        .iter()
        .filter_map(|f| f.strip_prefix("/usr/bin/"))
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect();
    names.sort();
    names
}

/// Unpacks a package into a new temporary directory (`dpkg-deb -x`).
pub fn unpack(deb: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a directory");
    let status = Command::new("dpkg-deb")
        .arg("-x")
        .arg(deb)
        .arg(dir.path())
        .status()
        .expect("dpkg-deb runs");
    assert!(status.success(), "dpkg-deb -x {}", deb.display());
    dir
}

/// The [`SIMULATOR_TRACES`] found in `bytes` (a program's file).
pub fn simulator_traces(bytes: &[u8]) -> Vec<&'static str> {
    SIMULATOR_TRACES
        .into_iter()
        .filter(|needle| contains(bytes, needle.as_bytes()))
        .collect()
}

/// Whether `needle` occurs in `haystack`.
pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_paths_are_absolute_and_links_lose_their_target() {
        assert_eq!(
            listed_path("-rwxr-xr-x root/root   4242 2024-05-01 10:00 ./usr/bin/pvefleet-lab"),
            Some("/usr/bin/pvefleet-lab".to_string())
        );
        assert_eq!(
            listed_path("drwxr-xr-x root/root 0 2024-05-01 10:00 ./usr/share/doc/pvefleet lab/"),
            Some("/usr/share/doc/pvefleet lab/".to_string())
        );
        assert_eq!(
            listed_path("lrwxrwxrwx root/root 0 2024-05-01 10:00 ./usr/bin/a -> b"),
            Some("/usr/bin/a".to_string())
        );
        assert_eq!(listed_path("garbage"), None);
        let files = [
            "/usr/bin/".to_string(),
            "/usr/bin/pvefleet".to_string(),
            "/usr/bin/pve-sim".to_string(),
            "/etc/pvefleet/agent.toml".to_string(),
        ];
        assert_eq!(programs(&files), ["pve-sim", "pvefleet"]);
    }

    #[test]
    fn traces_are_found_anywhere_in_a_binary() {
        let linked = b"\x00\x01core/src/panicking.rspve-sim/src/cluster/vm.rs\x7fELF";
        assert_eq!(simulator_traces(linked), ["pve-sim/src/"]);
        let logged = b"xxpve_sim::server::tlsyy lab/src/lab.rs";
        assert_eq!(simulator_traces(logged), ["pve_sim::", "lab/src/"]);
        assert!(simulator_traces(b"node-agent/src/pve/sim_backend.rs pve/src/").is_empty());
        assert!(!contains(b"abc", b""));
    }
}
