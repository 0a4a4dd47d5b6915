//! systemd's notification protocol (`Type=notify`, `WatchdogSec=`) for a long-running
//! program: READY=1 once the program says it serves, STATUS= whenever its one-line state
//! changes, WATCHDOG=1 every WATCHDOG_USEC/3 and STOPPING=1 at shutdown. Outside systemd
//! (no NOTIFY_SOCKET) nothing is sent and the task ends at once.
//!
//! The watchdog is petted from a task of the program's own runtime, and only while its
//! [`Health`] says it serves: a wedged runtime, or a core that stopped, stops the petting, and
//! systemd kills and restarts the program. What "ready" and "serving" mean is the program's
//! (a coordinator: its membership settled and Raft running; an agent: a leader acknowledged a
//! heartbeat and the session runs); the protocol is here, once.

use std::future::Future;
use std::io;
use std::time::Duration;

use sd_notify::NotifyState;
use tokio_util::sync::CancellationToken;

/// How often STATUS= is refreshed when no watchdog asks for more.
pub const STATUS_PERIOD: Duration = Duration::from_secs(5);
/// The shortest pet period, whatever WATCHDOG_USEC says.
pub const MIN_PERIOD: Duration = Duration::from_millis(10);

/// One notification to systemd.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// READY=1: the program serves.
    Ready,
    /// STATUS=: the program's state in one line, shown by `systemctl status`.
    Status(String),
    /// WATCHDOG=1: the program is alive.
    Watchdog,
    /// STOPPING=1: the program is shutting down.
    Stopping,
}

/// What the program says about itself, read by the notifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reading {
    /// It runs: `ready` once it serves (READY=1 follows once), `status` for STATUS=.
    Serving {
        /// Whether it serves yet.
        ready: bool,
        /// Its state in one line.
        status: String,
    },
    /// Its core stopped for good: `status` is the last STATUS=, and the watchdog is no
    /// longer petted, so systemd restarts the program.
    Ended {
        /// Why, in one line.
        status: String,
    },
}

/// The program's side of the notifier: where to read its state and when to look again.
pub trait Health: Send {
    /// Resolves when the state may have changed (readiness above all): the notifier reads it
    /// at once instead of at the next tick. Resolving spuriously is fine; a source that can no
    /// longer change should stay pending.
    fn changed(&mut self) -> impl Future<Output = ()> + Send;
    /// The state now.
    fn read(&mut self) -> Reading;
}

/// Where notifications go: systemd's socket, or a recorder in tests.
pub trait Sink: Send {
    /// Sends `messages` as one datagram.
    ///
    /// # Errors
    /// The socket's error (systemd gone).
    fn send(&mut self, messages: &[Message]) -> io::Result<()>;
}

/// The socket NOTIFY_SOCKET names, through the `sd-notify` crate.
#[derive(Debug, Clone, Copy, Default)]
pub struct SdNotify;

impl Sink for SdNotify {
    fn send(&mut self, messages: &[Message]) -> io::Result<()> {
        let states: Vec<NotifyState<'_>> = messages
            .iter()
            .map(|m| match m {
                Message::Ready => NotifyState::Ready,
                Message::Status(text) => NotifyState::Status(text),
                Message::Watchdog => NotifyState::Watchdog,
                Message::Stopping => NotifyState::Stopping,
            })
            .collect();
        sd_notify::notify(&states)
    }
}

/// Whether systemd listens for notifications from this process.
pub fn under_systemd() -> bool {
    std::env::var_os("NOTIFY_SOCKET").is_some()
}

/// The watchdog timeout systemd set for this process (WATCHDOG_USEC, when WATCHDOG_PID is
/// unset or names this process); `None` when there is none to pet.
pub fn watchdog_timeout() -> Option<Duration> {
    sd_notify::watchdog_enabled().filter(|w| !w.is_zero())
}

/// Tells systemd the program is shutting down.
pub fn notify_stopping() {
    if under_systemd() {
        let _ = SdNotify.send(&[Message::Stopping, Message::Status("stopping".into())]);
    }
}

/// How often to pet (and refresh STATUS=): a third of the watchdog timeout, at most
/// [`STATUS_PERIOD`], at least [`MIN_PERIOD`].
pub fn pet_period(watchdog: Option<Duration>) -> Duration {
    match watchdog.filter(|w| !w.is_zero()) {
        Some(timeout) => (timeout / 3).clamp(MIN_PERIOD, STATUS_PERIOD),
        None => STATUS_PERIOD,
    }
}

/// The notifier task of one program.
pub struct Notifier<H, S = SdNotify> {
    health: H,
    sink: S,
    /// The watchdog timeout to pet within; `None`: no WATCHDOG=1.
    watchdog: Option<Duration>,
}

impl<H: Health> Notifier<H, SdNotify> {
    /// A notifier to systemd as the environment describes it; `None` outside systemd.
    pub fn from_env(health: H) -> Option<Self> {
        under_systemd().then(|| Notifier::new(health, SdNotify, watchdog_timeout()))
    }
}

impl<H: Health, S: Sink> Notifier<H, S> {
    /// A notifier sending to `sink`, petting within `watchdog` if set.
    pub fn new(health: H, sink: S, watchdog: Option<Duration>) -> Self {
        Notifier {
            health,
            sink,
            watchdog: watchdog.filter(|w| !w.is_zero()),
        }
    }

    /// Notifies until `stop`, or until the health reads [`Reading::Ended`] (the petting stops
    /// with it).
    pub async fn run(mut self, stop: CancellationToken) {
        let mut tick = tokio::time::interval(pet_period(self.watchdog));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let (mut ready_sent, mut shown, mut warned) = (false, String::new(), false);
        loop {
            // A change wakes the loop at once (READY=1 follows readiness); the watchdog is
            // petted on the ticks only.
            let pet = tokio::select! {
                () = stop.cancelled() => return,
                _ = tick.tick() => true,
                () = self.health.changed() => false,
            };
            let (ready, status) = match self.health.read() {
                Reading::Ended { status } => {
                    self.send(&[Message::Status(status.clone())], &mut warned);
                    tracing::error!(why = %status, "no more watchdog keep-alives");
                    return;
                }
                Reading::Serving { ready, status } => (ready, status),
            };
            let mut messages = Vec::with_capacity(3);
            if ready && !ready_sent {
                ready_sent = true;
                messages.push(Message::Ready);
            }
            if status != shown {
                messages.push(Message::Status(status.clone()));
            }
            if pet && self.watchdog.is_some() {
                messages.push(Message::Watchdog);
            }
            if !messages.is_empty() {
                self.send(&messages, &mut warned);
            }
            shown = status;
        }
    }

    /// Sends `messages`; a failure is logged once (systemd gone: nothing else to do).
    fn send(&mut self, messages: &[Message], warned: &mut bool) {
        if let Err(e) = self.sink.send(messages)
            && !*warned
        {
            tracing::warn!(error = %e, "cannot notify systemd");
            *warned = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tokio::sync::watch;

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

    /// Every datagram sent, in order.
    #[derive(Clone, Default)]
    struct Recorder(Arc<Mutex<Vec<Vec<Message>>>>);

    impl Sink for Recorder {
        fn send(&mut self, messages: &[Message]) -> io::Result<()> {
            self.0.lock().expect("recorder").push(messages.to_vec());
            Ok(())
        }
    }

    impl Recorder {
        fn count(&self, wanted: &Message) -> usize {
            let sent = self.0.lock().expect("recorder");
            sent.iter().flatten().filter(|m| *m == wanted).count()
        }
        fn datagrams(&self) -> Vec<Vec<Message>> {
            self.0.lock().expect("recorder").clone()
        }
    }

    /// A health the test sets through a watch channel.
    struct Scripted(watch::Receiver<Reading>);

    impl Health for Scripted {
        async fn changed(&mut self) {
            if self.0.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
        fn read(&mut self) -> Reading {
            self.0.borrow_and_update().clone()
        }
    }

    fn serving(ready: bool, status: &str) -> Reading {
        Reading::Serving {
            ready,
            status: status.into(),
        }
    }

    /// Lets the paused clock run `d` while the notifier works.
    async fn run_for(d: Duration) {
        tokio::time::sleep(d).await;
    }

    #[tokio::test(start_paused = true)]
    async fn ready_is_sent_once_at_once_and_the_watchdog_on_ticks_only() {
        let (tx, rx) = watch::channel(serving(false, "settling"));
        let sent = Recorder::default();
        let stop = CancellationToken::new();
        let notifier = Notifier::new(Scripted(rx), sent.clone(), Some(Duration::from_secs(3)));
        let task = tokio::spawn(notifier.run(stop.clone()));
        run_for(Duration::from_millis(3_500)).await;
        // Ticks at 0, 1, 2, 3 s: four pets, not ready, one STATUS=.
        assert_eq!(sent.count(&Message::Watchdog), 4);
        assert_eq!(sent.count(&Message::Ready), 0);
        assert_eq!(sent.count(&Message::Status("settling".into())), 1);
        // Readiness is told between ticks, without a pet of its own.
        tx.send_replace(serving(true, "leader 1"));
        run_for(Duration::from_millis(100)).await;
        assert_eq!(
            sent.datagrams().last(),
            Some(&vec![Message::Ready, Message::Status("leader 1".into())])
        );
        assert_eq!(sent.count(&Message::Watchdog), 4);
        // Ready again (another status) sends no second READY=1.
        tx.send_replace(serving(true, "leader 2"));
        run_for(Duration::from_secs(2)).await;
        assert_eq!(sent.count(&Message::Ready), 1);
        assert_eq!(sent.count(&Message::Status("leader 2".into())), 1);
        assert_eq!(sent.count(&Message::Watchdog), 6);
        stop.cancel();
        task.await.expect("notifier");
    }

    #[tokio::test(start_paused = true)]
    async fn an_ended_core_stops_the_petting_for_good() {
        let (tx, rx) = watch::channel(serving(true, "serving"));
        let sent = Recorder::default();
        let notifier = Notifier::new(Scripted(rx), sent.clone(), Some(Duration::from_secs(3)));
        let task = tokio::spawn(notifier.run(CancellationToken::new()));
        run_for(Duration::from_millis(1_500)).await;
        let pets = sent.count(&Message::Watchdog);
        assert_eq!(pets, 2);
        tx.send_replace(Reading::Ended {
            status: "Raft stopped; not serving".into(),
        });
        // The task ends by itself; no pet after the end.
        tokio::time::timeout(Duration::from_secs(1), task)
            .await
            .expect("the notifier ends")
            .expect("notifier");
        run_for(Duration::from_secs(10)).await;
        assert_eq!(sent.count(&Message::Watchdog), pets);
        assert_eq!(
            sent.datagrams().last(),
            Some(&vec![Message::Status("Raft stopped; not serving".into())])
        );
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_watchdog_only_state_changes_are_sent() {
        let (tx, rx) = watch::channel(serving(true, "up"));
        let sent = Recorder::default();
        let stop = CancellationToken::new();
        let task = tokio::spawn(Notifier::new(Scripted(rx), sent.clone(), None).run(stop.clone()));
        run_for(Duration::from_secs(20)).await;
        assert_eq!(
            sent.datagrams(),
            vec![vec![Message::Ready, Message::Status("up".into())]]
        );
        tx.send_replace(serving(true, "still up"));
        run_for(Duration::from_millis(10)).await;
        assert_eq!(sent.datagrams().len(), 2);
        assert_eq!(sent.count(&Message::Watchdog), 0);
        stop.cancel();
        task.await.expect("notifier");
    }
}
