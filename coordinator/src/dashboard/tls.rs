//! The dashboard's TLS: the member's own certificate of the cluster CA (a browser trusts it once
//! the operator imports the CA, or after an exception), or a certificate and key the operator
//! supplies in PEM files (one their browsers already trust). No client certificate is asked:
//! browsers log in with a one-time link instead.

use std::path::Path;
use std::sync::Arc;

use rustls::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Why the dashboard's TLS cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum DashboardTlsError {
    /// A PEM file could not be read.
    #[error("cannot read the dashboard's {what} {path}: {source}")]
    Read {
        /// `certificate` or `key`.
        what: &'static str,
        /// The file.
        path: std::path::PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The PEM holds no certificate or no private key.
    #[error("the dashboard's {what} is not usable: {reason}")]
    Pem {
        /// `certificate` or `key`.
        what: &'static str,
        /// What is wrong and what is expected.
        reason: String,
    },
    /// rustls refused the pair.
    #[error("the dashboard's certificate and key do not go together: {0}")]
    Config(#[from] rustls::Error),
}

/// A server configuration from a PEM certificate chain and a PEM private key.
pub(crate) fn server_config(
    chain_pem: &str,
    key_pem: &str,
) -> Result<Arc<ServerConfig>, DashboardTlsError> {
    let chain: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut chain_pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| DashboardTlsError::Pem {
            what: "certificate",
            reason: e.to_string(),
        })?;
    if chain.is_empty() {
        return Err(DashboardTlsError::Pem {
            what: "certificate",
            reason: "no CERTIFICATE block in the PEM".into(),
        });
    }
    let key: PrivateKeyDer<'static> = rustls_pemfile::private_key(&mut key_pem.as_bytes())
        .map_err(|e| DashboardTlsError::Pem {
            what: "key",
            reason: e.to_string(),
        })?
        .ok_or_else(|| DashboardTlsError::Pem {
            what: "key",
            reason: "no PRIVATE KEY block in the PEM".into(),
        })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The PEM text of `path`.
pub(crate) fn read_pem(what: &'static str, path: &Path) -> Result<String, DashboardTlsError> {
    std::fs::read_to_string(path).map_err(|source| DashboardTlsError::Read {
        what,
        path: path.to_path_buf(),
        source,
    })
}
