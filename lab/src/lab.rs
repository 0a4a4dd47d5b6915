//! The launcher: a fleet of real processes on one machine. It `init`s the first coordinator,
//! `join`s further members and agents with one-use tokens, runs each as a child process with
//! its log, waits for readiness (ready lines, voters, hosts online), acts out faults (SIGKILL,
//! SIGTERM, SIGSTOP/SIGCONT, restart) and tears down in order: agents first (so no agent is
//! left beating against a cluster that is going away), then their PVE hosts, then the
//! members. Dropping a lab kills whatever still runs, in the same order.
//!
//! A member or an agent may run in a network namespace the caller made ([`MemberAt`],
//! [`HostOptions::netns`]; see [`crate::netns`]), a member listening on the address it is
//! given there instead of a free port on 127.0.0.1.
//!
//! Several agents may be the hosts of one simulated PVE cluster ([`Lab::add_pve_cluster`],
//! [`HostOptions::pve_cluster`]): one `pve-sim` process that outlives them all and stops after
//! them. In a lab run inside a private network namespace each host may have its own loopback
//! address ([`Lab::host_address`]) so that [`crate::partition`] can cut its links.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use bootstrap::cli_config::{CliConfig, CoordinatorAddr};
use client::AdminClient;
use protocol::Role;
use protocol::admin::{ClusterStatus, HostList, ReadMode, TokenCreate};
use protocol::fleet::{HostState, MemberRole};
use tokio::process::Command;

use crate::binaries::{AGENT, Binaries, COORDINATOR, PVESH_SIM};
use crate::error::LabError;
use crate::host::{AgentFiles, HostOptions, PveAccess, write_agent_config};
use crate::join_step::{join_command_in, run_join};
use crate::layout::{Layout, free_loopback_addr};
use crate::loopback_forward::LoopbackForward;
use crate::netns::command_in;
use crate::process::{Process, Stderr, Stopped, log_tail, run_step};
use crate::pve_cluster::{PveCluster, PveClusterOptions};
use crate::pve_node::{NodeAccess, PveNode, node_config};

/// The agent's fence record in its data directory (node_agent::fence::record::RECORD_FILE).
const FENCE_RECORD: &str = "fence.json";

/// How long a child may take to print its ready line.
const READY_WAIT: Duration = Duration::from_secs(60);
/// Joins [`Lab::add_agents`] runs at once. The Join service paces attempts per source address
/// (10 a second, 40 in a burst, two per join) and the lab's agents all join from 127.0.0.1:
/// more at once only spend the budget on refused retries, and a join retried past a minute
/// fails.
const JOINS_AT_ONCE: usize = 4;
/// How long a child may take to exit on SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(15);
/// The malloc setting the packaged agent unit sets (`Environment=` of
/// `packaging/systemd/pvefleet-agent.service`): a lab's agent runs as a host's does.
pub const AGENT_MALLOC_ARENAS: (&str, &str) = ("MALLOC_ARENA_MAX", "1");
/// The agent's leave file (`node_agent::leave_probe::LEAVE_FILE`; the lab does not link the agent).
const LEAVE_FILE: &str = "leaving";
/// Per-call timeout of the lab's own admin calls (elections included).
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a join token the lab creates stays valid.
const TOKEN_TTL_SECS: u64 = 600;

/// How a lab runs.
#[derive(Debug, Clone)]
pub struct LabOptions {
    /// Its directory (created, must be empty); `None`: a new temporary directory.
    pub dir: Option<PathBuf>,
    /// The name prefix of a temporary directory.
    pub prefix: String,
    /// The cluster id given to `init`.
    pub cluster_id: String,
    /// Where the programs are.
    pub binaries: Binaries,
    /// Where the children's stderr goes.
    pub stderr: Stderr,
    /// RUST_LOG of every child.
    pub log_filter: String,
    /// Extra arguments of every `pvefleet-coordinator run` (e.g. `--snapshot-logs 50`).
    pub member_args: Vec<String>,
    /// Every member serves the web dashboard on a free port of 127.0.0.1 (its member
    /// certificate), listing scenario reports from the lab's `scenarios` directory.
    pub dashboard: bool,
}

impl LabOptions {
    /// A lab in a temporary directory running the programs of `binaries`, logs at `info`
    /// into its files.
    pub fn new(binaries: Binaries) -> LabOptions {
        LabOptions {
            dir: None,
            prefix: "pvefleet-lab".to_string(),
            cluster_id: "lab".to_string(),
            binaries,
            stderr: Stderr::Log,
            log_filter: "info".to_string(),
            member_args: Vec::new(),
            dashboard: false,
        }
    }
}

/// Where a member runs: its network namespace and its QUIC address. The default is the lab's
/// own namespace and a free port on 127.0.0.1.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberAt {
    /// The network namespace it runs in (made by the caller, its loopback up); `None`: the
    /// lab's own.
    pub netns: Option<String>,
    /// Its QUIC address (an address of its namespace); `None`: a free port on 127.0.0.1.
    pub listen: Option<SocketAddr>,
    /// Environment variables of its process, at every start (the scenario runner's
    /// `LD_PRELOAD` libraries for clock steps and disk faults).
    pub env: Vec<(String, String)>,
}

impl MemberAt {
    fn listen(&self) -> Result<SocketAddr, LabError> {
        self.listen.map_or_else(free_loopback_addr, Ok)
    }
}

/// What `pvefleet-coordinator run` prints when ready.
#[derive(Debug, Clone, serde::Deserialize)]
struct MemberReady {
    node_id: u64,
    http: String,
    #[serde(default)]
    dashboard: Option<String>,
}

/// One coordinator member.
#[derive(Debug)]
pub struct Member {
    /// Its number in the lab (1 = the founder), which names its directory and log.
    pub n: u32,
    /// Its node id (from its ready line).
    pub node_id: u64,
    /// Its QUIC address.
    pub listen: SocketAddr,
    /// Its data directory.
    pub dir: PathBuf,
    /// The local HTTP address of its current run (`/metrics`, `/healthz`, `/readyz`).
    pub http: Option<String>,
    /// Its dashboard's HTTPS address in its current run, if it serves one.
    pub dashboard: Option<String>,
    /// Its log file.
    pub log: PathBuf,
    /// The network namespace it runs in (`None`: the lab's own).
    pub netns: Option<String>,
    /// Environment variables of its process, at every start.
    pub env: Vec<(String, String)>,
    process: Option<Process>,
}

/// One node agent (and its PVE host process, if its backend needs one).
#[derive(Debug)]
pub struct Agent {
    /// Its PVE node name.
    pub host: String,
    /// Its node id (from its ready line).
    pub node_id: u64,
    /// Its data directory.
    pub data_dir: PathBuf,
    /// Its configuration file and environment.
    pub files: AgentFiles,
    /// Its log file.
    pub log: PathBuf,
    /// The network namespace it runs in (`None`: the lab's own).
    pub netns: Option<String>,
    // Declared before `pve`: dropped (killed) first.
    process: Option<Process>,
    /// Its PVE host when that is a process of its own (https and pvesh backends outside a
    /// simulated cluster).
    pub pve: Option<PveNode>,
    /// The simulated PVE cluster its host is a node of (see [`Lab::pve_cluster`]).
    pub pve_cluster: Option<String>,
}

/// A long-running part of a lab, by its index in [`Lab::members`] or [`Lab::agents`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// A coordinator member.
    Member(usize),
    /// A node agent.
    Agent(usize),
}

/// What a teardown did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Teardown {
    /// Children that exited on SIGTERM.
    pub clean: usize,
    /// Children that had to be killed.
    pub killed: usize,
}

/// A fleet of processes. Its parts are addressed by index, in the order they were added.
#[derive(Debug)]
pub struct Lab {
    // Declared first: dropped (killed) first; then the clusters their hosts are nodes of.
    agents: Vec<Agent>,
    /// How agents in namespaces of their own reach their PVE processes.
    forwards: Vec<LoopbackForward>,
    pve_clusters: Vec<PveCluster>,
    members: Vec<Member>,
    layout: Layout,
    options: LabOptions,
}

/// A child's JSON ready line, or an error naming the child with its log.
fn parse_ready<T: serde::de::DeserializeOwned>(
    process: &Process,
    line: &str,
) -> Result<T, LabError> {
    serde_json::from_str(line).map_err(|e| LabError::NotReady {
        what: process.what.clone(),
        problem: format!("printed {line:?} instead of its JSON ready line ({e})"),
        log: process.log.clone(),
        tail: log_tail(&process.log),
    })
}

/// How agent `agent` is run (`pvefleet-agent run` with its configuration), and its name in
/// messages.
fn agent_run(program: &Path, agent: &Agent, filter: &str) -> (String, Command) {
    let mut run = command_in(agent.netns.as_deref(), program);
    run.arg("run")
        .arg("--config")
        .arg(&agent.files.config)
        .envs(agent.files.env.iter().map(|(k, v)| (k, v)))
        .env("RUST_LOG", filter)
        .env(AGENT_MALLOC_ARENAS.0, AGENT_MALLOC_ARENAS.1);
    (format!("agent {}", agent.host), run)
}

/// Records the running `process` of `agent` and the node id of its ready `line`.
fn agent_ready(agent: &mut Agent, process: Process, line: &str) -> Result<(), LabError> {
    let ready: serde_json::Value = parse_ready(&process, line)?;
    agent.node_id = ready["node_id"]
        .as_u64()
        .ok_or_else(|| LabError::NotReady {
            what: process.what.clone(),
            problem: format!("printed {line:?}, a ready line without node_id"),
            log: agent.log.clone(),
            tail: String::new(),
        })?;
    agent.process = Some(process);
    Ok(())
}

impl Lab {
    /// A lab with nothing running yet; its directory is made and its programs checked.
    ///
    /// # Errors
    /// [`LabError::Dir`] or [`LabError::MissingBinary`].
    pub fn new(options: LabOptions) -> Result<Lab, LabError> {
        options.binaries.require(&[COORDINATOR, AGENT])?;
        let layout = Layout::create(options.dir.as_deref(), &options.prefix)?;
        Ok(Lab {
            agents: Vec::new(),
            forwards: Vec::new(),
            pve_clusters: Vec::new(),
            members: Vec::new(),
            layout,
            options,
        })
    }

    /// Where it lives.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Where its programs are.
    pub fn binaries(&self) -> &Binaries {
        &self.options.binaries
    }

    /// Runs the programs of `binaries` from now on: every part started after this (a member or
    /// agent restarted on its data) runs the new build, the running ones keep theirs. A
    /// rolling upgrade is this, then `terminate` and `start_*` part by part.
    ///
    /// # Errors
    /// [`LabError::MissingBinary`] if a program the lab runs is not there (nothing changes).
    pub fn set_binaries(&mut self, binaries: Binaries) -> Result<(), LabError> {
        binaries.require(&[COORDINATOR, AGENT])?;
        self.options.binaries = binaries;
        Ok(())
    }

    /// The CLI configuration: the founder's admin certificate and every member so far.
    pub fn cli_config(&self) -> PathBuf {
        self.layout.cli_config()
    }

    /// The members, founder first.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// The agents, in the order they were added.
    pub fn agents(&self) -> &[Agent] {
        &self.agents
    }

    /// Member `i`.
    ///
    /// # Errors
    /// [`LabError::NoSuchPart`].
    pub fn member(&self, i: usize) -> Result<&Member, LabError> {
        self.members
            .get(i)
            .ok_or_else(|| LabError::NoSuchPart(format!("no member {i}")))
    }

    /// Agent `i`.
    ///
    /// # Errors
    /// [`LabError::NoSuchPart`].
    pub fn agent(&self, i: usize) -> Result<&Agent, LabError> {
        self.agents
            .get(i)
            .ok_or_else(|| LabError::NoSuchPart(format!("no agent {i}")))
    }

    /// The simulated PVE cluster `name`.
    pub fn pve_cluster(&self, name: &str) -> Option<&PveCluster> {
        self.pve_clusters.iter().find(|c| c.name == name)
    }

    /// The simulated PVE clusters, in the order they were added.
    pub fn pve_clusters(&self) -> &[PveCluster] {
        &self.pve_clusters
    }

    /// Host `n`'s own loopback address, `127.0.1.n` (`n` in 1..=254), for a lab run inside a
    /// private network namespace: the IP of its member's `listen` ([`MemberAt`]) and its agent's
    /// [`HostOptions::bind_address`], so [`crate::Partitions`] can cut its links.
    pub fn host_address(n: u32) -> IpAddr {
        crate::partition::host_address(n)
    }

    /// Starts the simulated PVE cluster of `opts` (one `pve-sim serve` process, every node on
    /// its own listener) for the agents of its hosts ([`HostOptions::in_pve_cluster`]). It
    /// stops after the agents, in [`Lab::stop`] or when the lab drops.
    ///
    /// # Errors
    /// [`LabError::NoSuchPart`] if the lab has a cluster of that name already or `opts` is
    /// refused; else what the start failed on.
    pub async fn add_pve_cluster(&mut self, opts: &PveClusterOptions) -> Result<(), LabError> {
        if self.pve_cluster(&opts.name).is_some() {
            return Err(LabError::NoSuchPart(format!(
                "the lab has a PVE cluster {} already",
                opts.name
            )));
        }
        // A dot never appears in a PVE node name: these paths never collide with a host's.
        let key = format!("{}.cluster", opts.name);
        let cluster = PveCluster::start(
            &self.options.binaries,
            opts,
            &self.layout.pve_config(&key),
            &self.layout.pve_dir(&key),
            &self.layout.pve_log(&key),
            self.options.stderr,
        )
        .await?;
        self.pve_clusters.push(cluster);
        Ok(())
    }

    /// How the agent of `opts` reaches node `opts.name` of its cluster.
    fn cluster_access(&self, opts: &HostOptions, cluster: &str) -> Result<NodeAccess, LabError> {
        let host = &opts.name;
        let c = self.pve_cluster(cluster).ok_or_else(|| {
            LabError::NoSuchPart(format!(
                "host {host}: the lab has no PVE cluster {cluster} (add it with add_pve_cluster)"
            ))
        })?;
        c.access(host).ok_or_else(|| {
            LabError::NoSuchPart(format!(
                "host {host}: PVE cluster {cluster} has no node {host} (its nodes: {})",
                c.nodes.keys().cloned().collect::<Vec<_>>().join(", ")
            ))
        })
    }

    /// The index of the agent of host `host`.
    ///
    /// # Errors
    /// [`LabError::NoSuchPart`].
    pub fn agent_index(&self, host: &str) -> Result<usize, LabError> {
        self.agents
            .iter()
            .position(|a| a.host == host)
            .ok_or_else(|| LabError::NoSuchPart(format!("no agent of host {host}")))
    }

    /// A client with the current CLI configuration.
    ///
    /// # Errors
    /// [`LabError::Client`] if the configuration cannot be read.
    pub fn client(&self) -> Result<AdminClient, LabError> {
        let config = CliConfig::load(&self.cli_config()).map_err(|e| LabError::Client(e.into()))?;
        Ok(AdminClient::from_config(&config)?.with_timeout(CALL_TIMEOUT))
    }

    /// `init` member 1 and run it.
    ///
    /// # Errors
    /// [`LabError`] naming the step that failed.
    pub async fn found(&mut self) -> Result<(), LabError> {
        self.found_at(MemberAt::default()).await
    }

    /// `init` member 1 where `at` says and run it there.
    ///
    /// # Errors
    /// [`LabError`] naming the step that failed.
    pub async fn found_at(&mut self, at: MemberAt) -> Result<(), LabError> {
        if !self.members.is_empty() {
            return Err(LabError::NoSuchPart(
                "the cluster is founded already".into(),
            ));
        }
        let dir = self.layout.coordinator_dir(1);
        let listen = at.listen()?;
        let program = self.options.binaries.path(COORDINATOR)?;
        let mut init = command_in(at.netns.as_deref(), &program);
        init.arg("init").arg("--data-dir").arg(&dir).args([
            "--listen",
            &listen.to_string(),
            "--cluster-id",
            &self.options.cluster_id,
        ]);
        run_step("pvefleet-coordinator init", init).await?;
        self.add_member(1, dir, listen, at).await?;
        self.write_cli_config()
    }

    /// Joins a member with a new one-use token (through the founder) and runs it; its index.
    ///
    /// # Errors
    /// [`LabError`] naming the step that failed.
    pub async fn join_member(&mut self) -> Result<usize, LabError> {
        let token = self.token(Role::Coordinator, 1).await?;
        let via = self.member(0)?.listen;
        self.join_member_with(&token, via).await
    }

    /// Joins a member with `token` through the member at `via` and runs it; its index.
    ///
    /// # Errors
    /// [`LabError`] naming the step that failed.
    pub async fn join_member_with(
        &mut self,
        token: &str,
        via: SocketAddr,
    ) -> Result<usize, LabError> {
        self.join_member_at(token, via, MemberAt::default()).await
    }

    /// Joins a member with `token` through the member at `via` (reachable from `at`'s
    /// namespace) and runs it where `at` says; its index.
    ///
    /// # Errors
    /// [`LabError`] naming the step that failed.
    pub async fn join_member_at(
        &mut self,
        token: &str,
        via: SocketAddr,
        at: MemberAt,
    ) -> Result<usize, LabError> {
        let n = u32::try_from(self.members.len() + 1).unwrap_or(u32::MAX);
        let dir = self.layout.coordinator_dir(n);
        let listen = at.listen()?;
        let program = self.options.binaries.path(COORDINATOR)?;
        let mut join = join_command_in(at.netns.as_deref(), &program, via, &dir);
        join.args(["--listen", &listen.to_string()]);
        run_join(&format!("coordinator {n} join"), join, token).await?;
        self.add_member(n, dir, listen, at).await?;
        self.write_cli_config()?;
        Ok(self.members.len() - 1)
    }

    /// A join token for `role`, good for `uses` joins.
    ///
    /// # Errors
    /// [`LabError::Client`].
    pub async fn token(&self, role: Role, uses: u32) -> Result<String, LabError> {
        let client = self.client()?;
        let reply = client
            .call(&TokenCreate {
                role,
                ttl_secs: Some(TOKEN_TTL_SECS),
                uses: Some(uses),
            })
            .await;
        client.close().await;
        Ok(reply?.token)
    }

    async fn add_member(
        &mut self,
        n: u32,
        dir: PathBuf,
        listen: SocketAddr,
        at: MemberAt,
    ) -> Result<(), LabError> {
        self.members.push(Member {
            n,
            node_id: 0,
            listen,
            dir,
            http: None,
            dashboard: None,
            log: self.layout.coordinator_log(n),
            netns: at.netns,
            env: at.env,
            process: None,
        });
        self.start_member(self.members.len() - 1).await
    }

    /// Runs member `i` (again) and waits for its ready line.
    ///
    /// # Errors
    /// [`LabError::NoSuchPart`] if it runs already, else what the start failed on.
    pub async fn start_member(&mut self, i: usize) -> Result<(), LabError> {
        let (what, run, log) = self.member_run(i)?;
        let stderr = self.options.stderr;
        let (process, line) = Process::start(&what, run, &log, stderr, READY_WAIT).await?;
        let ready: MemberReady = parse_ready(&process, &line)?;
        let member = self
            .members
            .get_mut(i)
            .ok_or_else(|| LabError::NoSuchPart(format!("no member {i}")))?;
        member.node_id = ready.node_id;
        member.http = Some(ready.http);
        member.dashboard = ready.dashboard;
        member.process = Some(process);
        Ok(())
    }

    /// Runs member `i` again without waiting for its ready line (systemd restarting a member
    /// that failed: it settles on its own while the caller goes on). Its HTTP and dashboard
    /// addresses are unknown until a [`Lab::start_member`].
    ///
    /// # Errors
    /// [`LabError::NoSuchPart`] if it runs already, else what the spawn failed on.
    pub fn spawn_member(&mut self, i: usize) -> Result<(), LabError> {
        let (what, run, log) = self.member_run(i)?;
        let stderr = self.options.stderr;
        let process = Process::spawn(&what, run, &log, stderr)?;
        let member = self
            .members
            .get_mut(i)
            .ok_or_else(|| LabError::NoSuchPart(format!("no member {i}")))?;
        member.http = None;
        member.dashboard = None;
        member.process = Some(process);
        Ok(())
    }

    /// Member `i`'s name, `run` command and log, checking it is not running.
    fn member_run(&mut self, i: usize) -> Result<(String, Command, PathBuf), LabError> {
        if self.runs(Part::Member(i)) {
            return Err(LabError::NoSuchPart(format!("member {i} runs already")));
        }
        let program = self.options.binaries.path(COORDINATOR)?;
        let filter = self.options.log_filter.clone();
        let mut args = self.options.member_args.clone();
        if self.options.dashboard {
            let scenarios = self.layout.root.join("scenarios");
            args.extend([
                "--dashboard".to_string(),
                "127.0.0.1:0".to_string(),
                "--scenario-dir".to_string(),
                scenarios.display().to_string(),
            ]);
        }
        let member = self
            .members
            .get_mut(i)
            .ok_or_else(|| LabError::NoSuchPart(format!("no member {i}")))?;
        let mut run = command_in(member.netns.as_deref(), &program);
        run.arg("run")
            .arg("--data-dir")
            .arg(&member.dir)
            .args(["--http", "127.0.0.1:0"])
            .args(&args)
            .env("RUST_LOG", filter)
            .envs(member.env.iter().map(|(k, v)| (k, v)));
        Ok((format!("coordinator {}", member.n), run, member.log.clone()))
    }

    /// Writes the CLI configuration: the founder's admin certificate, every member so far
    /// (so the CLI reaches the cluster whichever member is down).
    fn write_cli_config(&self) -> Result<(), LabError> {
        let members = self
            .members
            .iter()
            .map(|m| CoordinatorAddr {
                addr: m.listen.to_string(),
                id: m.node_id,
            })
            .collect();
        let path = self.cli_config();
        CliConfig::for_node_dir(&self.layout.coordinator_dir(1), members)
            .write(&path)
            .map_err(|e| LabError::Write {
                path,
                source: std::io::Error::other(e.to_string()),
            })
    }

    /// Waits until a leader leads `self.members().len()` voters.
    ///
    /// # Errors
    /// [`LabError::NotReady`] after `timeout`, with what the cluster said last.
    pub async fn wait_voters(&self, timeout: Duration) -> Result<(), LabError> {
        let client = self.client()?;
        let result = self.poll_voters(&client, timeout).await;
        client.close().await;
        result
    }

    async fn poll_voters(&self, client: &AdminClient, timeout: Duration) -> Result<(), LabError> {
        let want = self.members.len();
        let deadline = tokio::time::Instant::now() + timeout;
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
                return Err(LabError::NotReady {
                    what: "the coordinator cluster".to_string(),
                    problem: format!(
                        "did not reach {want} voters within {} s ({what})",
                        timeout.as_secs()
                    ),
                    log: self.layout.logs(),
                    tail: String::new(),
                });
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }

    /// Joins (with `token`, through the founder) and runs the agent of `opts`, starting its
    /// PVE host process first when its backend needs one and it is no node of a simulated
    /// cluster ([`HostOptions::pve_cluster`]: the agent talks to its node's listener there);
    /// its index.
    ///
    /// # Errors
    /// [`LabError`] naming the step that failed.
    pub async fn add_agent(&mut self, opts: &HostOptions, token: &str) -> Result<usize, LabError> {
        let (agent, join) = self.prepare_agent(opts).await?;
        run_join(&format!("agent {} join", opts.name), join, token).await?;
        self.agents.push(agent);
        let i = self.agents.len() - 1;
        self.start_agent(i).await?;
        Ok(i)
    }

    /// [`Lab::add_agent`] for many hosts at once (`token` must allow that many uses): their PVE
    /// processes started in turn, then the agents joined a few at a time and each, as soon as
    /// its join is over, started and waited for its ready line; their indices. One after
    /// the other this costs the sum of the joins and starts; at once, about the joins alone
    /// (which the Join service paces per source address: the lab's agents all join from
    /// 127.0.0.1).
    ///
    /// # Errors
    /// [`LabError`] naming the first step that failed (the agents started so far are kept).
    pub async fn add_agents(
        &mut self,
        hosts: &[HostOptions],
        token: &str,
    ) -> Result<Vec<usize>, LabError> {
        let program = self.options.binaries.path(AGENT)?;
        let (stderr, filter) = (self.options.stderr, self.options.log_filter.clone());
        let first = self.agents.len();
        let joining = std::sync::Arc::new(tokio::sync::Semaphore::new(JOINS_AT_ONCE));
        let mut runs = tokio::task::JoinSet::new();
        for opts in hosts {
            let (agent, join) = self.prepare_agent(opts).await?;
            let i = self.agents.len();
            let joining_what = format!("agent {} join", opts.name);
            let (what, run) = agent_run(&program, &agent, &filter);
            let (log, token) = (agent.log.clone(), token.to_string());
            self.agents.push(agent);
            let slots = std::sync::Arc::clone(&joining);
            runs.spawn(async move {
                let joined = match slots.acquire_owned().await {
                    Ok(_slot) => run_join(&joining_what, join, &token).await,
                    Err(e) => Err(LabError::NoSuchPart(format!("{joining_what}: {e}"))),
                };
                let started = match joined {
                    Ok(_) => Process::start(&what, run, &log, stderr, READY_WAIT).await,
                    Err(e) => Err(e),
                };
                (i, started)
            });
        }
        let mut failed = None;
        while let Some(done) = runs.join_next().await {
            let (i, started) =
                done.map_err(|e| LabError::NoSuchPart(format!("an agent's join or start: {e}")))?;
            let outcome = match (started, self.agents.get_mut(i)) {
                (Ok((process, line)), Some(agent)) => agent_ready(agent, process, &line),
                (Ok(_), None) => Err(LabError::NoSuchPart(format!("no agent {i}"))),
                (Err(e), _) => Err(e),
            };
            if let Err(e) = outcome {
                failed.get_or_insert(e);
            }
        }
        match failed {
            Some(e) => Err(e),
            None => Ok((first..self.agents.len()).collect()),
        }
    }

    /// The agent of `opts`, not running yet, and the command that joins it (to run with the
    /// token): its PVE host process started first when it needs one, its configuration written.
    async fn prepare_agent(&mut self, opts: &HostOptions) -> Result<(Agent, Command), LabError> {
        let host = opts.name.clone();
        let bins = self.options.binaries.clone();
        let cluster_access = match &opts.pve_cluster {
            Some(cluster) => Some(self.cluster_access(opts, cluster)?),
            None => None,
        };
        let pve = if cluster_access.is_none() {
            let dir = self.layout.pve_dir(&host);
            let mut config =
                node_config(&host, opts.cpus, opts.time_scale, opts.agent_ip_delay_secs);
            for node in &mut config.nodes {
                node.memory = opts.memory_gib.saturating_mul(1 << 30);
            }
            for token in &mut config.tokens {
                token.withheld.clone_from(&opts.withheld_privileges);
            }
            Some(
                PveNode::start(
                    &bins,
                    &host,
                    &config,
                    &self.layout.pve_config(&host),
                    &dir,
                    &self.layout.pve_log(&host),
                    self.options.stderr,
                )
                .await?,
            )
        } else {
            None
        };
        let data_dir = self.layout.agent_dir(&host);
        let join = join_command_in(
            opts.netns.as_deref(),
            &bins.path(AGENT)?,
            self.member(0)?.listen,
            &data_dir,
        );
        let pvesh = match opts.access {
            PveAccess::Pvesh => Some(bins.path(PVESH_SIM)?),
            PveAccess::Https => None,
        };
        let access = cluster_access.or_else(|| pve.as_ref().map(PveNode::access));
        // An agent in a namespace of its own reaches its PVE process, which listens on the
        // lab's loopback, through the same port of its namespace's loopback.
        if let (Some(ns), Some(access)) = (&opts.netns, &access) {
            let port = access
                .url
                .rsplit_once(':')
                .and_then(|(_, p)| p.trim_end_matches('/').parse::<u16>().ok())
                .ok_or_else(|| {
                    LabError::NoSuchPart(format!("host {host}: no port in {}", access.url))
                })?;
            if !self
                .forwards
                .iter()
                .any(|f| f.forwards() == (ns.as_str(), port))
            {
                self.forwards.push(LoopbackForward::start(ns, port)?);
            }
        }
        let files = write_agent_config(
            opts,
            &data_dir,
            &self.layout.agent_config(&host),
            access.as_ref(),
            pvesh.as_deref(),
        )?;
        let agent = Agent {
            log: self.layout.agent_log(&host),
            host,
            node_id: 0,
            data_dir,
            files,
            netns: opts.netns.clone(),
            process: None,
            pve,
            pve_cluster: opts.pve_cluster.clone(),
        };
        Ok((agent, join))
    }

    /// Runs agent `i` (again) and waits for its ready line (a leader acknowledged it).
    ///
    /// # Errors
    /// [`LabError::NoSuchPart`] if it runs already, else what the start failed on.
    pub async fn start_agent(&mut self, i: usize) -> Result<(), LabError> {
        self.spawn_agent(i)?;
        let agent = self
            .agents
            .get_mut(i)
            .ok_or_else(|| LabError::NoSuchPart(format!("no agent {i}")))?;
        let Some(mut process) = agent.process.take() else {
            return Err(LabError::NoSuchPart(format!("agent {i} did not start")));
        };
        let line = process.ready_line(READY_WAIT).await?;
        agent_ready(agent, process, &line)
    }

    /// Runs agent `i` again without waiting for its ready line: a host booting while it cannot
    /// reach a leader yet (its agent is ready only once a leader acknowledged a beat). Its node
    /// id is the one it had.
    ///
    /// # Errors
    /// [`LabError::NoSuchPart`] if it runs already, or what the spawn failed on.
    pub fn spawn_agent(&mut self, i: usize) -> Result<(), LabError> {
        if self.runs(Part::Agent(i)) {
            return Err(LabError::NoSuchPart(format!("agent {i} runs already")));
        }
        let program = self.options.binaries.path(AGENT)?;
        let (stderr, filter) = (self.options.stderr, self.options.log_filter.clone());
        let agent = self
            .agents
            .get_mut(i)
            .ok_or_else(|| LabError::NoSuchPart(format!("no agent {i}")))?;
        let (what, run) = agent_run(&program, agent, &filter);
        agent.process = Some(Process::spawn(&what, run, &agent.log, stderr)?);
        Ok(())
    }

    /// The process slot of `part`.
    fn slot(&mut self, part: Part) -> Option<&mut Option<Process>> {
        match part {
            Part::Member(i) => self.members.get_mut(i).map(|m| &mut m.process),
            Part::Agent(i) => self.agents.get_mut(i).map(|a| &mut a.process),
        }
    }

    /// The process id of `part` while it runs (for resource measurements).
    pub fn pid(&mut self, part: Part) -> Option<u32> {
        self.slot(part)?.as_ref().and_then(Process::pid)
    }

    /// Whether `part` runs.
    pub fn runs(&mut self, part: Part) -> bool {
        self.slot(part)
            .and_then(Option::as_mut)
            .is_some_and(|p| p.exited().is_none())
    }

    /// The control API of the simulator serving agent `i`'s PVE node (its cluster's, or its
    /// own `pve-sim` process).
    ///
    /// # Errors
    /// [`LabError::NoSuchPart`] if there is no agent `i`.
    pub fn pve_control(&self, i: usize) -> Result<crate::SimControl, LabError> {
        let agent = self.agent(i)?;
        if let Some(name) = &agent.pve_cluster {
            return self
                .pve_cluster(name)
                .ok_or_else(|| LabError::NoSuchPart(format!("no PVE cluster {name}")))?
                .control();
        }
        match &agent.pve {
            Some(node) => node.control(),
            None => Err(LabError::NoSuchPart(format!(
                "host {}: it has no PVE process",
                agent.host
            ))),
        }
    }

    /// Writes agent `i`'s configuration again from `opts` (its host's options, changed): for
    /// a newer release about to start on the host, without
    /// [`HostOptions::pre_platform_release`]. Takes effect at the agent's next start.
    ///
    /// # Errors
    /// [`LabError::NoSuchPart`] if there is no agent `i` or `opts` names another host, or what
    /// the write failed on.
    pub fn rewrite_agent_config(&mut self, i: usize, opts: &HostOptions) -> Result<(), LabError> {
        let access = match &opts.pve_cluster {
            Some(cluster) => Some(self.cluster_access(opts, cluster)?),
            None => self.agent(i)?.pve.as_ref().map(PveNode::access),
        };
        let pvesh = match opts.access {
            PveAccess::Pvesh => Some(self.options.binaries.path(PVESH_SIM)?),
            PveAccess::Https => None,
        };
        let agent = self.agent(i)?;
        if agent.host != opts.name {
            return Err(LabError::NoSuchPart(format!(
                "agent {i} runs host {}, not {}",
                agent.host, opts.name
            )));
        }
        let files = write_agent_config(
            opts,
            &agent.data_dir,
            &self.layout.agent_config(&agent.host),
            access.as_ref(),
            pvesh.as_deref(),
        )?;
        if let Some(agent) = self.agents.get_mut(i) {
            agent.files = files;
        }
        Ok(())
    }

    /// Powers agent `i`'s host off as a whole: its agent and the agent's fence guard die
    /// (SIGKILL, as every process of a host that loses power), then its simulated PVE node is
    /// switched off (its guests stop). Answers the VMIDs that were running. A coordinator
    /// member on the same host is the caller's to kill.
    ///
    /// # Errors
    /// [`LabError`] if the simulator refuses.
    pub async fn power_off_host(&mut self, i: usize) -> Result<Vec<u32>, LabError> {
        let control = self.pve_control(i)?;
        let (host, dir) = {
            let agent = self.agent(i)?;
            (agent.host.clone(), agent.data_dir.clone())
        };
        self.kill(Part::Agent(i)).await;
        crate::guards::end_guards(&[dir]);
        control.power_node(&host, "off").await
    }

    /// Powers agent `i`'s host on again: a new boot. Its simulated node is switched on and the
    /// fence record of the previous boot is removed: on a real host the new boot id makes that
    /// record stale, and a simulated node cannot change the machine's boot id. The agent is
    /// not started ([`Lab::start_agent`] does, as the host's init would).
    ///
    /// # Errors
    /// [`LabError`] if the simulator refuses or the record cannot be removed.
    pub async fn power_on_host(&mut self, i: usize) -> Result<(), LabError> {
        let control = self.pve_control(i)?;
        let agent = self.agent(i)?;
        let (host, record) = (agent.host.clone(), agent.data_dir.join(FENCE_RECORD));
        control.power_node(&host, "on").await?;
        match std::fs::remove_file(&record) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(LabError::Write {
                path: record,
                source,
            }),
        }
    }

    /// SIGKILL `part`: no shutdown, no flush beyond what was already durable (an agent's PVE
    /// host keeps running, as a real host does).
    pub async fn kill(&mut self, part: Part) {
        if let Some(p) = self.slot(part).and_then(Option::take) {
            p.kill().await;
        }
    }

    /// SIGTERM `part` and wait for it to exit (killed after the grace period); `None` if it
    /// did not run.
    pub async fn terminate(&mut self, part: Part) -> Option<Stopped> {
        let p = self.slot(part).and_then(Option::take)?;
        Some(p.stop(STOP_GRACE).await)
    }

    /// Stops agent `i` the way systemd does, saying why: `leaving` (`reboot`, `poweroff`; `None`:
    /// only the agent restarts) goes into the file its leave probe reads
    /// (`node_agent::leave_probe::LEAVE_FILE`), then SIGTERM, up to `grace` for it to exit (a drain
    /// before a shutdown takes that long), then SIGKILL. `None` if it did not run.
    ///
    /// # Errors
    /// [`LabError::Write`] if the file cannot be written.
    pub async fn stop_agent(
        &mut self,
        i: usize,
        leaving: Option<&str>,
        grace: Duration,
    ) -> Result<Option<Stopped>, LabError> {
        if let Some(kind) = leaving {
            let path = self.agent(i)?.data_dir.join(LEAVE_FILE);
            std::fs::write(&path, kind).map_err(|source| LabError::Write { path, source })?;
        }
        let Some(p) = self.slot(Part::Agent(i)).and_then(Option::take) else {
            return Ok(None);
        };
        Ok(Some(p.stop(grace).await))
    }

    /// SIGSTOP `part` (frozen: to its peers, a hung host); when this returns, every thread of
    /// it is stopped.
    ///
    /// # Errors
    /// [`LabError::NoSuchPart`] if it does not run; [`LabError::Signal`] if it did not freeze.
    pub async fn pause(&mut self, part: Part) -> Result<(), LabError> {
        self.running(part)?.pause().await
    }

    /// SIGCONT `part` after [`Lab::pause`]; when this returns, no thread of it is stopped.
    ///
    /// # Errors
    /// [`LabError::NoSuchPart`] if it does not run; [`LabError::Signal`] if it did not thaw.
    pub async fn resume(&mut self, part: Part) -> Result<(), LabError> {
        self.running(part)?.resume().await
    }

    fn running(&mut self, part: Part) -> Result<&Process, LabError> {
        self.slot(part)
            .and_then(|p| p.as_ref())
            .ok_or_else(|| LabError::NoSuchPart(format!("{part:?} does not run")))
    }

    /// Waits until every agent's host is online with its PVE facts (storages, bridges,
    /// templates) recorded, so the scheduler sees all of them.
    ///
    /// # Errors
    /// [`LabError::NotReady`] after `timeout`, naming the hosts missing.
    pub async fn wait_hosts_online(&self, timeout: Duration) -> Result<(), LabError> {
        let client = self.client()?;
        let result = self.poll_hosts_online(&client, timeout).await;
        client.close().await;
        result
    }

    async fn poll_hosts_online(
        &self,
        client: &AdminClient,
        timeout: Duration,
    ) -> Result<(), LabError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let read = HostList {
                read: ReadMode::Linearizable,
            };
            let missing: Vec<&str> = match client.call(&read).await {
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
                return Err(LabError::NotReady {
                    what: format!("host(s) {}", missing.join(", ")),
                    problem: format!(
                        "did not come online with their PVE facts within {} s",
                        timeout.as_secs()
                    ),
                    log: self.layout.logs(),
                    tail: String::new(),
                });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The first child found exited on its own: an error naming it with its log.
    ///
    /// # Errors
    /// [`LabError::NotReady`] for that child.
    pub fn check_alive(&mut self) -> Result<(), LabError> {
        let processes = self
            .members
            .iter_mut()
            .filter_map(|m| m.process.as_mut())
            .chain(self.agents.iter_mut().filter_map(|a| a.process.as_mut()));
        for p in processes {
            if let Some(status) = p.exited() {
                return Err(LabError::NotReady {
                    what: p.what.clone(),
                    problem: format!("exited unexpectedly ({status})"),
                    log: p.log.clone(),
                    tail: log_tail(&p.log),
                });
            }
        }
        Ok(())
    }

    /// The agents whose process exited on its own and is not forgotten yet (its guard reset
    /// the host, or it crashed).
    pub fn exited_agents(&mut self) -> Vec<usize> {
        let mut out = Vec::new();
        for (i, a) in self.agents.iter_mut().enumerate() {
            if a.process.as_mut().is_some_and(|p| p.exited().is_some()) {
                out.push(i);
            }
        }
        out
    }

    /// The members whose process exited on its own and is not forgotten yet (a failed disk,
    /// a crash).
    pub fn exited_members(&mut self) -> Vec<usize> {
        let mut out = Vec::new();
        for (i, m) in self.members.iter_mut().enumerate() {
            if m.process.as_mut().is_some_and(|p| p.exited().is_some()) {
                out.push(i);
            }
        }
        out
    }

    /// Forgets the processes that exited on their own, so each is reported once.
    pub fn forget_exited(&mut self) {
        for m in &mut self.members {
            if m.process.as_mut().is_some_and(|p| p.exited().is_some()) {
                m.process = None;
            }
        }
        for a in &mut self.agents {
            if a.process.as_mut().is_some_and(|p| p.exited().is_some()) {
                a.process = None;
            }
        }
    }

    /// Stops everything: the agents, then their PVE hosts (their own and the simulated
    /// clusters), then the members, each group in parallel, each child SIGTERM then SIGKILL
    /// after a grace period.
    pub async fn stop(&mut self) -> Teardown {
        let mut teardown = Teardown::default();
        let agents = self
            .agents
            .iter_mut()
            .filter_map(|a| a.process.take())
            .collect();
        stop_all(agents, &mut teardown).await;
        self.forwards.clear();
        // Before their PVE hosts stop: a guard whose agent left it armed would reset them.
        crate::guards::end_guards(&self.agent_dirs());
        let hosts = self
            .agents
            .iter_mut()
            .filter_map(|a| a.pve.take())
            .map(|n| n.server)
            .collect::<Vec<_>>();
        let mut set = tokio::task::JoinSet::new();
        for server in hosts {
            set.spawn(server.stop(STOP_GRACE));
        }
        for cluster in self.pve_clusters.drain(..) {
            set.spawn(cluster.stop(STOP_GRACE));
        }
        count(&mut set, &mut teardown).await;
        let members = self
            .members
            .iter_mut()
            .filter_map(|m| m.process.take())
            .collect();
        stop_all(members, &mut teardown).await;
        teardown
    }

    /// The lab's directory, when it is to be kept or shown.
    pub fn root(&self) -> &Path {
        &self.layout.root
    }

    fn agent_dirs(&self) -> Vec<PathBuf> {
        self.agents.iter().map(|a| a.data_dir.clone()).collect()
    }
}

impl Drop for Lab {
    /// A lab dropped without [`Lab::stop`] (a failing test) kills its children as they drop;
    /// the agents' fence guards are not its children, so they are ended here.
    fn drop(&mut self) {
        crate::guards::end_guards(&self.agent_dirs());
    }
}

async fn stop_all(processes: Vec<Process>, teardown: &mut Teardown) {
    let mut set = tokio::task::JoinSet::new();
    for p in processes {
        set.spawn(p.stop(STOP_GRACE));
    }
    count(&mut set, teardown).await;
}

async fn count(set: &mut tokio::task::JoinSet<Stopped>, teardown: &mut Teardown) {
    while let Some(done) = set.join_next().await {
        match done {
            Ok(Stopped::Exited(_)) => teardown.clean += 1,
            // A stop task that panicked dropped its child, which kill_on_drop killed.
            Ok(Stopped::Killed) | Err(_) => teardown.killed += 1,
        }
    }
}
