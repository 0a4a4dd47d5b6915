//! The simulated host reset of a node served by `pve-sim`: `POST {url}/_sim/nodes/{node}/power`
//! with `{"action":"reset"}` stops every VM of the node at once, as a host reset would. It is
//! the simulator's control API, beside the PVE API (`/api2/json`), so it is called here and not
//! through the `pve` client.
//!
//! Authentication is the agent's: its API token (`https` backend), or for a `pvesh` backend
//! pointed at the simulator (`PVESIM_URL`, `PVESIM_CA`, `PVESIM_PASSWORD_FILE`, as `pvesh-sim`
//! reads them) a root ticket from `POST /api2/json/access/ticket`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::config::{HttpsSettings, PveConfig};

/// Deadline of one reset call (the guard retries).
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// How the simulator is authenticated against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SimAuth {
    /// An API token file (`USER@REALM!TOKENID=SECRET`).
    Token(PathBuf),
    /// root@pam's password file (a ticket is obtained first).
    RootPassword(PathBuf),
}

/// How the simulator's certificate is trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SimTrust {
    /// The certificates of this PEM file.
    CaFile(PathBuf),
    /// Any (the agent's config says `insecure`, or pins a fingerprint, which this simulated
    /// reset does not check).
    Any,
}

/// The simulated node to reset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimNode {
    /// `https://HOST:PORT` of the simulator.
    pub url: String,
    /// The node name.
    pub node: String,
    /// Authentication.
    pub auth: SimAuth,
    /// Certificate trust.
    pub trust: SimTrust,
}

/// Why the simulated node could not be reset.
#[derive(Debug, thiserror::Error)]
pub enum SimPowerError {
    /// A file of the settings is unreadable.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The HTTP client could not be made.
    #[error("cannot make the HTTP client: {0}")]
    Client(String),
    /// The call failed or was refused.
    #[error("{step}: {reason}")]
    Call {
        /// Which call.
        step: &'static str,
        /// What went wrong.
        reason: String,
    },
}

#[derive(Deserialize)]
struct TicketReply {
    data: Ticket,
}

#[derive(Deserialize)]
struct Ticket {
    ticket: String,
    #[serde(rename = "CSRFPreventionToken")]
    csrf: String,
}

impl SimNode {
    /// The simulated node behind backend `pve` for node `node`: the `https` backend's own
    /// settings; for `pvesh`, the `PVESIM_*` variables of `env`; `None` for the in-process
    /// `sim` backend (its VMs end with the agent) or a `pvesh` without them.
    pub fn of(
        pve: &PveConfig,
        node: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Option<SimNode> {
        match pve {
            PveConfig::Https(https) => Some(SimNode::of_https(https, node)),
            PveConfig::Pvesh(_) => Some(SimNode {
                url: env("PVESIM_URL")?,
                node: node.to_string(),
                auth: SimAuth::RootPassword(env("PVESIM_PASSWORD_FILE")?.into()),
                trust: env("PVESIM_CA").map_or(SimTrust::Any, |ca| SimTrust::CaFile(ca.into())),
            }),
            PveConfig::Sim(_) => None,
        }
    }

    fn of_https(https: &HttpsSettings, node: &str) -> SimNode {
        SimNode {
            url: https.url.clone(),
            node: node.to_string(),
            auth: SimAuth::Token(https.token_file.clone()),
            trust: https
                .ca_file
                .clone()
                .map_or(SimTrust::Any, SimTrust::CaFile),
        }
    }

    /// `POST /_sim/nodes/{node}/power {"action":"reset"}`.
    pub async fn reset(&self) -> Result<(), SimPowerError> {
        let path = format!("/_sim/nodes/{}/power", self.node);
        self.post("reset", &path, &serde_json::json!({"action": "reset"}))
            .await
            .map(|_| ())
    }

    /// `POST {url}{path}` with the JSON `body` to the simulator's control API, authenticated
    /// as the agent is; the reply's `data`. `step` names the call in errors.
    pub async fn post(
        &self,
        step: &'static str,
        path: &str,
        body: &serde_json::Value,
    ) -> Result<serde_json::Value, SimPowerError> {
        let client = self.client()?;
        let base = self.url.trim_end_matches('/');
        let request = client.post(format!("{base}{path}")).json(body);
        let request = match &self.auth {
            SimAuth::Token(file) => {
                let token = read_line(file)?;
                request.header("Authorization", format!("PVEAPIToken={token}"))
            }
            SimAuth::RootPassword(file) => {
                let ticket = self.login(&client, base, &read_line(file)?).await?;
                request
                    .header("Cookie", format!("PVEAuthCookie={}", ticket.ticket))
                    .header("CSRFPreventionToken", ticket.csrf)
            }
        };
        let reply = request.send().await.map_err(|e| SimPowerError::Call {
            step,
            reason: e.to_string(),
        })?;
        let status = reply.status();
        let body = reply.text().await.unwrap_or_default();
        if !status.is_success() {
            // The control API answers PVE's envelope: the message says why.
            let message = serde_json::from_str::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| {
                    v.get("message")
                        .and_then(|m| m.as_str())
                        .map(str::to_string)
                })
                .unwrap_or(body);
            return Err(SimPowerError::Call {
                step,
                reason: format!("{status}: {}", message.trim()),
            });
        }
        Ok(serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|mut v| v.get_mut("data").map(serde_json::Value::take))
            .unwrap_or(serde_json::Value::Null))
    }

    async fn login(
        &self,
        client: &reqwest::Client,
        base: &str,
        password: &str,
    ) -> Result<Ticket, SimPowerError> {
        let fail = |reason: String| SimPowerError::Call {
            step: "login",
            reason,
        };
        let body = form_urlencoded::Serializer::new(String::new())
            .append_pair("username", "root@pam")
            .append_pair("password", password)
            .finish();
        let reply = client
            .post(format!("{base}/api2/json/access/ticket"))
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .map_err(|e| fail(e.to_string()))?;
        if !reply.status().is_success() {
            return Err(fail(reply.status().to_string()));
        }
        let ticket: TicketReply = reply.json().await.map_err(|e| fail(e.to_string()))?;
        Ok(ticket.data)
    }

    fn client(&self) -> Result<reqwest::Client, SimPowerError> {
        // The binary installs ring already; a test or another caller may not have.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let builder = reqwest::Client::builder().timeout(CALL_TIMEOUT);
        let builder = match &self.trust {
            SimTrust::CaFile(path) => {
                let pem = std::fs::read(path).map_err(|source| SimPowerError::Read {
                    path: path.clone(),
                    source,
                })?;
                let certs = reqwest::Certificate::from_pem_bundle(&pem)
                    .map_err(|e| SimPowerError::Client(format!("{}: {e}", path.display())))?;
                builder.tls_certs_only(certs)
            }
            SimTrust::Any => builder.danger_accept_invalid_certs(true),
        };
        builder
            .build()
            .map_err(|e| SimPowerError::Client(e.to_string()))
    }
}

fn read_line(path: &Path) -> Result<String, SimPowerError> {
    std::fs::read_to_string(path)
        .map(|s| s.lines().next().unwrap_or_default().trim().to_string())
        .map_err(|source| SimPowerError::Read {
            path: path.to_path_buf(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{PveshSettings, SimSettings};

    #[test]
    fn the_node_to_reset_follows_the_backend() {
        let https = PveConfig::Https(HttpsSettings {
            url: "https://127.0.0.1:8443".into(),
            token_file: "/t".into(),
            ca_file: Some("/ca.pem".into()),
            fingerprint: None,
            insecure: false,
            migration_address: None,
        });
        let none = |_: &str| None;
        assert_eq!(
            SimNode::of(&https, "pve-a", none),
            Some(SimNode {
                url: "https://127.0.0.1:8443".into(),
                node: "pve-a".into(),
                auth: SimAuth::Token("/t".into()),
                trust: SimTrust::CaFile("/ca.pem".into()),
            })
        );
        assert_eq!(
            SimNode::of(&PveConfig::Sim(SimSettings::default()), "pve-a", none),
            None,
            "in-process: the VMs end with the agent"
        );
        let pvesh = PveConfig::Pvesh(PveshSettings {
            program: "pvesh".into(),
            timeout_secs: 60,
        });
        assert_eq!(SimNode::of(&pvesh, "pve-a", none), None);
        let env = |k: &str| match k {
            "PVESIM_URL" => Some("https://127.0.0.1:9".to_string()),
            "PVESIM_PASSWORD_FILE" => Some("/pw".to_string()),
            _ => None,
        };
        assert_eq!(
            SimNode::of(&pvesh, "pve-a", env).map(|n| (n.auth, n.trust)),
            Some((SimAuth::RootPassword("/pw".into()), SimTrust::Any))
        );
    }
}
