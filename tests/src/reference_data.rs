//! Reference data vendored in the repository (`tests/data/`): the official PVE API schemas
//! (provenance and license in `tests/data/pve-api/README.md`). Tests read them from the
//! repository only, so a clean clone tests the same way everywhere; a missing file fails the
//! test that needs it, with the path it was looked for at.

use std::path::PathBuf;

/// The `tests/data/` directory.
pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data")
}

/// Read a file below `tests/data/` (e.g. `pve-api/apidata.json`), panicking with a clear
/// message when it is missing (tests only).
pub fn read_reference(rel: &str) -> String {
    let path = data_dir().join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {} ({e}); it is vendored in the repository (tests/data/): restore it",
            path.display()
        )
    })
}
