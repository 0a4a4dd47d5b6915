//! The agent process as the guard sees it: whether the pid the record names still runs (a
//! zombie does not: it is dead, only not reaped yet), and killing it for a simulated reset.

use rustix::io::Errno;
use rustix::process::{Pid, Signal, kill_process, test_kill_process};

/// Whether a process runs.
pub trait ProcessProbe: Send {
    /// Whether `pid` names a live (not zombie) process.
    fn alive(&self, pid: u32) -> bool;
}

/// The real processes of this host, through `kill(pid, 0)` and `/proc/<pid>/stat`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcProbe;

impl ProcessProbe for ProcProbe {
    fn alive(&self, pid: u32) -> bool {
        let Some(pid) = to_pid(pid) else {
            return false;
        };
        match test_kill_process(pid) {
            // EPERM: it exists, it is someone else's.
            Ok(()) | Err(Errno::PERM) => !is_zombie(pid),
            Err(_) => false,
        }
    }
}

/// SIGKILL to `pid` (nothing if it is gone already).
pub fn kill(pid: u32) -> std::io::Result<()> {
    let Some(pid) = to_pid(pid) else {
        return Ok(());
    };
    match kill_process(pid, Signal::KILL) {
        Ok(()) | Err(Errno::SRCH) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// 0 is no process, and no pid above `i32::MAX` exists.
fn to_pid(pid: u32) -> Option<Pid> {
    Pid::from_raw(i32::try_from(pid).ok()?)
}

/// `/proc/<pid>/stat`'s state is `Z` (the state follows the command name in parentheses,
/// which may itself hold parentheses: the last `)` ends it).
fn is_zombie(pid: Pid) -> bool {
    std::fs::read_to_string(format!("/proc/{}/stat", pid.as_raw_nonzero()))
        .ok()
        .and_then(|stat| state_of(&stat))
        .is_some_and(|state| state == 'Z')
}

fn state_of(stat: &str) -> Option<char> {
    let (_, after) = stat.rsplit_once(')')?;
    after.trim_start().chars().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_is_read_after_the_last_parenthesis() {
        assert_eq!(state_of("42 (sleep) S 1 42"), Some('S'));
        assert_eq!(state_of("42 (a) b) Z 1 42"), Some('Z'));
        assert_eq!(state_of("garbage"), None);
    }

    #[test]
    fn this_process_is_alive_and_an_impossible_pid_is_not() {
        assert!(ProcProbe.alive(std::process::id()));
        assert!(!ProcProbe.alive(0));
        assert!(!ProcProbe.alive(u32::MAX));
        assert!(kill(0).is_ok(), "no process: nothing to kill");
    }
}
