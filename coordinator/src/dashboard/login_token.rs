//! A dashboard login token, `<id>.<secret>`: drawn by the leader when an admin mints a login,
//! checked for shape and hashed by the member a browser presents it to (the secret itself never
//! leaves that member; the replicated state keeps its SHA-256 only).

use rand::Rng;
use sha2::{Digest, Sha256};

/// Characters of a login id (lower-case letters and digits: unambiguous in a URL).
const ID_LEN: usize = 12;
/// Random bytes of a login secret.
const SECRET_BYTES: usize = 32;

/// SHA-256 of a login secret, lower-case hex, as the state stores it.
pub(crate) fn secret_sha256(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// A login token `<id>.<secret>` split in its parts, if it has that shape.
pub(crate) fn split_token(token: &str) -> Option<(&str, &str)> {
    let (id, secret) = token.trim().split_once('.')?;
    let ok = id.len() == ID_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && (40..=64).contains(&secret.len())
        && secret
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    ok.then_some((id, secret))
}

pub(crate) fn draw_id(rng: &mut impl Rng) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    (0..ID_LEN)
        .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
        .collect()
}

pub(crate) fn draw_secret(rng: &mut impl Rng) -> String {
    use base64::Engine;
    let bytes: [u8; SECRET_BYTES] = rng.random();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drawn_token_splits_back_and_malformed_ones_do_not() {
        let mut rng = rand::rng();
        let token = format!("{}.{}", draw_id(&mut rng), draw_secret(&mut rng));
        let (id, secret) = split_token(&token).expect("well formed");
        assert_eq!(format!("{id}.{secret}"), token);
        for bad in [
            "",
            "abc",
            "ABCDEFGHIJKL.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "abcdefghijkl.short",
            "abcdefghijkl.<script>aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        ] {
            assert_eq!(split_token(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_hash_is_hex_sha256() {
        assert_eq!(
            secret_sha256("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
