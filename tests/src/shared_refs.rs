//! Where the shared references live: `../shared` beside the repository (as on developer
//! machines and in CI), or `PVEFLEET_SHARED`. Missing references fail the tests that need
//! them with a message saying where they were looked for; nothing is skipped.

use std::path::PathBuf;

/// The `shared/` directory.
pub fn shared_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("PVEFLEET_SHARED") {
        return PathBuf::from(dir);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared")
}

/// Read a file below `shared/`, panicking with a clear message when it is missing (tests only).
pub fn read_shared(rel: &str) -> String {
    let path = shared_dir().join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {} ({e}); the shared references must sit beside the repository \
             (../shared) or be named by PVEFLEET_SHARED",
            path.display()
        )
    })
}
