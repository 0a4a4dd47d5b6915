//! The workspace's real crate graph follows docs/design/architecture.md, "Arrows" (`cargo metadata`).
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
