//! Shared helpers of the edge tests: a simulator served over HTTPS on 127.0.0.1 port 0, a
//! reqwest client trusting its certificate, and a raw TLS client that shows the status line.

#![allow(dead_code, unreachable_pub)]

pub mod clusters;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use pve_sim::config::TokenConfig;
use pve_sim::server::{CertSource, Server, ServerConfig};
use pve_sim::{Sim, SimConfig};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

/// The token of the default configuration.
pub const TOKEN: &str = "root@pam!fleet=3f8a4c1e-5b2d-4e6f-9a7b-1c2d3e4f5a6b";
/// A read-only token added by [`config`].
pub const RO_TOKEN: &str = "audit@pve!ro=0b8e6b9e-7a7c-4d33-9d3b-0d2a3c4e5f60";

/// The fast default cluster plus a read-only token.
pub fn config() -> SimConfig {
    let mut c = SimConfig::fast();
    c.tokens.push(TokenConfig {
        userid: "audit@pve".into(),
        tokenid: "ro".into(),
        secret: "0b8e6b9e-7a7c-4d33-9d3b-0d2a3c4e5f60".into(),
        read_only: true,
        withheld: vec![],
    });
    c
}

/// One listener of a simulator.
pub struct Served {
    pub sim: Sim,
    pub addr: SocketAddr,
    pub ca_pem: String,
    pub shutdown: CancellationToken,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl Served {
    /// `https://127.0.0.1:PORT/api2/json<path>`.
    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}/api2/json{path}", self.addr.port())
    }

    /// A client trusting this listener.
    pub fn client(&self) -> reqwest::Client {
        reqwest::Client::builder()
            .tls_backend_preconfigured(client_tls(&self.ca_pem))
            .timeout(Duration::from_secs(20))
            .build()
            .unwrap()
    }

    /// Send `request` (a full HTTP/1.1 request head and body) over TLS and return the whole
    /// answer as text.
    pub async fn raw(&self, request: &str) -> String {
        let connector = tokio_rustls::TlsConnector::from(Arc::new(client_tls(&self.ca_pem)));
        let tcp = tokio::net::TcpStream::connect(self.addr).await.unwrap();
        let name = ServerName::try_from("localhost").unwrap();
        let mut tls = connector.connect(name, tcp).await.unwrap();
        tls.write_all(request.as_bytes()).await.unwrap();
        let mut out = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(20), tls.read_to_end(&mut out)).await;
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// rustls client configuration trusting `ca_pem` (ring provider).
pub fn client_tls(ca_pem: &str) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth()
}

/// Serve `sim` as `node` on 127.0.0.1:0.
pub async fn serve_node(sim: &Sim, node: &str) -> Served {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = ServerConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        node: node.into(),
        cert: CertSource::SelfSigned { dir: None },
    };
    let bound = Server::new(sim.clone(), config).bind().await.unwrap();
    let addr = bound.local_addr();
    let ca_pem = bound.ca_pem().to_string();
    let shutdown = CancellationToken::new();
    tokio::spawn(bound.run(shutdown.clone()));
    Served {
        sim: sim.clone(),
        addr,
        ca_pem,
        shutdown,
    }
}

/// A fresh simulator served as `pve1`.
pub async fn serve() -> Served {
    let sim = Sim::new(config()).unwrap();
    serve_node(&sim, "pve1").await
}

/// `AA:BB:...` SHA-256 fingerprint of the first certificate of a PEM text.
pub fn fingerprint_of_pem(pem: &str) -> String {
    use sha2::Digest;
    let der = CertificateDer::pem_slice_iter(pem.as_bytes())
        .next()
        .unwrap()
        .unwrap();
    let digest = sha2::Sha256::digest(der.as_ref());
    digest
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// The status line of a raw answer.
pub fn status_line(raw: &str) -> &str {
    raw.lines().next().unwrap_or("")
}

/// The body of a raw answer.
pub fn body_of(raw: &str) -> &str {
    raw.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("")
}

/// Form bodies (reqwest's `form` feature is not enabled in the workspace).
pub trait FormBody {
    /// Send `pairs` as `application/x-www-form-urlencoded`.
    fn form_body(self, pairs: &[(&str, &str)]) -> Self;
}

impl FormBody for reqwest::RequestBuilder {
    fn form_body(self, pairs: &[(&str, &str)]) -> Self {
        let mut s = form_urlencoded::Serializer::new(String::new());
        for (k, v) in pairs {
            s.append_pair(k, v);
        }
        self.header("Content-Type", "application/x-www-form-urlencoded")
            .body(s.finish())
    }
}

/// `Authorization` header value of a token.
pub fn token_header(token: &str) -> String {
    format!("PVEAPIToken={token}")
}
