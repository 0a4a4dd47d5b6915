//! A real third-party client, proxmoxer (PyPI), drives the simulator over HTTPS with an API
//! token: nodes, create, clone, start, status and digest, snapshot and rollback, stop and
//! destroy, and PVE's exact error texts for a locked VM and a duplicate VMID.
//!
//! The Python environment is made by `make pyenv` (part of `make verify`) and named by
//! `PVEFLEET_PYTHON`; without it this test fails and says how to make it.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use std::path::PathBuf;
use std::process::Command;

use pvefleet_tests::sim_process::SimProcess;

fn python() -> PathBuf {
    let py = std::env::var("PVEFLEET_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/pyenv/bin/python")
        });
    assert!(
        py.exists(),
        "{} missing: run `make pyenv` (a virtualenv with tests/python/requirements.txt)",
        py.display()
    );
    py
}

#[test]
fn proxmoxer_drives_the_simulator_through_a_vm_lifecycle() {
    let py = python();
    // Realistic task durations so the clone's lock is observable while it runs.
    let sim = SimProcess::start(&["--time-scale", "1.0"]);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/proxmoxer_flow.py");
    let out = Command::new(py)
        .arg(script)
        .arg(sim.host())
        .arg(sim.port().to_string())
        .arg(&sim.ready.token_file)
        .arg(&sim.ready.cert)
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.trim_end().ends_with("PASS"),
        "proxmoxer flow failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    for expected in [
        "duplicate VMID refused",
        "locked VM refused",
        "snapshot and rollback",
        "stopped and destroyed",
    ] {
        assert!(
            stdout.contains(expected),
            "step '{expected}' missing:\n{stdout}"
        );
    }
}
