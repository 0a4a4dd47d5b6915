//! The agents' fence guards (`pvefleet-agent fence-guard`, docs/design/fencing-agent.md): each
//! lab agent starts one as a child in a session of its own, so that it outlives a killed or
//! frozen agent (that is its job). The lab is not a host that must stay fenced once torn down:
//! teardown ends the guards of its agents too, found by their `--data-dir` in `/proc`, so a
//! test leaves no process behind.

use std::path::{Path, PathBuf};

use rustix::process::{Pid, Signal, kill_process};

/// The pids of the fence guards watching one of `data_dirs`.
pub(crate) fn guards_of(data_dirs: &[PathBuf]) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            is_guard_of(&cmdline, data_dirs).then_some(pid)
        })
        .collect()
}

/// Whether a NUL-separated command line is `... fence-guard ... --data-dir DIR ...` for one of
/// `data_dirs`.
fn is_guard_of(cmdline: &[u8], data_dirs: &[PathBuf]) -> bool {
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    if !args.iter().any(|a| *a == b"fence-guard") {
        return false;
    }
    args.windows(2).any(|w| {
        w[0] == b"--data-dir"
            && data_dirs
                .iter()
                .any(|d| Path::new(std::str::from_utf8(w[1]).unwrap_or("")) == d)
    })
}

/// SIGKILLs the fence guards of `data_dirs`; how many were found.
pub(crate) fn end_guards(data_dirs: &[PathBuf]) -> usize {
    let pids = guards_of(data_dirs);
    for &pid in &pids {
        if let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
            // Gone meanwhile is fine.
            let _ = kill_process(pid, Signal::KILL);
        }
    }
    pids.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_guard_of_one_of_the_directories_matches() {
        let dirs = [PathBuf::from("/tmp/lab/a1")];
        let cmd = |s: &str| s.replace(' ', "\0").into_bytes();
        assert!(is_guard_of(
            &cmd("/bin/pvefleet-agent fence-guard --data-dir /tmp/lab/a1 --exit-with-agent"),
            &dirs
        ));
        assert!(!is_guard_of(
            &cmd("/bin/pvefleet-agent fence-guard --data-dir /tmp/lab/a10"),
            &dirs
        ));
        assert!(!is_guard_of(
            &cmd("/bin/pvefleet-agent run --data-dir /tmp/lab/a1"),
            &dirs
        ));
    }
}
