//! The workspace's real crate graph follows docs/design/architecture.md, "Arrows" (`cargo metadata`),
//! and no source file imports another that imports it back.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use std::process::Command;

#[test]
fn workspace_dependencies_point_only_in_the_allowed_direction() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
    let (members, edges) = pvefleet_tests::architecture::from_metadata(&meta);
    assert!(
        members.contains("pve") && members.contains("pve-sim"),
        "members: {members:?}"
    );
    assert!(
        !edges.is_empty(),
        "no edges found: the metadata reader is broken"
    );
    let v = pvefleet_tests::architecture::violations(&members, &edges);
    assert!(v.is_empty(), "dependency rules broken:\n{}", v.join("\n"));
}

/// No source file refers to another that refers back to it (tests/src/import_cycles.rs says
/// what counts): a cycle means two files are one concept split in two, or share something
/// that belongs in a file of its own.
#[test]
fn no_file_imports_another_that_imports_it_back() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate sits in the workspace");
    let cycles = pvefleet_tests::import_cycles::find_in_workspace(root).expect("sources parse");
    let report: Vec<String> = cycles
        .iter()
        .flat_map(|c| std::iter::once(c.to_string()).chain(c.why()))
        .collect();
    assert!(
        cycles.is_empty(),
        "file import cycles:\n{}",
        report.join("\n")
    );
}

/// Unit-test files follow one naming rule across the workspace: `<module>_tests.rs` beside
/// the module, or `tests.rs` / a `tests/` folder inside a folder module. A `tests_<topic>.rs`
/// (a prefix standing in for a folder) fails.
#[test]
fn unit_test_files_are_named_one_way() {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("a source directory") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("tests_") && n.ends_with(".rs"))
            {
                out.push(path);
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate sits in the workspace");
    let mut wrong = Vec::new();
    for member in std::fs::read_dir(root).expect("the workspace") {
        let src = member.expect("an entry").path().join("src");
        if src.is_dir() {
            walk(&src, &mut wrong);
        }
    }
    assert!(
        wrong.is_empty(),
        "name these <module>_tests.rs or move them into a tests/ folder: {wrong:?}"
    );
}

/// `cargo metadata` with the resolve graph of this platform.
fn resolved_metadata() -> serde_json::Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--offline",
            "--filter-platform",
        ])
        .arg(host_triple())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
    assert!(
        meta["resolve"]["nodes"]
            .as_array()
            .is_some_and(|n| n.len() > 50),
        "no resolve graph: the metadata reader is broken"
    );
    meta
}

/// `fleet` (the pure core) and `protocol` (the wire types) build without tokio, sockets, TLS,
/// storage or HTTP, through any normal dependency (the full resolve graph of `cargo metadata`).
#[test]
fn the_pure_core_and_the_wire_types_reach_no_runtime_or_io_crate() {
    let v = pvefleet_tests::architecture::runtime_violations(&resolved_metadata());
    assert!(v.is_empty(), "the pure core reaches I/O:\n{}", v.join("\n"));
}

/// No shipped binary (`pvefleet-agent`, `pvefleet-coordinator`, `pvefleet`) links the PVE
/// simulator or the lab, through any normal dependency: the test world ships in its own
/// package (`pvefleet-lab`). The package test checks the built binaries' symbols as well.
#[test]
fn no_shipped_binary_links_the_simulator_or_the_lab() {
    let v = pvefleet_tests::architecture::shipped_violations(&resolved_metadata());
    assert!(
        v.is_empty(),
        "the product links its test world:\n{}",
        v.join("\n")
    );
}

/// The host's target triple (`rustc -vV`): the resolve graph of this platform only, which
/// `cargo metadata` can build offline from the crates a build downloaded.
fn host_triple() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(rustc).arg("-vV").output().expect("rustc runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names the host")
        .to_string()
}
