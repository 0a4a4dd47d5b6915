//! The agent's answer to a diagnosis ([`protocol::agent::DiagnoseOp`]): what it finds about
//! itself and its PVE node, read now: its version, PVE's version, what its API token lacks
//! (its own privileges from `GET /access/permissions`, against
//! [`crate::required_privileges`]), how it trusts PVE's certificate, the snippet storages,
//! its clock against the leader's ([`ClockWatch`]), its certificate's and the CA's expiry,
//! and the capabilities VIPs take. It changes nothing.

use std::collections::BTreeMap;

use bootstrap::paths::read_public;
use bootstrap::{NodeDir, certificate_not_after};
use protocol::agent::{HostDiagnosis, PveFacts, PveTrust};

use crate::capabilities::missing_vip_capabilities_now;
use crate::clock_watch::ClockWatch;
use crate::config::PveConfig;
use crate::required_privileges::{major_of, missing, paths, requirements};

/// What a diagnosis reads from.
#[derive(Clone)]
pub struct Diagnoser {
    client: pve::Client,
    node: String,
    trust: PveTrust,
    dir: NodeDir,
    clock: ClockWatch,
    /// VIPs are held simulated (no capabilities needed).
    vips_simulated: bool,
}

impl std::fmt::Debug for Diagnoser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Diagnoser")
            .field("node", &self.node)
            .field("trust", &self.trust)
            .finish_non_exhaustive()
    }
}

/// How `config` trusts PVE's certificate.
pub fn trust_of(config: &PveConfig) -> PveTrust {
    match config {
        PveConfig::Https(h) if h.insecure => PveTrust::Insecure,
        PveConfig::Https(h) if h.fingerprint.is_some() => PveTrust::Fingerprint,
        PveConfig::Https(h) if h.ca_file.is_some() => PveTrust::CaFile,
        PveConfig::Https(_) => PveTrust::SystemRoots,
        PveConfig::Pvesh(_) => PveTrust::Local,
    }
}

impl Diagnoser {
    /// A diagnoser of `node` through `client`.
    pub fn new(
        client: pve::Client,
        node: impl Into<String>,
        trust: PveTrust,
        dir: NodeDir,
        clock: ClockWatch,
        vips_simulated: bool,
    ) -> Diagnoser {
        Diagnoser {
            client,
            node: node.into(),
            trust,
            dir,
            clock,
            vips_simulated,
        }
    }

    /// The facts as they are now.
    pub async fn facts(&self) -> HostDiagnosis {
        let not_after = |path: std::path::PathBuf| {
            read_public(&path)
                .ok()
                .and_then(|pem| certificate_not_after(&pem).ok())
                .unwrap_or(0)
        };
        HostDiagnosis {
            agent_version: env!("CARGO_PKG_VERSION").to_string(),
            pve: self.pve().await,
            clock: self.clock.latest(),
            certificate_not_after: not_after(self.dir.node_cert()),
            ca_not_after: not_after(self.dir.ca_cert()),
            missing_capabilities: if self.vips_simulated {
                Vec::new()
            } else {
                missing_vip_capabilities_now()
            },
        }
    }

    async fn pve(&self) -> Result<PveFacts, String> {
        let version = self
            .client
            .version()
            .await
            .map_err(|e| format!("GET /version: {e}"))?
            .version;
        let reqs = requirements(&self.node, major_of(&version));
        let mut held = BTreeMap::new();
        let mut unreadable = None;
        for path in paths(&reqs) {
            match self.client.permissions(&path).await {
                Ok(privileges) => {
                    held.insert(path, privileges);
                }
                Err(e) => {
                    unreadable = Some(format!("GET /access/permissions?path={path}: {e}"));
                    break;
                }
            }
        }
        let missing_privileges = match unreadable {
            Some(why) => Err(why),
            None => Ok(missing(&reqs, &held)),
        };
        let snippet_storages = match self
            .client
            .storage_list(&self.node, &pve::calls::StorageFilter::default())
            .await
        {
            Ok(list) => list
                .into_iter()
                .filter(|s| s.active.unwrap_or(true) && s.enabled.unwrap_or(true))
                .filter(|s| s.content.split(',').any(|c| c.trim() == "snippets"))
                .map(|s| s.storage)
                .collect(),
            Err(e) => return Err(format!("GET /nodes/{}/storage: {e}", self.node)),
        };
        Ok(PveFacts {
            version,
            trust: self.trust,
            missing_privileges,
            snippet_storages,
        })
    }
}
