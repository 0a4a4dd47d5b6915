//! systemd's notification protocol for a running member (`Type=notify`, `WatchdogSec=`):
//! READY=1 once the membership is settled (when `run` prints its ready line), STATUS= with the
//! leader and term, WATCHDOG=1 every WATCHDOG_USEC/3 and STOPPING=1 at shutdown. Outside
//! systemd (no NOTIFY_SOCKET) nothing is sent and the task ends at once.
//!
//! The watchdog is petted from a task of the member's own runtime, and only while Raft runs:
//! a wedged runtime or a Raft core that stopped or hit a fatal error stops the petting, and
//! systemd kills and restarts the member (its Raft state is durable, so nothing is lost).

use std::time::Duration;

use openraft::ServerState;
use raft::NodeId;
use raft::types::Raft;
use sd_notify::NotifyState;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::ReadyLine;

/// How often STATUS= is refreshed when no watchdog asks for more.
const STATUS_PERIOD: Duration = Duration::from_secs(5);
/// The shortest pet period, whatever WATCHDOG_USEC says.
const MIN_PERIOD: Duration = Duration::from_millis(10);

/// Whether systemd listens for notifications from this process.
pub(crate) fn under_systemd() -> bool {
    std::env::var_os("NOTIFY_SOCKET").is_some()
}

/// Tells systemd the member is shutting down.
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

/// The STATUS= text: where the leadership stands, from this member's view.
pub(crate) fn status_text(
    node_id: NodeId,
    ready: bool,
    state: ServerState,
    leader: Option<NodeId>,
    term: u64,
) -> String {
    let role = match state {
        ServerState::Leader => "leader",
        ServerState::Follower => "follower",
        ServerState::Candidate => "candidate",
        ServerState::Learner => "learner",
        ServerState::Shutdown => "shut down",
    };
    let leader = leader.map_or_else(|| "no leader".to_string(), |l| format!("leader {l}"));
    let settling = if ready { "" } else { "settling membership; " };
    format!("{settling}{leader}, term {term}; this is node {node_id}, {role}")
}

/// The notifier task of one member.
pub(crate) struct Notifier {
    pub(crate) node_id: NodeId,
    pub(crate) raft: Raft,
    pub(crate) ready: watch::Receiver<Option<ReadyLine>>,
}

impl Notifier {
    /// Notifies until `stop` (or until Raft stops, when the petting stops with it).
    pub(crate) async fn run(mut self, stop: CancellationToken) {
        if !under_systemd() {
            return;
        }
        let watchdog = sd_notify::watchdog_enabled().filter(|w| !w.is_zero());
        let mut tick = tokio::time::interval(pet_period(watchdog));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let metrics = self.raft.metrics();
        let (mut ready_sent, mut ready_open) = (false, true);
        let mut shown = String::new();
        let mut warned = false;
        loop {
            // Readiness wakes the loop at once; the watchdog is petted on the ticks.
            let pet = tokio::select! {
                () = stop.cancelled() => return,
                _ = tick.tick() => true,
                changed = self.ready.changed(), if ready_open => {
                    ready_open = changed.is_ok();
                    false
                }
            };
            if metrics.has_changed().is_err() {
                send(
                    &[NotifyState::Status("Raft stopped; not serving")],
                    &mut warned,
                );
                tracing::error!("Raft stopped: no more watchdog keep-alives");
                return;
            }
            let (running, text) = {
                let m = metrics.borrow();
                let ready = self.ready.borrow().is_some();
                let text = status_text(
                    self.node_id,
                    ready,
                    m.state,
                    m.current_leader,
                    m.current_term,
                );
                (m.running_state.clone(), text)
            };
            if let Err(fatal) = running {
                let text = format!("Raft failed: {fatal}");
                send(&[NotifyState::Status(&text)], &mut warned);
                tracing::error!(%fatal, "Raft failed: no more watchdog keep-alives");
                return;
            }
            let mut states = Vec::with_capacity(3);
            if !ready_sent && self.ready.borrow().is_some() {
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

    #[test]
    fn the_watchdog_is_petted_three_times_per_timeout() {
        assert_eq!(pet_period(Some(Duration::from_secs(30))), STATUS_PERIOD);
        assert_eq!(
            pet_period(Some(Duration::from_secs(3))),
            Duration::from_secs(1)
        );
        assert_eq!(pet_period(Some(Duration::from_micros(3))), MIN_PERIOD);
        assert_eq!(pet_period(Some(Duration::ZERO)), STATUS_PERIOD);
        assert_eq!(pet_period(None), STATUS_PERIOD);
    }

    #[test]
    fn the_status_names_the_leader_the_term_and_this_member() {
        assert_eq!(
            status_text(2, true, ServerState::Follower, Some(1), 3),
            "leader 1, term 3; this is node 2, follower"
        );
        assert_eq!(
            status_text(1, true, ServerState::Leader, Some(1), 4),
            "leader 1, term 4; this is node 1, leader"
        );
        assert_eq!(
            status_text(3, false, ServerState::Learner, None, 0),
            "settling membership; no leader, term 0; this is node 3, learner"
        );
    }
}
