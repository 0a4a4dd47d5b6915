//! Bytes in the Raft log and in snapshots: a format byte, then bincode 2 (standard config).
//! The format byte lets a later release read entries and snapshots written by this one.

use super::{Command, CommandReply, FleetState};

/// Format of an encoded [`Command`] or [`CommandReply`] (the first byte).
pub const COMMAND_FORMAT: u8 = 1;
/// Format of an encoded snapshot (the first byte).
pub const SNAPSHOT_FORMAT: u8 = 1;

/// Largest command or reply decoded: a bound against corrupt length fields.
const MAX_COMMAND_BYTES: usize = 64 << 20;
/// Largest snapshot decoded.
const MAX_SNAPSHOT_BYTES: usize = 1 << 30;

/// Encoding or decoding failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// Nothing to decode.
    #[error("empty {what}")]
    Empty {
        /// Command, reply or snapshot.
        what: &'static str,
    },
    /// Written by a format this build does not know.
    #[error("{what} format {found} is not supported (this build reads format {supported})")]
    Format {
        /// Command, reply or snapshot.
        what: &'static str,
        /// The format byte found.
        found: u8,
        /// The format this build reads.
        supported: u8,
    },
    /// The bincode body is malformed.
    #[error("malformed {what}: {reason}")]
    Malformed {
        /// Command, reply or snapshot.
        what: &'static str,
        /// The decoder's explanation.
        reason: String,
    },
    /// The value could not be encoded.
    #[error("cannot encode {what}: {reason}")]
    Encode {
        /// Command, reply or snapshot.
        what: &'static str,
        /// The encoder's explanation.
        reason: String,
    },
}

fn encode<T: serde::Serialize>(
    what: &'static str,
    format: u8,
    value: &T,
) -> Result<Vec<u8>, CodecError> {
    let body = bincode::serde::encode_to_vec(value, bincode::config::standard()).map_err(|e| {
        CodecError::Encode {
            what,
            reason: e.to_string(),
        }
    })?;
    let mut out = Vec::with_capacity(body.len() + 1);
    out.push(format);
    out.extend_from_slice(&body);
    Ok(out)
}

fn decode<T: serde::de::DeserializeOwned, const LIMIT: usize>(
    what: &'static str,
    format: u8,
    bytes: &[u8],
) -> Result<T, CodecError> {
    let (&found, body) = bytes.split_first().ok_or(CodecError::Empty { what })?;
    if found != format {
        return Err(CodecError::Format {
            what,
            found,
            supported: format,
        });
    }
    let config = bincode::config::standard().with_limit::<LIMIT>();
    let (value, used) =
        bincode::serde::decode_from_slice(body, config).map_err(|e| CodecError::Malformed {
            what,
            reason: e.to_string(),
        })?;
    if used != body.len() {
        return Err(CodecError::Malformed {
            what,
            reason: format!("{} trailing bytes", body.len() - used),
        });
    }
    Ok(value)
}

/// A command as stored in the Raft log.
pub fn encode_command(cmd: &Command) -> Result<Vec<u8>, CodecError> {
    encode("command", COMMAND_FORMAT, cmd)
}

/// A command read back from the Raft log.
pub fn decode_command(bytes: &[u8]) -> Result<Command, CodecError> {
    decode::<_, MAX_COMMAND_BYTES>("command", COMMAND_FORMAT, bytes)
}

/// A reply as returned to the proposer.
pub fn encode_reply(reply: &CommandReply) -> Result<Vec<u8>, CodecError> {
    encode("reply", COMMAND_FORMAT, reply)
}

/// A reply read by the proposer.
pub fn decode_reply(bytes: &[u8]) -> Result<CommandReply, CodecError> {
    decode::<_, MAX_COMMAND_BYTES>("reply", COMMAND_FORMAT, bytes)
}

/// The whole state as a snapshot.
pub fn encode_snapshot(state: &FleetState) -> Result<Vec<u8>, CodecError> {
    encode("snapshot", SNAPSHOT_FORMAT, state)
}

/// A state read back from a snapshot.
pub fn decode_snapshot(bytes: &[u8]) -> Result<FleetState, CodecError> {
    decode::<_, MAX_SNAPSHOT_BYTES>("snapshot", SNAPSHOT_FORMAT, bytes)
}
