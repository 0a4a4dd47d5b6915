//! A secret carried on the wire (an API token's value): encoded as its plain text, so the
//! peer can use it, but never shown: `Debug` prints a placeholder and there is no `Display`,
//! so a `?value` in a log line or an error message cannot leak it.

use serde::{Deserialize, Serialize};

/// A secret string.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value`.
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The secret itself, for the one place that must send it (an HTTP body).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_value() {
        let s = Secret::new("3f8a4c1e-5b2d");
        assert_eq!(format!("{s:?}"), "Secret(<redacted>)");
        assert!(!format!("{:?}", Some(&s)).contains("3f8a"));
        assert_eq!(s.expose(), "3f8a4c1e-5b2d");
    }
}
