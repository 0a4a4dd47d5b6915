//! Why the agent is being stopped, asked once when systemd (or Ctrl-C) stops it: only the
//! agent restarts (a package upgrade), or the host reboots or powers off. The answer goes to
//! the leader on the agent's last beats, which answers with the fleet's shutdown policy
//! (docs/design/maintenance.md, "Shutdown policy").
//!
//! - [`LeaveProbe::Systemd`]: systemd's job queue over D-Bus (`Manager.ListJobs`): a queued
//!   start of `reboot.target` (or `kexec.target`, `soft-reboot.target`) is a reboot, of
//!   `poweroff.target` or `halt.target` a power-off, anything else a restart. This is what
//!   PVE's LRM reads (`systemctl list-jobs`), through the bus instead of a command's output.
//! - [`LeaveProbe::File`]: a file a lab writes before it stops the agent (`reboot`,
//!   `poweroff`, `restart`), read and removed; absent, a restart. Simulated hosts have no
//!   systemd to ask.
//!
//! When the question cannot be answered the agent says "restart": its guests are frozen for
//! the short restart hold, never failed over on a guess.

use std::path::PathBuf;
use std::time::Duration;

use protocol::agent::LeaveKind;
use serde::{Deserialize, Serialize};

/// The file a lab writes in the agent's data directory to say why it stops the agent
/// (`reboot`, `poweroff`; absent: a restart).
pub const LEAVE_FILE: &str = "leaving";
/// How long the bus may take to answer.
const ASK_WAIT: Duration = Duration::from_secs(2);

/// Where the answer comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum LeaveProbe {
    /// systemd's job queue, over the system bus.
    Systemd,
    /// A file written by a lab.
    File(PathBuf),
}

impl LeaveProbe {
    /// Why the agent is being stopped now.
    pub async fn kind(&self) -> LeaveKind {
        match self {
            LeaveProbe::Systemd => match tokio::time::timeout(ASK_WAIT, queued_jobs()).await {
                Ok(Ok(jobs)) => kind_of_jobs(jobs.iter().map(|(u, t)| (u.as_str(), t.as_str()))),
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "cannot read systemd's jobs: taken for an agent restart");
                    LeaveKind::Restart
                }
                Err(_) => {
                    tracing::warn!(
                        "systemd did not list its jobs in time: taken for an agent restart"
                    );
                    LeaveKind::Restart
                }
            },
            LeaveProbe::File(path) => {
                let text = tokio::fs::read_to_string(path).await.unwrap_or_default();
                if let Err(e) = tokio::fs::remove_file(path).await
                    && e.kind() != std::io::ErrorKind::NotFound
                {
                    tracing::warn!(path = %path.display(), error = %e, "cannot remove the leave file");
                }
                match text.trim() {
                    "reboot" => LeaveKind::Reboot,
                    "poweroff" => LeaveKind::PowerOff,
                    _ => LeaveKind::Restart,
                }
            }
        }
    }
}

/// The kind of stop systemd's queued jobs (unit, job type) show.
pub fn kind_of_jobs<'a>(jobs: impl IntoIterator<Item = (&'a str, &'a str)>) -> LeaveKind {
    let mut kind = LeaveKind::Restart;
    for (unit, job_type) in jobs {
        if job_type != "start" {
            continue;
        }
        match unit {
            "poweroff.target" | "halt.target" => return LeaveKind::PowerOff,
            "reboot.target" | "kexec.target" | "soft-reboot.target" => kind = LeaveKind::Reboot,
            _ => {}
        }
    }
    kind
}

/// systemd's queued jobs as (unit, job type).
async fn queued_jobs() -> zbus::Result<Vec<(String, String)>> {
    type Job = (
        u32,
        String,
        String,
        String,
        zbus::zvariant::OwnedObjectPath,
        zbus::zvariant::OwnedObjectPath,
    );
    let bus = zbus::Connection::system().await?;
    let reply = bus
        .call_method(
            Some("org.freedesktop.systemd1"),
            "/org/freedesktop/systemd1",
            Some("org.freedesktop.systemd1.Manager"),
            "ListJobs",
            &(),
        )
        .await?;
    let jobs: Vec<Job> = reply.body().deserialize()?;
    Ok(jobs
        .into_iter()
        .map(|(_, unit, job_type, _, _, _)| (unit, job_type))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queued_targets_tell_a_reboot_a_power_off_and_a_restart_apart() {
        assert_eq!(kind_of_jobs([]), LeaveKind::Restart);
        assert_eq!(
            kind_of_jobs([("pvefleet-agent.service", "restart")]),
            LeaveKind::Restart
        );
        assert_eq!(
            kind_of_jobs([
                ("pvefleet-agent.service", "stop"),
                ("reboot.target", "start")
            ]),
            LeaveKind::Reboot
        );
        assert_eq!(kind_of_jobs([("kexec.target", "start")]), LeaveKind::Reboot);
        assert_eq!(
            kind_of_jobs([("reboot.target", "start"), ("poweroff.target", "start")]),
            LeaveKind::PowerOff
        );
        assert_eq!(
            kind_of_jobs([("halt.target", "start")]),
            LeaveKind::PowerOff
        );
        // A stop of the target is no shutdown.
        assert_eq!(
            kind_of_jobs([("reboot.target", "stop")]),
            LeaveKind::Restart
        );
    }

    #[tokio::test]
    async fn the_lab_file_is_read_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("leaving");
        let probe = LeaveProbe::File(path.clone());
        assert_eq!(probe.kind().await, LeaveKind::Restart);
        std::fs::write(&path, "reboot\n").unwrap();
        assert_eq!(probe.kind().await, LeaveKind::Reboot);
        assert!(!path.exists());
        std::fs::write(&path, "poweroff").unwrap();
        assert_eq!(probe.kind().await, LeaveKind::PowerOff);
    }
}
