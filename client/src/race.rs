//! Futures raced inside the calling task: a round's attempts on several members run at once
//! without spawning, so they borrow the request and run in the call's request-id scope
//! (`transport::once` is task-local).

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::task::Poll;

/// A boxed attempt borrowing from the round.
pub(crate) type Racer<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A set of futures; [`Race::next`] yields whichever finishes first and drops it from the set.
/// Dropping the set cancels the futures still running.
pub(crate) struct Race<'a, T> {
    running: Vec<Racer<'a, T>>,
}

impl<'a, T> Race<'a, T> {
    pub(crate) fn new() -> Race<'a, T> {
        Race {
            running: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, future: Racer<'a, T>) {
        self.running.push(future);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.running.is_empty()
    }

    /// The output of the first future to finish; pending for ever while the set is empty.
    pub(crate) async fn next(&mut self) -> T {
        poll_fn(|cx| {
            for i in 0..self.running.len() {
                if let Poll::Ready(out) = self.running[i].as_mut().poll(cx) {
                    drop(self.running.swap_remove(i));
                    return Poll::Ready(out);
                }
            }
            Poll::Pending
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_first_to_finish_wins_and_the_rest_keep_running() {
        let (first_tx, first_rx) = tokio::sync::oneshot::channel::<&str>();
        let (second_tx, second_rx) = tokio::sync::oneshot::channel::<&str>();
        let mut race = Race::new();
        race.push(Box::pin(async move { first_rx.await.unwrap_or("dropped") }));
        race.push(Box::pin(
            async move { second_rx.await.unwrap_or("dropped") },
        ));
        second_tx.send("second").unwrap();
        assert_eq!(race.next().await, "second");
        assert!(!race.is_empty());
        first_tx.send("first").unwrap();
        assert_eq!(race.next().await, "first");
        assert!(race.is_empty());
        let idle = std::future::poll_fn(|cx| {
            let next = std::pin::pin!(race.next());
            Poll::Ready(next.poll(cx).is_pending())
        });
        assert!(idle.await, "an empty race never finishes");
    }
}
