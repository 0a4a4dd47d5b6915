//! `GET /nodes/{node}/certificates/info`: the node's API certificates, whose SHA-256
//! fingerprint a remote migration's source pins.

use serde::Deserialize;

use crate::client::Client;
use crate::error::PveError;
use crate::props::check_node;
use crate::request::{ApiRequest, Method};

/// One certificate of a node.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CertificateInfo {
    /// `pve-ssl.pem`, `pveproxy-ssl.pem` (a custom one, served instead when present), ...
    #[serde(default)]
    pub filename: Option<String>,
    /// SHA-256 fingerprint, `AA:BB:...`.
    #[serde(default)]
    pub fingerprint: Option<String>,
}

impl CertificateInfo {
    /// The fingerprint of the certificate the node's API serves: `pveproxy-ssl.pem` when the
    /// node has one, else `pve-ssl.pem`.
    pub fn served(certs: &[CertificateInfo]) -> Option<&str> {
        ["pveproxy-ssl.pem", "pve-ssl.pem"].iter().find_map(|name| {
            certs
                .iter()
                .find(|c| c.filename.as_deref() == Some(name))
                .and_then(|c| c.fingerprint.as_deref())
        })
    }
}

/// `GET /nodes/{node}/certificates/info`.
pub fn certificates_info_request(node: &str) -> Result<ApiRequest, PveError> {
    check_node("node", node)?;
    Ok(ApiRequest::new(
        Method::Get,
        format!("/nodes/{node}/certificates/info"),
    ))
}

impl Client {
    /// The node's certificates.
    pub async fn certificates_info(&self, node: &str) -> Result<Vec<CertificateInfo>, PveError> {
        self.fetch(&certificates_info_request(node)?).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_custom_certificate_is_the_one_served() {
        let c = |f: &str, fp: &str| CertificateInfo {
            filename: Some(f.into()),
            fingerprint: Some(fp.into()),
        };
        assert_eq!(
            CertificateInfo::served(&[c("pve-root-ca.pem", "R"), c("pve-ssl.pem", "S")]),
            Some("S")
        );
        assert_eq!(
            CertificateInfo::served(&[c("pve-ssl.pem", "S"), c("pveproxy-ssl.pem", "P")]),
            Some("P")
        );
        assert_eq!(CertificateInfo::served(&[c("pve-root-ca.pem", "R")]), None);
    }
}
