//! Shared by the integration tests: certificates (`pki`), test RPCs with a handler gate, and a
//! loopback server harness with bounded waits.

#![allow(dead_code)] // each test file uses a different part
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

pub(crate) mod pki;

use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use transport::{
    Caller, Endpoint, PeerIdentity, RemoteError, Router, Rpc, Server, Service, TlsMaterial,
    TransportConfig, TransportError,
};

/// The longest any test waits for anything.
pub(crate) const BOUND: Duration = Duration::from_secs(20);

/// Installs the ring provider as the process default (the crate never relies on it, but
/// anything else in a test might).
pub(crate) fn install_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// 127.0.0.1, port 0.
pub(crate) fn loopback() -> SocketAddr {
    (Ipv4Addr::LOCALHOST, 0).into()
}

/// Fails the test if `f` does not finish within `BOUND`.
pub(crate) async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(BOUND, f)
        .await
        .expect("bounded wait expired")
}

/// Polls `cond` until it holds, failing the test after `BOUND`.
pub(crate) async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let start = tokio::time::Instant::now();
    while !cond() {
        assert!(start.elapsed() < BOUND, "never happened: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Echoes its text and reports who called on which service.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Echo(pub(crate) String);

/// The answer to `Echo`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct EchoReply {
    pub(crate) text: String,
    pub(crate) caller: Option<PeerIdentity>,
    pub(crate) service: Service,
}

impl Rpc for Echo {
    const METHOD: &'static str = "test.echo";
    type Response = EchoReply;
}

/// Always refused with `NotLeader`, leader hint node 2.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct NotLeaderPlease;

impl Rpc for NotLeaderPlease {
    const METHOD: &'static str = "test.not_leader";
    type Response = ();
}

/// Waits at the gate, then answers its number.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Blocked(pub(crate) u32);

impl Rpc for Blocked {
    const METHOD: &'static str = "test.blocked";
    type Response = u32;
}

/// A method no server registers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Unregistered;

impl Rpc for Unregistered {
    const METHOD: &'static str = "test.unregistered";
    type Response = ();
}

/// Holds `Blocked` handlers until opened; counts how many are waiting.
pub(crate) struct Gate {
    entered: AtomicUsize,
    open: watch::Sender<bool>,
}

impl Gate {
    pub(crate) fn new() -> Arc<Gate> {
        Arc::new(Gate {
            entered: AtomicUsize::new(0),
            open: watch::Sender::new(false),
        })
    }

    /// Handlers that reached the gate so far.
    pub(crate) fn entered(&self) -> usize {
        self.entered.load(Ordering::SeqCst)
    }

    /// Lets every waiting and future handler through.
    pub(crate) fn open(&self) {
        self.open.send_replace(true);
    }

    async fn pass(&self) {
        let mut rx = self.open.subscribe();
        self.entered.fetch_add(1, Ordering::SeqCst);
        let _ = rx.wait_for(|open| *open).await;
    }
}

/// `Echo` on every service, `NotLeaderPlease` and `Blocked` on Raft and Agent.
pub(crate) fn test_router(gate: Arc<Gate>) -> Router {
    let mut router = Router::new();
    for service in Service::ALL {
        router.handle(service, |caller: Caller, Echo(text)| async move {
            Ok(EchoReply {
                text,
                caller: caller.peer,
                service: caller.service,
            })
        });
    }
    for service in [Service::Raft, Service::Agent] {
        router.handle(service, |_: Caller, _: NotLeaderPlease| async {
            Err::<(), _>(RemoteError::not_leader(Some((2, "10.0.0.2:7400".into()))))
        });
        let gate = Arc::clone(&gate);
        router.handle(service, move |_: Caller, Blocked(n)| {
            let gate = Arc::clone(&gate);
            async move {
                gate.pass().await;
                Ok(n)
            }
        });
    }
    router
}

/// Settings with short, test-friendly deadlines.
pub(crate) fn test_cfg() -> TransportConfig {
    TransportConfig {
        call_timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(5),
        ..TransportConfig::default()
    }
}

/// A server running on loopback.
pub(crate) struct Running {
    pub(crate) endpoint: Endpoint,
    pub(crate) addr: SocketAddr,
    pub(crate) gate: Arc<Gate>,
    pub(crate) shutdown: CancellationToken,
    pub(crate) task: JoinHandle<Result<(), TransportError>>,
}

impl Running {
    /// Stops the server and checks it ended cleanly.
    pub(crate) async fn stop(self) {
        self.shutdown.cancel();
        bounded(self.task).await.unwrap().unwrap();
    }
}

/// Starts a server for `services` with `material` and `cfg`.
pub(crate) fn start_server(
    material: &TlsMaterial,
    services: &[Service],
    cfg: TransportConfig,
) -> Running {
    install_provider();
    let endpoint = Endpoint::server(loopback(), material, services, cfg).unwrap();
    let addr = endpoint.local_addr().unwrap();
    let gate = Gate::new();
    let shutdown = CancellationToken::new();
    let server = Server::new(endpoint.clone(), test_router(Arc::clone(&gate)));
    let task = tokio::spawn(server.run(shutdown.clone()));
    Running {
        endpoint,
        addr,
        gate,
        shutdown,
        task,
    }
}

/// A dialing-only endpoint on loopback.
pub(crate) fn client(material: &TlsMaterial) -> Endpoint {
    install_provider();
    Endpoint::client_on(loopback(), material, test_cfg()).unwrap()
}
