//! How the store opens its sled database.

use std::time::Duration;

/// sled 0.34's own background-flush period, named here so the store does not silently follow
/// a change of sled's default.
pub const DEFAULT_PERIODIC_FLUSH: Duration = Duration::from_millis(500);

/// sled's page cache; the coordinator's state is small, sled's 1 GiB default is not needed.
pub(crate) const CACHE_CAPACITY: u64 = 64 * 1024 * 1024;

/// Options of [`open_with`](super::open_with); [`StoreOptions::default`] is what production uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreOptions {
    /// Period of sled's background flusher; `None` runs no background flush.
    ///
    /// Durability never depends on it: every operation the store reports durable (`save_vote`,
    /// the `append` callback, `truncate`, `purge`, a snapshot build or install) flushes
    /// explicitly before it returns. The background flush only bounds how long writes that are
    /// not reported durable (`save_committed`, the removals after a purge point) stay in memory.
    /// Crash tests turn it off so that a missing explicit flush cannot be hidden by a background
    /// one that happened to run before the kill.
    pub periodic_flush: Option<Duration>,
}

impl Default for StoreOptions {
    fn default() -> StoreOptions {
        StoreOptions {
            periodic_flush: Some(DEFAULT_PERIODIC_FLUSH),
        }
    }
}

impl StoreOptions {
    /// The sled configuration for a store in `dir`.
    pub(crate) fn sled_config(&self, dir: &std::path::Path) -> sled::Config {
        // sled takes whole milliseconds; a sub-millisecond period becomes 1 ms, not "never".
        let every_ms = self
            .periodic_flush
            .map(|period| u64::try_from(period.as_millis()).unwrap_or(u64::MAX).max(1));
        sled::Config::new()
            .path(dir)
            .cache_capacity(CACHE_CAPACITY)
            .flush_every_ms(every_ms)
    }
}
