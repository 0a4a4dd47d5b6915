//! The on-disk encoding of one journal entry, versioned so a future layout is refused clearly
//! instead of being misread.
//!
//! Layout of format 1: `version:u8 | state:u8 | seq:u64be | fp_len:u32be | fingerprint | result`.
//! `seq` orders finished entries for pruning (0 while started); `result` is empty while started.

use crate::error::JournalError;

/// The only format this agent writes and reads.
pub(crate) const FORMAT_VERSION: u8 = 1;

const STATE_STARTED: u8 = 1;
const STATE_DONE: u8 = 2;
const HEADER_LEN: usize = 1 + 1 + 8 + 4;

/// Where a command stands on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum State {
    /// Begun, no result recorded yet.
    Started,
    /// Finished; `seq` orders completions for retention.
    Done {
        /// Completion order (monotonic across restarts).
        seq: u64,
        /// The stored result bytes.
        result: Vec<u8>,
    },
}

/// One decoded journal entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    /// Identifies the command the id was first used for.
    pub(crate) fingerprint: Vec<u8>,
    /// Progress of the command.
    pub(crate) state: State,
}

impl Record {
    /// Encodes the record in the current format.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let (state, seq, result): (u8, u64, &[u8]) = match &self.state {
            State::Started => (STATE_STARTED, 0, &[]),
            State::Done { seq, result } => (STATE_DONE, *seq, result),
        };
        let mut out = Vec::with_capacity(HEADER_LEN + self.fingerprint.len() + result.len());
        out.push(FORMAT_VERSION);
        out.push(state);
        out.extend_from_slice(&seq.to_be_bytes());
        // Fingerprints are hashes or small caller tokens: far below 4 GiB.
        let fp_len = u32::try_from(self.fingerprint.len()).unwrap_or(u32::MAX);
        out.extend_from_slice(&fp_len.to_be_bytes());
        out.extend_from_slice(&self.fingerprint);
        out.extend_from_slice(result);
        out
    }

    /// Decodes a stored value; `id` only labels errors.
    pub(crate) fn decode(id: &str, bytes: &[u8]) -> Result<Record, JournalError> {
        let corrupt = |reason| JournalError::Corrupt {
            id: id.to_owned(),
            reason,
        };
        let (&version, rest) = bytes.split_first().ok_or_else(|| corrupt("empty value"))?;
        if version != FORMAT_VERSION {
            return Err(JournalError::UnknownFormat {
                id: id.to_owned(),
                version,
            });
        }
        if bytes.len() < HEADER_LEN {
            return Err(corrupt("truncated header"));
        }
        let state = rest[0];
        let seq = u64::from_be_bytes(take::<8>(&rest[1..9]).ok_or_else(|| corrupt("seq"))?);
        let fp_len = u32::from_be_bytes(take::<4>(&rest[9..13]).ok_or_else(|| corrupt("fp"))?);
        let body = &bytes[HEADER_LEN..];
        let fp_len = usize::try_from(fp_len).map_err(|_| corrupt("fingerprint length"))?;
        if body.len() < fp_len {
            return Err(corrupt("truncated fingerprint"));
        }
        let (fingerprint, result) = body.split_at(fp_len);
        let state = match state {
            STATE_STARTED if result.is_empty() => State::Started,
            STATE_STARTED => return Err(corrupt("started entry carries a result")),
            STATE_DONE => State::Done {
                seq,
                result: result.to_vec(),
            },
            _ => return Err(corrupt("unknown state")),
        };
        Ok(Record {
            fingerprint: fingerprint.to_vec(),
            state,
        })
    }
}

fn take<const N: usize>(bytes: &[u8]) -> Option<[u8; N]> {
    bytes.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn started_and_done_records_round_trip() {
        for state in [
            State::Started,
            State::Done {
                seq: 7,
                result: b"ok".to_vec(),
            },
            State::Done {
                seq: 8,
                result: Vec::new(),
            },
        ] {
            let record = Record {
                fingerprint: b"fp".to_vec(),
                state,
            };
            assert_eq!(Record::decode("x", &record.encode()).unwrap(), record);
        }
    }

    #[test]
    fn unknown_version_is_refused() {
        let mut bytes = Record {
            fingerprint: b"fp".to_vec(),
            state: State::Started,
        }
        .encode();
        bytes[0] = 9;
        let err = Record::decode("x", &bytes).unwrap_err();
        assert!(
            matches!(err, JournalError::UnknownFormat { version: 9, .. }),
            "{err}"
        );
    }

    #[test]
    fn truncated_values_are_corrupt_not_panics() {
        let bytes = Record {
            fingerprint: b"fingerprint".to_vec(),
            state: State::Started,
        }
        .encode();
        for len in 0..bytes.len() {
            let err = Record::decode("x", &bytes[..len]).unwrap_err();
            assert!(matches!(err, JournalError::Corrupt { .. }), "{len}: {err}");
        }
    }
}
