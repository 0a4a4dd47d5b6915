//! Shared by the CLI tests: a cluster CA with admin and coordinator certificates (made by
//! `bootstrap::init` in a temporary directory), and stand-in coordinator members: transport
//! servers on loopback whose admin handlers each test writes, so the client's routing and the
//! commands' requests can be checked without a Raft cluster.

pub(crate) mod fixtures;

use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bootstrap::ca::DEFAULT_LEAF_VALIDITY;
use bootstrap::cli_config::{CliConfig, CoordinatorAddr};
use bootstrap::{NodeDir, NodeKey};
use protocol::Role;
use tokio_util::sync::CancellationToken;
use transport::{Endpoint, Router, Server, Service, TlsMaterial, TransportConfig};

/// The longest any test waits for anything.
pub(crate) const BOUND: Duration = Duration::from_secs(30);

/// Fails the test if `f` does not finish within [`BOUND`].
pub(crate) async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(BOUND, f)
        .await
        .expect("bounded wait expired")
}

/// A cluster's certificates in a temporary directory (node 1's directory, as `init` leaves it).
pub(crate) struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    /// A new cluster CA with coordinator 1 and admin 1.
    pub(crate) fn new() -> Pki {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let dir = tempfile::tempdir().unwrap();
        bootstrap::init(dir.path(), Some("cli-test".into()), 1, now_secs()).unwrap();
        Pki { dir }
    }

    /// The node directory `init` wrote (ca.pem, admin.pem, admin.key, ...).
    pub(crate) fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The admin client's material.
    pub(crate) fn admin(&self) -> TlsMaterial {
        NodeDir::new(self.dir()).load_admin_material().unwrap()
    }

    /// Coordinator `id`'s material, issued by the cluster CA.
    pub(crate) fn coordinator(&self, id: u64) -> TlsMaterial {
        let node = NodeDir::new(self.dir());
        if id == 1 {
            return node.load_node_material().unwrap();
        }
        let ca = node.load_ca().unwrap();
        let key = NodeKey::generate().unwrap();
        let cert = ca
            .issue(
                &key.csr_pem().unwrap(),
                Role::Coordinator,
                id,
                DEFAULT_LEAF_VALIDITY,
                now_secs(),
            )
            .unwrap();
        TlsMaterial::new(ca.cert_pem(), cert, key.private_key_pem())
    }

    /// Writes a CLI configuration for `members` into the node directory and returns its path.
    pub(crate) fn write_config(&self, members: &[&FakeMember]) -> PathBuf {
        let path = self.dir().join("pvefleet.toml");
        let coordinators = members.iter().map(|m| m.coordinator()).collect();
        CliConfig::for_node_dir(self.dir(), coordinators)
            .write(&path)
            .unwrap();
        path
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A stand-in coordinator: a transport server for the Admin service with the test's handlers.
pub(crate) struct FakeMember {
    /// Its node id (the one in its certificate).
    pub(crate) id: u64,
    /// Where it listens.
    pub(crate) addr: SocketAddr,
    shutdown: CancellationToken,
}

impl FakeMember {
    /// Serves `router` as coordinator `id` on 127.0.0.1, port 0.
    pub(crate) fn start(pki: &Pki, id: u64, router: Router) -> FakeMember {
        let bind: SocketAddr = (Ipv4Addr::LOCALHOST, 0).into();
        let endpoint = Endpoint::server(
            bind,
            &pki.coordinator(id),
            &[Service::Admin],
            TransportConfig::default(),
        )
        .unwrap();
        let addr = endpoint.local_addr().unwrap();
        let shutdown = CancellationToken::new();
        let server = Server::new(endpoint, router);
        tokio::spawn(server.run(shutdown.clone()));
        FakeMember { id, addr, shutdown }
    }

    /// How the CLI configuration names it.
    pub(crate) fn coordinator(&self) -> CoordinatorAddr {
        CoordinatorAddr {
            addr: self.addr.to_string(),
            id: self.id,
        }
    }
}

impl Drop for FakeMember {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// Runs `pvefleet --config <config> --timeout <timeout> ARGS` at the fixtures' clock
/// ([`fixtures::NOW`]); the result and what it printed.
pub(crate) async fn pvefleet_within(
    config: &Path,
    timeout: &str,
    args: &[&str],
) -> (Result<(), cli::exit::CliError>, String) {
    use clap::Parser;
    let argv = [
        "pvefleet",
        "--config",
        config.to_str().unwrap(),
        "--timeout",
        timeout,
    ]
    .into_iter()
    .chain(args.iter().copied());
    let cli = cli::Cli::try_parse_from(argv).unwrap();
    let mut out = Vec::new();
    let result = bounded(cli::run(&cli, &mut out, fixtures::NOW)).await;
    (result, String::from_utf8(out).unwrap())
}

/// [`pvefleet_within`] 20 seconds.
pub(crate) async fn pvefleet(
    config: &Path,
    args: &[&str],
) -> (Result<(), cli::exit::CliError>, String) {
    pvefleet_within(config, "20", args).await
}
