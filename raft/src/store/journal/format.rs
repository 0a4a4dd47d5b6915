//! What names and versions the journal's files: the format version in every segment header
//! and a segment's file name (read by the journal and by its replay).

/// The journal's own format version (in every segment header).
pub(crate) const JOURNAL_FORMAT: u8 = 1;

/// The file name of segment `number`.
pub(crate) fn segment_name(number: u64) -> String {
    format!("segment-{number:016x}.log")
}
