//! What `GET /nodes/{node}/certificates/info` reports about the certificate a node's API
//! listener serves, in the shape of `PVE::Certificate::get_certificate_info` (subject and
//! issuer as `X509_NAME_oneline` prints them, `notbefore`/`notafter` as unix times, SANs with
//! IPv6 addresses written out in full, the PEM). The listener records it when it binds; the
//! `fingerprint` is the one clients pin (`target-endpoint`'s `fingerprint=` of a remote
//! migration).

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The SHA-256 fingerprint of a DER certificate, `AA:BB:...` (upper case, as PVE prints it).
pub(crate) fn fingerprint_of(der: &[u8]) -> String {
    Sha256::digest(der)
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// One certificate file of a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CertificateInfo {
    /// `pve-ssl.pem`.
    pub(crate) filename: String,
    /// SHA-256 over the DER, `AA:BB:...`.
    pub(crate) fingerprint: String,
    /// `/OU=.../O=.../CN=...` (unknown for a certificate loaded from files).
    pub(crate) subject: Option<String>,
    pub(crate) issuer: Option<String>,
    pub(crate) notbefore: Option<i64>,
    pub(crate) notafter: Option<i64>,
    pub(crate) san: Option<Vec<String>>,
    pub(crate) pem: String,
    /// OpenSSL's short name of the key type (`id-ecPublicKey`, `rsaEncryption`).
    pub(crate) public_key_type: Option<String>,
    pub(crate) public_key_bits: Option<u32>,
}

impl CertificateInfo {
    /// The entry of the `certificates/info` list.
    pub(crate) fn to_json(&self) -> Value {
        let mut o = Map::new();
        o.insert("filename".into(), Value::from(self.filename.as_str()));
        o.insert("fingerprint".into(), Value::from(self.fingerprint.as_str()));
        if let Some(s) = &self.subject {
            o.insert("subject".into(), Value::from(s.as_str()));
        }
        if let Some(s) = &self.issuer {
            o.insert("issuer".into(), Value::from(s.as_str()));
        }
        if let Some(t) = self.notbefore {
            o.insert("notbefore".into(), Value::from(t));
        }
        if let Some(t) = self.notafter {
            o.insert("notafter".into(), Value::from(t));
        }
        if let Some(san) = &self.san {
            o.insert("san".into(), Value::from(san.clone()));
        }
        o.insert("pem".into(), Value::from(self.pem.as_str()));
        if let Some(t) = &self.public_key_type {
            o.insert("public-key-type".into(), Value::from(t.as_str()));
        }
        if let Some(b) = self.public_key_bits {
            o.insert("public-key-bits".into(), Value::from(b));
        }
        Value::Object(o)
    }
}

/// A SAN IP address as `get_certificate_info` unpacks it: dotted IPv4, or eight
/// four-digit hex groups for IPv6 (`0000:...:0001`).
pub(crate) fn san_ip(ip: std::net::IpAddr) -> String {
    match ip {
        std::net::IpAddr::V4(v4) => v4.to_string(),
        std::net::IpAddr::V6(v6) => v6
            .segments()
            .iter()
            .map(|s| format!("{s:04x}"))
            .collect::<Vec<_>>()
            .join(":"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn san_addresses_are_unpacked_like_pve() {
        assert_eq!(san_ip("127.0.0.1".parse().unwrap()), "127.0.0.1");
        assert_eq!(
            san_ip("::1".parse().unwrap()),
            "0000:0000:0000:0000:0000:0000:0000:0001"
        );
    }
}
