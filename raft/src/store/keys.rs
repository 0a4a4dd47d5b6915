//! Tree names and keys of the Raft store's sled database. The log trees are only read to move
//! a store of an earlier build to the journal (their keys are big-endian indexes); snapshot
//! keys carry a generation so a new snapshot never overwrites the current one before the
//! pointer flips to it.

use std::ops::Bound;
use std::ops::RangeBounds;

/// Log entries of an earlier build, keyed by big-endian index.
pub(crate) const LOGS_TREE: &str = "logs";
/// Vote, last purged log id and committed log id.
pub(crate) const META_TREE: &str = "meta";
/// Snapshots (generations and the pointer to the current one).
pub(crate) const SM_TREE: &str = "sm";

/// The last vote (`Vote`).
pub(crate) const VOTE: &[u8] = b"vote";
/// The last purged log id (`LogId`).
pub(crate) const LAST_PURGED: &[u8] = b"last_purged";
/// The last committed log id (`Option<LogId>`).
pub(crate) const COMMITTED: &[u8] = b"committed";

/// The generation of the current snapshot (`u64`).
pub(crate) const SNAPSHOT_CURRENT: &[u8] = b"snapshot.current";
/// Prefix of every snapshot generation's keys.
pub(crate) const SNAPSHOT_GEN_PREFIX: &[u8] = b"snapshot.gen/";

/// Which half of a stored snapshot a key holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SnapshotPart {
    /// `SnapshotMeta`, bincode.
    Meta,
    /// The machine's snapshot bytes, raw.
    Data,
}

impl SnapshotPart {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SnapshotPart::Meta => "meta",
            SnapshotPart::Data => "data",
        }
    }
}

/// The key of one half of snapshot generation `generation`.
pub(crate) fn snapshot_key(generation: u64, part: SnapshotPart) -> Vec<u8> {
    let mut key = SNAPSHOT_GEN_PREFIX.to_vec();
    key.extend_from_slice(&generation.to_be_bytes());
    key.push(b'/');
    key.extend_from_slice(part.as_str().as_bytes());
    key
}

/// The generation named by a snapshot key, if it is one.
pub(crate) fn snapshot_generation(key: &[u8]) -> Option<u64> {
    let rest = key.strip_prefix(SNAPSHOT_GEN_PREFIX)?;
    let bytes: [u8; 8] = rest.get(..8)?.try_into().ok()?;
    Some(u64::from_be_bytes(bytes))
}

/// A log index range as a half-open `[start, end)`, `end == None` meaning unbounded; `None`
/// when the range is empty (a map must never see an inverted range).
pub(crate) fn index_range<R: RangeBounds<u64>>(range: &R) -> Option<(u64, Option<u64>)> {
    let start = match range.start_bound() {
        Bound::Included(&i) => i,
        Bound::Excluded(&i) => i.checked_add(1)?,
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&i) => i.checked_add(1),
        Bound::Excluded(&i) => Some(i),
        Bound::Unbounded => None,
    };
    match end {
        Some(end) if end <= start => None,
        _ => Some((start, end)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_keys_name_their_generation() {
        let key = snapshot_key(42, SnapshotPart::Data);
        assert_eq!(snapshot_generation(&key), Some(42));
        assert_eq!(snapshot_generation(SNAPSHOT_CURRENT), None);
        assert_ne!(key, snapshot_key(42, SnapshotPart::Meta));
    }

    #[test]
    #[allow(clippy::reversed_empty_ranges)] // an inverted range is the case under test
    fn index_ranges_are_half_open_and_never_inverted() {
        assert_eq!(index_range(&(3..7)), Some((3, Some(7))));
        assert_eq!(index_range(&(3..=7)), Some((3, Some(8))));
        assert_eq!(index_range(&(3..)), Some((3, None)));
        assert_eq!(index_range(&(..=u64::MAX)), Some((0, None)));
        assert_eq!(index_range(&(7..3)), None);
        assert_eq!(index_range(&(5..5)), None);
    }
}
