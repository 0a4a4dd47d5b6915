//! Tunnel tickets as `PVE::AccessControl::assemble_tunnel_ticket` builds them with
//! `PVE::Ticket::assemble_rsa_ticket`: `PVETUNNEL:<8 hex time>::<base64 signature>`, the
//! signature covering the plain part, the user and the socket path (`<user>:/socket/<path>`),
//! which the ticket itself does not show. PVE signs with the cluster's RSA key; the simulator
//! signs with an HMAC-SHA256 key of its own, since only it verifies them.

use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The ticket prefix.
const PREFIX: &str = "PVETUNNEL";
/// `verify_rsa_ticket`'s age window for short-lived tickets, in seconds (exclusive).
const MIN_AGE: i64 = -20;
const MAX_AGE: i64 = 40;

fn sign(key: &[u8], text: &str) -> String {
    // HMAC takes keys of any length: the error arm cannot happen.
    let sig = match Hmac::<Sha256>::new_from_slice(key) {
        Ok(mut mac) => {
            mac.update(text.as_bytes());
            mac.finalize().into_bytes().to_vec()
        }
        Err(_) => Vec::new(),
    };
    base64::engine::general_purpose::STANDARD.encode(sig)
}

/// A ticket for `user` and `path` (`/socket/run/qemu-server/100.mtunnel`) issued at `now`.
pub(super) fn assemble(key: &[u8], user: &str, path: &str, now: i64) -> String {
    let plain = format!("{PREFIX}:{now:08X}");
    let sig = sign(key, &format!("{plain}:{user}:{path}"));
    format!("{plain}::{sig}")
}

/// Whether `ticket` was issued for `user` and `path`; `now` = `Some(time)` also checks that it
/// is young enough to open a connection (once connected, the tunnel no longer looks at it).
pub(super) fn verify(key: &[u8], ticket: &str, user: &str, path: &str, now: Option<i64>) -> bool {
    let Some((plain, sig)) = ticket.rsplit_once("::") else {
        return false;
    };
    let Some(stamp) = plain.strip_prefix(&format!("{PREFIX}:")) else {
        return false;
    };
    let stamp_ok = stamp.len() == 8
        && stamp
            .chars()
            .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase());
    let Ok(issued) = i64::from_str_radix(stamp, 16) else {
        return false;
    };
    let age_ok = now.is_none_or(|now| {
        let age = now - issued;
        age > MIN_AGE && age < MAX_AGE
    });
    stamp_ok && age_ok && sign(key, &format!("{plain}:{user}:{path}")) == sig
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tickets_bind_user_and_socket_and_expire_for_connecting() {
        let key = [7u8; 32];
        let path = "/socket/run/qemu-server/100.mtunnel";
        let t = assemble(&key, "mig@pve!t", path, 1_000);
        assert!(t.starts_with("PVETUNNEL:000003E8::"));
        assert!(verify(&key, &t, "mig@pve!t", path, Some(1_010)));
        assert!(!verify(&key, &t, "other@pve!t", path, Some(1_010)));
        assert!(!verify(
            &key,
            &t,
            "mig@pve!t",
            "/socket/run/qemu-server/101.mtunnel",
            None
        ));
        assert!(!verify(&key, &t, "mig@pve!t", path, Some(1_040)));
        assert!(verify(&key, &t, "mig@pve!t", path, None));
        assert!(!verify(&[8u8; 32], &t, "mig@pve!t", path, None));
    }
}
