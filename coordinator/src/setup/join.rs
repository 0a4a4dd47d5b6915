//! `pvefleet-coordinator join --token-file FILE ADDR` (the binary reads the token): a node without a certificate asks the cluster to
//! admit it. The key is made here and only a CSR leaves; the server is trusted through the CA
//! hash pinned in the token; a follower's `NotLeader` names the leader, which is followed.
//! Then the node's files are written (a coordinator also receives the CA key) and its stage is
//! `pending`: its first `run` asks the leader to make it a voter.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bootstrap::{BootstrapError, MemberAddr, NodeDir, paths};
use protocol::Role;
use protocol::join::JoinResponse;
use serde::Serialize;
use transport::{Endpoint, RemoteCode, TransportConfig, TransportError};

use crate::config::{MembershipStage, NodeSettings, check_dialable};
use crate::error::CoordinatorError;
use crate::forward::resolve;

/// How long `join` keeps trying (no leader yet, elections, leader hints).
const JOIN_WAIT: Duration = Duration::from_secs(60);
const RETRY_PAUSE: Duration = Duration::from_millis(500);

/// What `join` needs. `Debug` hides the token.
#[derive(Clone, PartialEq, Eq)]
pub struct JoinOptions {
    /// The join token text.
    pub token: String,
    /// A member's QUIC address to ask first.
    pub via: SocketAddr,
    /// The new node's data directory (must not hold a node).
    pub data_dir: PathBuf,
    /// Its QUIC address, recorded for the others.
    pub listen: SocketAddr,
}

impl std::fmt::Debug for JoinOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A logged option set must not let its reader join the cluster.
        f.debug_struct("JoinOptions")
            .field("token", &"<redacted>")
            .field("via", &self.via)
            .field("data_dir", &self.data_dir)
            .field("listen", &self.listen)
            .finish()
    }
}

/// What `join` made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JoinReport {
    /// The id the cluster assigned.
    pub node_id: u64,
    /// The role the token granted.
    pub role: Role,
    /// The cluster's id.
    pub cluster_id: String,
    /// The data directory.
    pub data_dir: PathBuf,
}

/// Joins the cluster through `opts.via` and writes the node directory.
pub async fn join_cluster(opts: &JoinOptions) -> Result<JoinReport, CoordinatorError> {
    check_dialable("--listen", opts.listen)?;
    let node_dir = NodeDir::new(&opts.data_dir);
    // Refused before the token is spent.
    if let Some(found) = node_dir.existing_node_file() {
        return Err(CoordinatorError::write(
            BootstrapError::AlreadyInitialized {
                dir: opts.data_dir.clone(),
                found,
            },
        ));
    }
    let pending = bootstrap::prepare_join(&opts.token, Some(opts.listen.to_string()))?;
    let endpoint = Endpoint::join_client(pending.ca_sha256(), TransportConfig::default())
        .map_err(|e| unreachable_via(opts.via, &e))?;
    let response = ask(&endpoint, opts.via, &pending).await;
    endpoint.close(Duration::from_millis(200)).await;
    let response = response?;

    let ca_key = response.ca_key_pem.clone();
    let mut joined = pending.accept(response)?;
    let role = joined.identity.role;
    if role == Role::Coordinator {
        if ca_key.is_none() {
            return Err(CoordinatorError::JoinRefused {
                message: "the cluster admitted this node as a coordinator but sent no CA key; \
                          its coordinators run another version"
                    .to_string(),
            });
        }
        joined
            .config
            .members
            .retain(|m| m.node_id != joined.identity.node_id);
        joined.config.members.push(MemberAddr {
            node_id: joined.identity.node_id,
            addr: opts.listen.to_string(),
        });
    }
    joined.write(&node_dir).map_err(CoordinatorError::write)?;
    if let (Role::Coordinator, Some(key)) = (role, ca_key) {
        paths::write_secret(&node_dir.ca_key(), &key).map_err(CoordinatorError::write)?;
        NodeSettings {
            listen: opts.listen,
            http: None,
            membership: MembershipStage::Pending,
            admin_renewal_days: 0,
        }
        .store(&opts.data_dir)?;
    }
    Ok(JoinReport {
        node_id: joined.identity.node_id,
        role,
        cluster_id: joined.config.cluster_id.clone(),
        data_dir: opts.data_dir.clone(),
    })
}

fn unreachable_via(addr: SocketAddr, e: &TransportError) -> CoordinatorError {
    CoordinatorError::JoinUnreachable {
        addr: addr.to_string(),
        reason: e.to_string(),
    }
}

/// Sends the join request, following `NotLeader` hints and waiting out elections (bounded).
/// Only answers that prove nothing was done are retried: a request whose reply was lost may
/// have spent a token use, and is reported instead.
async fn ask(
    endpoint: &Endpoint,
    via: SocketAddr,
    pending: &bootstrap::PendingJoin,
) -> Result<JoinResponse, CoordinatorError> {
    let deadline = Instant::now() + JOIN_WAIT;
    let mut addr = via;
    let mut last;
    loop {
        match endpoint.connect_join(addr).await {
            Ok(conn) => {
                let answer = conn.call(pending.request()).await;
                conn.close().await;
                match answer {
                    Ok(response) => return Ok(response),
                    Err(TransportError::Remote(e)) => match e.code {
                        RemoteCode::NotLeader {
                            leader: Some((_, ref leader)),
                        } => {
                            last = e.to_string();
                            match resolve(leader).await {
                                Ok(a) => addr = a,
                                Err(why) => last = why,
                            }
                        }
                        RemoteCode::NotLeader { leader: None } | RemoteCode::Unavailable => {
                            last = e.to_string();
                        }
                        _ => return Err(CoordinatorError::JoinRefused { message: e.message }),
                    },
                    Err(e) => {
                        return Err(CoordinatorError::JoinUnreachable {
                            addr: addr.to_string(),
                            reason: format!(
                                "{e}; the token may have been used: check `pvefleet token ls` \
                                 before retrying"
                            ),
                        });
                    }
                }
            }
            Err(TransportError::PeerCertificate { reason, .. }) => {
                return Err(CoordinatorError::JoinRefused {
                    message: format!(
                        "the coordinator at {addr} is not of the cluster the join token was made \
                         for (its CA does not match the CA sha256 pinned in the token: {reason}); \
                         check the address, or use a token created on that cluster"
                    ),
                });
            }
            Err(e) => last = e.to_string(),
        }
        if Instant::now() >= deadline {
            return Err(CoordinatorError::JoinUnreachable {
                addr: addr.to_string(),
                reason: last,
            });
        }
        tokio::time::sleep(RETRY_PAUSE).await;
    }
}
