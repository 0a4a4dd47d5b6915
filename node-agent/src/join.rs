//! `pvefleet-agent join --token-file FILE ADDR` (the binary reads the token): an agent without a certificate asks the cluster to admit it.
//! The key is made here and only a CSR leaves; the coordinator is trusted through the CA hash
//! pinned in the token; a follower's `NotLeader` names the leader, which is followed. The token
//! must grant the agent role: a certificate for any other role is refused and nothing is
//! written. Then the agent's files are written to its data directory.
//!
//! ```text
//!  prepare_join(token) ─▶ join client (pinned CA) ─▶ JoinRequest{token, CSR} ─▶ coordinator
//!      ◀── NotLeader{leader} (follow) | JoinResponse ── accept (CA, key, id) ─▶ role == agent?
//!      ─▶ NodeDir: node.key (0600), node.pem, ca.pem, cluster.toml
//! ```
//!
//! [`start_command`] says what starts the agent next: on a packaged host, the systemd unit,
//! enabled at install, waiting for `node.pem` in its data directory.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bootstrap::{BootstrapError, NodeDir, PendingJoin};
use protocol::Role;
use protocol::join::JoinResponse;
use serde::Serialize;
use transport::{Endpoint, RemoteCode, TransportError};

use crate::config::DEFAULT_CONFIG_PATH;
use crate::daemon::transport_config;
use crate::session::resolve;

/// The systemd unit of the agent.
pub const UNIT: &str = "pvefleet-agent";

/// How long `join` keeps trying (no leader yet, elections, leader hints).
const JOIN_WAIT: Duration = Duration::from_secs(60);
const RETRY_PAUSE: Duration = Duration::from_millis(500);

/// What `join` needs. `Debug` hides the token.
#[derive(Clone, PartialEq, Eq)]
pub struct JoinOptions {
    /// The join token text (from `pvefleet token create --role agent`).
    pub token: String,
    /// A coordinator's QUIC address (`host:port`) to ask first.
    pub via: String,
    /// The agent's data directory (must not hold a node yet).
    pub data_dir: PathBuf,
}

impl std::fmt::Debug for JoinOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A logged option set must not let its reader join the cluster.
        f.debug_struct("JoinOptions")
            .field("token", &"<redacted>")
            .field("via", &self.via)
            .field("data_dir", &self.data_dir)
            .finish()
    }
}

/// What `join` made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JoinReport {
    /// The id the cluster assigned.
    pub node_id: u64,
    /// The cluster's id.
    pub cluster_id: String,
    /// The data directory written.
    pub data_dir: PathBuf,
    /// How many coordinator members the agent will dial.
    pub members: usize,
}

/// Why joining failed.
#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    /// The directory already holds a node: joining again would orphan it.
    #[error(
        "{dir} already holds a node ({found} exists): run the agent with it, or remove the \
         directory to join anew"
    )]
    AlreadyJoined {
        /// The data directory.
        dir: PathBuf,
        /// The node file found.
        found: PathBuf,
    },
    /// The token is malformed, or the answer does not match what was pinned and sent.
    #[error(transparent)]
    Bootstrap(#[from] bootstrap::JoinError),
    /// No coordinator answered in time.
    #[error("cannot reach a coordinator at {addr}: {reason}")]
    Unreachable {
        /// The address last tried.
        addr: String,
        /// Why.
        reason: String,
    },
    /// The cluster refused the join (token unknown, expired, revoked, used up...).
    #[error("the cluster refused to admit this agent: {message}")]
    Refused {
        /// The cluster's reason.
        message: String,
    },
    /// The token was made for another role than agent.
    #[error(
        "the join token grants the {role} role, not agent: the cluster issued a {role} \
         certificate (node {node_id}) that was discarded, and nothing was written here; join \
         with a token from `pvefleet token create --role agent`"
    )]
    WrongRole {
        /// The role granted.
        role: Role,
        /// The id the cluster assigned.
        node_id: u64,
    },
    /// Writing the node directory failed.
    #[error("cannot write the agent's files: {0}")]
    Write(BootstrapError),
    /// The join client could not be made.
    #[error("cannot make the QUIC join client: {0}")]
    Endpoint(TransportError),
}

impl JoinError {
    /// Whether the cluster (or the token) refused: retrying the same command cannot help.
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            JoinError::Refused { .. }
                | JoinError::WrongRole { .. }
                | JoinError::Bootstrap(
                    bootstrap::JoinError::Token(_) | bootstrap::JoinError::CaMismatch { .. }
                )
        )
    }
}

/// Joins the cluster through `opts.via` and writes the agent's directory.
pub async fn join_cluster(opts: &JoinOptions) -> Result<JoinReport, JoinError> {
    let node_dir = NodeDir::new(&opts.data_dir);
    // Refused before the token is spent.
    if let Some(found) = node_dir.existing_node_file() {
        return Err(JoinError::AlreadyJoined {
            dir: opts.data_dir.clone(),
            found,
        });
    }
    // Agents never listen: they dial the coordinators.
    let pending = bootstrap::prepare_join(&opts.token, None)?;
    let endpoint = Endpoint::join_client(pending.ca_sha256(), transport_config())
        .map_err(JoinError::Endpoint)?;
    let response = ask(&endpoint, &opts.via, &pending).await;
    endpoint.close(Duration::from_millis(200)).await;
    let joined = pending.accept(response?)?;
    if joined.identity.role != Role::Agent {
        return Err(JoinError::WrongRole {
            role: joined.identity.role,
            node_id: joined.identity.node_id,
        });
    }
    joined.write(&node_dir).map_err(JoinError::Write)?;
    Ok(JoinReport {
        node_id: joined.identity.node_id,
        cluster_id: joined.config.cluster_id.clone(),
        data_dir: opts.data_dir.clone(),
        members: joined.config.members.len(),
    })
}

/// The command that starts the agent joined into `data_dir`: restarting the unit (so it
/// passes its condition on `node.pem`) when it serves that directory (`unit_data_dir`: the
/// `data_dir` of [`DEFAULT_CONFIG_PATH`]), else `run` with the configuration (`config`).
pub fn start_command(data_dir: &Path, unit_data_dir: &Path, config: Option<&Path>) -> String {
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    let default_config = config.is_none_or(|c| same(c, Path::new(DEFAULT_CONFIG_PATH)));
    if default_config && same(data_dir, unit_data_dir) {
        return format!("systemctl restart {UNIT}");
    }
    match config.filter(|_| !default_config) {
        Some(config) => format!(
            "pvefleet-agent run --config {}",
            shell_word(&config.to_string_lossy())
        ),
        None => format!(
            "pvefleet-agent run --config FILE (with data_dir = \"{}\")",
            data_dir.display()
        ),
    }
}

/// `word` as one POSIX shell word: unchanged when it has only safe characters, else in single
/// quotes.
fn shell_word(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-./:@%+=,".contains(&b));
    if safe {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Sends the join request, following `NotLeader` hints and waiting out elections (bounded).
/// Only answers that prove nothing was done are retried: a request whose reply was lost may
/// have spent a token use, and is reported instead.
async fn ask(
    endpoint: &Endpoint,
    via: &str,
    pending: &PendingJoin,
) -> Result<JoinResponse, JoinError> {
    let deadline = Instant::now() + JOIN_WAIT;
    let mut addr_text = via.to_string();
    let mut last;
    loop {
        let attempt = match resolve(&addr_text).await {
            Ok(addr) => endpoint
                .connect_join(addr)
                .await
                .map_err(|e| (Some(addr), e)),
            Err(reason) => {
                return Err(JoinError::Unreachable {
                    addr: addr_text,
                    reason,
                });
            }
        };
        match attempt {
            Ok(conn) => {
                let answer = conn.call(pending.request()).await;
                conn.close().await;
                match answer {
                    Ok(response) => return Ok(response),
                    Err(TransportError::Remote(e)) => match e.code {
                        RemoteCode::NotLeader {
                            leader: Some((_, ref leader)),
                        } => {
                            last = e.to_string();
                            addr_text = leader.clone();
                        }
                        RemoteCode::NotLeader { leader: None } | RemoteCode::Unavailable => {
                            last = e.to_string();
                        }
                        _ => return Err(JoinError::Refused { message: e.message }),
                    },
                    Err(e) => {
                        return Err(JoinError::Unreachable {
                            addr: addr_text,
                            reason: format!(
                                "{e}; the token may have been used: check `pvefleet token ls` \
                                 before retrying"
                            ),
                        });
                    }
                }
            }
            Err((addr, TransportError::PeerCertificate { reason, .. })) => {
                let shown = addr.map_or(addr_text.clone(), |a| a.to_string());
                return Err(JoinError::Refused {
                    message: format!(
                        "the coordinator at {shown} is not of the cluster the join token was \
                         made for (its CA does not match the CA sha256 pinned in the token: \
                         {reason}); check the address, or use a token created on that cluster"
                    ),
                });
            }
            Err((_, e)) => last = e.to_string(),
        }
        if Instant::now() >= deadline {
            return Err(JoinError::Unreachable {
                addr: addr_text,
                reason: last,
            });
        }
        tokio::time::sleep(RETRY_PAUSE).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unit_starts_the_agent_only_in_the_directory_it_serves() {
        let unit = Path::new("/var/lib/pvefleet/agent");
        assert_eq!(
            start_command(unit, unit, None),
            "systemctl restart pvefleet-agent"
        );
        assert_eq!(
            start_command(unit, unit, Some(Path::new(DEFAULT_CONFIG_PATH))),
            "systemctl restart pvefleet-agent"
        );
        assert_eq!(
            start_command(Path::new("/tmp/a"), unit, None),
            "pvefleet-agent run --config FILE (with data_dir = \"/tmp/a\")"
        );
        assert_eq!(
            start_command(unit, unit, Some(Path::new("/tmp/my agent.toml"))),
            "pvefleet-agent run --config '/tmp/my agent.toml'"
        );
    }
}
