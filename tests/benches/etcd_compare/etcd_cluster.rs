//! A 3-member etcd cluster as processes on loopback: free ports, its own temporary directory
//! (data directories, logs, certificates), fsync as etcd does it by default
//! (`--unsafe-no-fsync` is not given). With client mutual TLS the client port accepts only
//! clients presenting a certificate of the cluster's CA (`--client-cert-auth`).
//!
//! Dropping the cluster kills its members and then removes the directory, also when the
//! bench panics.

use std::fmt::Write as _;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::etcd_api::{ClientTls, EtcdClient};
use crate::etcd_certs;

/// The etcd program: `PVEFLEET_ETCD` or `etcd` on the PATH (Debian's `etcd-server`).
pub(crate) fn program() -> String {
    std::env::var("PVEFLEET_ETCD").unwrap_or_else(|_| "etcd".to_string())
}

/// `etcd --version`'s first line, or why it could not run.
pub(crate) fn version() -> Result<String, String> {
    let out = Command::new(program())
        .arg("--version")
        .output()
        .map_err(|e| {
            format!(
                "{} cannot run ({e}): install Debian's etcd-server (`make bench` does)",
                program()
            )
        })?;
    // The first line reads `etcd Version: 3.4.23`.
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().next().unwrap_or("etcd").trim();
    Ok(first.replacen("Version: ", "", 1))
}

/// A member process, killed when dropped.
struct Running {
    name: String,
    child: Child,
    log: PathBuf,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How a member is reached.
#[derive(Debug, Clone)]
struct Ports {
    client: u16,
    peer: u16,
}

/// A running etcd cluster.
pub(crate) struct EtcdCluster {
    /// Declared before `dir`: the members stop before their directory is removed.
    members: Vec<Running>,
    urls: Vec<String>,
    /// The client URL of the member that led when the cluster was ready.
    leader: String,
    tls: Option<ClientTls>,
    dir: tempfile::TempDir,
}

/// How long the members get to elect a leader.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

impl EtcdCluster {
    /// Starts 3 members (`label` names the cluster and its directory) and waits until each
    /// answers and they have a leader. `mutual_tls`: clients must present a certificate.
    pub(crate) fn start(
        rt: &tokio::runtime::Runtime,
        label: &str,
        mutual_tls: bool,
    ) -> Result<Self, String> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("pvefleet-bench-etcd-{label}-"))
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?;
        let certs = if mutual_tls {
            Some(etcd_certs::make(dir.path())?)
        } else {
            None
        };
        let ports = free_ports(3)?;
        let scheme = if mutual_tls { "https" } else { "http" };
        let initial: Vec<String> = ports
            .iter()
            .enumerate()
            .map(|(i, p)| format!("m{i}=http://127.0.0.1:{}", p.peer))
            .collect();
        let mut cluster = EtcdCluster {
            members: Vec::new(),
            urls: ports
                .iter()
                .map(|p| format!("{scheme}://127.0.0.1:{}", p.client))
                .collect(),
            leader: String::new(),
            tls: certs.as_ref().map(|c| c.client.clone()),
            dir,
        };
        for (i, p) in ports.iter().enumerate() {
            let name = format!("m{i}");
            let client_url = &cluster.urls[i];
            let peer_url = format!("http://127.0.0.1:{}", p.peer);
            let log = cluster.dir.path().join(format!("{name}.log"));
            let log_file =
                std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
            let log_err = log_file
                .try_clone()
                .map_err(|e| format!("{}: {e}", log.display()))?;
            let mut cmd = Command::new(program());
            cmd.arg(format!("--name={name}"))
                .arg(format!(
                    "--data-dir={}",
                    cluster.dir.path().join(&name).display()
                ))
                .arg(format!("--listen-client-urls={client_url}"))
                .arg(format!("--advertise-client-urls={client_url}"))
                .arg(format!("--listen-peer-urls={peer_url}"))
                .arg(format!("--initial-advertise-peer-urls={peer_url}"))
                .arg(format!("--initial-cluster={}", initial.join(",")))
                .arg("--initial-cluster-state=new")
                .arg(format!("--initial-cluster-token=pvefleet-bench-{label}"))
                .args(["--logger=zap", "--log-outputs=stderr", "--log-level=warn"])
                .stdin(Stdio::null())
                .stdout(log_file)
                .stderr(log_err);
            if let Some(c) = &certs {
                cmd.arg("--client-cert-auth")
                    .arg(format!("--trusted-ca-file={}", c.ca_file.display()))
                    .arg(format!("--cert-file={}", c.cert_file.display()))
                    .arg(format!("--key-file={}", c.key_file.display()));
            }
            let child = cmd
                .spawn()
                .map_err(|e| format!("starting {} ({name}): {e}", program()))?;
            cluster.members.push(Running { name, child, log });
        }
        cluster.leader = cluster.wait_leader(rt)?;
        Ok(cluster)
    }

    /// The client mutual TLS material, if the cluster requires it.
    pub(crate) fn tls(&self) -> Option<&ClientTls> {
        self.tls.as_ref()
    }

    /// The client URL of the member that led when the cluster was ready (the bench's clients
    /// talk to the leader, as pvefleet's client does after its first reply).
    pub(crate) fn leader_url(&self) -> &str {
        &self.leader
    }

    /// Waits until every member answers `Status` and they agree on a leader; its client URL.
    fn wait_leader(&mut self, rt: &tokio::runtime::Runtime) -> Result<String, String> {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Some(gone) = self.exited() {
                return Err(format!("{gone}{}", self.logs()));
            }
            let last = match rt.block_on(self.leader()) {
                Ok(url) => return Ok(url),
                Err(e) => e,
            };
            if Instant::now() >= deadline {
                return Err(format!(
                    "no leader within {READY_TIMEOUT:?}: {last}{}",
                    self.logs()
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The leader's client URL, if every member answers and names the same one.
    async fn leader(&self) -> Result<String, String> {
        let mut leaders = Vec::new();
        let mut ids = Vec::new();
        for url in &self.urls {
            let mut c = EtcdClient::connect(url, self.tls.as_ref()).await?;
            let s = c.status().await.map_err(|e| format!("{url}: {e}"))?;
            leaders.push(s.leader);
            ids.push(s.header.map_or(0, |h| h.member_id));
        }
        let leader = leaders[0];
        if leader == 0 || leaders.iter().any(|l| *l != leader) {
            return Err(format!("no agreed leader yet: {leaders:?}"));
        }
        ids.iter()
            .position(|id| *id == leader)
            .map(|i| self.urls[i].clone())
            .ok_or_else(|| format!("leader {leader} is none of {ids:?}"))
    }

    /// A member that is no longer running, named.
    fn exited(&mut self) -> Option<String> {
        self.members.iter_mut().find_map(|m| {
            let status = m.child.try_wait().ok()??;
            Some(format!("etcd member {} exited ({status})", m.name))
        })
    }

    /// The end of every member's log, for an error message.
    fn logs(&self) -> String {
        let mut out = String::new();
        for m in &self.members {
            let text = std::fs::read_to_string(&m.log).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(15)..];
            let _ = write!(
                out,
                "\n--- {} ({}):\n{}",
                m.name,
                m.log.display(),
                tail.join("\n")
            );
        }
        out
    }
}

/// `n` members' worth of free loopback ports, all distinct (every listener is held until all
/// are bound).
fn free_ports(n: usize) -> Result<Vec<Ports>, String> {
    let listeners = (0..2 * n)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("a free port: {e}"))?;
    let ports = listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("a free port: {e}"))?;
    Ok(ports
        .chunks(2)
        .map(|p| Ports {
            client: p[0],
            peer: p[1],
        })
        .collect())
}
