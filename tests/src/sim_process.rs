//! The real `pve-sim` binary as a process for end-to-end tests, started by the `lab`
//! launcher on a free loopback port with its state in a temporary directory, and killed when
//! the handle is dropped.

use lab::Binaries;
use lab::pve_node::{SimReady, SimServer};

use crate::test_lab::test_runtime;

/// A running simulator process.
pub struct SimProcess {
    /// Its ready line.
    pub ready: SimReady,
    // Declared before the runtime it was started on.
    server: Option<SimServer>,
    rt: tokio::runtime::Runtime,
    _dir: tempfile::TempDir,
}

impl SimProcess {
    /// Start `pve-sim serve` with extra arguments (e.g. `--time-scale 0.2`).
    pub fn start(extra: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let rt = test_runtime();
        let bins = Binaries::beside_current_exe().expect("test binary path");
        let args: Vec<String> = extra.iter().map(|s| (*s).to_string()).collect();
        let state = dir.path().join("state");
        let log = dir.path().join("pve-sim.log");
        let server = rt
            .block_on(SimServer::start(
                &bins,
                "pve-sim",
                &state,
                &args,
                &log,
                lab::Stderr::Inherit,
            ))
            .unwrap_or_else(|e| panic!("{e}"));
        Self {
            ready: server.ready.clone(),
            server: Some(server),
            rt,
            _dir: dir,
        }
    }

    /// Host part of the listen address.
    pub fn host(&self) -> &str {
        self.ready.host()
    }

    /// Port of the listen address.
    pub fn port(&self) -> u16 {
        self.ready.port()
    }
}

impl Drop for SimProcess {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            self.rt
                .block_on(server.stop(std::time::Duration::from_secs(5)));
        }
    }
}
