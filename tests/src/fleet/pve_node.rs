//! A look at a simulated PVE host behind the fleet's back: a PVE API client (API token, CA
//! file) for a `pve-sim serve` process the lab started.

use std::time::Duration;

use lab::pve_node::{PveNode, SimReady};
use pve::Client;
use pve::https::{HttpsAuth, HttpsBackend, HttpsConfig, TlsVerify};

/// A PVE API client for a simulator process.
fn sim_client(ready: &SimReady) -> Client {
    let mut cfg = HttpsConfig::new(
        ready.host(),
        HttpsAuth::Token {
            token_file: ready.token_file.clone(),
        },
        TlsVerify::CaFile(ready.cert.clone()),
    );
    cfg.port = ready.port();
    cfg.timeout = Duration::from_secs(20);
    Client::new(HttpsBackend::new(cfg).expect("https backend"))
}

/// The client of a lab's PVE host.
pub trait PveClient {
    /// A PVE API client for the node (API token, CA file).
    fn client(&self) -> Client;
}

impl PveClient for PveNode {
    fn client(&self) -> Client {
        sim_client(&self.server.ready)
    }
}
