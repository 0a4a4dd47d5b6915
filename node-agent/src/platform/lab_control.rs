//! The lab platform's hand on its host: the control API of the `pve-sim` process serving this
//! host's node, beside the PVE API (`/api2/json`), for what a PVE host does outside that API.
//! `POST {url}/_sim/nodes/{node}/power` with `{"action":"reset"}` stops every VM of the node at
//! once, as a host reset would; `/_sim/pmxcfs/...` edits the simulated cluster filesystem;
//! `PUT /_sim/snippets/...` stores a snippet file. It is called here and not through the `pve`
//! client because it is not PVE's API.
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
pub enum ControlAuth {
    /// An API token file (`USER@REALM!TOKENID=SECRET`).
    Token(PathBuf),
    /// root@pam's password file (a ticket is obtained first).
    RootPassword(PathBuf),
}

/// How the simulator's certificate is trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControlTrust {
    /// The certificates of this PEM file.
    CaFile(PathBuf),
    /// Any (the agent's config says `insecure`, or pins a fingerprint, which these calls do
    /// not check).
    Any,
}

/// The simulator's control API for one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabControl {
    /// `https://HOST:PORT` of the simulator.
    pub url: String,
    /// The node name.
    pub node: String,
    /// Authentication.
    pub auth: ControlAuth,
    /// Certificate trust.
    pub trust: ControlTrust,
}

/// Why a call to the control API failed.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
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

impl LabControl {
    /// The control API of the simulator behind backend `pve`, acting on node `node`: the
    /// `https` backend's own URL, token and CA; for `pvesh`, the `PVESIM_*` variables of `env`
    /// (as `pvesh-sim` reads them); `None` for a `pvesh` without them.
    pub fn of(
        pve: &PveConfig,
        node: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Option<LabControl> {
        match pve {
            PveConfig::Https(https) => Some(LabControl::of_https(https, node)),
            PveConfig::Pvesh(_) => Some(LabControl {
                url: env("PVESIM_URL")?,
                node: node.to_string(),
                auth: ControlAuth::RootPassword(env("PVESIM_PASSWORD_FILE")?.into()),
                trust: env("PVESIM_CA")
                    .map_or(ControlTrust::Any, |ca| ControlTrust::CaFile(ca.into())),
            }),
        }
    }

    fn of_https(https: &HttpsSettings, node: &str) -> LabControl {
        LabControl {
            url: https.url.clone(),
            node: node.to_string(),
            auth: ControlAuth::Token(https.token_file.clone()),
            trust: https
                .ca_file
                .clone()
                .map_or(ControlTrust::Any, ControlTrust::CaFile),
        }
    }

    /// `POST /_sim/nodes/{node}/power {"action":"reset"}`.
    pub async fn reset(&self) -> Result<(), ControlError> {
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
    ) -> Result<serde_json::Value, ControlError> {
        let client = self.client()?;
        let base = self.url.trim_end_matches('/');
        self.send(
            step,
            &client,
            client.post(format!("{base}{path}")).json(body),
        )
        .await
    }

    /// `PUT /_sim/snippets/{node}/{storage}/{file}` with `content`: the snippet's volume id.
    pub async fn put_snippet(
        &self,
        storage: &str,
        file: &str,
        content: &str,
    ) -> Result<String, ControlError> {
        let client = self.client()?;
        let base = self.url.trim_end_matches('/');
        let url = format!("{base}/_sim/snippets/{}/{storage}/{file}", self.node);
        let data = self
            .send(
                "snippet",
                &client,
                client.put(url).body(content.to_string()),
            )
            .await?;
        data.as_str()
            .map(str::to_string)
            .ok_or_else(|| ControlError::Call {
                step: "snippet",
                reason: format!("the simulator answered {data} instead of a volume id"),
            })
    }

    /// Sends `request` with the agent's credentials; the reply's `data`.
    async fn send(
        &self,
        step: &'static str,
        client: &reqwest::Client,
        request: reqwest::RequestBuilder,
    ) -> Result<serde_json::Value, ControlError> {
        let base = self.url.trim_end_matches('/');
        let request = match &self.auth {
            ControlAuth::Token(file) => {
                let token = read_line(file)?;
                request.header("Authorization", format!("PVEAPIToken={token}"))
            }
            ControlAuth::RootPassword(file) => {
                let ticket = self.login(client, base, &read_line(file)?).await?;
                request
                    .header("Cookie", format!("PVEAuthCookie={}", ticket.ticket))
                    .header("CSRFPreventionToken", ticket.csrf)
            }
        };
        let reply = request.send().await.map_err(|e| ControlError::Call {
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
            return Err(ControlError::Call {
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
    ) -> Result<Ticket, ControlError> {
        let fail = |reason: String| ControlError::Call {
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

    fn client(&self) -> Result<reqwest::Client, ControlError> {
        // The binary installs ring already; a test or another caller may not have.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let builder = reqwest::Client::builder().timeout(CALL_TIMEOUT);
        let builder = match &self.trust {
            ControlTrust::CaFile(path) => {
                let pem = std::fs::read(path).map_err(|source| ControlError::Read {
                    path: path.clone(),
                    source,
                })?;
                let certs = reqwest::Certificate::from_pem_bundle(&pem)
                    .map_err(|e| ControlError::Client(format!("{}: {e}", path.display())))?;
                builder.tls_certs_only(certs)
            }
            ControlTrust::Any => builder.danger_accept_invalid_certs(true),
        };
        builder
            .build()
            .map_err(|e| ControlError::Client(e.to_string()))
    }
}

fn read_line(path: &Path) -> Result<String, ControlError> {
    std::fs::read_to_string(path)
        .map(|s| s.lines().next().unwrap_or_default().trim().to_string())
        .map_err(|source| ControlError::Read {
            path: path.to_path_buf(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::PveshSettings;

    #[test]
    fn the_control_api_follows_the_backend() {
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
            LabControl::of(&https, "pve-a", none),
            Some(LabControl {
                url: "https://127.0.0.1:8443".into(),
                node: "pve-a".into(),
                auth: ControlAuth::Token("/t".into()),
                trust: ControlTrust::CaFile("/ca.pem".into()),
            })
        );
        let pvesh = PveConfig::Pvesh(PveshSettings {
            program: "pvesh".into(),
            timeout_secs: 60,
        });
        assert_eq!(LabControl::of(&pvesh, "pve-a", none), None);
        let env = |k: &str| match k {
            "PVESIM_URL" => Some("https://127.0.0.1:9".to_string()),
            "PVESIM_PASSWORD_FILE" => Some("/pw".to_string()),
            _ => None,
        };
        assert_eq!(
            LabControl::of(&pvesh, "pve-a", env).map(|n| (n.auth, n.trust)),
            Some((ControlAuth::RootPassword("/pw".into()), ControlTrust::Any))
        );
    }
}
