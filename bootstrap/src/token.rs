//! Join tokens as text: `pvf1.<ca-sha256-hex>.<token-id>.<secret>`, self-verifying in the
//! manner of k3s' secure tokens. The joining node pins the CA hash before it sends anything; the
//! id names the [`TokenRecord`](crate::token_record::TokenRecord) the cluster stores; the secret
//! exists only in the token (the cluster keeps its SHA-256).

use std::fmt;
use std::str::FromStr;

use rand::Rng;

use crate::cert::sha256;

/// The format tag every token starts with.
pub const TOKEN_PREFIX: &str = "pvf1";
/// Length of a token id (`[a-z0-9]`), as kubeadm's.
pub const TOKEN_ID_LEN: usize = 6;
/// Length of a generated secret (`[a-z0-9]`, about 165 bits).
pub const SECRET_LEN: usize = 32;
/// The shortest secret accepted (about 82 bits, kubeadm's size).
pub const MIN_SECRET_LEN: usize = 16;
/// The longest secret accepted.
pub const MAX_SECRET_LEN: usize = 128;

const ALPHABET: &[u8; 36] = b"abcdefghijklmnopqrstuvwxyz0123456789";

/// Why a join token was refused. Every message says what was wrong and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// The text is not a token; the message names the part that is wrong (never the secret).
    #[error(
        "malformed join token: {0}; a token looks like pvf1.<64 hex digits>.<6 characters>.<secret>: \
         copy it again exactly as printed by `pvefleet token create`"
    )]
    Malformed(String),
    /// The token pins another cluster's CA.
    #[error(
        "join token was made for another cluster: it pins CA sha256:{token_ca} but this cluster's \
         CA is sha256:{our_ca}; use a token created on this cluster with `pvefleet token create`"
    )]
    WrongCa {
        /// The CA hash in the token (hex).
        token_ca: String,
        /// This cluster's CA hash (hex).
        our_ca: String,
    },
    /// No token with this id exists in the cluster.
    #[error(
        "join token '{id}' is unknown to this cluster (never created here, or deleted): \
         create a new token with `pvefleet token create`"
    )]
    Unknown {
        /// The token id.
        id: String,
    },
    /// The id exists but the secret does not match it.
    #[error(
        "join token '{id}' has a wrong secret: copy the whole token again exactly as printed by \
         `pvefleet token create`, or create a new token"
    )]
    Tampered {
        /// The token id.
        id: String,
    },
    /// An operator revoked the token.
    #[error("join token '{id}' was revoked: create a new token with `pvefleet token create`")]
    Revoked {
        /// The token id.
        id: String,
    },
    /// The token's time to live has passed.
    #[error(
        "join token '{id}' expired at {expired_at} (unix seconds): create a new token with \
         `pvefleet token create` (tokens live 1 hour unless created with another --ttl)"
    )]
    Expired {
        /// The token id.
        id: String,
        /// When it expired (unix seconds).
        expired_at: u64,
    },
    /// The token allowed a number of joins and all have been used.
    #[error(
        "join token '{id}' has been used as many times as it allowed: create a new token with \
         `pvefleet token create`"
    )]
    UsedUp {
        /// The token id.
        id: String,
    },
}

/// A parsed join token. `Display` writes the full token, secret included (to show it once to
/// the operator); `Debug` hides the secret.
#[derive(Clone)]
pub struct JoinToken {
    ca_sha256: [u8; 32],
    id: String,
    secret: String,
}

impl JoinToken {
    /// Reads a token, tolerating surrounding whitespace from copy and paste.
    pub fn parse(text: &str) -> Result<JoinToken, TokenError> {
        let bad = |s: String| Err(TokenError::Malformed(s));
        let parts: Vec<&str> = text.trim().split('.').collect();
        let [prefix, ca, id, secret] = parts.as_slice() else {
            return bad(format!(
                "expected 4 parts separated by '.', found {}",
                parts.len()
            ));
        };
        if *prefix != TOKEN_PREFIX {
            return bad(format!(
                "unknown format '{prefix}' (this version reads '{TOKEN_PREFIX}')"
            ));
        }
        let mut ca_sha256 = [0u8; 32];
        if ca.len() != 64 || hex::decode_to_slice(ca, &mut ca_sha256).is_err() {
            return bad(format!(
                "the CA hash must be 64 hex digits, found {} characters{}",
                ca.len(),
                if ca.bytes().all(|b| b.is_ascii_hexdigit()) {
                    ""
                } else {
                    " with non-hex ones"
                }
            ));
        }
        if id.len() != TOKEN_ID_LEN || !is_lower_alnum(id) {
            return bad(format!(
                "the token id must be {TOKEN_ID_LEN} characters a-z 0-9, found '{id}'"
            ));
        }
        if !(MIN_SECRET_LEN..=MAX_SECRET_LEN).contains(&secret.len()) || !is_lower_alnum(secret) {
            // Never echo the secret: the message may be logged or sent back.
            return bad(format!(
                "the secret must be {MIN_SECRET_LEN} to {MAX_SECRET_LEN} characters a-z 0-9, \
                 found {} characters{}",
                secret.len(),
                if is_lower_alnum(secret) {
                    ""
                } else {
                    " with others among them"
                }
            ));
        }
        Ok(JoinToken {
            ca_sha256,
            id: (*id).to_string(),
            secret: (*secret).to_string(),
        })
    }

    /// A fresh token for the CA with hash `ca_sha256`: random id and secret from `rng`.
    pub(crate) fn generate(ca_sha256: [u8; 32], rng: &mut (impl rand::CryptoRng + ?Sized)) -> Self {
        JoinToken {
            ca_sha256,
            id: random_lower_alnum(rng, TOKEN_ID_LEN),
            secret: random_lower_alnum(rng, SECRET_LEN),
        }
    }

    /// The SHA-256 of the cluster CA certificate (DER) this token pins: a joining node trusts
    /// only a server whose CA has this hash.
    pub fn ca_sha256(&self) -> [u8; 32] {
        self.ca_sha256
    }

    /// The token's public id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// SHA-256 of the secret, hex: what the cluster stores instead of the secret.
    pub fn secret_sha256(&self) -> String {
        hex::encode(self.secret_digest())
    }

    pub(crate) fn secret_digest(&self) -> [u8; 32] {
        sha256(self.secret.as_bytes())
    }
}

impl fmt::Display for JoinToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{TOKEN_PREFIX}.{}.{}.{}",
            hex::encode(self.ca_sha256),
            self.id,
            self.secret
        )
    }
}

impl fmt::Debug for JoinToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinToken")
            .field("ca_sha256", &hex::encode(self.ca_sha256))
            .field("id", &self.id)
            .field("secret", &"<redacted>")
            .finish()
    }
}

impl FromStr for JoinToken {
    type Err = TokenError;

    fn from_str(s: &str) -> Result<Self, TokenError> {
        JoinToken::parse(s)
    }
}

fn is_lower_alnum(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

fn random_lower_alnum(rng: &mut (impl rand::CryptoRng + ?Sized), len: usize) -> String {
    (0..len)
        .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
        .collect()
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;

    fn token() -> JoinToken {
        JoinToken::generate([0xab; 32], &mut StdRng::seed_from_u64(7))
    }

    #[test]
    fn generated_token_has_the_documented_shape() {
        let t = token();
        let text = t.to_string();
        let parts: Vec<&str> = text.split('.').collect();
        assert_eq!(parts[0], "pvf1");
        assert_eq!(parts[1], "ab".repeat(32));
        assert_eq!(parts[2].len(), TOKEN_ID_LEN);
        assert_eq!(parts[3].len(), SECRET_LEN);
        assert!(is_lower_alnum(parts[2]) && is_lower_alnum(parts[3]));
    }

    #[test]
    fn parse_and_format_round_trip() {
        let t = token();
        let back = JoinToken::parse(&format!("  {t}\n")).unwrap();
        assert_eq!(back.to_string(), t.to_string());
        assert_eq!(back.ca_sha256(), [0xab; 32]);
        assert_eq!(back.id(), t.id());
        assert_eq!(back.secret_sha256(), t.secret_sha256());
        assert_eq!(t.to_string().parse::<JoinToken>().unwrap().id(), t.id());
    }

    #[test]
    fn two_tokens_differ() {
        let mut rng = StdRng::seed_from_u64(1);
        let a = JoinToken::generate([0; 32], &mut rng);
        let b = JoinToken::generate([0; 32], &mut rng);
        assert_ne!(a.to_string(), b.to_string());
    }

    #[test]
    fn malformed_tokens_name_what_is_wrong_and_never_echo_the_secret() {
        let ca = "ab".repeat(32);
        let secret = "s3cretsecretsecret";
        let cases = [
            (String::new(), "expected 4 parts"),
            (format!("pvf1.{ca}.abc123"), "found 3"),
            (
                format!("pvf2.{ca}.abc123.{secret}"),
                "unknown format 'pvf2'",
            ),
            (
                format!("pvf1.{}.abc123.{secret}", &ca[1..]),
                "64 hex digits, found 63",
            ),
            (format!("pvf1.{}zz.abc123.{secret}", &ca[2..]), "non-hex"),
            (format!("pvf1.{ca}.ABC123.{secret}"), "token id must be 6"),
            (format!("pvf1.{ca}.abc12.{secret}"), "found 'abc12'"),
            (format!("pvf1.{ca}.abc123.short"), "found 5 characters"),
            (
                format!("pvf1.{ca}.abc123.{}", "S".repeat(20)),
                "with others",
            ),
            (format!("pvf1.{ca}.abc123.{}", "a".repeat(129)), "found 129"),
        ];
        for (text, expected) in cases {
            let err = JoinToken::parse(&text).unwrap_err();
            let msg = err.to_string();
            assert!(matches!(err, TokenError::Malformed(_)), "{text}: {msg}");
            assert!(msg.contains(expected), "{text}: {msg}");
            assert!(msg.contains("pvefleet token create"), "{msg}");
            assert!(!msg.contains(secret) && !msg.contains("SSSS"), "{msg}");
        }
    }

    #[test]
    fn debug_hides_the_secret() {
        let t = token();
        let shown = format!("{t:?}");
        let secret = t.to_string().rsplit('.').next().unwrap().to_string();
        assert!(shown.contains(t.id()));
        assert!(!shown.contains(&secret), "{shown}");
    }
}
