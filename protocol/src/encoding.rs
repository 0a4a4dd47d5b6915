//! The bincode body every versioned value is written as (standard configuration), with the
//! decoder's allocation guard: bincode allocates containers from the lengths it reads, and its
//! limit counts the memory a container claims (elements × their in-memory size), not wire
//! bytes. A decode therefore runs with a limit of [`AMPLIFICATION`] times the input (at least
//! 64 KiB), rounded up to a bucket: a compact but valid value fits, while a few bytes claiming a
//! terabyte are refused before anything is allocated.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// How many bytes of memory a decoded value may claim per byte of input.
pub const AMPLIFICATION: usize = 64;

/// A value could not be encoded or decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodingError {
    /// The encoder refused the value.
    #[error("cannot encode: {0}")]
    Encode(String),
    /// The bytes are not a value of the expected type.
    #[error("cannot decode: {0}")]
    Decode(String),
    /// The value needs a newer version than the reader's (a command or field added later).
    #[error("{what} needs encoding {needs}, but the reader is at {reader}")]
    TooNew {
        /// What could not be written.
        what: String,
        /// The oldest version that carries it.
        needs: crate::version::Version,
        /// The version asked for.
        reader: crate::version::Version,
    },
    /// Written at a version this build does not read.
    #[error("encoding {found} is not supported (this build reads {supported})")]
    Unsupported {
        /// The version found.
        found: crate::version::Version,
        /// What this build reads.
        supported: crate::version::VersionRange,
    },
}

fn config() -> bincode::config::Configuration {
    bincode::config::standard()
}

/// Encodes `value` with bincode.
pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, EncodingError> {
    bincode::serde::encode_to_vec(value, config()).map_err(|e| EncodingError::Encode(e.to_string()))
}

/// Decodes a value that must use all of `bytes`, under the amplification guard.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, EncodingError> {
    let n = bytes.len();
    let (value, used) = decode_bucketed(bytes).map_err(|e| EncodingError::Decode(e.to_string()))?;
    if used != n {
        return Err(EncodingError::Decode(format!(
            "{} trailing bytes after the value",
            n - used
        )));
    }
    Ok(value)
}

/// `decode_limited` with the smallest limit bucket covering `AMPLIFICATION` × `bytes.len()`
/// (limits are const generics).
fn decode_bucketed<T: DeserializeOwned>(
    bytes: &[u8],
) -> Result<(T, usize), bincode::error::DecodeError> {
    let needed = bytes.len().saturating_mul(AMPLIFICATION);
    macro_rules! first_fitting {
        ($($limit:expr),+) => {{
            $(if needed <= $limit {
                return decode_limited::<T, { $limit }>(bytes);
            })+
            Err(bincode::error::DecodeError::LimitExceeded)
        }};
    }
    const KIB: usize = 1 << 10;
    const MIB: usize = 1 << 20;
    const GIB: usize = 1 << 30;
    first_fitting!(
        64 * KIB,
        256 * KIB,
        MIB,
        4 * MIB,
        16 * MIB,
        64 * MIB,
        256 * MIB,
        GIB,
        4 * GIB,
        16 * GIB,
        usize::MAX
    )
}

fn decode_limited<T: DeserializeOwned, const LIMIT: usize>(
    bytes: &[u8],
) -> Result<(T, usize), bincode::error::DecodeError> {
    bincode::serde::decode_from_slice(bytes, config().with_limit::<LIMIT>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_trailing_bytes_are_refused() {
        let bytes = encode(&("a".to_string(), 7u32)).unwrap();
        assert_eq!(decode::<(String, u32)>(&bytes).unwrap(), ("a".into(), 7));
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(matches!(
            decode::<(String, u32)>(&longer),
            Err(EncodingError::Decode(m)) if m.contains("trailing")
        ));
    }

    #[test]
    fn a_few_bytes_claiming_a_huge_string_are_refused_without_allocating_it() {
        // bincode varint: 0xFD then a u64 length of 2^40.
        let mut bytes = vec![0xFD];
        bytes.extend_from_slice(&(1u64 << 40).to_le_bytes());
        assert!(decode::<String>(&bytes).is_err());
    }
}
