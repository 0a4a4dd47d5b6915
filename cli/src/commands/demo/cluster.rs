//! Bringing the demo's processes up and down: `init` the first coordinator, `join` the others
//! with one-use tokens, join and run one agent per simulated host, and stop them all in order
//! (agents first, so no agent is left beating against a cluster that is going away).

use std::path::PathBuf;
use std::time::Duration;

use protocol::Role;
use protocol::admin::{ClusterStatus, HostList, ReadMode, TokenCreate};
use protocol::fleet::{HostState, MemberRole};
use tokio::process::Command;

use super::binaries::Binaries;
use super::error::DemoError;
use super::layout::{AgentConfig, Layout, free_loopback_addr};
use super::process::{Process, Stopped, log_tail, run_step};
use bootstrap::cli_config::{CliConfig, CoordinatorAddr};
use client::AdminClient;

/// How long a child may take to print its ready line.
const READY_WAIT: Duration = Duration::from_secs(60);
/// How long the members may take to all become voters.
const VOTERS_WAIT: Duration = Duration::from_secs(120);
/// How long the hosts may take to register and report their PVE facts.
const HOSTS_WAIT: Duration = Duration::from_secs(120);
/// How long a child may take to exit on SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(15);
/// Per-call timeout of the demo's own admin calls (elections included).
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// One running coordinator member.
#[derive(Debug)]
pub(crate) struct Member {
    /// Its node id.
    pub(crate) node_id: u64,
    /// Its QUIC address.
    pub(crate) addr: String,
    process: Process,
}

/// One running agent.
#[derive(Debug)]
pub(crate) struct Agent {
    /// Its PVE node name.
    pub(crate) host: String,
    /// Its node id.
    pub(crate) node_id: u64,
    process: Process,
}

/// Everything the demo runs.
#[derive(Debug)]
pub(crate) struct DemoCluster {
    /// Where it lives.
    pub(crate) layout: Layout,
    bins: Binaries,
    /// The members, founder first.
    pub(crate) members: Vec<Member>,
    /// The agents, `pve-a` first.
    pub(crate) agents: Vec<Agent>,
}

/// What a stop did, for the closing message.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Teardown {
    /// Children that exited on SIGTERM.
    pub(crate) clean: usize,
    /// Children that had to be killed.
    pub(crate) killed: usize,
}

/// The `node_id` of a ready line (`{"node_id": 4, ...}`).
fn ready_node_id(process: &Process, line: &str) -> Result<u64, DemoError> {
    serde_json::from_str::<serde_json::Value>(line)
        .ok()
        .and_then(|v| v["node_id"].as_u64())
        .ok_or_else(|| DemoError::NotReady {
            what: process.what.clone(),
            problem: format!("printed {line:?} instead of its JSON ready line"),
            log: process.log.clone(),
            tail: log_tail(&process.log),
        })
}

impl DemoCluster {
    /// Nothing running yet.
    pub(crate) fn new(layout: Layout, bins: Binaries) -> DemoCluster {
        DemoCluster {
            layout,
            bins,
            members: Vec::new(),
            agents: Vec::new(),
        }
    }

    /// `init` member 1 and run it.
    pub(crate) async fn found(&mut self) -> Result<(), DemoError> {
        let dir = self.layout.coordinator_dir(1);
        let addr = free_loopback_addr()?;
        let mut init = Command::new(&self.bins.coordinator);
        init.arg("init").arg("--data-dir").arg(&dir).args([
            "--listen",
            &addr.to_string(),
            "--cluster-id",
            "demo",
        ]);
        run_step("pvefleet-coordinator init", init).await?;
        self.run_member(1, dir, addr.to_string()).await?;
        self.write_cli_config()
    }

    /// Joins member `n` with a one-use token and runs it.
    pub(crate) async fn join_member(
        &mut self,
        client: &AdminClient,
        n: u32,
    ) -> Result<(), DemoError> {
        let token = client
            .call(&TokenCreate {
                role: Role::Coordinator,
                ttl_secs: Some(600),
                uses: Some(1),
            })
            .await?
            .token;
        let dir = self.layout.coordinator_dir(n);
        let addr = free_loopback_addr()?;
        let mut join = Command::new(&self.bins.coordinator);
        join.args(["join", &token, &self.founder_addr()])
            .arg("--data-dir")
            .arg(&dir)
            .args(["--listen", &addr.to_string()]);
        run_step(&format!("coordinator {n} join"), join).await?;
        self.run_member(n, dir, addr.to_string()).await?;
        self.write_cli_config()
    }

    async fn run_member(&mut self, n: u32, dir: PathBuf, addr: String) -> Result<(), DemoError> {
        let mut run = Command::new(&self.bins.coordinator);
        run.arg("run")
            .arg("--data-dir")
            .arg(&dir)
            .args(["--http", "127.0.0.1:0"]);
        let what = format!("coordinator {n}");
        let (process, line) =
            Process::start(&what, run, &self.layout.coordinator_log(n), READY_WAIT).await?;
        let node_id = ready_node_id(&process, &line)?;
        self.members.push(Member {
            node_id,
            addr,
            process,
        });
        Ok(())
    }

    fn founder_addr(&self) -> String {
        self.members
            .first()
            .map(|m| m.addr.clone())
            .unwrap_or_default()
    }

    /// The CLI configuration: the founder's admin certificate, every member so far.
    fn write_cli_config(&self) -> Result<(), DemoError> {
        let members = self
            .members
            .iter()
            .map(|m| CoordinatorAddr {
                addr: m.addr.clone(),
                id: m.node_id,
            })
            .collect();
        let path = self.layout.cli_config();
        CliConfig::for_node_dir(&self.layout.coordinator_dir(1), members)
            .write(&path)
            .map_err(|e| DemoError::Write {
                path,
                source: std::io::Error::other(e.to_string()),
            })
    }

    /// A client with the current CLI configuration.
    pub(crate) fn client(&self) -> Result<AdminClient, DemoError> {
        let config =
            CliConfig::load(&self.layout.cli_config()).map_err(|e| DemoError::Client(e.into()))?;
        Ok(AdminClient::from_config(&config)?.with_timeout(CALL_TIMEOUT))
    }

    /// Waits until every member is a voter.
    pub(crate) async fn wait_voters(&self, client: &AdminClient) -> Result<(), DemoError> {
        let want = self.members.len();
        let deadline = tokio::time::Instant::now() + VOTERS_WAIT;
        loop {
            let status = client.call(&ClusterStatus {}).await;
            if let Ok(s) = &status
                && s.leader.is_some()
                && s.members
                    .iter()
                    .filter(|m| m.role == MemberRole::Voter)
                    .count()
                    == want
            {
                return Ok(());
            }
            if tokio::time::Instant::now() > deadline {
                let what = match status {
                    Ok(s) => format!("members {:?}", s.members),
                    Err(e) => e.to_string(),
                };
                return Err(DemoError::NotReady {
                    what: "the coordinator cluster".to_string(),
                    problem: format!(
                        "did not reach {want} voters within {} s ({what})",
                        VOTERS_WAIT.as_secs()
                    ),
                    log: self.layout.logs(),
                    tail: String::new(),
                });
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }

    /// Joins and runs one agent per simulated host.
    pub(crate) async fn start_agents(
        &mut self,
        client: &AdminClient,
        hosts: u32,
        speed: u32,
        mut started: impl FnMut(&Agent),
    ) -> Result<(), DemoError> {
        let token = client
            .call(&TokenCreate {
                role: Role::Agent,
                ttl_secs: Some(600),
                uses: Some(hosts),
            })
            .await?
            .token;
        for i in 0..hosts {
            let config = AgentConfig::demo_host(&self.layout, i, speed);
            let host = config.host_name.clone();
            let mut join = Command::new(&self.bins.agent);
            join.args(["join", &token, &self.founder_addr()])
                .arg("--data-dir")
                .arg(&config.data_dir);
            run_step(&format!("agent {host} join"), join).await?;
            let path = self.layout.agent_config(&host);
            config.write(&path)?;
            let mut run = Command::new(&self.bins.agent);
            run.arg("run").arg("--config").arg(&path);
            let what = format!("agent {host}");
            let (process, line) =
                Process::start(&what, run, &self.layout.agent_log(&host), READY_WAIT).await?;
            let node_id = ready_node_id(&process, &line)?;
            let agent = Agent {
                host,
                node_id,
                process,
            };
            started(&agent);
            self.agents.push(agent);
        }
        Ok(())
    }

    /// Waits until every agent's host is online with its PVE facts (storages, bridges,
    /// templates) recorded, so the scheduler sees all of them from the first VM on.
    pub(crate) async fn wait_hosts_online(&self, client: &AdminClient) -> Result<(), DemoError> {
        let deadline = tokio::time::Instant::now() + HOSTS_WAIT;
        loop {
            let missing: Vec<&str> = match client
                .call(&HostList {
                    read: ReadMode::Linearizable,
                })
                .await
            {
                Ok(reply) => self
                    .agents
                    .iter()
                    .filter(|a| {
                        !reply.hosts.iter().any(|h| {
                            h.id == a.node_id && h.state == HostState::Online && h.facts.is_some()
                        })
                    })
                    .map(|a| a.host.as_str())
                    .collect(),
                Err(_) => self.agents.iter().map(|a| a.host.as_str()).collect(),
            };
            if missing.is_empty() {
                return Ok(());
            }
            if tokio::time::Instant::now() > deadline {
                return Err(DemoError::NotReady {
                    what: format!("host(s) {}", missing.join(", ")),
                    problem: format!(
                        "did not come online with their PVE facts within {} s",
                        HOSTS_WAIT.as_secs()
                    ),
                    log: self.layout.logs(),
                    tail: String::new(),
                });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The first child found exited: an error naming it with its log.
    pub(crate) fn check_alive(&mut self) -> Result<(), DemoError> {
        let processes = self
            .members
            .iter_mut()
            .map(|m| &mut m.process)
            .chain(self.agents.iter_mut().map(|a| &mut a.process));
        for p in processes {
            if let Some(status) = p.exited() {
                return Err(DemoError::NotReady {
                    what: p.what.clone(),
                    problem: format!("exited unexpectedly ({status})"),
                    log: p.log.clone(),
                    tail: log_tail(&p.log),
                });
            }
        }
        Ok(())
    }

    /// Drops the children that exited, so each is reported once.
    pub(crate) fn forget_exited(&mut self) {
        self.members.retain_mut(|m| m.process.exited().is_none());
        self.agents.retain_mut(|a| a.process.exited().is_none());
    }

    /// Stops every child: the agents, then the members, each group in parallel.
    pub(crate) async fn stop(&mut self) -> Teardown {
        let mut teardown = Teardown::default();
        let agents = self.agents.drain(..).map(|a| a.process).collect();
        stop_all(agents, &mut teardown).await;
        let members = self.members.drain(..).map(|m| m.process).collect();
        stop_all(members, &mut teardown).await;
        teardown
    }
}

async fn stop_all(processes: Vec<Process>, teardown: &mut Teardown) {
    let mut set = tokio::task::JoinSet::new();
    for p in processes {
        set.spawn(p.stop(STOP_GRACE));
    }
    while let Some(done) = set.join_next().await {
        match done {
            Ok(Stopped::Exited(_)) => teardown.clean += 1,
            // A stop task that panicked dropped its child, which kill_on_drop killed.
            Ok(Stopped::Killed) | Err(_) => teardown.killed += 1,
        }
    }
}
