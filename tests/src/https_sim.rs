//! An in-process simulator served over HTTPS on loopback, with the files a real client needs
//! (CA certificate, 0600 token and password files), and `pve` clients for it over each
//! backend: API token, root ticket, pinned fingerprint, and `pvesh` through the shim.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use pve::Client;
use pve::https::{HttpsAuth, HttpsBackend, HttpsConfig, TlsVerify};
use pve::pvesh::{PveshBackend, PveshConfig};
use pve_sim::server::{BoundServer, CertSource, Server, ServerConfig};
use pve_sim::{Sim, SimConfig};
use tokio_util::sync::CancellationToken;

use crate::test_lab::install_crypto;

/// One simulator with one HTTPS listener per node.
pub struct HttpsSim {
    /// The simulator (for faults and inspection).
    pub sim: Sim,
    /// `(node, address)` of each listener.
    pub listeners: Vec<(String, std::net::SocketAddr)>,
    /// The self-signed certificate the listeners share (PEM file).
    pub ca_file: PathBuf,
    /// Its SHA-256 fingerprint (`AA:BB:..`).
    pub fingerprint: String,
    /// `root@pam!fleet=SECRET`, mode 0600.
    pub token_file: PathBuf,
    /// The root password, mode 0600.
    pub password_file: PathBuf,
    shutdown: CancellationToken,
    dir: tempfile::TempDir,
}

fn write_secret(path: &Path, content: &str) {
    std::fs::write(path, content).expect("write secret file");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).expect("chmod 600");
}

impl HttpsSim {
    /// Serve `config` on 127.0.0.1 (one port per node).
    pub async fn start(config: SimConfig) -> Self {
        install_crypto();
        let dir = tempfile::tempdir().expect("temp dir");
        let sim = Sim::new(config).expect("simulator config is valid");
        let shutdown = CancellationToken::new();
        let mut listeners = Vec::new();
        let mut ca_file = None;
        let mut fingerprint = String::new();
        let mut cert_source = CertSource::SelfSigned {
            dir: Some(dir.path().to_path_buf()),
        };
        for node in sim.node_names() {
            let bound: BoundServer = Server::new(
                sim.clone(),
                ServerConfig {
                    listen: "127.0.0.1:0".parse().expect("addr"),
                    node: node.clone(),
                    cert: cert_source.clone(),
                },
            )
            .bind()
            .await
            .expect("bind loopback");
            if ca_file.is_none() {
                let path = bound
                    .cert_path()
                    .map(Path::to_path_buf)
                    .expect("cert written");
                fingerprint = bound.fingerprint_sha256().to_string();
                // Every further listener presents the same certificate, as a PVE cluster's
                // nodes present certificates of one cluster CA.
                cert_source = CertSource::Identity(bound.identity().clone());
                ca_file = Some(path);
            }
            listeners.push((node, bound.local_addr()));
            let token = shutdown.clone();
            tokio::spawn(async move {
                let _ = bound.run(token).await;
            });
        }
        let token = sim
            .config()
            .tokens
            .first()
            .cloned()
            .expect("a token is configured");
        let token_file = dir.path().join("token");
        write_secret(
            &token_file,
            &format!("{}!{}={}\n", token.userid, token.tokenid, token.secret),
        );
        let password_file = dir.path().join("root-password");
        write_secret(&password_file, &format!("{}\n", sim.config().root_password));
        Self {
            sim,
            listeners,
            ca_file: ca_file.expect("at least one node"),
            fingerprint,
            token_file,
            password_file,
            shutdown,
            dir,
        }
    }

    /// Address of `node`'s listener.
    pub fn addr(&self, node: &str) -> std::net::SocketAddr {
        self.listeners
            .iter()
            .find(|(n, _)| n == node)
            .map(|(_, a)| *a)
            .expect("node has a listener")
    }

    /// A scratch directory that lives as long as the simulator.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// HTTPS config for `node` with `auth` and `tls`.
    pub fn https_config(&self, node: &str, auth: HttpsAuth, tls: TlsVerify) -> HttpsConfig {
        let addr = self.addr(node);
        let mut c = HttpsConfig::new(addr.ip().to_string(), auth, tls);
        c.port = addr.port();
        c.timeout = Duration::from_secs(20);
        c
    }

    /// A client talking to `node` with the API token, verifying against the CA file.
    pub fn token_client(&self, node: &str) -> Client {
        let cfg = self.https_config(
            node,
            HttpsAuth::Token {
                token_file: self.token_file.clone(),
            },
            TlsVerify::CaFile(self.ca_file.clone()),
        );
        Client::new(HttpsBackend::new(cfg).expect("https backend"))
    }

    /// A client talking to `node` as `root@pam` with a ticket, verifying a pinned fingerprint.
    pub fn ticket_client(&self, node: &str) -> Client {
        let cfg = self.https_config(
            node,
            HttpsAuth::Ticket {
                username: "root@pam".into(),
                password_file: self.password_file.clone(),
            },
            TlsVerify::PinnedSha256(self.fingerprint.clone()),
        );
        Client::new(HttpsBackend::new(cfg).expect("https backend"))
    }

    /// A client using the `pvesh` backend with the simulator's `pvesh-sim` shim on `node`.
    pub fn pvesh_client(&self, node: &str) -> Client {
        let addr = self.addr(node);
        let cfg = PveshConfig {
            program: crate::test_lab::workspace_binary("pvesh-sim"),
            env: vec![
                ("PVESIM_URL".into(), format!("https://{addr}")),
                ("PVESIM_CA".into(), self.ca_file.display().to_string()),
                (
                    "PVESIM_PASSWORD_FILE".into(),
                    self.password_file.display().to_string(),
                ),
            ],
            timeout: Duration::from_secs(120),
        };
        Client::new(PveshBackend::new(cfg))
    }
}

impl Drop for HttpsSim {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}
