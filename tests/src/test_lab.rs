//! How the tests use the `lab` launcher: options (a directory the test owns, the children's
//! stderr in the test's output), the runtime a synchronous test drives it on, the built
//! binaries, and the TLS provider every test process installs.

use std::path::{Path, PathBuf};

use lab::{Binaries, LabOptions, Stderr};

/// Install ring as the process-wide rustls provider (idempotent).
pub fn install_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A built binary of this workspace (`pve-sim`, `pvesh-sim`, ...), beside the test
/// executable's `deps/` directory (cargo builds every workspace binary for `--workspace`
/// test runs).
pub fn workspace_binary(name: &str) -> PathBuf {
    Binaries::beside_current_exe()
        .and_then(|b| b.path(name))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The lab options of a test: a directory the test owns, children's stderr into the test's
/// output at PVEFLEET_TEST_LOG (default `warn`).
pub fn test_lab_options(dir: &Path, cluster_id: &str) -> LabOptions {
    let mut options = LabOptions::new(Binaries::beside_current_exe().expect("test binary path"));
    options.dir = Some(dir.to_path_buf());
    options.cluster_id = cluster_id.to_string();
    options.stderr = Stderr::Inherit;
    options.log_filter = std::env::var("PVEFLEET_TEST_LOG").unwrap_or_else(|_| "warn".into());
    options
}

/// The runtime a synchronous test drives the launcher (and its own async calls) on.
pub fn test_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}
