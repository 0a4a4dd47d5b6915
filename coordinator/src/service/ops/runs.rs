//! One run per identical one-shot request. A restart or a snapshot runs on the VM's agent for
//! longer than one client attempt lasts (the CLI gives up on an attempt after a few seconds and
//! retries), and neither is idempotent: a retry must join the run already under way instead of
//! restarting the VM a second time. A finished run is kept for [`GRACE`], so a retry that
//! arrives just after the end gets the same answer; starting another operation on the same VM
//! forgets the finished ones, so a later `snapshot ls` never answers from before a change.
//!
//! ```text
//!  request ─▶ key (vm, op)        ─┬─ running ────────────▶ wait for its result
//!                                  ├─ finished < GRACE ago ─▶ its result
//!                                  └─ none ─▶ spawn the run (outlives the request) ─▶ wait
//! ```
//!
//! Each member holds its own registry (in its `Ctx`), so members sharing a process (tests)
//! never see each other's runs.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::watch;

/// How long a finished run answers identical requests.
pub(crate) const GRACE: Duration = Duration::from_secs(10);

/// Which run: the VM and the operation.
type Key = (String, String);

struct Entry<T> {
    result: watch::Receiver<Option<T>>,
    finished: Option<Instant>,
}

/// Runs in flight and recently finished, by VM and operation.
pub(crate) struct Runs<T> {
    grace: Duration,
    entries: Mutex<HashMap<Key, Entry<T>>>,
}

/// The run's task ended without a result (the runtime is shutting down).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the run ended without a result")]
pub(crate) struct Abandoned;

impl<T: Clone + Send + Sync + 'static> Runs<T> {
    /// An empty registry keeping finished runs for `grace`.
    pub(crate) fn new(grace: Duration) -> Runs<T> {
        Runs {
            grace,
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Key, Entry<T>>> {
        // Entries are plain data: a panic elsewhere cannot leave them half-changed.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The result of `op` on `vm`: joins the identical run under way (or finished
    /// within the grace), else spawns `run` as its own task, which finishes even if every
    /// caller stops waiting.
    pub(crate) async fn run_once<F, Fut>(
        self: &Arc<Self>,
        vm: &str,
        op: String,
        run: F,
    ) -> Result<T, Abandoned>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = T> + Send + 'static,
    {
        let key: Key = (vm.to_string(), op);
        let mut result = {
            let mut entries = self.lock();
            let now = Instant::now();
            let grace = self.grace;
            entries.retain(|_, e| e.finished.is_none_or(|at| now - at < grace));
            match entries.get(&key) {
                Some(entry) => entry.result.clone(),
                None => {
                    // Another operation on this VM may change what a finished one answered.
                    entries.retain(|(v, _), e| *v != key.0 || e.finished.is_none());
                    let (tx, rx) = watch::channel(None);
                    entries.insert(
                        key.clone(),
                        Entry {
                            result: rx.clone(),
                            finished: None,
                        },
                    );
                    let runs = Arc::clone(self);
                    let running = run();
                    let mine = rx.clone();
                    tokio::spawn(async move {
                        let outcome = running.await;
                        // Marked finished and answered under one lock: a caller that saw the
                        // answer never finds the run still "under way" after its grace.
                        let mut entries = runs.lock();
                        if let Some(entry) = entries.get_mut(&key)
                            && entry.result.same_channel(&mine)
                        {
                            entry.finished = Some(Instant::now());
                        }
                        tx.send_replace(Some(outcome));
                    });
                    rx
                }
            }
        };
        let done = result
            .wait_for(Option::is_some)
            .await
            .map_err(|_| Abandoned)?;
        done.clone().ok_or(Abandoned)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::sync::oneshot;

    use super::*;

    fn counting(
        calls: &Arc<AtomicUsize>,
        answer: u32,
    ) -> impl FnOnce() -> std::future::Ready<u32> + use<> {
        let calls = Arc::clone(calls);
        move || {
            calls.fetch_add(1, Ordering::SeqCst);
            std::future::ready(answer)
        }
    }

    #[tokio::test]
    async fn a_retry_joins_the_run_under_way_instead_of_starting_another() {
        let runs = Arc::new(Runs::<u32>::new(GRACE));
        let calls = Arc::new(AtomicUsize::new(0));
        let (release, released) = oneshot::channel::<u32>();
        let first = {
            let (runs, calls) = (Arc::clone(&runs), Arc::clone(&calls));
            tokio::spawn(async move {
                runs.run_once("web-1", "restart".into(), move || {
                    calls.fetch_add(1, Ordering::SeqCst);
                    async move { released.await.unwrap_or(0) }
                })
                .await
            })
        };
        // The first caller gives up (its attempt timed out); the run goes on.
        tokio::task::yield_now().await;
        while calls.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        first.abort();
        let retry = {
            let (runs, calls) = (Arc::clone(&runs), Arc::clone(&calls));
            tokio::spawn(async move {
                runs.run_once("web-1", "restart".into(), counting(&calls, 9))
                    .await
            })
        };
        tokio::task::yield_now().await;
        release.send(7).unwrap();
        assert_eq!(retry.await.unwrap(), Ok(7));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        // Just after the end, the same request still gets that result.
        let again = runs
            .run_once("web-1", "restart".into(), counting(&calls, 9))
            .await;
        assert_eq!(again, Ok(7));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn other_operations_vms_and_expired_results_run_anew() {
        let runs = Arc::new(Runs::<u32>::new(GRACE));
        let calls = Arc::new(AtomicUsize::new(0));
        let ls = |n| runs.run_once("web-1", "ls".into(), counting(&calls, n));
        assert_eq!(ls(1).await, Ok(1));
        assert_eq!(ls(2).await, Ok(1), "within the grace: the same answer");
        assert_eq!(
            runs.run_once("web-1", "create s1".into(), counting(&calls, 3))
                .await,
            Ok(3)
        );
        assert_eq!(
            ls(4).await,
            Ok(4),
            "a change on the VM forgets older answers"
        );
        assert_eq!(
            runs.run_once("web-2", "ls".into(), counting(&calls, 5))
                .await,
            Ok(5)
        );
        assert_eq!(calls.load(Ordering::SeqCst), 4);

        let forgetful = Arc::new(Runs::<u32>::new(Duration::ZERO));
        let once = |n| forgetful.run_once("web-1", "restart".into(), counting(&calls, n));
        assert_eq!(once(7).await, Ok(7));
        assert_eq!(
            once(8).await,
            Ok(8),
            "a finished run past its grace is not joined"
        );
    }
}
