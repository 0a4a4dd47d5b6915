//! One cached QUIC connection per peer, shared by every openraft client of that peer (openraft
//! makes a fresh client for each vote and each leadership heartbeat). Dials run in their own
//! task: openraft cancels an RPC at its deadline (the 200 ms heartbeat for replication), and a
//! handshake cancelled with it would start over on every attempt and never finish.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use transport::{Connection, Endpoint, PeerIdentity, Role, Service, TransportError};

use crate::types::NodeId;

/// The outcome of a dial, shared by everyone waiting for it.
type DialResult = Option<Result<Connection, Arc<DialError>>>;

struct Slot {
    addr: String,
    generation: u64,
    state: watch::Receiver<DialResult>,
    /// Calls in a row on this connection that got no reply in time.
    timeouts: u32,
}

/// Calls in a row without a reply after which a connection is dropped and redialed. A peer
/// that was killed and came back at the same address never closed the old connection, which
/// would otherwise only end at its idle timeout (30 s): every call on it times out meanwhile
/// and the leader loses its quorum. Three heartbeats (300 ms) tell that apart from one slow
/// reply.
pub(crate) const SUSPECT_AFTER_TIMEOUTS: u32 = 3;

/// A connection handed out by [`Peers::get`], with what is needed to drop it from the cache.
pub(crate) struct Dialed {
    pub(crate) conn: Connection,
    pub(crate) generation: u64,
}

/// The connection cache of one member's Raft network.
pub(crate) struct Peers {
    endpoint: Endpoint,
    cache: Mutex<Cache>,
}

#[derive(Default)]
struct Cache {
    slots: HashMap<NodeId, Slot>,
    /// Numbers each dial, so a failure only evicts the connection it happened on.
    next_generation: u64,
}

impl Slot {
    /// One more call without a reply in time; whether the connection is now suspect.
    fn timed_out(&mut self) -> bool {
        self.timeouts += 1;
        self.timeouts >= SUSPECT_AFTER_TIMEOUTS
    }

    /// A reply came: the connection is alive.
    fn answered(&mut self) {
        self.timeouts = 0;
    }

    /// Whether this slot can serve `addr`: same address, and not a connection that is known to
    /// be closed (the peer restarted or went away) or a failed dial.
    fn serves(&self, addr: &str) -> bool {
        self.addr == addr
            && match &*self.state.borrow() {
                None => true,
                Some(Ok(conn)) => conn.closed_reason().is_none(),
                Some(Err(_)) => false,
            }
    }
}

/// Why no connection could be had.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DialError {
    /// The dial itself failed (refused, wrong peer, handshake timeout...).
    #[error(transparent)]
    Transport(TransportError),
    /// `addr` is neither an `ip:port` nor a resolvable `host:port`.
    #[error("cannot resolve {addr}: {reason}")]
    Resolve { addr: String, reason: String },
    /// The dial task ended without a result (the runtime is shutting down).
    #[error("the dial to {addr} was abandoned")]
    Abandoned { addr: String },
    /// A lock was poisoned by a panic elsewhere.
    #[error("the connection cache is unusable after a panic")]
    Poisoned,
}

impl Peers {
    pub(crate) fn new(endpoint: Endpoint) -> Peers {
        Peers {
            endpoint,
            cache: Mutex::new(Cache::default()),
        }
    }

    /// The connection to `target` at `addr`, dialing it if there is none (or the last dial
    /// failed, or the member moved to another address).
    pub(crate) async fn get(&self, target: NodeId, addr: &str) -> Result<Dialed, Arc<DialError>> {
        let abandoned = || {
            Arc::new(DialError::Abandoned {
                addr: addr.to_owned(),
            })
        };
        let (mut state, generation) = self.slot(target, addr).map_err(Arc::new)?;
        let result = state
            .wait_for(Option::is_some)
            .await
            .map_err(|_| abandoned())?
            .clone();
        match result {
            Some(Ok(conn)) => Ok(Dialed { conn, generation }),
            Some(Err(e)) => {
                // Forget the failure so the next attempt (after openraft's back-off) redials.
                self.forget(target, generation);
                Err(e)
            }
            None => Err(abandoned()),
        }
    }

    /// A call on connection `generation` of `target` got no reply in time: after
    /// [`SUSPECT_AFTER_TIMEOUTS`] in a row the connection is dropped (the next call redials).
    pub(crate) fn timed_out(&self, target: NodeId, generation: u64) {
        let suspect = self.cache.lock().is_ok_and(|mut cache| {
            cache
                .slots
                .get_mut(&target)
                .filter(|s| s.generation == generation)
                .is_some_and(Slot::timed_out)
        });
        if suspect {
            self.forget(target, generation);
        }
    }

    /// A call on connection `generation` of `target` got its reply: it is alive.
    pub(crate) fn answered(&self, target: NodeId, generation: u64) {
        if let Ok(mut cache) = self.cache.lock()
            && let Some(slot) = cache.slots.get_mut(&target)
            && slot.generation == generation
        {
            slot.answered();
        }
    }

    /// Drops the cached connection `generation` of `target` (it failed); a newer one is kept.
    pub(crate) fn forget(&self, target: NodeId, generation: u64) {
        if let Ok(mut cache) = self.cache.lock()
            && cache
                .slots
                .get(&target)
                .is_some_and(|s| s.generation == generation)
        {
            cache.slots.remove(&target);
        }
    }

    fn slot(
        &self,
        target: NodeId,
        addr: &str,
    ) -> Result<(watch::Receiver<DialResult>, u64), DialError> {
        let mut cache = self.cache.lock().map_err(|_| DialError::Poisoned)?;
        if let Some(slot) = cache.slots.get(&target)
            && slot.serves(addr)
        {
            return Ok((slot.state.clone(), slot.generation));
        }
        cache.next_generation += 1;
        let generation = cache.next_generation;
        let (tx, rx) = watch::channel(None);
        let endpoint = self.endpoint.clone();
        let dial_addr = addr.to_owned();
        tokio::spawn(async move {
            let result = dial(&endpoint, target, &dial_addr).await;
            // Nobody waiting is fine: the connection stays cached for the next RPC.
            let _ = tx.send(Some(result));
        });
        cache.slots.insert(
            target,
            Slot {
                addr: addr.to_owned(),
                generation,
                state: rx.clone(),
                timeouts: 0,
            },
        );
        Ok((rx, generation))
    }
}

/// Dials `target` at `addr` on the Raft service. The TLS server name and the certificate check
/// pin the node id, so reaching another node (a reused address, a stale membership) fails here.
async fn dial(
    endpoint: &Endpoint,
    target: NodeId,
    addr: &str,
) -> Result<Connection, Arc<DialError>> {
    let socket = resolve(addr).await.map_err(Arc::new)?;
    let peer = PeerIdentity {
        role: Role::Coordinator,
        node_id: target,
    };
    endpoint
        .connect(socket, peer, Service::Raft)
        .await
        .map_err(|e| Arc::new(DialError::Transport(e)))
}

async fn resolve(addr: &str) -> Result<std::net::SocketAddr, DialError> {
    if let Ok(socket) = addr.parse() {
        return Ok(socket);
    }
    let resolve_error = |reason: String| DialError::Resolve {
        addr: addr.to_owned(),
        reason,
    };
    tokio::net::lookup_host(addr)
        .await
        .map_err(|e| resolve_error(e.to_string()))?
        .next()
        .ok_or_else(|| resolve_error("no address found".to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_is_suspect_after_three_timeouts_in_a_row_and_a_reply_clears_them() {
        let (_tx, state) = watch::channel(None);
        let mut slot = Slot {
            addr: "10.0.0.1:7400".into(),
            generation: 1,
            state,
            timeouts: 0,
        };
        assert!(!slot.timed_out());
        assert!(!slot.timed_out());
        slot.answered();
        assert!(!slot.timed_out());
        assert!(!slot.timed_out());
        assert!(slot.timed_out(), "three in a row: redial");
    }
}
