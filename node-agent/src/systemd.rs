//! systemd's notification protocol for the running agent (`Type=notify`, `WatchdogSec=`):
//! READY=1 after the first heartbeat a leader acknowledged (when `run` prints its ready line),
//! STATUS= with the coordinator and the lease, WATCHDOG=1 every WATCHDOG_USEC/3 and STOPPING=1
//! at shutdown. Outside systemd (no NOTIFY_SOCKET) nothing is sent and the task ends at once.
//!
//! The watchdog is petted from a task of the agent's own runtime, and only while the
//! coordinator session runs: a wedged runtime or a session that ended stops the petting, and
//! systemd kills and restarts the agent. Losing the coordinators does not: a restart would not
//! bring them back, and the session keeps looking for them.

use std::time::{Duration, Instant};

use sd_notify::NotifyState;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::session::SessionStatus;

/// How often STATUS= is refreshed when no watchdog asks for more (the lease runs out on its
/// own, without a status change).
const STATUS_PERIOD: Duration = Duration::from_secs(5);
/// The shortest pet period, whatever WATCHDOG_USEC says.
const MIN_PERIOD: Duration = Duration::from_millis(10);

/// Whether systemd listens for notifications from this process.
pub(crate) fn under_systemd() -> bool {
    std::env::var_os("NOTIFY_SOCKET").is_some()
}

/// Tells systemd the agent is shutting down.
pub(crate) fn notify_stopping() {
    if under_systemd() {
        let _ = sd_notify::notify(&[NotifyState::Stopping, NotifyState::Status("stopping")]);
    }
}

/// How often to pet (and refresh STATUS=): a third of the watchdog timeout, at most
/// [`STATUS_PERIOD`].
pub(crate) fn pet_period(watchdog: Option<Duration>) -> Duration {
    match watchdog.filter(|w| !w.is_zero()) {
        Some(timeout) => (timeout / 3).clamp(MIN_PERIOD, STATUS_PERIOD),
        None => STATUS_PERIOD,
    }
}

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

/// The notifier task of the agent.
pub(crate) struct Notifier {
    pub(crate) status: watch::Receiver<SessionStatus>,
}

impl Notifier {
    /// Notifies until `stop` (or until the session ends, when the petting stops with it).
    pub(crate) async fn run(mut self, stop: CancellationToken) {
        if !under_systemd() {
            return;
        }
        let watchdog = sd_notify::watchdog_enabled().filter(|w| !w.is_zero());
        let mut tick = tokio::time::interval(pet_period(watchdog));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut ready_sent = false;
        let mut shown = String::new();
        let mut warned = false;
        loop {
            // A status change wakes the loop at once, so READY=1 follows the first ack; the
            // watchdog is petted on the ticks.
            let pet = tokio::select! {
                () = stop.cancelled() => return,
                _ = tick.tick() => true,
                _ = self.status.changed() => false,
            };
            // The session owns the sender: gone means the session ended.
            if self.status.has_changed().is_err() {
                send(
                    &[NotifyState::Status("the coordinator session ended")],
                    &mut warned,
                );
                tracing::error!("the coordinator session ended: no more watchdog keep-alives");
                return;
            }
            let (acked, text) = {
                let status = self.status.borrow_and_update();
                (status.acks > 0, status_text(&status, Instant::now()))
            };
            let mut states = Vec::with_capacity(3);
            if !ready_sent && acked {
                ready_sent = true;
                states.push(NotifyState::Ready);
            }
            if text != shown {
                states.push(NotifyState::Status(&text));
            }
            if pet && watchdog.is_some() {
                states.push(NotifyState::Watchdog);
            }
            if !states.is_empty() {
                send(&states, &mut warned);
            }
            shown.clone_from(&text);
        }
    }
}

/// Sends `states`; a failure is logged once (systemd gone: nothing else to do).
fn send(states: &[NotifyState<'_>], warned: &mut bool) {
    if let Err(e) = sd_notify::notify(states)
        && !*warned
    {
        tracing::warn!(error = %e, "cannot notify systemd");
        *warned = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Lease;

    #[test]
    fn the_watchdog_is_petted_three_times_per_timeout() {
        assert_eq!(pet_period(Some(Duration::from_secs(30))), STATUS_PERIOD);
        assert_eq!(
            pet_period(Some(Duration::from_secs(3))),
            Duration::from_secs(1)
        );
        assert_eq!(pet_period(Some(Duration::from_micros(3))), MIN_PERIOD);
        assert_eq!(pet_period(None), STATUS_PERIOD);
    }

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
