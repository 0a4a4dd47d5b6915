//! Shared by the daemon tests: coordinator members in-process on loopback, made by the real
//! `init` and `join` and started with `CoordinatorNode`, an admin client with the certificate
//! `init` made, bounded waits, and a tiny HTTP GET for the metrics port.

#![allow(dead_code)] // each test file uses a different part
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use std::future::Future;
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::time::Duration;

use bootstrap::NodeDir;
use coordinator::config::{DEFAULT_RENEW_CHECK, RunConfig};
use coordinator::error::CoordinatorError;
use coordinator::node::{CoordinatorNode, ReadyLine};
use coordinator::setup::{InitOptions, JoinOptions, JoinReport, init_cluster, join_cluster};
use protocol::Role;
use protocol::admin::{ClusterStatus, ClusterStatusReply, TokenCreate};
use raft::types::Raft;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use transport::{
    Connection, Endpoint, PeerIdentity, Rpc, Service, TlsMaterial, TransportConfig, TransportError,
};

/// The longest any single wait lasts (a loaded 2-core machine; never a timing assertion).
pub(crate) const PATIENCE: Duration = Duration::from_secs(60);

/// Fails the test if `f` does not finish within [`PATIENCE`].
pub(crate) async fn bounded<F: Future>(what: &str, f: F) -> F::Output {
    match tokio::time::timeout(PATIENCE, f).await {
        Ok(out) => out,
        Err(_) => panic!("{what}: not done within {PATIENCE:?}"),
    }
}

/// Polls `check` until it answers `Some`, for at most [`PATIENCE`].
pub(crate) async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    bounded(what, async {
        loop {
            if let Some(v) = check().await {
                return v;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
}

/// A free loopback UDP port (bound, read, released): `--listen` is recorded, so it must be real.
pub(crate) fn free_port() -> SocketAddr {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.local_addr().unwrap()
}

/// Installs ring as the process's TLS provider (once per test binary is enough).
pub(crate) fn tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    // Logs only when asked for (RUST_LOG), into the test's captured output.
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
    }
}

/// One member: its directory and, while it runs, its task.
pub(crate) struct Member {
    pub(crate) id: u64,
    pub(crate) dir: PathBuf,
    pub(crate) listen: SocketAddr,
    pub(crate) http: Option<SocketAddr>,
    pub(crate) raft: Option<Raft>,
    /// How often it checks its certificate for renewal.
    pub(crate) renew_check: Duration,
    running: Option<(CancellationToken, JoinHandle<()>)>,
}

impl Member {
    /// Starts the member on its directory and waits until it is ready (membership settled).
    pub(crate) async fn start(&mut self, snapshot_logs: Option<u64>) -> ReadyLine {
        assert!(self.running.is_none(), "member {} already runs", self.id);
        let config = RunConfig {
            data_dir: self.dir.clone(),
            http: Some("127.0.0.1:0".parse().unwrap()),
            snapshot_logs,
            renew_check: self.renew_check,
            dashboard: None,
        };
        let node = bounded("start", CoordinatorNode::start(config))
            .await
            .unwrap();
        let ready = node.ready();
        self.raft = Some(node.raft().clone());
        let shutdown = CancellationToken::new();
        let task = tokio::spawn({
            let shutdown = shutdown.clone();
            async move { node.run(shutdown).await.unwrap() }
        });
        self.running = Some((shutdown, task));
        let line = bounded("ready", ready).await.expect("member became ready");
        self.id = line.node_id;
        self.http = Some(line.http.parse().unwrap());
        line
    }

    /// Graceful stop (as on SIGTERM); waits for it.
    pub(crate) async fn stop(&mut self) {
        if let Some((shutdown, task)) = self.running.take() {
            shutdown.cancel();
            bounded("stop", task).await.unwrap();
        }
        self.raft = None;
    }

    /// This member's own TLS material (its coordinator certificate).
    pub(crate) fn material(&self) -> TlsMaterial {
        NodeDir::new(&self.dir).load_node_material().unwrap()
    }

    /// The Raft node while it runs.
    pub(crate) fn raft(&self) -> &Raft {
        self.raft.as_ref().expect("member runs")
    }
}

/// A cluster under test: a founder made by `init`, members added with tokens.
pub(crate) struct Cluster {
    pub(crate) root: tempfile::TempDir,
    pub(crate) members: Vec<Member>,
    pub(crate) admin: Endpoint,
    pub(crate) snapshot_logs: Option<u64>,
}

impl Cluster {
    /// `init` and start the founder.
    pub(crate) async fn found(snapshot_logs: Option<u64>) -> Cluster {
        Cluster::found_with_admin_renewal(snapshot_logs, 0).await
    }

    /// `init --admin-renewal-days DAYS` and start the founder.
    pub(crate) async fn found_with_admin_renewal(snapshot_logs: Option<u64>, days: u32) -> Cluster {
        let mut cluster = Cluster::init_with(snapshot_logs, days);
        cluster.members[0].start(snapshot_logs).await;
        cluster
    }

    /// `init` the founder's directory without starting it (`members[0].start` does).
    pub(crate) fn init(snapshot_logs: Option<u64>) -> Cluster {
        Cluster::init_with(snapshot_logs, 0)
    }

    /// `init` (with `--admin-renewal-days admin_renewal_days`) without starting the founder.
    pub(crate) fn init_with(snapshot_logs: Option<u64>, admin_renewal_days: u32) -> Cluster {
        tls_provider();
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("m1");
        let listen = free_port();
        init_cluster(&InitOptions {
            data_dir: dir.clone(),
            listen,
            cluster_id: Some("daemon-test".into()),
            http: None,
            admin_renewal_days,
        })
        .unwrap();
        let admin_tls = NodeDir::new(&dir).load_admin_material().unwrap();
        let admin = Endpoint::client_on(
            "127.0.0.1:0".parse().unwrap(),
            &admin_tls,
            TransportConfig::default(),
        )
        .unwrap();
        let founder = Member {
            id: 1,
            dir,
            listen,
            http: None,
            raft: None,
            renew_check: DEFAULT_RENEW_CHECK,
            running: None,
        };
        Cluster {
            root,
            members: vec![founder],
            admin,
            snapshot_logs,
        }
    }

    /// The founder's data directory (holds the CA, the admin certificate...).
    pub(crate) fn founder_dir(&self) -> &Path {
        &self.members[0].dir
    }

    /// A client endpoint holding an agent certificate for host `host_id`, issued by the
    /// cluster CA (what `pvefleet-agent join` would have obtained).
    pub(crate) fn agent_endpoint(&self, host_id: u64) -> Endpoint {
        let ca = NodeDir::new(self.founder_dir()).load_ca().unwrap();
        let key = bootstrap::NodeKey::generate().unwrap();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let cert = ca
            .issue(
                &key.csr_pem().unwrap(),
                Role::Agent,
                host_id,
                Duration::from_secs(3600),
                now,
            )
            .unwrap();
        Endpoint::client_on(
            "127.0.0.1:0".parse().unwrap(),
            &TlsMaterial::new(ca.cert_pem(), cert, key.private_key_pem()),
            TransportConfig::default(),
        )
        .unwrap()
    }

    /// An admin connection to member `i`.
    pub(crate) async fn connect(&self, i: usize) -> Connection {
        let m = &self.members[i];
        self.admin
            .connect(m.listen, PeerIdentity::coordinator(m.id), Service::Admin)
            .await
            .unwrap()
    }

    /// Calls `req` on member `i` as the admin.
    pub(crate) async fn call<R: Rpc>(
        &self,
        i: usize,
        req: &R,
    ) -> Result<R::Response, TransportError> {
        let conn = self.connect(i).await;
        let out = conn.call_with_timeout(req, Duration::from_secs(30)).await;
        conn.close().await;
        out
    }

    /// A token for `role` with `uses`, created through member `i`.
    pub(crate) async fn token(
        &self,
        i: usize,
        role: Role,
        uses: Option<u32>,
        ttl: Option<u64>,
    ) -> String {
        let req = TokenCreate {
            role,
            ttl_secs: ttl,
            uses,
        };
        self.call(i, &req).await.unwrap().token
    }

    /// `join` a new node with `token` through member `via`, without starting it: its data
    /// directory, listen address, and the outcome.
    pub(crate) async fn join_dir(
        &self,
        token: &str,
        via: usize,
    ) -> (PathBuf, SocketAddr, Result<JoinReport, CoordinatorError>) {
        let n = self.members.len() + 1;
        let dir = self.root.path().join(format!("m{n}-{}", rand_suffix()));
        let listen = free_port();
        let outcome = join_cluster(&JoinOptions {
            token: token.to_string(),
            via: self.members[via].listen,
            data_dir: dir.clone(),
            listen,
        })
        .await;
        (dir, listen, outcome)
    }

    /// Adds a started coordinator member through member `via`; its index.
    pub(crate) async fn add_member(&mut self, via: usize) -> usize {
        let token = self.token(0, Role::Coordinator, Some(1), None).await;
        let (dir, listen, joined) = self.join_dir(&token, via).await;
        joined.unwrap();
        let mut m = Member {
            id: 0,
            dir,
            listen,
            http: None,
            raft: None,
            renew_check: DEFAULT_RENEW_CHECK,
            running: None,
        };
        m.start(self.snapshot_logs).await;
        self.members.push(m);
        self.members.len() - 1
    }

    /// The cluster status as member `i` answers it.
    pub(crate) async fn status(&self, i: usize) -> ClusterStatusReply {
        self.call(i, &ClusterStatus {}).await.unwrap()
    }

    /// Waits until member `i` reports `voters` voters with a leader among them; the status.
    pub(crate) async fn wait_voters(&self, i: usize, voters: usize) -> ClusterStatusReply {
        eventually("voters", || async {
            let s = self.call(i, &ClusterStatus {}).await.ok()?;
            let count = s
                .members
                .iter()
                .filter(|m| m.role == protocol::fleet::MemberRole::Voter)
                .count();
            (count == voters && s.leader.is_some()).then_some(s)
        })
        .await
    }

    /// Index of the current leader (waits for one).
    pub(crate) async fn leader(&self) -> usize {
        let s = eventually("a leader", || async {
            self.call(0, &ClusterStatus {})
                .await
                .ok()
                .filter(|s| s.leader.is_some())
        })
        .await;
        let id = s.leader.unwrap();
        self.members.iter().position(|m| m.id == id).unwrap()
    }

    /// Stops every member that runs.
    pub(crate) async fn stop_all(&mut self) {
        for m in &mut self.members {
            m.stop().await;
        }
    }
}

fn rand_suffix() -> u32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// `GET path` on a local HTTP port: the status code and the body.
pub(crate) async fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}
