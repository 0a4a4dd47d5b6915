//! The fence record, `<data_dir>/fence.json`: what the agent tells the guard (another
//! process) and its own next run about its lease. Written atomically (a temporary file made
//! 0600, fsync, rename over the old one), so a reader sees either the old record or the new
//! one, never a torn write.
//!
//! ```json
//! {"boot_id": "…", "lease_end_mono_ns": 123456789, "armed": true, "agent_pid": 4242}
//! ```
//!
//! `lease_end_mono_ns` is on `CLOCK_MONOTONIC` ([`super::clock`]), which every process of one
//! boot shares; `boot_id` names that boot, so a record of an earlier boot is never taken for a
//! lease (its clock restarted at the reboot). `armed` says HA guests may run and the lease is
//! what protects them: the guard resets the host when an armed record's lease ended.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The record's file name in the agent's data directory.
pub const RECORD_FILE: &str = "fence.json";
/// Where the kernel tells this boot's id.
const BOOT_ID_FILE: &str = "/proc/sys/kernel/random/boot_id";

/// The fence record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FenceRecord {
    /// The boot the lease end is counted in (`/proc/sys/kernel/random/boot_id`).
    pub boot_id: String,
    /// When the lease ends, on `CLOCK_MONOTONIC`, in nanoseconds.
    pub lease_end_mono_ns: u64,
    /// HA guests may run under this lease: the guard resets the host once it ended.
    pub armed: bool,
    /// The agent process that wrote it.
    pub agent_pid: u32,
}

/// Why the record or the boot id could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The file could not be read.
    #[error("cannot read the fence record {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file holds something else than a record.
    #[error("the fence record {path} is not valid: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's error.
        source: serde_json::Error,
    },
    /// A step of the atomic write failed.
    #[error("cannot write the fence record {path} ({step}): {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The step (create, write, fsync, rename).
        step: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
    /// The boot id is unreadable (no /proc?).
    #[error("cannot read this boot's id from {BOOT_ID_FILE}: {0}")]
    BootId(std::io::Error),
}

/// The record's path in `data_dir`.
pub fn record_path(data_dir: &Path) -> PathBuf {
    data_dir.join(RECORD_FILE)
}

/// This boot's id.
pub fn current_boot_id() -> Result<String, RecordError> {
    std::fs::read_to_string(BOOT_ID_FILE)
        .map(|s| s.trim().to_string())
        .map_err(RecordError::BootId)
}

impl FenceRecord {
    /// Reads the record at `path`; `None` when there is none.
    pub fn read(path: &Path) -> Result<Option<FenceRecord>, RecordError> {
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(RecordError::Read {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|source| RecordError::Parse {
                path: path.to_path_buf(),
                source,
            })
    }

    /// Writes the record to `path` atomically, mode 0600.
    pub fn write(&self, path: &Path) -> Result<(), RecordError> {
        let fail = |step, source| RecordError::Write {
            path: path.to_path_buf(),
            step,
            source,
        };
        // Per writer: the agent and a guard never share a temporary file.
        let tmp = path.with_extension(format!("json.{}.tmp", std::process::id()));
        let text = serde_json::to_vec(self).map_err(|e| fail("encode", e.into()))?;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(|e| fail("create", e))?;
        file.write_all(&text).map_err(|e| fail("write", e))?;
        file.sync_all().map_err(|e| fail("fsync", e))?;
        drop(file);
        std::fs::rename(&tmp, path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            fail("rename", e)
        })
    }

    /// The lease end it states for boot `boot_id`: `None` for a record of another boot, whose
    /// monotonic clock is gone. An end already past means the lease lapsed while no agent ran.
    pub fn lease_end_in(&self, boot_id: &str) -> Option<u64> {
        (self.boot_id == boot_id).then_some(self.lease_end_mono_ns)
    }

    /// Whether it is armed for boot `boot_id` (a record of another boot never is).
    pub fn armed_in(&self, boot_id: &str) -> bool {
        self.armed && self.boot_id == boot_id
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn record(armed: bool) -> FenceRecord {
        FenceRecord {
            boot_id: "b1".into(),
            lease_end_mono_ns: 42_000_000_000,
            armed,
            agent_pid: 4242,
        }
    }

    #[test]
    fn a_record_round_trips_through_its_file_with_mode_0600() {
        let dir = tempfile::tempdir().unwrap();
        let path = record_path(dir.path());
        assert_eq!(FenceRecord::read(&path).unwrap(), None, "no record yet");
        record(true).write(&path).unwrap();
        assert_eq!(FenceRecord::read(&path).unwrap(), Some(record(true)));
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // Replaced whole; no temporary file stays behind.
        record(false).write(&path).unwrap();
        assert_eq!(FenceRecord::read(&path).unwrap(), Some(record(false)));
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, [RECORD_FILE]);
        let text = std::fs::read_to_string(&path).unwrap();
        for field in ["boot_id", "lease_end_mono_ns", "armed", "agent_pid"] {
            assert!(text.contains(&format!("\"{field}\"")), "{text}");
        }
    }

    #[test]
    fn a_world_readable_old_file_is_replaced_by_a_private_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = record_path(dir.path());
        std::fs::write(&path, "{}").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        record(true).write(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn a_record_of_another_boot_states_no_lease_and_is_never_armed() {
        let r = record(true);
        assert_eq!(r.lease_end_in("b1"), Some(42_000_000_000));
        assert!(r.armed_in("b1"));
        assert_eq!(r.lease_end_in("b2"), None);
        assert!(!r.armed_in("b2"));
        assert!(!record(false).armed_in("b1"));
    }

    #[test]
    fn a_torn_or_foreign_file_is_an_error_not_a_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = record_path(dir.path());
        std::fs::write(&path, "{\"boot_id\": \"b1\", \"lease_end").unwrap();
        let e = FenceRecord::read(&path).unwrap_err();
        assert!(e.to_string().contains("fence.json"), "{e}");
    }

    #[test]
    fn this_boot_has_an_id() {
        let id = current_boot_id().unwrap();
        assert_eq!(id.len(), 36, "{id}");
    }
}
