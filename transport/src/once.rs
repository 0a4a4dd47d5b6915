//! At-most-once admin writes across retries. A client makes a [`RequestId`] once per call and
//! runs the call's attempts inside [`scope`]; every Admin-service call made in that scope is
//! sent wrapped in a [`OnceEnvelope`] (method [`ONCE_METHOD`]) carrying the id. The server
//! unwraps it and runs the inner method's handler in a scope of that id, so what the handler
//! proposes can be tagged with it ([`next_key`]: the id and the proposal's number within the
//! call) and a forward to the leader carries it on.
//!
//! ```text
//!  client: scope(id) ─ attempt 1 ──▶ follower ── forward (same id) ──▶ leader: propose Once{id, 0}
//!                    ─ attempt 2 (leader died before replying) ──▶ new leader: Once{id, 0}
//!                                      already applied ─▶ the first reply, nothing applied again
//! ```
//!
//! A server that does not know [`ONCE_METHOD`] (an older build) answers `UnknownMethod`; the
//! connection then sends the call unwrapped, as before.

use std::cell::Cell;
use std::future::Future;

use protocol::RequestId;
use serde::{Deserialize, Serialize};

/// The wrapper's method name.
pub const ONCE_METHOD: &str = "once";

/// A call tagged with its request id: the inner method and its body, as an unwrapped call
/// would carry them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OnceEnvelope {
    /// The call's id.
    pub request: RequestId,
    /// The inner method (`Rpc::METHOD`).
    pub method: String,
    /// The inner request's body, at its encoding version.
    pub body: Vec<u8>,
}

struct Scope {
    id: RequestId,
    next: Cell<u32>,
}

tokio::task_local! {
    static SCOPE: Scope;
}

/// Runs `f` (a call and its retries, or a handler) as request `id`.
pub async fn scope<F: Future>(id: RequestId, f: F) -> F::Output {
    SCOPE
        .scope(
            Scope {
                id,
                next: Cell::new(0),
            },
            f,
        )
        .await
}

/// The request the current task runs as, if any.
pub fn current() -> Option<RequestId> {
    SCOPE.try_with(|s| s.id).ok()
}

/// The current request and the number of this proposal within it (0, 1, ... in the order the
/// handler proposes; a retry of the call proposes the same sequence), if the task runs as one.
pub fn next_key() -> Option<(RequestId, u32)> {
    SCOPE
        .try_with(|s| {
            let n = s.next.get();
            s.next.set(n.saturating_add(1));
            (s.id, n)
        })
        .ok()
}

/// Where the current request's numbering stands (the number the next proposal gets), if the
/// task runs as one: taken before a handler's attempt, so a second attempt can start again
/// from it ([`rewind`]).
pub fn position() -> Option<u32> {
    SCOPE.try_with(|s| s.next.get()).ok()
}

/// Numbers the next proposals from `to` again: a handler that runs its work a second time
/// (the leader it ran on lost the lead mid-write and won it back) proposes the same keys as
/// the first time, so a first attempt that committed after all is answered from the state
/// machine's memory instead of applied twice.
pub fn rewind(to: u32) {
    let _ = SCOPE.try_with(|s| s.next.set(to));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_scope_numbers_its_proposals_and_ends_with_its_future() {
        assert_eq!(current(), None);
        assert_eq!(next_key(), None);
        let id = RequestId([7; 16]);
        let keys = scope(id, async { (current(), next_key(), next_key()) }).await;
        assert_eq!(keys, (Some(id), Some((id, 0)), Some((id, 1))));
        // Each scope (each attempt served) counts from 0 again.
        assert_eq!(scope(id, async { next_key() }).await, Some((id, 0)));
        assert_eq!(current(), None);
    }

    #[tokio::test]
    async fn a_second_attempt_in_one_scope_proposes_the_same_keys_after_a_rewind() {
        assert_eq!(position(), None);
        rewind(3); // outside a scope: nothing to rewind
        let id = RequestId([9; 16]);
        let keys = scope(id, async {
            let first = next_key();
            let mark = position();
            let attempt = |_: ()| (next_key(), next_key());
            let one = attempt(());
            rewind(mark.unwrap_or(0));
            let two = attempt(());
            (first, one, two)
        })
        .await;
        assert_eq!(keys.0, Some((id, 0)));
        assert_eq!(keys.1, (Some((id, 1)), Some((id, 2))));
        assert_eq!(
            keys.1, keys.2,
            "the retry proposes what the first attempt proposed"
        );
    }
}
