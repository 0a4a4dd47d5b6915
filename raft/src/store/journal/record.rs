//! The journal's records and their framing: `[body length: u32 LE][CRC-32 of body: u32 LE]
//! [body]`, the body being a kind byte and the bincode value. Reading a segment back tells a
//! torn tail (an unacknowledged write cut short by a crash: it is dropped) from damage in the
//! middle (refused, never skipped).

use serde::{Deserialize, Serialize};

use crate::error::RaftStoreError;
use crate::types::{Entry, LogId, NodeId};

/// The framing before each body.
pub(crate) const FRAME_HEADER: usize = 8;
/// The largest body accepted when reading; a larger length is damage.
const MAX_BODY: usize = 256 * 1024 * 1024;

const BINCODE: bincode::config::Configuration = bincode::config::standard();

/// The state a segment starts from: everything but the entries, as of its creation. Older
/// segments can be deleted once this is on disk.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Checkpoint {
    pub(crate) vote: Option<openraft::Vote<NodeId>>,
    pub(crate) committed: Option<LogId>,
    pub(crate) purged: Option<LogId>,
}

/// One record of the journal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) enum Record {
    /// The first record of every segment: the journal format, the segment's number and the
    /// state before its first record.
    Header {
        format: u8,
        segment: u64,
        checkpoint: Checkpoint,
    },
    /// The entries of one append, in order (each replaces one at the same index). One record,
    /// so an append cut short by a crash is dropped whole.
    Entries(Vec<Entry>),
    /// The vote.
    Vote(openraft::Vote<NodeId>),
    /// The committed log id.
    Committed(Option<LogId>),
    /// Entries at this index and after are removed.
    TruncateFrom(u64),
    /// Entries up to this log id are removed; it is the new purge point.
    PurgeUpTo(LogId),
}

/// How a segment's bytes ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Tail {
    /// Every byte belongs to a whole, intact record.
    Clean,
    /// The bytes from this offset on are the remains of a write cut short (incomplete, zeroed,
    /// or a damaged last record): never acknowledged, to be cut off.
    Torn { at: u64 },
}

/// Appends `record`, framed, to `out`.
pub(crate) fn frame(record: &Record, out: &mut Vec<u8>) -> Result<(), RaftStoreError> {
    let start = out.len();
    out.extend_from_slice(&[0; FRAME_HEADER]);
    bincode::serde::encode_into_std_write(record, out, BINCODE).map_err(|source| {
        RaftStoreError::Encode {
            what: "journal record".to_owned(),
            source,
        }
    })?;
    let body = &out[start + FRAME_HEADER..];
    let len = u32::try_from(body.len()).map_err(|_| RaftStoreError::Corrupt {
        what: "journal record".to_owned(),
        reason: format!("{} bytes is too large to frame", body.len()),
    })?;
    let crc = crc32fast::hash(body);
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    out[start + 4..start + FRAME_HEADER].copy_from_slice(&crc.to_le_bytes());
    Ok(())
}

/// Reads every record of a segment's `bytes`, with each record's end offset. `name` is for
/// messages. Damage is an error; a torn end is reported in [`Tail`] for the caller to decide
/// (only the newest segment may have one).
pub(crate) fn parse(
    name: &str,
    bytes: &[u8],
) -> Result<(Vec<(Record, u64)>, Tail), RaftStoreError> {
    let corrupt = |at: usize, reason: String| RaftStoreError::Corrupt {
        what: format!("journal segment {name} at byte {at}"),
        reason,
    };
    let mut records = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let rest = &bytes[at..];
        let Some(header) = rest.get(..FRAME_HEADER) else {
            return Ok((records, Tail::Torn { at: at as u64 }));
        };
        let len = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let crc = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
        if len == 0 || len > MAX_BODY {
            if rest.iter().all(|b| *b == 0) {
                return Ok((records, Tail::Torn { at: at as u64 }));
            }
            return Err(corrupt(at, format!("impossible record length {len}")));
        }
        let end = FRAME_HEADER + len;
        let Some(body) = rest.get(FRAME_HEADER..end) else {
            return Ok((records, Tail::Torn { at: at as u64 }));
        };
        if crc32fast::hash(body) != crc {
            // The last record, or one followed only by zeros: a write cut short. Anything
            // after it means the damage is in the middle of acknowledged data.
            if rest[end..].iter().all(|b| *b == 0) {
                return Ok((records, Tail::Torn { at: at as u64 }));
            }
            return Err(corrupt(at, "checksum mismatch".to_owned()));
        }
        let (record, used): (Record, usize) = bincode::serde::decode_from_slice(body, BINCODE)
            .map_err(|e| corrupt(at, format!("undecodable record: {e}")))?;
        if used != body.len() {
            return Err(corrupt(at, format!("{} trailing bytes", body.len() - used)));
        }
        at += end;
        records.push((record, at as u64));
    }
    Ok((records, Tail::Clean))
}

#[cfg(test)]
mod tests {
    use openraft::{CommittedLeaderId, EntryPayload, Vote};

    use super::*;
    use crate::types::Command;

    fn entry(index: u64) -> Entry {
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
            payload: EntryPayload::Normal(Command(vec![7; index as usize])),
        }
    }

    fn framed(records: &[Record]) -> Vec<u8> {
        let mut out = Vec::new();
        for r in records {
            frame(r, &mut out).unwrap();
        }
        out
    }

    #[test]
    fn records_round_trip_with_their_end_offsets() {
        let records = vec![
            Record::Header {
                format: 1,
                segment: 3,
                checkpoint: Checkpoint::default(),
            },
            Record::Entries(vec![entry(1), entry(2)]),
            Record::Vote(Vote::new(2, 1)),
            Record::TruncateFrom(1),
        ];
        let bytes = framed(&records);
        let (parsed, tail) = parse("s", &bytes).unwrap();
        assert_eq!(tail, Tail::Clean);
        assert_eq!(
            parsed.iter().map(|(r, _)| r.clone()).collect::<Vec<_>>(),
            records
        );
        assert_eq!(parsed.last().map(|(_, end)| *end), Some(bytes.len() as u64));
    }

    #[test]
    fn a_cut_or_zeroed_or_damaged_last_record_is_a_torn_tail() {
        let bytes = framed(&[
            Record::Entries(vec![entry(1)]),
            Record::Entries(vec![entry(2)]),
        ]);
        let first_end = framed(&[Record::Entries(vec![entry(1)])]).len();
        for cut in [first_end + 1, first_end + FRAME_HEADER, bytes.len() - 1] {
            let (parsed, tail) = parse("s", &bytes[..cut]).unwrap();
            assert_eq!(parsed.len(), 1, "cut at {cut}");
            assert_eq!(
                tail,
                Tail::Torn {
                    at: first_end as u64
                }
            );
        }
        let mut zeroed = bytes[..first_end].to_vec();
        zeroed.extend_from_slice(&[0; 100]);
        assert_eq!(
            parse("s", &zeroed).unwrap().1,
            Tail::Torn {
                at: first_end as u64
            }
        );
        let mut damaged = bytes.clone();
        let last = damaged.len() - 1;
        damaged[last] ^= 1;
        assert_eq!(
            parse("s", &damaged).unwrap().1,
            Tail::Torn {
                at: first_end as u64
            }
        );
    }

    #[test]
    fn damage_followed_by_more_records_is_refused() {
        let mut bytes = framed(&[
            Record::Entries(vec![entry(1)]),
            Record::Entries(vec![entry(2)]),
            Record::Entries(vec![entry(3)]),
        ]);
        let second = framed(&[Record::Entries(vec![entry(1)])]).len();
        bytes[second + FRAME_HEADER + 2] ^= 0x40;
        let err = parse("s", &bytes).unwrap_err();
        assert!(err.to_string().contains("checksum mismatch"), "{err}");
        let mut bad_len = framed(&[
            Record::Entries(vec![entry(1)]),
            Record::Entries(vec![entry(2)]),
        ]);
        bad_len[second..second + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(parse("s", &bad_len).is_err());
    }
}
