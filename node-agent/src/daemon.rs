//! The agent process: loads what `join` wrote, opens the command journal, builds the PVE
//! backend, and runs the inventory collector and the coordinator session until shutdown.
//!
//! ```text
//!  start: config ─▶ NodeDir (cluster.toml, node cert, CA) ─▶ journal/ (sled)
//!         ─▶ Platform (host | lab) ─▶ PVE backend (https | pvesh) ─▶ Executor(journal, VmOps)
//!         ─▶ QUIC client endpoint ─▶ Collector, certificate renewal and Session tasks
//!         ─▶ Fencer (fence.json written before anything runs; start gate, VIP flag)
//!         ─▶ systemd notifier (readiness after the first ack, status, watchdog)
//!  run:   wait for shutdown ─▶ the session leaves (the shutdown policy's answer; a drain)
//!         ─▶ stop them (running commands get a grace period) ─▶ close the endpoint
//! ```

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ::daemon::notify::Notifier;
use bootstrap::{BootstrapError, NodeDir};
use protocol::fleet::PVE_CLUSTER_LABEL;
use protocol::spec::Labels;
use protocol::{NodeId, Role};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use transport::{Endpoint, TransportConfig, TransportError};

use crate::backend::{self, BackendError};
use crate::clock_watch::ClockWatch;
use crate::config::{AgentConfig, ConfigError, PveConfig};
use crate::diagnosis::{Diagnoser, trust_of};
use crate::error::JournalError;
use crate::executor::Executor;
use crate::fence::guests::GuestStopper;
use crate::fence::{FenceError, Fencer, FencerConfig, StartGate};
use crate::inventory::{self, Collector};
use crate::journal::Journal;
use crate::ops::VmOps;
use crate::platform::{Platform, PlatformError};
use crate::session::{
    CertRenewal, LEAVE_DRAIN_MAX, MAX_CONCURRENT, RENEW_CHECK, Session, SessionConfig,
    SessionStatus, Target,
};
use crate::systemd;
use crate::vip::holder::{Holder, SimHeld, SimHolder};
use crate::vip::host::HostHolder;
use crate::vip::keeper::{Keeper, KeeperConfig};

/// The journal's directory below the data directory.
pub const JOURNAL_DIR: &str = "journal";
/// How long commands still running at shutdown may take to finish.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
/// Bound on the teardown steps after the grace period.
const TEARDOWN_WAIT: Duration = Duration::from_secs(10);
/// How long the endpoint waits for the coordinators to learn that it closed.
const CLOSE_GRACE: Duration = Duration::from_millis(500);

/// What `pvefleet-agent run` prints on stdout (one JSON line) once the first beat was acked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadyLine {
    /// The agent's node id.
    pub node_id: NodeId,
    /// The host's PVE node name.
    pub host: String,
    /// The PVE backend (`https`, `pvesh`).
    pub backend: String,
}

/// Why the agent could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The configuration is unusable.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The node directory could not be read.
    #[error(
        "cannot load the agent in {dir}: {source}; join the cluster first with \
         `pvefleet-agent join --token-file - ADDR --data-dir {dir}` (paste the token)"
    )]
    Load {
        /// The data directory.
        dir: PathBuf,
        /// What failed.
        source: BootstrapError,
    },
    /// The directory holds a coordinator's or the CLI's files.
    #[error("{dir} holds a {role} node, not an agent: point data_dir at the agent's directory")]
    NotAgent {
        /// The data directory.
        dir: PathBuf,
        /// The role it holds.
        role: Role,
    },
    /// `cluster.toml` names no coordinator to dial.
    #[error("{dir}/cluster.toml lists no coordinator members: join again with a fresh token")]
    NoMembers {
        /// The data directory.
        dir: PathBuf,
    },
    /// The command journal could not be opened.
    #[error("cannot open the command journal in {dir}: {source}")]
    Journal {
        /// The journal's directory.
        dir: PathBuf,
        /// What failed.
        source: JournalError,
    },
    /// The PVE backend could not be built.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// The platform could not be built.
    #[error(transparent)]
    Platform(#[from] PlatformError),
    /// The QUIC endpoint could not be made.
    #[error("cannot make the QUIC endpoint: {0}")]
    Endpoint(TransportError),
    /// A task of the agent failed.
    #[error("agent task failed: {0}")]
    Task(String),
    /// VIPs cannot be held on this host.
    #[error("cannot hold VIPs on this host: {0}; or set vip_holding = \"simulated\"")]
    Vip(crate::vip::host::HoldError),
    /// The fencer could not start (its record or the boot id).
    #[error("cannot start fencing: {0}")]
    Fence(#[from] FenceError),
}

/// Starts agents.
#[derive(Debug)]
pub struct Agent;

/// A started agent; [`RunningAgent::run`] keeps it going until shutdown.
pub struct RunningAgent {
    node_id: NodeId,
    host: String,
    backend: &'static str,
    vips: Option<SimHeld>,
    endpoint: Endpoint,
    stop: CancellationToken,
    /// Makes the session leave (before `stop`).
    leave: CancellationToken,
    session: JoinHandle<()>,
    tasks: TaskTracker,
    status: watch::Receiver<SessionStatus>,
}

impl std::fmt::Debug for RunningAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningAgent")
            .field("node_id", &self.node_id)
            .field("host", &self.host)
            .field("backend", &self.backend)
            .finish_non_exhaustive()
    }
}

/// The agent's QUIC settings: short handshakes, so a dead member costs little before the next
/// one is tried (the lease is 10 s by default).
pub fn transport_config() -> TransportConfig {
    TransportConfig {
        connect_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(15),
        keep_alive: Duration::from_secs(3),
        ..TransportConfig::default()
    }
}

impl Agent {
    /// Loads the agent in `config.data_dir`, builds its backend and starts its collector and
    /// session (see [`RunningAgent::ready`]).
    pub async fn start(config: AgentConfig) -> Result<RunningAgent, AgentError> {
        let shown = Path::new("the agent configuration");
        config.validate(shown)?;
        let host = config.resolved_host_name(shown)?;
        let dir = config.data_dir.clone();
        let node_dir = NodeDir::new(&dir);
        let load = |source| AgentError::Load {
            dir: dir.clone(),
            source,
        };
        let cluster = node_dir.read_cluster_config().map_err(load)?;
        if cluster.role != Role::Agent {
            return Err(AgentError::NotAgent {
                dir,
                role: cluster.role,
            });
        }
        let members: Vec<Target> = cluster
            .members
            .iter()
            .map(|m| Target {
                id: m.node_id,
                addr: m.addr.clone(),
            })
            .collect();
        if members.is_empty() {
            return Err(AgentError::NoMembers { dir });
        }
        let tls = node_dir.load_node_material().map_err(load)?;
        let journal = open_journal(dir.join(JOURNAL_DIR)).await?;
        let platform = Platform::new(&config, &host, |k| std::env::var(k).ok())?;
        let pve = backend::connect(&config.pve, &host)?;
        // Closed by the fencer while the lease runs out: no command starts a guest then.
        let gate = StartGate::new();
        let ops = VmOps::new(pve.client.clone(), host.clone())
            .with_start_gate(gate.clone())
            .with_cluster_fs(platform.cluster_fs())
            .with_snippets(platform.snippets())
            .with_migration_address(match &config.pve {
                // Checked when the configuration was loaded.
                PveConfig::Https(https) => https.migration_address().ok().flatten(),
                PveConfig::Pvesh(_) => None,
            });
        let clock = ClockWatch::new();
        let vips_simulated = !platform.holds_vips_on_interfaces();
        let executor = Executor::new(journal, ops).with_diagnoser(Diagnoser::new(
            pve.client.clone(),
            host.clone(),
            trust_of(&config.pve),
            node_dir.clone(),
            clock.clone(),
            vips_simulated,
        ));
        // A configured source address lets a testbed cut this host's links by address.
        let endpoint = match config.bind_address {
            Some(ip) => Endpoint::client_on(SocketAddr::new(ip, 0), &tls, transport_config()),
            None => Endpoint::client(&tls, transport_config()),
        }
        .map_err(AgentError::Endpoint)?;

        let (sender, feed) = inventory::feed();
        let collector = Collector::new(
            pve.client.clone(),
            host.clone(),
            Duration::from_millis(config.inventory_ms),
            sender,
        );
        let renewal = CertRenewal {
            endpoint: endpoint.clone(),
            dir: node_dir.clone(),
            members: members.clone(),
            every: RENEW_CHECK,
        };
        let session = Session::new(
            SessionConfig {
                host_name: host.clone(),
                labels: with_pve_cluster(config.labels.clone(), &pve.client).await,
                heartbeat: Duration::from_millis(config.heartbeat_ms),
                members: members.clone(),
                max_concurrent: MAX_CONCURRENT,
                shutdown_grace: SHUTDOWN_GRACE,
                leave_probe: Some(platform.leave_probe(&dir)),
            },
            endpoint.clone(),
            Arc::new(executor),
            feed.clone(),
        )
        .with_clock(clock);
        let status = session.status();
        let leave = session.leave_token();
        let lead = config.fence.lead();
        let fencer = Fencer::prepare(
            FencerConfig {
                data_dir: dir.clone(),
                lead,
            },
            // QEMU gets half the lead to quit before PVE kills it.
            GuestStopper::new(pve.client.clone(), host.clone(), lead / 2),
            status.clone(),
            feed,
            gate,
        )?;
        let vip_fence = fencer.vip_fence();
        let stop = CancellationToken::new();
        let tasks = TaskTracker::new();
        tasks.spawn(collector.run(stop.clone()));
        tasks.spawn(renewal.run(stop.clone()));
        let vips = if vips_simulated {
            let holder = SimHolder::new();
            let held = holder.held();
            let keeper = keeper(cluster.node_id, &endpoint, &members, holder);
            tasks.spawn(keeper.fenced_by(vip_fence).run(stop.clone()));
            Some(held)
        } else {
            let holder = HostHolder::connect().map_err(AgentError::Vip)?;
            let keeper = keeper(cluster.node_id, &endpoint, &members, holder);
            tasks.spawn(keeper.fenced_by(vip_fence).run(stop.clone()));
            None
        };
        tasks.spawn(fencer.run(stop.clone()));
        let health = systemd::AgentHealth {
            status: status.clone(),
        };
        if let Some(notifier) = Notifier::from_env(health) {
            tasks.spawn(notifier.run(stop.clone()));
        }
        let session = tokio::spawn(session.run(stop.clone()));
        tracing::info!(
            node_id = cluster.node_id,
            %host,
            backend = pve.kind,
            platform = platform.name(),
            "agent started"
        );
        Ok(RunningAgent {
            node_id: cluster.node_id,
            host,
            backend: pve.kind,
            vips,
            endpoint,
            stop,
            leave,
            session,
            tasks,
            status,
        })
    }
}

/// The VIP renewal loop of this agent, holding through `holder`.
fn keeper<H: Holder>(
    node: NodeId,
    endpoint: &Endpoint,
    members: &[Target],
    holder: H,
) -> Keeper<H> {
    Keeper::new(
        node,
        endpoint.clone(),
        members.to_vec(),
        holder,
        KeeperConfig::DEFAULT,
    )
}

/// `labels` with [`PVE_CLUSTER_LABEL`] set to the name of the PVE cluster the node belongs to
/// (from `GET /cluster/status`), which a relocation stays within; left out on a standalone
/// node and when PVE cannot say (a
/// warning: the host is then treated as standalone until the agent restarts).
async fn with_pve_cluster(mut labels: Labels, client: &pve::Client) -> Labels {
    labels.remove(PVE_CLUSTER_LABEL);
    match client.cluster_status().await {
        Ok(entries) => {
            if let Some(c) = entries.iter().find(|e| e.kind == "cluster") {
                labels.insert(PVE_CLUSTER_LABEL.to_string(), c.name.clone());
            }
        }
        Err(e) => tracing::warn!(
            error = %e,
            "cannot read the PVE cluster's name (GET /cluster/status): this host counts as a standalone node, no VM is relocated to or from it"
        ),
    }
    labels
}

async fn open_journal(dir: PathBuf) -> Result<Journal, AgentError> {
    let at = dir.clone();
    // Without sled's background flusher: every journal write flushes before it returns, so
    // the flusher only woke sled's threads twice a second while the agent idles.
    match tokio::task::spawn_blocking(move || Journal::open_with_periodic_flush(&at, None)).await {
        Ok(Ok(journal)) => Ok(journal),
        Ok(Err(source)) => Err(AgentError::Journal { dir, source }),
        Err(e) => Err(AgentError::Task(format!("opening the journal: {e}"))),
    }
}

impl RunningAgent {
    /// The agent's node id.
    pub fn node_id(&self) -> NodeId {
        self.node_id
    }

    /// The host's PVE node name.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// What a simulated host holds (`None` when VIPs are held on the host's interfaces).
    pub fn simulated_vips(&self) -> Option<&SimHeld> {
        self.vips.as_ref()
    }

    /// Follows the session's status (acks, leader, lease, commands).
    pub fn status(&self) -> watch::Receiver<SessionStatus> {
        self.status.clone()
    }

    /// Resolves with the ready line once a leader acknowledged a beat; `None` if the agent
    /// stopped first.
    pub fn ready(&self) -> impl std::future::Future<Output = Option<ReadyLine>> + Send + 'static {
        let mut status = self.status.clone();
        let line = ReadyLine {
            node_id: self.node_id,
            host: self.host.clone(),
            backend: self.backend.to_string(),
        };
        async move { status.wait_for(|s| s.acks > 0).await.ok().map(|_| line) }
    }

    /// Runs until `shutdown` (or until the session ends on its own, an error); then the
    /// session leaves (it tells the leader why the agent stops and waits for the shutdown
    /// policy's answer: a drain may take minutes, while everything else keeps running), stops
    /// (running commands get a grace period), and the other tasks stop; the endpoint closes.
    pub async fn run(self, shutdown: CancellationToken) -> Result<(), AgentError> {
        let mut session = self.session;
        let ended = tokio::select! {
            () = shutdown.cancelled() => None,
            joined = &mut session => Some(joined),
        };
        tracing::info!(host = %self.host, "agent stopping");
        ::daemon::notify::notify_stopping();
        let joined = match ended {
            Some(joined) => joined,
            None => {
                self.leave.cancel();
                let wait = LEAVE_DRAIN_MAX + SHUTDOWN_GRACE + TEARDOWN_WAIT;
                match tokio::time::timeout(wait, &mut session).await {
                    Ok(joined) => joined,
                    Err(_) => {
                        session.abort();
                        Ok(())
                    }
                }
            }
        };
        self.stop.cancel();
        self.tasks.close();
        let _ = tokio::time::timeout(TEARDOWN_WAIT, self.tasks.wait()).await;
        self.endpoint.close(CLOSE_GRACE).await;
        tracing::info!(host = %self.host, "agent stopped");
        match (joined, shutdown.is_cancelled()) {
            (Err(e), _) => Err(AgentError::Task(format!("the session: {e}"))),
            (Ok(()), false) => Err(AgentError::Task("the session ended on its own".into())),
            (Ok(()), true) => Ok(()),
        }
    }
}
