//! What the agent tells systemd (the protocol is `daemon::notify`): ready after the first
//! heartbeat a leader acknowledged (when `run` prints its ready line), STATUS= with the
//! coordinator and the lease, and serving only while the coordinator session runs: a session
//! that ended stops the watchdog petting, and systemd kills and restarts the agent. Losing
//! the coordinators does not: a restart would not bring them back, and the session keeps
//! looking for them. STATUS= is refreshed on the ticks too, since the lease runs out on its
//! own, without a status change.

use std::time::Instant;

// `::daemon` is the shared crate; `crate::daemon` is this crate's agent runtime.
use ::daemon::notify::{Health, Reading};
use tokio::sync::watch;

use crate::session::SessionStatus;

/// The STATUS= text at `now`: the coordinator that acknowledged last, the lease, the work.
pub(crate) fn status_text(status: &SessionStatus, now: Instant) -> String {
    let work = format!(
        "{} command(s) running, {} result(s) to report",
        status.running, status.unacked
    );
    let valid = status.lease.is_some_and(|l| l.is_valid(now));
    match (status.leader, valid) {
        (Some((leader, term)), true) => {
            format!("connected to coordinator {leader} (term {term}), lease valid; {work}")
        }
        (Some((leader, term)), false) => format!(
            "lease expired, last acknowledged by coordinator {leader} (term {term}); looking \
             for the leader; {work}"
        ),
        (None, _) => format!("looking for the leader (no heartbeat acknowledged yet); {work}"),
    }
}

/// The agent's health, as the notifier reads it: the session's status.
pub(crate) struct AgentHealth {
    pub(crate) status: watch::Receiver<SessionStatus>,
}

impl Health for AgentHealth {
    async fn changed(&mut self) {
        // The session owns the sender: once it is gone, `read` reports the end.
        if self.status.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    fn read(&mut self) -> Reading {
        if self.status.has_changed().is_err() {
            return Reading::Ended {
                status: "the coordinator session ended".into(),
            };
        }
        let status = self.status.borrow_and_update();
        Reading::Serving {
            ready: status.acks > 0,
            status: status_text(&status, Instant::now()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::session::Lease;

    #[test]
    fn the_status_names_the_coordinator_and_whether_the_lease_holds() {
        let now = Instant::now();
        let mut status = SessionStatus::default();
        assert!(
            status_text(&status, now).starts_with("looking for the leader"),
            "{}",
            status_text(&status, now)
        );
        status.acks = 4;
        status.leader = Some((2, 3));
        status.lease = Some(Lease::new(now, 10_000));
        status.running = 1;
        assert_eq!(
            status_text(&status, now),
            "connected to coordinator 2 (term 3), lease valid; 1 command(s) running, 0 \
             result(s) to report"
        );
        let later = now + Duration::from_secs(11);
        assert!(
            status_text(&status, later)
                .starts_with("lease expired, last acknowledged by coordinator 2"),
            "{}",
            status_text(&status, later)
        );
    }
}
