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
}

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
