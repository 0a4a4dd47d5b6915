//! Joining a cluster and renewing a certificate: the requests a node sends with a join token
//! (before it has a certificate) or with its current certificate (to get a fresh one).
//!
//! The node generates its key locally and sends only a certificate signing request (CSR); the
//! cluster CA ignores every name in the CSR and issues a certificate carrying the identity the
//! cluster assigned, so a CSR proves key possession and nothing else.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::identity::NodeId;
use crate::rpc::Rpc;

/// A node without a certificate asks a coordinator to admit it (ALPN `pvefleet-join/1`).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JoinRequest {
    /// The full join token text (`pvf1.<ca-sha256-hex>.<id>.<secret>`), as printed by
    /// `pvefleet token create`.
    pub token: String,
    /// PEM of a PKCS#10 certificate signing request made with the node's new key.
    pub csr_pem: String,
    /// Where the node can be reached (`host:port`), for members other nodes must dial.
    pub addr: Option<String>,
}

impl fmt::Debug for JoinRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinRequest")
            .field("token", &RedactedToken(&self.token))
            .field("csr_pem", &format_args!("<{} bytes>", self.csr_pem.len()))
            .field("addr", &self.addr)
            .finish()
    }
}

/// Shows a token's public part (format, CA hash, id) and hides its secret, so a logged request
/// never lets a reader join the cluster.
struct RedactedToken<'a>(&'a str);

impl fmt::Debug for RedactedToken<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Only a token of the expected shape has a public prefix worth showing; anything else
        // could be a secret pasted in the wrong place.
        match self.0.rsplit_once('.') {
            Some((public, _secret)) if public.matches('.').count() == 2 => {
                write!(f, "\"{public}.<redacted>\"")
            }
            _ => f.write_str("\"<redacted>\""),
        }
    }
}

/// The coordinator's answer to an accepted [`JoinRequest`]. `Debug` hides the CA key.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JoinResponse {
    /// The id the cluster assigned to the new node.
    pub node_id: NodeId,
    /// The node's certificate (PEM), issued by the cluster CA for the token's role.
    pub cert_pem: String,
    /// The cluster CA certificate (PEM); its SHA-256 matches the hash pinned in the token.
    pub ca_pem: String,
    /// The cluster's id.
    pub cluster_id: String,
    /// The coordinator members, as `(node id, host:port)`.
    pub members: Vec<(NodeId, String)>,
    /// The cluster CA's private key (PEM), only for a node joining as a coordinator: every
    /// coordinator can then issue certificates to the nodes that join through it. Secret: the
    /// receiver writes it with mode 0600 and never logs it.
    pub ca_key_pem: Option<String>,
}

impl fmt::Debug for JoinResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinResponse")
            .field("node_id", &self.node_id)
            .field("cert_pem", &format_args!("<{} bytes>", self.cert_pem.len()))
            .field("ca_pem", &format_args!("<{} bytes>", self.ca_pem.len()))
            .field("cluster_id", &self.cluster_id)
            .field("members", &self.members)
            .field(
                "ca_key_pem",
                &self.ca_key_pem.as_ref().map(|_| format_args!("<redacted>")),
            )
            .finish()
    }
}

impl Rpc for JoinRequest {
    const METHOD: &'static str = "join";
    type Response = JoinResponse;
}

/// An authenticated node asks for a fresh certificate for its identity (the one in the
/// certificate it connected with), typically past two thirds of its current certificate's life.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenewRequest {
    /// PEM of a certificate signing request; a new key is allowed (and encouraged).
    pub csr_pem: String,
}

/// The renewed certificate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenewResponse {
    /// The new certificate (PEM), same role and node id as the caller's.
    pub cert_pem: String,
}

impl Rpc for RenewRequest {
    const METHOD: &'static str = "renew";
    type Response = RenewResponse;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(token: &str) -> JoinRequest {
        JoinRequest {
            token: token.to_string(),
            csr_pem: "-----BEGIN CERTIFICATE REQUEST-----".to_string(),
            addr: Some("10.0.0.5:7400".to_string()),
        }
    }

    #[test]
    fn join_request_debug_shows_token_id_but_never_its_secret() {
        let hash = "ab".repeat(32);
        let shown = format!(
            "{:?}",
            request(&format!("pvf1.{hash}.abc123.s3cr3tvalue0000000"))
        );
        assert!(
            shown.contains(&format!("pvf1.{hash}.abc123.<redacted>")),
            "{shown}"
        );
        assert!(!shown.contains("s3cr3tvalue"), "{shown}");
    }

    #[test]
    fn join_request_debug_hides_a_token_of_unexpected_shape_entirely() {
        for token in ["justasecret", "a.b", "a.b.c.d.e"] {
            let shown = format!("{:?}", request(token));
            assert!(shown.contains("\"<redacted>\""), "{shown}");
            assert!(!shown.contains(token), "{shown}");
        }
    }

    #[test]
    fn join_response_debug_never_shows_the_ca_key() {
        let resp = JoinResponse {
            node_id: 2,
            cert_pem: "cert".into(),
            ca_pem: "ca".into(),
            cluster_id: "lab".into(),
            members: vec![(1, "10.0.0.1:7400".into())],
            ca_key_pem: Some("-----BEGIN PRIVATE KEY-----s3cr3tkey".into()),
        };
        let shown = format!("{resp:?}");
        assert!(!shown.contains("s3cr3tkey"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
        assert!(shown.contains("10.0.0.1:7400"), "{shown}");
    }

    #[test]
    fn join_and_renew_round_trip_through_json() {
        let req = request("pvf1.x.y.z");
        let back: JoinRequest =
            serde_json::from_str(&serde_json::to_string(&req).unwrap()).unwrap();
        assert_eq!(back, req);
        let resp = JoinResponse {
            node_id: 7,
            cert_pem: "c".into(),
            ca_pem: "ca".into(),
            cluster_id: "lab".into(),
            members: vec![(1, "10.0.0.1:7400".into())],
            ca_key_pem: Some("-----BEGIN PRIVATE KEY-----".into()),
        };
        let back: JoinResponse =
            serde_json::from_str(&serde_json::to_string(&resp).unwrap()).unwrap();
        assert_eq!(back, resp);
        assert_eq!(JoinRequest::METHOD, "join");
        assert_eq!(RenewRequest::METHOD, "renew");
    }
}
