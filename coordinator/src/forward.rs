//! Forwarding admin calls to the leader: one cached Admin-service connection to the current
//! leader, dialed with this member's own coordinator certificate (the Admin service admits
//! coordinators), redialed when the leader changes or the connection dies.
//!
//! A dial that fails sent nothing, so the caller may retry it anywhere; a call that fails after
//! it was sent may or may not have been applied, and is never retried here.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::sync::Mutex;
use transport::{Connection, Endpoint, NodeId, PeerIdentity, Rpc, Service, TransportError};

/// A member to forward to: its node id and QUIC address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) id: NodeId,
    pub(crate) addr: String,
}

/// Why a forwarded call failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ForwardError {
    /// Nothing was sent: the target could not be resolved or dialed.
    #[error("cannot reach member {id} at {addr}: {reason}")]
    NotSent {
        /// The target's id.
        id: NodeId,
        /// Its address.
        addr: String,
        /// Why.
        reason: String,
    },
    /// The call was sent; this is its outcome (a remote refusal or a lost reply).
    #[error(transparent)]
    Call(TransportError),
}

struct Cached {
    target: Target,
    conn: Connection,
}

/// The forwarding client of one member.
pub(crate) struct Forwarder {
    endpoint: Endpoint,
    cached: Mutex<Option<Cached>>,
    deadline: Duration,
}

impl Forwarder {
    /// Forwards from `endpoint` (this member's server endpoint); each call gets `deadline`.
    pub(crate) fn new(endpoint: Endpoint, deadline: Duration) -> Forwarder {
        Forwarder {
            endpoint,
            cached: Mutex::new(None),
            deadline,
        }
    }

    /// Calls `req` on `target`'s Admin service, reusing the cached connection if it is to the
    /// same member at the same address and still open.
    pub(crate) async fn call<R: Rpc>(
        &self,
        target: &Target,
        req: &R,
    ) -> Result<R::Response, ForwardError> {
        let conn = self.connection(target).await?;
        let outcome = conn.call_with_timeout(req, self.deadline).await;
        if let Err(e) = &outcome
            && !matches!(e, TransportError::Remote(_))
        {
            self.forget(&conn).await;
        }
        outcome.map_err(ForwardError::Call)
    }

    async fn connection(&self, target: &Target) -> Result<Connection, ForwardError> {
        let mut cached = self.cached.lock().await;
        if let Some(c) = cached.as_ref()
            && c.target == *target
            && c.conn.closed_reason().is_none()
        {
            return Ok(c.conn.clone());
        }
        // The leader changed (or the connection died): the old one is of no further use.
        if let Some(old) = cached.take() {
            tokio::spawn(old.conn.close());
        }
        let not_sent = |reason: String| ForwardError::NotSent {
            id: target.id,
            addr: target.addr.clone(),
            reason,
        };
        let addr = resolve(&target.addr).await.map_err(not_sent)?;
        let conn = self
            .endpoint
            .connect(addr, PeerIdentity::coordinator(target.id), Service::Admin)
            .await
            .map_err(|e| not_sent(e.to_string()))?;
        *cached = Some(Cached {
            target: target.clone(),
            conn: conn.clone(),
        });
        Ok(conn)
    }

    async fn forget(&self, conn: &Connection) {
        let mut cached = self.cached.lock().await;
        if cached
            .as_ref()
            .is_some_and(|c| c.conn.remote_address() == conn.remote_address())
        {
            *cached = None;
        }
    }

    /// Calls `req` on `target`'s Admin service over a connection of its own (not the cached
    /// one to the leader), closed afterwards: for the rare calls a leader makes to every
    /// member (`pvefleet doctor`).
    pub(crate) async fn ask<R: Rpc>(
        &self,
        target: &Target,
        req: &R,
    ) -> Result<R::Response, ForwardError> {
        let not_sent = |reason: String| ForwardError::NotSent {
            id: target.id,
            addr: target.addr.clone(),
            reason,
        };
        let addr = resolve(&target.addr).await.map_err(not_sent)?;
        let conn = tokio::time::timeout(
            self.deadline,
            self.endpoint
                .connect(addr, PeerIdentity::coordinator(target.id), Service::Admin),
        )
        .await
        .map_err(|_| not_sent(format!("no connection within {:?}", self.deadline)))?
        .map_err(|e| not_sent(e.to_string()))?;
        let outcome = conn.call_with_timeout(req, self.deadline).await;
        conn.close().await;
        outcome.map_err(ForwardError::Call)
    }

    /// Closes the cached connection, letting calls in flight finish.
    pub(crate) async fn close(&self) {
        if let Some(old) = self.cached.lock().await.take() {
            old.conn.close().await;
        }
    }
}

/// `host:port` to a socket address (members record `ip:port`, names are resolved).
pub(crate) async fn resolve(addr: &str) -> Result<SocketAddr, String> {
    if let Ok(socket) = addr.parse() {
        return Ok(socket);
    }
    tokio::net::lookup_host(addr)
        .await
        .map_err(|e| format!("cannot resolve {addr}: {e}"))?
        .next()
        .ok_or_else(|| format!("cannot resolve {addr}: no address found"))
}
