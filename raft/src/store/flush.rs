//! Making the store's sled database durable. sled 0.34's own flush writes its buffers and
//! calls `sync_file_range`, which neither writes the file's size nor flushes the disk's write
//! cache, and it never syncs the files it keeps large values in (`blobs/`): a flushed write
//! survives a killed process, not a power cut. So every flush that reports something durable
//! (a snapshot, the moved-log marker) is followed by an `fsync` of sled's files.
//!
//! One flush at a time: the snapshot store flushes from different openraft tasks, and sled
//! 0.34's `flush_async` was seen to stop making progress when many tasks flushed at once (the
//! node agent's journal tests hit it). Serialising costs nothing a flush would not cost anyway.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::RaftStoreError;
use crate::store::journal::sync_dir;

/// The shared database handle that flushes one caller at a time.
#[derive(Clone)]
pub(crate) struct Flusher {
    db: sled::Db,
    dir: PathBuf,
    one_at_a_time: Arc<tokio::sync::Mutex<()>>,
}

impl Flusher {
    /// `db`, opened in `dir`.
    pub(crate) fn new(db: sled::Db, dir: &Path) -> Flusher {
        Flusher {
            db,
            dir: dir.to_path_buf(),
            one_at_a_time: Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    /// Makes everything written before the call durable, power cuts included.
    pub(crate) async fn flush_async(&self) -> Result<(), RaftStoreError> {
        let _turn = self.one_at_a_time.lock().await;
        self.db.flush_async().await?;
        let dir = self.dir.clone();
        tokio::task::spawn_blocking(move || sync_sled_files(&dir))
            .await
            .map_err(|e| RaftStoreError::Io {
                what: "sync the sled files".to_owned(),
                source: std::io::Error::other(e.to_string()),
            })?
    }

    /// [`Flusher::flush_async`] for the synchronous open.
    pub(crate) fn flush_blocking(&self) -> Result<(), RaftStoreError> {
        self.db.flush()?;
        sync_sled_files(&self.dir)
    }
}

/// `fsync` of sled's files in `dir`: the database file, the value files in `blobs/` and both
/// directories.
fn sync_sled_files(dir: &Path) -> Result<(), RaftStoreError> {
    let io = |what: String| move |source| RaftStoreError::Io { what, source };
    let db = dir.join("db");
    std::fs::File::open(&db)
        .and_then(|f| f.sync_all())
        .map_err(io(format!("sync {}", db.display())))?;
    let blobs = dir.join("blobs");
    if blobs.is_dir() {
        let entries = std::fs::read_dir(&blobs).map_err(io(format!("list {}", blobs.display())))?;
        for entry in entries {
            let path = entry
                .map_err(io(format!("list {}", blobs.display())))?
                .path();
            match std::fs::File::open(&path).and_then(|f| f.sync_all()) {
                Ok(()) => {}
                // sled removed it meanwhile (a value it no longer needs).
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io(format!("sync {}", path.display()))(e)),
            }
        }
        sync_dir(&blobs).map_err(io(format!("sync {}", blobs.display())))?;
    }
    sync_dir(dir).map_err(io(format!("sync {}", dir.display())))
}
