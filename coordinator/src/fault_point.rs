//! A named point where the member dies on purpose, for the tests that prove a retried write
//! applies once: armed by the hidden `run --abort-after-commit METHOD=MARKER`, the first member
//! that commits a write of admin method `METHOD` aborts before it replies, exactly where a
//! leader killed between commit and reply leaves its client. `MARKER` is a file the dying member
//! creates first, so the members of one cluster die there once between them (the client's
//! retry on the next leader commits nothing new and must get its reply). Never armed in
//! production: the module exists only in builds with the `fault-points` cargo feature (the
//! tests crate turns it on; the Debian package's build does not).

use std::path::PathBuf;
use std::sync::OnceLock;

/// The armed point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AbortAfterCommit {
    /// The admin method (`admin.ip_allocate`).
    pub method: String,
    /// The file whose creation claims the one death.
    pub marker: PathBuf,
}

impl std::str::FromStr for AbortAfterCommit {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (method, marker) = s
            .split_once('=')
            .ok_or_else(|| format!("{s:?} is not METHOD=MARKER"))?;
        Ok(AbortAfterCommit {
            method: method.to_string(),
            marker: PathBuf::from(marker),
        })
    }
}

static ARMED: OnceLock<AbortAfterCommit> = OnceLock::new();

/// Arms the point for this process (once).
pub fn arm(point: AbortAfterCommit) {
    let _ = ARMED.set(point);
}

/// Called after a write of `method` committed and before its reply: aborts the process if the
/// point is armed for `method` and no member died there yet.
pub(crate) fn after_commit(method: &str) {
    let Some(point) = ARMED.get() else {
        return;
    };
    if point.method != method {
        return;
    }
    let claimed = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&point.marker)
        .is_ok();
    if claimed {
        tracing::warn!(
            method,
            "fault point: aborting after the commit, before the reply"
        );
        std::process::abort();
    }
}
