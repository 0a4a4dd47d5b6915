//! Building the `pve::Client` the config asks for: the local HTTPS API with a token file, or
//! `pvesh` as root.

use std::time::Duration;

use crate::config::{HttpsSettings, PveConfig, PveshSettings};
use pve::https::{HttpsAuth, HttpsBackend, HttpsConfig, TlsVerify};
use pve::pvesh::{PveshBackend, PveshConfig};

/// The PVE client of this host, with what the agent reports about it.
#[derive(Debug, Clone)]
pub struct PveBackend {
    /// The client (cheap to clone; shared by inventory and the executor).
    pub client: pve::Client,
    /// The PVE node name the agent acts on.
    pub node: String,
    /// The backend's name (`https`, `pvesh`).
    pub kind: &'static str,
}

/// Why the configured backend could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The HTTPS backend refused its settings (unreadable or insecure token file, CA file...).
    #[error("PVE HTTPS backend: {0}")]
    Https(pve::PveError),
    /// The URL in the settings is unusable.
    #[error("pve.url: {0}")]
    Url(String),
}

/// Builds the client for `config` acting on PVE node `node` (the host name).
pub fn connect(config: &PveConfig, node: &str) -> Result<PveBackend, BackendError> {
    match config {
        PveConfig::Https(https) => connect_https(https, node),
        PveConfig::Pvesh(pvesh) => Ok(connect_pvesh(pvesh, node)),
    }
}

fn connect_https(settings: &HttpsSettings, node: &str) -> Result<PveBackend, BackendError> {
    let (host, port) = settings.host_port().map_err(BackendError::Url)?;
    let tls = match (&settings.ca_file, &settings.fingerprint) {
        (Some(ca), _) => TlsVerify::CaFile(ca.clone()),
        (None, Some(fp)) => TlsVerify::PinnedSha256(fp.clone()),
        (None, None) => TlsVerify::InsecureSkipVerify,
    };
    let auth = HttpsAuth::Token {
        token_file: settings.token_file.clone(),
    };
    let mut https = HttpsConfig::new(host, auth, tls);
    https.port = port;
    let backend = HttpsBackend::new(https).map_err(BackendError::Https)?;
    Ok(PveBackend {
        client: pve::Client::new(backend),
        node: node.to_string(),
        kind: "https",
    })
}

fn connect_pvesh(settings: &PveshSettings, node: &str) -> PveBackend {
    let backend = PveshBackend::new(PveshConfig {
        program: settings.program.clone(),
        env: Vec::new(),
        timeout: Duration::from_secs(settings.timeout_secs),
    });
    PveBackend {
        client: pve::Client::new(backend),
        node: node.to_string(),
        kind: "pvesh",
    }
}
