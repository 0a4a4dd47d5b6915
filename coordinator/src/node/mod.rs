//! A running coordinator member: Raft on its sled store, one QUIC endpoint serving the Raft,
//! Agent, Admin and Join services (gated by the revoked ids of the fleet state), the local HTTP
//! port, the task that settles its membership (founder init or promotion), the one that
//! renews its certificate, the reconciler and the VIP manager (both active while the member
//! leads).
//!
//! ```text
//!  start: NodeDir ─▶ TLS + CA ─▶ raft store ─▶ openraft ─▶ Endpoint::server(Raft, Agent, Admin, Join)
//!         ─▶ Server (router: raft::network + admin + join + renew + heartbeat, gate) ─▶ HTTP
//!         ─▶ settle membership, renew the certificate when due, reconcile and move VIPs
//!            (leader only),
//!            report this build's encodings and raise the cluster version (leader),
//!            notify systemd (readiness, status, watchdog)
//!  run:   wait for shutdown ─▶ stop settling ─▶ stop accepting, calls in flight (≤ 1 s)
//!         ─▶ raft.shutdown() (a leader hands over within an election timeout)
//!         ─▶ the rest of the server's work ─▶ close connections and the endpoint
//! ```

pub(crate) mod membership;
pub(crate) mod raft_setup;
mod ready_line;
pub(crate) mod renew;
mod systemd;
mod versions;

pub use ready_line::ReadyLine;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bootstrap::NodeDir;
use daemon::notify::Notifier;
use protocol::Role;
use raft::NodeId;
use raft::store::MachineHandle;
use raft::types::Raft;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use transport::{Endpoint, Server, Service, TransportError};

use crate::config::{ControlConfig, NodeSettings, RAFT_DIR, RunConfig};
use crate::error::CoordinatorError;
use crate::forward::{Forwarder, Target};
use crate::host_watch::HostWatch;
use crate::http::HttpServer;
use crate::http::metrics::Metrics;
use crate::machine::FleetMachine;
use crate::reconciler::Reconciler;
use crate::service::{Ctx, admin, agent};
use crate::vip_manager::VipManager;
use fleet::state::FleetState;

/// Bound on the teardown steps that wait for others (calls in flight, HTTP requests).
const TEARDOWN_WAIT: Duration = Duration::from_secs(30);
/// How long the endpoint waits for peers to learn that it closed.
const CLOSE_GRACE: Duration = Duration::from_secs(1);
/// How long the calls in flight at a stop may still commit before Raft stops.
const IN_FLIGHT_WAIT: Duration = Duration::from_secs(1);
/// A forwarded call must answer before the caller's own call deadline expires.
const FORWARD_MARGIN: Duration = Duration::from_secs(1);

/// Starts coordinator members.
#[derive(Debug)]
pub struct CoordinatorNode;

/// A started member; [`RunningNode::run`] serves it until shutdown.
pub struct RunningNode {
    ctx: Arc<Ctx>,
    endpoint: Endpoint,
    listen: SocketAddr,
    http: SocketAddr,
    dashboard: Option<SocketAddr>,
    server: JoinHandle<Result<(), TransportError>>,
    tasks: TaskTracker,
    serve: CancellationToken,
    settle: CancellationToken,
    ready: watch::Receiver<Option<ReadyLine>>,
}

impl std::fmt::Debug for RunningNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningNode")
            .field("node_id", &self.ctx.node_id)
            .field("listen", &self.listen)
            .field("http", &self.http)
            .finish_non_exhaustive()
    }
}

impl CoordinatorNode {
    /// Loads the member in `config.data_dir`, opens its store, starts Raft, binds and serves its
    /// QUIC and HTTP ports, and starts settling its membership (see [`RunningNode::ready`]).
    pub async fn start(config: RunConfig) -> Result<RunningNode, CoordinatorError> {
        CoordinatorNode::start_with(config, ControlConfig::default()).await
    }

    /// Like [`CoordinatorNode::start`], with the leader's control plane tuned by `control`
    /// (lease, resync period, address wait, reconcile tick).
    pub async fn start_with(
        config: RunConfig,
        control: ControlConfig,
    ) -> Result<RunningNode, CoordinatorError> {
        let dir = config.data_dir.clone();
        control
            .validate()
            .map_err(|reason| CoordinatorError::Settings {
                path: dir.clone(),
                reason: format!("control-plane options: {reason}"),
            })?;
        let node_dir = NodeDir::new(&dir);
        let load = |e| CoordinatorError::load(&dir, e);
        let cluster = node_dir.read_cluster_config().map_err(load)?;
        if cluster.role != Role::Coordinator {
            return Err(CoordinatorError::NotCoordinator {
                dir,
                role: cluster.role,
            });
        }
        let settings = NodeSettings::load(&dir)?;
        let tls = node_dir.load_node_material().map_err(load)?;
        let ca = node_dir.load_ca().map_err(load)?;
        let raft_config = raft_setup::raft_config(config.snapshot_logs)?;
        let (log_store, sm_store) = raft_setup::open_store(&dir.join(RAFT_DIR)).await?;
        let machine: MachineHandle<FleetMachine> = sm_store.machine();

        let tcfg = raft_setup::transport_config();
        let forward_deadline = tcfg.call_timeout.saturating_sub(FORWARD_MARGIN);
        let services = [Service::Raft, Service::Agent, Service::Admin, Service::Join];
        let endpoint =
            Endpoint::server(settings.listen, &tls, &services, tcfg).map_err(|source| {
                CoordinatorError::Endpoint {
                    addr: settings.listen,
                    source,
                }
            })?;
        let network = raft::network::Network::new(endpoint.clone());
        let raft = Raft::new(cluster.node_id, raft_config, network, log_store, sm_store)
            .await
            .map_err(|e| CoordinatorError::RaftStart(e.to_string()))?;

        let http_addr = config
            .http
            .or(settings.http)
            .unwrap_or((Ipv4Addr::LOCALHOST, 0).into());
        let listener = match TcpListener::bind(http_addr).await {
            Ok(l) => l,
            Err(source) => {
                let _ = raft.shutdown().await;
                return Err(CoordinatorError::HttpBind {
                    addr: http_addr,
                    source,
                });
            }
        };
        let http = listener
            .local_addr()
            .map_err(|source| CoordinatorError::HttpBind {
                addr: http_addr,
                source,
            })?;

        let metrics = Arc::new(Metrics::new());
        let ctx = Arc::new(Ctx {
            node_id: cluster.node_id,
            cluster_id: cluster.cluster_id.clone(),
            raft: raft.clone(),
            machine: machine.clone(),
            forwarder: Forwarder::new(endpoint.clone(), forward_deadline),
            writes: crate::service::group_commit::GroupCommit::new(raft.clone()),
            ca,
            node_dir: node_dir.clone(),
            metrics: Arc::clone(&metrics),
            control: Arc::new(crate::control::Control::new(control)),
            runs: crate::service::ops::one_shot_runs(),
            vip_promises: crate::service::vip_lease::VipPromises::new(
                fleet::vip::lease::LeaseConfig::default(),
            ),
            vip_sightings: crate::service::vip_sightings::VipSightings::new(),
        });
        // Weak: the context holds the metrics, the metrics must not keep the context alive.
        let vip_ctx = Arc::downgrade(&ctx);
        metrics.set_vip_source(Box::new(move || {
            vip_ctx
                .upgrade()
                .map(|ctx| ctx.vip_samples())
                .unwrap_or_default()
        }));
        let mut router = transport::Router::new();
        raft::network::register(&mut router, raft.clone());
        admin::register(&mut router, &ctx);
        agent::register(&mut router, &ctx);
        crate::service::renew::register(&mut router, &ctx);
        let dashboard = match &config.dashboard {
            Some(d) => {
                let parts = (
                    router.clone(),
                    raft.clone(),
                    machine.clone(),
                    cluster.node_id,
                );
                match crate::dashboard::Dashboard::bind(d, &tls, parts).await {
                    Ok(dash) => Some(dash),
                    Err(e) => {
                        let _ = raft.shutdown().await;
                        return Err(e);
                    }
                }
            }
            None => None,
        };
        let dashboard_addr = dashboard.as_ref().and_then(|d| d.local_addr().ok());
        let server = Server::new(endpoint.clone(), router).with_gate(crate::gate::gate(machine));

        let serve = CancellationToken::new();
        let settle = CancellationToken::new();
        let tasks = TaskTracker::new();
        let server = tokio::spawn(server.run(serve.clone()));
        tasks.spawn(HttpServer::new(listener, raft.clone(), metrics).run(serve.clone()));
        if let Some(dashboard) = dashboard {
            tasks.spawn(dashboard.run(serve.clone()));
        }
        let renewal = renew::SelfRenewal {
            ctx: Arc::clone(&ctx),
            endpoint: endpoint.clone(),
            dir: node_dir.clone(),
            every: config.renew_check,
        };
        tasks.spawn(renewal.run(serve.clone()));
        tasks.spawn(Reconciler::new(Arc::clone(&ctx)).run(serve.clone()));
        tasks.spawn(VipManager::new(Arc::clone(&ctx)).run(serve.clone()));
        tasks.spawn(HostWatch::new(Arc::clone(&ctx)).run(serve.clone()));
        let keeper = versions::VersionKeeper {
            ctx: Arc::clone(&ctx),
        };
        tasks.spawn(keeper.run(serve.clone()));

        let (ready_tx, ready) = watch::channel(None);
        let health = systemd::MemberHealth {
            node_id: cluster.node_id,
            raft: raft.clone(),
            ready: ready.clone(),
        };
        if let Some(notifier) = Notifier::from_env(health) {
            tasks.spawn(notifier.run(serve.clone()));
        }
        let line = ReadyLine {
            node_id: cluster.node_id,
            listen: settings.listen.to_string(),
            http: http.to_string(),
            dashboard: dashboard_addr.map(|a| a.to_string()),
        };
        let seeds = cluster
            .members
            .iter()
            .filter(|m| m.node_id != cluster.node_id)
            .map(|m| Target {
                id: m.node_id,
                addr: m.addr.clone(),
            })
            .collect();
        let settling = membership::Settle {
            ctx: Arc::clone(&ctx),
            data_dir: dir.clone(),
            settings: settings.clone(),
            seeds,
        };
        let settle_token = settle.clone();
        tasks.spawn(async move {
            if settling.run(settle_token).await {
                let _ = ready_tx.send(Some(line));
            }
        });
        tracing::info!(node_id = cluster.node_id, listen = %settings.listen, %http, "coordinator started");
        Ok(RunningNode {
            ctx,
            endpoint,
            listen: settings.listen,
            http,
            dashboard: dashboard_addr,
            server,
            tasks,
            serve,
            settle,
            ready,
        })
    }
}

impl RunningNode {
    /// This member's node id.
    pub fn node_id(&self) -> NodeId {
        self.ctx.node_id
    }

    /// The QUIC address it serves on.
    pub fn listen_addr(&self) -> SocketAddr {
        self.listen
    }

    /// The dashboard's HTTPS address, if it serves one (the actual port when bound to port 0).
    pub fn dashboard_addr(&self) -> Option<SocketAddr> {
        self.dashboard
    }

    /// The local HTTP address (the actual port when bound to port 0).
    pub fn http_addr(&self) -> SocketAddr {
        self.http
    }

    /// The local Raft node (metrics, waits).
    pub fn raft(&self) -> &Raft {
        &self.ctx.raft
    }

    /// Runs `f` on this member's applied fleet state (a stale read).
    pub fn read_state<T>(&self, f: impl FnOnce(&FleetState) -> T) -> Option<T> {
        self.ctx.machine.read(|m| f(&m.0)).ok()
    }

    /// Resolves with the ready line once the membership is settled (founder initialized, or
    /// joined member promoted); `None` if the member stopped first.
    pub fn ready(&self) -> impl std::future::Future<Output = Option<ReadyLine>> + Send + 'static {
        let mut ready = self.ready.clone();
        async move {
            ready
                .wait_for(Option::is_some)
                .await
                .ok()
                .and_then(|r| r.clone())
        }
    }

    /// Serves until `shutdown` is cancelled (or the server fails, or Raft stops on a fatal
    /// error such as a log entry this build cannot read), then tears down in order: stop
    /// settling the membership, stop accepting, give the calls in flight a second, stop
    /// Raft, let the server finish, close the connections and the endpoint. A Raft failure is returned as the error, so
    /// the process exits non-zero and says why instead of serving without a state machine.
    pub async fn run(self, shutdown: CancellationToken) -> Result<(), CoordinatorError> {
        let mut server = self.server;
        let mut raft_failure = None;
        let served = tokio::select! {
            () = shutdown.cancelled() => None,
            result = &mut server => Some(result),
            why = raft_failed(&self.ctx.raft) => {
                tracing::error!(node_id = self.ctx.node_id, %why, "raft stopped; the member stops");
                raft_failure = Some(why);
                None
            }
        };
        tracing::info!(node_id = self.ctx.node_id, "coordinator stopping");
        daemon::notify::notify_stopping();
        self.settle.cancel();
        self.serve.cancel();
        // The calls in flight get IN_FLIGHT_WAIT to finish while Raft still commits them;
        // then Raft stops, before the slowest connection is waited for. A stopping leader
        // whose Raft went on heartbeating while it no longer served kept the followers from
        // electing another: the fleet was headless for the whole teardown, long enough for
        // every agent's lease to run out (chaos campaign, seed 2). Stopped, it costs one
        // election timeout. A call cut short is retried elsewhere under its request id.
        let mut served = match served {
            Some(result) => Some(result),
            None => tokio::time::timeout(IN_FLIGHT_WAIT, &mut server).await.ok(),
        };
        let stopped = self.ctx.raft.shutdown().await;
        let served = match served.take() {
            Some(result) => result,
            None => match tokio::time::timeout(TEARDOWN_WAIT, &mut server).await {
                Ok(result) => result,
                Err(_) => {
                    server.abort();
                    Ok(Ok(()))
                }
            },
        };
        self.tasks.close();
        let _ = tokio::time::timeout(TEARDOWN_WAIT, self.tasks.wait()).await;
        self.ctx.forwarder.close().await;
        self.endpoint.close(CLOSE_GRACE).await;
        tracing::info!(node_id = self.ctx.node_id, "coordinator stopped");
        if let Some(reason) = raft_failure {
            return Err(CoordinatorError::RaftFailed(reason));
        }
        stopped.map_err(|e| CoordinatorError::RaftShutdown(e.to_string()))?;
        match served {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(CoordinatorError::Serve(e)),
            Err(e) => Err(CoordinatorError::Task(format!("the QUIC server: {e}"))),
        }
    }
}

/// Resolves with the reason once Raft has stopped on a fatal error (never otherwise).
async fn raft_failed(raft: &Raft) -> String {
    let mut metrics = raft.metrics();
    loop {
        let failed = metrics
            .borrow()
            .running_state
            .as_ref()
            .err()
            .map(ToString::to_string);
        if let Some(why) = failed {
            return why;
        }
        if metrics.changed().await.is_err() {
            // Raft shut down without a fatal error: the normal teardown is under way.
            return std::future::pending().await;
        }
    }
}
