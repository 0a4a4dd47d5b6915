//! On-disk encoding of every value the store writes: one format-version byte, then the body
//! (bincode `standard()` for structured values, raw bytes for snapshot data). A value with any
//! other version byte is refused, so a downgrade can never misread newer data.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::RaftStoreError;

/// The only on-disk format this build reads and writes.
pub(crate) const FORMAT_VERSION: u8 = 1;

const BINCODE: bincode::config::Configuration = bincode::config::standard();

/// Encodes `value` behind the format-version byte.
pub(crate) fn encode<T: Serialize>(what: &str, value: &T) -> Result<Vec<u8>, RaftStoreError> {
    let mut out = vec![FORMAT_VERSION];
    bincode::serde::encode_into_std_write(value, &mut out, BINCODE).map_err(|source| {
        RaftStoreError::Encode {
            what: what.to_owned(),
            source,
        }
    })?;
    Ok(out)
}

/// Decodes a value written by [`encode`], refusing unknown versions and trailing bytes.
pub(crate) fn decode<T: DeserializeOwned>(what: &str, bytes: &[u8]) -> Result<T, RaftStoreError> {
    let body = body(what, bytes)?;
    let (value, used) =
        bincode::serde::decode_from_slice(body, BINCODE).map_err(|e| RaftStoreError::Corrupt {
            what: what.to_owned(),
            reason: e.to_string(),
        })?;
    if used != body.len() {
        return Err(RaftStoreError::Corrupt {
            what: what.to_owned(),
            reason: format!("{} trailing bytes after the value", body.len() - used),
        });
    }
    Ok(value)
}

/// Prefixes raw bytes (snapshot data) with the format-version byte.
pub(crate) fn encode_raw(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 1);
    out.push(FORMAT_VERSION);
    out.extend_from_slice(data);
    out
}

/// Returns the body of a value after checking its format-version byte.
pub(crate) fn body<'a>(what: &str, bytes: &'a [u8]) -> Result<&'a [u8], RaftStoreError> {
    match bytes.split_first() {
        None => Err(RaftStoreError::Corrupt {
            what: what.to_owned(),
            reason: "empty value (no format version byte)".to_owned(),
        }),
        Some((&FORMAT_VERSION, body)) => Ok(body),
        Some((&found, _)) => Err(RaftStoreError::UnknownFormat {
            what: what.to_owned(),
            found,
            supported: FORMAT_VERSION,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoded_values_round_trip() {
        let bytes = encode("x", &(7u64, "seven".to_owned())).unwrap();
        assert_eq!(bytes[0], FORMAT_VERSION);
        let back: (u64, String) = decode("x", &bytes).unwrap();
        assert_eq!(back, (7, "seven".to_owned()));
    }

    #[test]
    fn an_unknown_version_byte_is_refused() {
        let mut bytes = encode("vote", &7u64).unwrap();
        bytes[0] = 9;
        let err = decode::<u64>("vote", &bytes).unwrap_err();
        assert!(matches!(
            err,
            RaftStoreError::UnknownFormat {
                found: 9,
                supported: FORMAT_VERSION,
                ..
            }
        ));
        assert!(err.to_string().contains("format version 9"), "{err}");
    }

    #[test]
    fn empty_and_trailing_bytes_are_corrupt() {
        assert!(matches!(
            decode::<u64>("v", &[]),
            Err(RaftStoreError::Corrupt { .. })
        ));
        let mut bytes = encode("v", &7u64).unwrap();
        bytes.push(0);
        assert!(matches!(
            decode::<u64>("v", &bytes),
            Err(RaftStoreError::Corrupt { .. })
        ));
    }

    #[test]
    fn raw_data_keeps_its_bytes() {
        let bytes = encode_raw(b"abc");
        assert_eq!(body("d", &bytes).unwrap(), b"abc");
    }
}
