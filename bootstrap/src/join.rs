//! Joining, the node's side, without the network: prepare the request (parse the token, pin
//! its CA hash, make a key and a CSR), check the coordinator's answer against what was pinned
//! and the key we hold, then write the node directory. Also the check of a renewed certificate.
//!
//! ```text
//! prepare_join(token) ─▶ PendingJoin { request, ca_sha256 } ── transport join client ──▶
//! ◀── JoinResponse ── PendingJoin::accept(response) ─▶ JoinedNode ─▶ JoinedNode::write(dir)
//! ```

use protocol::join::{JoinRequest, JoinResponse};

use crate::cert::{CertIdentity, cert_identity, certificate_sha256};
use crate::cluster_config::{ClusterConfig, MemberAddr};
use crate::error::BootstrapError;
use crate::init::refuse_existing;
use crate::key::NodeKey;
use crate::paths::{NodeDir, write_public, write_secret};
use crate::token::{JoinToken, TokenError};

/// Why joining (or accepting a renewed certificate) failed on the node's side.
#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    /// The token text is not a token.
    #[error(transparent)]
    Token(#[from] TokenError),
    /// Making the key or CSR, reading the answer's certificates, or writing files failed.
    #[error(transparent)]
    Bootstrap(#[from] BootstrapError),
    /// The CA the coordinator sent is not the one the token pins.
    #[error(
        "the coordinator sent a CA certificate with sha256:{got}, but the join token pins \
         sha256:{pinned}: this is not the cluster the token was made for; check the address, \
         and do not retry with this token elsewhere until you know why"
    )]
    CaMismatch {
        /// The hash in the token (hex).
        pinned: String,
        /// The hash of the CA received (hex).
        got: String,
    },
    /// The certificate sent back is not for the key this node made.
    #[error(
        "the certificate received is for another key than the one this node generated: \
         the coordinator answered another request; retry the join"
    )]
    WrongKey,
    /// The certificate sent back names another identity than the answer (or the old
    /// certificate) says.
    #[error("the certificate received is for {got}, expected {expected}")]
    WrongIdentity {
        /// What was expected, e.g. "agent-7".
        expected: String,
        /// What the certificate says.
        got: String,
    },
}

/// A join in progress: the request to send and what to check the answer against. `Debug`
/// hides the token secret and the key.
#[derive(Debug)]
pub struct PendingJoin {
    token: JoinToken,
    key: NodeKey,
    request: JoinRequest,
}

/// Starts a join with `token_text`; `addr` is where this node listens, if others must dial it.
pub fn prepare_join(token_text: &str, addr: Option<String>) -> Result<PendingJoin, JoinError> {
    let token = JoinToken::parse(token_text)?;
    let key = NodeKey::generate()?;
    let request = JoinRequest {
        token: token.to_string(),
        csr_pem: key.csr_pem()?,
        addr,
    };
    Ok(PendingJoin {
        token,
        key,
        request,
    })
}

impl PendingJoin {
    /// The request to send on the join service.
    pub fn request(&self) -> &JoinRequest {
        &self.request
    }

    /// The CA hash to pin when connecting (`transport`'s join client).
    pub fn ca_sha256(&self) -> [u8; 32] {
        self.token.ca_sha256()
    }

    /// Checks the coordinator's answer: the CA must be the pinned one, the certificate must be
    /// for our key and for the node id the answer names.
    pub fn accept(self, response: JoinResponse) -> Result<JoinedNode, JoinError> {
        let got = certificate_sha256(&response.ca_pem)?;
        if got != self.token.ca_sha256() {
            return Err(JoinError::CaMismatch {
                pinned: hex::encode(self.token.ca_sha256()),
                got: hex::encode(got),
            });
        }
        if !self.key.matches_certificate(&response.cert_pem)? {
            return Err(JoinError::WrongKey);
        }
        let identity = cert_identity(&response.cert_pem)?;
        if identity.node_id != response.node_id {
            return Err(JoinError::WrongIdentity {
                expected: format!("node {}", response.node_id),
                got: format!("{}-{}", identity.role, identity.node_id),
            });
        }
        let config = ClusterConfig {
            cluster_id: response.cluster_id,
            node_id: identity.node_id,
            role: identity.role,
            members: response
                .members
                .into_iter()
                .map(|(node_id, addr)| MemberAddr { node_id, addr })
                .collect(),
        };
        Ok(JoinedNode {
            identity,
            key: self.key,
            cert_pem: response.cert_pem,
            ca_pem: response.ca_pem,
            config,
        })
    }
}

/// A node admitted to the cluster, ready to be written to its directory.
#[derive(Debug)]
pub struct JoinedNode {
    /// Who the cluster says this node is.
    pub identity: CertIdentity,
    /// The node's key.
    pub key: NodeKey,
    /// The node's certificate (PEM).
    pub cert_pem: String,
    /// The cluster CA (PEM).
    pub ca_pem: String,
    /// What goes into `cluster.toml`.
    pub config: ClusterConfig,
}

impl JoinedNode {
    /// Writes `node.key` (0600), `node.pem`, `ca.pem` and, last, `cluster.toml`. Refuses a
    /// directory that already holds a node.
    pub fn write(&self, dir: &NodeDir) -> Result<(), BootstrapError> {
        refuse_existing(dir)?;
        dir.create()?;
        write_secret(&dir.node_key(), self.key.private_key_pem())?;
        write_public(&dir.node_cert(), &self.cert_pem)?;
        write_public(&dir.ca_cert(), &self.ca_pem)?;
        dir.write_cluster_config(&self.config)
    }
}

/// Checks a renewed certificate before it replaces `current`: same role and node id, and for
/// `key` (the key whose CSR was sent). Answers the new certificate's identity.
pub fn check_renewed(
    key: &NodeKey,
    current: &CertIdentity,
    new_cert_pem: &str,
) -> Result<CertIdentity, JoinError> {
    if !key.matches_certificate(new_cert_pem)? {
        return Err(JoinError::WrongKey);
    }
    let new = cert_identity(new_cert_pem)?;
    if (new.role, new.node_id) != (current.role, current.node_id) {
        return Err(JoinError::WrongIdentity {
            expected: format!("{}-{}", current.role, current.node_id),
            got: format!("{}-{}", new.role, new.node_id),
        });
    }
    Ok(new)
}

#[cfg(test)]
#[path = "join_tests.rs"]
mod tests;
