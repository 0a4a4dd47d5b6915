//! Live pages. One task per member (the [`Hub`]) takes a new picture of the fleet whenever this
//! member applies a log entry (at most every [`MIN_GAP`]) and at least every [`REFRESH`] (the
//! leader's soft state, usage and heartbeats, changes without log entries), and shares it on a
//! watch channel. Each open page holds a server-sent-events stream that redraws its live part
//! from every new picture and sends it only when it changed.
//!
//! ```text
//!  raft applied index ──┐
//!  every REFRESH ───────┼─▶ Hub: Camera::take ─▶ watch<Arc<Snapshot>> ─┬─▶ stream (page A) ─▶ browser
//!  a page opens (stale) ┘                                              └─▶ stream (page B) ─▶ browser
//! ```

use std::sync::Arc;
use std::time::Duration;

use hyper::body::Bytes;
use protocol::time::Now;
use raft::types::Raft;
use tokio::sync::{Notify, mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::snapshot::{Camera, Shared, Snapshot};

/// The least time between two pictures (a burst of entries makes one picture).
pub(crate) const MIN_GAP: Duration = Duration::from_millis(100);
/// The most time between two pictures while a page is open.
pub(crate) const REFRESH: Duration = Duration::from_millis(1000);
/// The most time between two pictures while no page is open.
const IDLE_REFRESH: Duration = Duration::from_secs(10);
/// A comment line keeps idle streams (and proxies) from timing out.
const KEEPALIVE: Duration = Duration::from_secs(15);

/// The member's shared picture and the task that renews it.
pub(crate) struct Hub {
    tx: watch::Sender<Shared>,
    wake: Arc<Notify>,
}

/// What the pages hold of the hub.
#[derive(Clone)]
pub(crate) struct HubHandle {
    rx: watch::Receiver<Shared>,
    wake: Arc<Notify>,
}

impl Hub {
    pub(crate) fn new() -> (Hub, HubHandle) {
        let (tx, rx) = watch::channel(Arc::new(Snapshot::default()));
        let wake = Arc::new(Notify::new());
        (
            Hub {
                tx,
                wake: Arc::clone(&wake),
            },
            HubHandle { rx, wake },
        )
    }

    /// Takes pictures until `shutdown`.
    pub(crate) async fn run(self, mut camera: Camera, raft: Raft, shutdown: CancellationToken) {
        let mut metrics = raft.metrics();
        let mut applied = None;
        loop {
            let snapshot = camera.take(Now::read().millis).await;
            self.tx.send_replace(Arc::new(snapshot));
            let pause = tokio::time::sleep(MIN_GAP);
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = pause => {}
            }
            // Pages hold receivers; the handle kept by the server is one of them.
            let idle = self.tx.receiver_count() <= 1;
            let wait = if idle { IDLE_REFRESH } else { REFRESH };
            let deadline = tokio::time::sleep(wait.saturating_sub(MIN_GAP));
            tokio::pin!(deadline);
            loop {
                let now_applied = metrics.borrow().last_applied.map(|l| l.index);
                if now_applied != applied {
                    applied = now_applied;
                    break;
                }
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = &mut deadline => break,
                    () = self.wake.notified() => break,
                    changed = metrics.changed() => {
                        if changed.is_err() {
                            // Raft stopped: the member is going down.
                            shutdown.cancelled().await;
                            return;
                        }
                    }
                }
            }
        }
    }
}

impl HubHandle {
    /// The newest picture.
    pub(crate) fn current(&self) -> Shared {
        Arc::clone(&self.rx.borrow())
    }

    /// A picture taken at most `max_age` ago (asks for one and waits a little if the newest is
    /// older: the hub renews slowly while no page is open).
    pub(crate) async fn fresh(&self, max_age: Duration) -> Shared {
        let current = self.current();
        let age = Now::read().millis.saturating_sub(current.taken_at);
        if u128::from(age) <= max_age.as_millis() {
            return current;
        }
        let mut rx = self.rx.clone();
        rx.mark_unchanged();
        self.wake.notify_one();
        let _ = tokio::time::timeout(Duration::from_secs(3), rx.changed()).await;
        self.current()
    }

    /// A receiver of every new picture.
    pub(crate) fn subscribe(&self) -> watch::Receiver<Shared> {
        self.rx.clone()
    }
}

/// One server-sent event: `event`, `id`, and `data` split into lines.
pub(crate) fn sse_event(event: &str, id: u64, data: &str) -> Bytes {
    let mut out = String::with_capacity(data.len() + 64);
    out.push_str("event: ");
    out.push_str(event);
    out.push('\n');
    out.push_str(&format!("id: {id}\n"));
    for line in data.split('\n') {
        out.push_str("data: ");
        out.push_str(line.strip_suffix('\r').unwrap_or(line));
        out.push('\n');
    }
    out.push('\n');
    Bytes::from(out)
}

/// Streams `draw(picture)` to `tx` whenever a new picture draws differently, until the client
/// goes away, `shutdown`, or `draw` answers `None` (the session ended: a `gone` event is sent).
pub(crate) async fn stream<F>(
    mut pictures: watch::Receiver<Shared>,
    tx: mpsc::Sender<Bytes>,
    shutdown: CancellationToken,
    mut draw: F,
) where
    F: FnMut(&Snapshot) -> Option<String> + Send,
{
    let mut last: Option<String> = None;
    let mut id = 0u64;
    // Tell the browser how soon to reconnect after a drop.
    if tx
        .send(Bytes::from_static(b"retry: 1000\n\n"))
        .await
        .is_err()
    {
        return;
    }
    loop {
        let picture = Arc::clone(&pictures.borrow_and_update());
        match draw(&picture) {
            None => {
                let _ = tx.send(sse_event("gone", id, "session ended")).await;
                return;
            }
            Some(html) if last.as_deref() != Some(html.as_str()) => {
                id += 1;
                if tx.send(sse_event("page", id, &html)).await.is_err() {
                    return;
                }
                last = Some(html);
            }
            Some(_) => {}
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tx.closed() => return,
            changed = pictures.changed() => if changed.is_err() { return },
            () = tokio::time::sleep(KEEPALIVE) => {
                if tx.send(Bytes::from_static(b": keepalive\n\n")).await.is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_carries_every_line_of_its_data() {
        let e = sse_event("page", 3, "<a>\n<b>\r\n</a>");
        assert_eq!(
            std::str::from_utf8(&e).expect("utf8"),
            "event: page\nid: 3\ndata: <a>\ndata: <b>\ndata: </a>\n\n"
        );
    }

    #[tokio::test]
    async fn a_stream_sends_only_changes_and_ends_with_gone() {
        let (tx_pic, rx_pic) = watch::channel(Arc::new(Snapshot::default()));
        let (tx, mut rx) = mpsc::channel(8);
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(stream(rx_pic, tx, shutdown.clone(), |s: &Snapshot| {
            (s.taken_at != 99).then(|| format!("taken {}", s.taken_at))
        }));
        let next = |rx: &mut mpsc::Receiver<Bytes>| {
            let b = rx.try_recv().ok();
            b.map(|b| String::from_utf8_lossy(&b).into_owned())
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(next(&mut rx).as_deref(), Some("retry: 1000\n\n"));
        assert!(next(&mut rx).is_some_and(|e| e.contains("data: taken 0")));
        // The same drawing is not sent again.
        tx_pic.send_replace(Arc::new(Snapshot::default()));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(next(&mut rx), None);
        tx_pic.send_replace(Arc::new(Snapshot {
            taken_at: 2,
            ..Snapshot::default()
        }));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(next(&mut rx).is_some_and(|e| e.contains("data: taken 2")));
        tx_pic.send_replace(Arc::new(Snapshot {
            taken_at: 99,
            ..Snapshot::default()
        }));
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("ends")
            .expect("no panic");
        assert!(next(&mut rx).is_some_and(|e| e.starts_with("event: gone")));
    }
}
