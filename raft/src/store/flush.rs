//! One flush at a time on the store's sled database. The log store (appends, votes) and the
//! snapshot store flush the same `Db` from different openraft tasks, and sled 0.34's
//! `flush_async` was seen to stop making progress when many tasks flushed at once (the node
//! agent's journal tests hit it). Serialising costs nothing a flush would not cost anyway: each
//! flush already writes everything dirty, so a waiting one finds little left to do.

use std::sync::Arc;

/// The shared database handle that flushes one caller at a time.
#[derive(Clone)]
pub(crate) struct Flusher {
    db: sled::Db,
    one_at_a_time: Arc<tokio::sync::Mutex<()>>,
}

impl Flusher {
    pub(crate) fn new(db: sled::Db) -> Flusher {
        Flusher {
            db,
            one_at_a_time: Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    /// Makes everything written before the call durable (`Db::flush_async`).
    pub(crate) async fn flush_async(&self) -> sled::Result<usize> {
        let _turn = self.one_at_a_time.lock().await;
        self.db.flush_async().await
    }
}
