//! Reading the identity out of a peer's DER certificate (the convention is the parent
//! module's): its own file, because it reports through `TransportError` while the error type
//! names identities.

use x509_parser::extensions::GeneralName;

use super::{PeerIdentity, URI_PREFIX, parse_identity_uri};
use crate::TransportError;

/// The identity a DER certificate carries.
///
/// Exactly one `urn:pvefleet:` URI SAN must be present, and the matching DNS SAN too: a
/// certificate whose two names disagree is refused rather than trusted on either.
pub fn peer_identity(cert_der: &[u8]) -> Result<PeerIdentity, TransportError> {
    let (_, cert) = x509_parser::parse_x509_certificate(cert_der)
        .map_err(|e| TransportError::Identity(format!("not an X.509 certificate: {e}")))?;
    let san = cert
        .subject_alternative_name()
        .map_err(|e| TransportError::Identity(format!("bad subjectAltName: {e}")))?
        .ok_or_else(|| TransportError::Identity("no subjectAltName".to_string()))?;
    let mut uris = Vec::new();
    let mut dns = Vec::new();
    for name in &san.value.general_names {
        match name {
            GeneralName::URI(u) if u.starts_with(URI_PREFIX) => uris.push(*u),
            GeneralName::DNSName(d) => dns.push(*d),
            _ => {}
        }
    }
    let [uri] = uris.as_slice() else {
        return Err(TransportError::Identity(format!(
            "expected exactly one {URI_PREFIX} URI SAN, found {}",
            uris.len()
        )));
    };
    let id = parse_identity_uri(uri)
        .ok_or_else(|| TransportError::Identity(format!("malformed identity URI '{uri}'")))?;
    let expected_dns = id.names().dns;
    if !dns.contains(&expected_dns.as_str()) {
        return Err(TransportError::Identity(format!(
            "URI SAN says {id} but the DNS SAN {expected_dns} is missing"
        )));
    }
    Ok(id)
}
