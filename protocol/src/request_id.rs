//! The id of one logical write from a client: random, made once per call and sent again with
//! every retry of it, so the replicated state machine applies the call once and answers a retry
//! with the first result (safety rule 9, docs/design/coordinator.md).

use serde::{Deserialize, Serialize};

/// A client's id for one call (128 random bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RequestId(pub [u8; 16]);

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_as_hex() {
        let mut id = [0u8; 16];
        id[0] = 0xab;
        id[15] = 1;
        assert_eq!(
            RequestId(id).to_string(),
            "ab000000000000000000000000000001"
        );
    }
}
