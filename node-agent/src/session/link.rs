//! The agent's link to the coordinators: one cached Agent-service connection to the member it
//! believes leads, dialed with the agent's certificate and checked to be that coordinator.
//! A follower's `NotLeader` hint moves the link to the leader; any other failure drops the
//! connection and moves on to the next member (the caller pauses with its back-off).

use std::net::SocketAddr;
use std::time::Duration;

use protocol::agent::{Heartbeat, HeartbeatAck};
use transport::{Connection, Endpoint, PeerIdentity, RemoteCode, Service, TransportError};

use super::targets::{Target, Targets};

/// Why a beat got no ack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Miss {
    /// A follower named the leader: beat it right away.
    Redirected {
        /// The follower that answered.
        from: Target,
        /// The leader it named.
        to: Target,
    },
    /// Nothing usable: pause, then try the next member.
    Failed(String),
}

/// The connection and the member choice.
pub(crate) struct Link {
    endpoint: Endpoint,
    targets: Targets,
    open: Option<(Target, Connection)>,
}

impl Link {
    /// A link dialing from `endpoint` (a client endpoint with the agent certificate).
    pub(crate) fn new(endpoint: Endpoint, members: Vec<Target>) -> Link {
        Link {
            endpoint,
            targets: Targets::new(members),
            open: None,
        }
    }

    /// Makes sure a live connection exists; answers whether it was just dialed (the first
    /// beat on a new connection carries the inventory).
    pub(crate) async fn connect(&mut self) -> Result<bool, Miss> {
        if let Some((_, conn)) = &self.open
            && conn.closed_reason().is_none()
        {
            return Ok(false);
        }
        self.drop_connection().await;
        let Some(target) = self.targets.current() else {
            return Err(Miss::Failed(
                "no coordinator address is known: cluster.toml lists no members".into(),
            ));
        };
        let dialed = match resolve(&target.addr).await {
            Ok(addr) => self
                .endpoint
                .connect(addr, PeerIdentity::coordinator(target.id), Service::Agent)
                .await
                .map_err(|e| e.to_string()),
            Err(e) => Err(e),
        };
        match dialed {
            Ok(conn) => {
                tracing::debug!(%target, "connected");
                self.open = Some((target, conn));
                Ok(true)
            }
            Err(reason) => {
                self.targets.failed();
                Err(Miss::Failed(format!("{target}: {reason}")))
            }
        }
    }

    /// Sends one beat on the connection made by [`Link::connect`].
    pub(crate) async fn beat(
        &mut self,
        hb: &Heartbeat,
        deadline: Duration,
    ) -> Result<(Target, HeartbeatAck), Miss> {
        let Some((target, conn)) = self.open.clone() else {
            return Err(Miss::Failed("not connected".into()));
        };
        match conn.call_with_timeout(hb, deadline).await {
            Ok(ack) => Ok((target, ack)),
            Err(TransportError::Remote(e)) => {
                self.drop_connection().await;
                match e.code {
                    RemoteCode::NotLeader {
                        leader: Some((id, addr)),
                    } if id != target.id || addr != target.addr => {
                        let leader = Target { id, addr };
                        self.targets.follow(leader.clone());
                        Err(Miss::Redirected {
                            from: target,
                            to: leader,
                        })
                    }
                    _ => {
                        self.targets.failed();
                        Err(Miss::Failed(format!("{target}: {e}")))
                    }
                }
            }
            Err(e) => {
                self.drop_connection().await;
                self.targets.failed();
                Err(Miss::Failed(format!("{target}: {e}")))
            }
        }
    }

    /// Closes the connection (nothing is in flight when the session calls this).
    pub(crate) async fn drop_connection(&mut self) {
        if let Some((_, conn)) = self.open.take() {
            conn.close().await;
        }
    }
}

/// `host:port` to a socket address (the first one DNS gives).
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
