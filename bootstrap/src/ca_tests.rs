//! CA tests: issued certificates read back, verified by rustls the way transport will, and
//! CSR contents ignored.

use std::sync::Arc;

use rcgen::{CertificateParams, ExtendedKeyUsagePurpose, IsCa, KeyPair, SanType};
use rustls::RootCertStore;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use x509_parser::extensions::GeneralName;

use super::*;
use crate::cert::{cert_identity, needs_renewal};
use crate::key::NodeKey;

const NOW: u64 = 1_800_000_000;

fn der(pem: &str) -> CertificateDer<'static> {
    CertificateDer::from(certificate_der(pem, "test").unwrap())
}

/// Checks `leaf` the way transport's rustls configuration will: as a server for its DNS name
/// and as a client, both chained to `ca_pem` only.
fn rustls_accepts(ca_pem: &str, leaf: &str, server_name: &str, at: u64) -> Result<(), String> {
    let mut roots = RootCertStore::empty();
    roots.add(der(ca_pem)).unwrap();
    let roots = Arc::new(roots);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let time = UnixTime::since_unix_epoch(Duration::from_secs(at));
    let server = WebPkiServerVerifier::builder_with_provider(roots.clone(), provider.clone())
        .build()
        .unwrap();
    let name = ServerName::try_from(server_name.to_string()).unwrap();
    server
        .verify_server_cert(&der(leaf), &[], &name, &[], time)
        .map_err(|e| format!("as server: {e}"))?;
    let client = WebPkiClientVerifier::builder_with_provider(roots, provider)
        .build()
        .unwrap();
    client
        .verify_client_cert(&der(leaf), &[], time)
        .map_err(|e| format!("as client: {e}"))?;
    Ok(())
}

fn issue(ca: &ClusterCa, role: Role, id: NodeId) -> String {
    let key = NodeKey::generate().unwrap();
    ca.issue(
        &key.csr_pem().unwrap(),
        role,
        id,
        DEFAULT_LEAF_VALIDITY,
        NOW,
    )
    .unwrap()
}

#[test]
fn issued_certificate_carries_the_identity_and_window() {
    let ca = ClusterCa::create("lab", NOW).unwrap();
    let cert = issue(&ca, Role::Agent, 9);
    let id = cert_identity(&cert).unwrap();
    assert_eq!((id.role, id.node_id), (Role::Agent, 9));
    assert_eq!(id.not_before, NOW - CLOCK_SKEW_ALLOWANCE.as_secs());
    assert_eq!(id.not_after, NOW + DEFAULT_LEAF_VALIDITY.as_secs());
    rustls_accepts(ca.cert_pem(), &cert, "agent-9.pvefleet", NOW).unwrap();
}

#[test]
fn issued_certificate_does_not_pass_for_another_node() {
    let ca = ClusterCa::create("lab", NOW).unwrap();
    let cert = issue(&ca, Role::Agent, 9);
    let err = rustls_accepts(ca.cert_pem(), &cert, "coordinator-9.pvefleet", NOW).unwrap_err();
    assert!(err.contains("as server"), "{err}");
}

#[test]
fn certificate_of_another_cluster_is_rejected() {
    let ours = ClusterCa::create("lab", NOW).unwrap();
    let theirs = ClusterCa::create("lab", NOW).unwrap();
    assert_ne!(ours.sha256(), theirs.sha256());
    let cert = issue(&theirs, Role::Coordinator, 1);
    assert!(rustls_accepts(ours.cert_pem(), &cert, "coordinator-1.pvefleet", NOW).is_err());
}

#[test]
fn names_and_extensions_in_the_csr_are_ignored() {
    let ca = ClusterCa::create("lab", NOW).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["evil.example".to_string()]).unwrap();
    params.subject_alt_names.push(SanType::URI(
        "urn:pvefleet:coordinator:1".try_into().unwrap(),
    ));
    params.is_ca = IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::CodeSigning];
    let csr = params.serialize_request(&key).unwrap().pem().unwrap();

    let cert = ca
        .issue(&csr, Role::Agent, 9, DEFAULT_LEAF_VALIDITY, NOW)
        .unwrap();
    let id = cert_identity(&cert).unwrap();
    assert_eq!((id.role, id.node_id), (Role::Agent, 9));
    let der = certificate_der(&cert, "test").unwrap();
    let parsed = parse_der(&der, "test").unwrap();
    assert!(!parsed.is_ca());
    let sans: Vec<String> = parsed
        .subject_alternative_name()
        .unwrap()
        .unwrap()
        .value
        .general_names
        .iter()
        .map(|n| match n {
            GeneralName::DNSName(d) => format!("dns:{d}"),
            GeneralName::URI(u) => format!("uri:{u}"),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(sans, ["dns:agent-9.pvefleet", "uri:urn:pvefleet:agent:9"]);
    // The certificate certifies the CSR's key, so the requester can use it.
    assert_eq!(
        parsed.public_key().raw,
        key.subject_public_key_info().as_slice()
    );
}

#[test]
fn garbage_or_forged_csr_is_refused() {
    let ca = ClusterCa::create("lab", NOW).unwrap();
    let err = ca
        .issue("not a csr", Role::Agent, 1, DEFAULT_LEAF_VALIDITY, NOW)
        .unwrap_err();
    assert!(matches!(err, BootstrapError::BadCsr { .. }), "{err}");

    // Change the signed subject: still well-formed DER, but the signature no longer matches,
    // so the CSR does not prove possession of the key.
    let key = NodeKey::generate().unwrap();
    let csr = key.csr_pem().unwrap();
    let block = x509_parser::pem::parse_x509_pem(csr.as_bytes()).unwrap().1;
    let mut bytes = block.contents.clone();
    let at = bytes
        .windows(8)
        .position(|w| w == b"pvefleet")
        .expect("the CSR subject");
    bytes[at] = b'q';
    let forged = pem_encode("CERTIFICATE REQUEST", &bytes);
    let err = ca
        .issue(&forged, Role::Agent, 1, DEFAULT_LEAF_VALIDITY, NOW)
        .unwrap_err();
    assert!(err.to_string().contains("Invalid CSR signature"), "{err}");
}

fn pem_encode(label: &str, bytes: &[u8]) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
    let lines: Vec<&str> = b64
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    format!(
        "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
        lines.join("\n")
    )
}

#[test]
fn renewal_is_due_at_two_thirds_of_a_real_certificate() {
    let ca = ClusterCa::create("lab", NOW).unwrap();
    let cert = issue(&ca, Role::Coordinator, 2);
    let renew_at = cert_identity(&cert).unwrap().renew_at();
    let two_thirds = NOW + DEFAULT_LEAF_VALIDITY.as_secs() * 2 / 3;
    assert!(renew_at.abs_diff(two_thirds) <= CLOCK_SKEW_ALLOWANCE.as_secs());
    assert!(!needs_renewal(&cert, NOW).unwrap());
    assert!(!needs_renewal(&cert, renew_at - 1).unwrap());
    assert!(needs_renewal(&cert, renew_at).unwrap());
}

#[test]
fn expired_certificate_is_detected_and_refused_by_tls() {
    let ca = ClusterCa::create("lab", NOW).unwrap();
    let cert = issue(&ca, Role::Agent, 4);
    let id = cert_identity(&cert).unwrap();
    assert!(!id.is_expired(id.not_after));
    assert!(id.is_expired(id.not_after + 1));
    let err =
        rustls_accepts(ca.cert_pem(), &cert, "agent-4.pvefleet", id.not_after + 1).unwrap_err();
    assert!(err.to_lowercase().contains("expired"), "{err}");
}

#[test]
fn leaf_never_outlives_the_ca_and_an_expired_ca_does_not_issue() {
    let ca = ClusterCa::create("lab", NOW).unwrap();
    let key = NodeKey::generate().unwrap();
    let csr = key.csr_pem().unwrap();
    let late = ca.not_after() - 86_400;
    let cert = ca
        .issue(&csr, Role::Agent, 1, DEFAULT_LEAF_VALIDITY, late)
        .unwrap();
    assert_eq!(cert_identity(&cert).unwrap().not_after, ca.not_after());
    let err = ca
        .issue(&csr, Role::Agent, 1, DEFAULT_LEAF_VALIDITY, ca.not_after())
        .unwrap_err();
    assert!(err.to_string().contains("expired"), "{err}");
    let err = ca
        .issue(&csr, Role::Agent, 1, Duration::ZERO, NOW)
        .unwrap_err();
    assert!(matches!(err, BootstrapError::CannotIssue { .. }), "{err}");
}

#[test]
fn ca_is_valid_for_about_ten_years() {
    let ca = ClusterCa::create("lab", NOW).unwrap();
    assert_eq!(ca.not_after(), NOW + CA_VALIDITY.as_secs());
    let der = certificate_der(ca.cert_pem(), "test").unwrap();
    let parsed = parse_der(&der, "test").unwrap();
    assert_eq!(validity_of(&parsed).1, ca.not_after());
    assert!(parsed.is_ca());
}

#[test]
fn loaded_ca_issues_certificates_the_original_ca_vouches_for() {
    let ca = ClusterCa::create("lab", NOW).unwrap();
    let loaded = ClusterCa::load(ca.cert_pem(), ca.key_pem()).unwrap();
    assert_eq!(loaded.sha256(), ca.sha256());
    assert_eq!(loaded.not_after(), ca.not_after());
    let cert = issue(&loaded, Role::Admin, 1);
    rustls_accepts(ca.cert_pem(), &cert, "admin-1.pvefleet", NOW).unwrap();
}

#[test]
fn load_refuses_a_foreign_key_or_a_leaf_as_ca() {
    let ca = ClusterCa::create("lab", NOW).unwrap();
    let other = ClusterCa::create("lab", NOW).unwrap();
    let err = ClusterCa::load(ca.cert_pem(), other.key_pem()).unwrap_err();
    assert!(matches!(err, BootstrapError::KeyMismatch { .. }), "{err}");

    let key = NodeKey::generate().unwrap();
    let leaf = ca
        .issue(
            &key.csr_pem().unwrap(),
            Role::Agent,
            1,
            DEFAULT_LEAF_VALIDITY,
            NOW,
        )
        .unwrap();
    let err = ClusterCa::load(&leaf, key.private_key_pem()).unwrap_err();
    assert!(err.to_string().contains("not a CA"), "{err}");
}

#[test]
fn debug_hides_the_ca_key() {
    let ca = ClusterCa::create("lab", NOW).unwrap();
    let shown = format!("{ca:?}");
    assert!(shown.contains("<redacted>"));
    let body = ca.key_pem().lines().nth(1).unwrap();
    assert!(!shown.contains(body));
}

#[test]
fn node_key_matches_only_its_own_certificate() {
    let ca = ClusterCa::create("lab", NOW).unwrap();
    let key = NodeKey::generate().unwrap();
    let cert = ca
        .issue(
            &key.csr_pem().unwrap(),
            Role::Agent,
            1,
            DEFAULT_LEAF_VALIDITY,
            NOW,
        )
        .unwrap();
    assert!(key.matches_certificate(&cert).unwrap());
    assert!(
        !NodeKey::generate()
            .unwrap()
            .matches_certificate(&cert)
            .unwrap()
    );
}

#[test]
fn transport_reads_the_identity_and_pin_bootstrap_writes() {
    let ca = ClusterCa::create("lab", NOW).unwrap();
    assert_eq!(
        transport::ca_fingerprint(ca.cert_pem()).unwrap(),
        ca.sha256()
    );
    for (role, id) in [(Role::Coordinator, 3), (Role::Agent, 12), (Role::Admin, 1)] {
        let cert = issue(&ca, role, id);
        let seen = transport::peer_identity(&der(&cert)).unwrap();
        assert_eq!(seen, transport::PeerIdentity::new(role, id));
    }
}

/// `openssl req -new -newkey rsa:1024 -subj /O=pvefleet/CN=weak`: a correctly signed CSR whose
/// key is too weak for the cluster.
const RSA_1024_CSR: &str = "\
-----BEGIN CERTIFICATE REQUEST-----\n\
MIIBYTCBywIBADAiMREwDwYDVQQKDAhwdmVmbGVldDENMAsGA1UEAwwEd2VhazCB\n\
nzANBgkqhkiG9w0BAQEFAAOBjQAwgYkCgYEA17WETS4XLvYCaYPtz+QBSNLDpQ0u\n\
YcQMeWkm/euRyQ+y4QcVZL8IdxtYdoNnxNiDiCtpP66LzQM0ZuwVISFFyneXS9hR\n\
bMQlVy7jK38oDw0Tp19TIjt6h7hszPiQfgj9/soQKG3EfSy0uPDbD5X8546x17HW\n\
HYx+ZyNJBornfwECAwEAAaAAMA0GCSqGSIb3DQEBCwUAA4GBAC3R9uOFS5KuTjFo\n\
p7eS58LPSnuVsechE+ug6tiCXWpVuD/j3ej1rjbDajBVdgjDD06pIY1r95egGYg/\n\
MF6FDbS5imqbaGf860kl28+8DYIda6qWpqb3y74D5HDaz4JPMcaLSpNZNaB2FXqA\n\
PLozcaje+3Lra6wIH54vX2AT+8hA\n\
-----END CERTIFICATE REQUEST-----\n\
";

/// The same with `rsa:2048`, the smallest RSA key the cluster accepts.
const RSA_2048_CSR: &str = "\
-----BEGIN CERTIFICATE REQUEST-----\n\
MIICZTCCAU0CAQAwIDERMA8GA1UECgwIcHZlZmxlZXQxCzAJBgNVBAMMAm9rMIIB\n\
IjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAlDhf0p1s0Ih8ferHujuwqYcT\n\
g+/8GJcxtowTa+gZa3OLef/ZxIgrotEsHuKHh/3BR9WSORxCwkTvO+y+djGBTnEP\n\
UAB9BjWff/VMZnjj2hypmuumcVScjIotizLhIjvgV0CsgTOniztcnxtbY+V7HQ14\n\
LUHuD01QxNYbqxFBvd5h0F6AwIYPpuilFQerevMKagsaLG1T0neBWwo+mkwd2cGo\n\
2gr6yD5utFo7Z0x1CgLCtNqMlhC/uP+0MTFG4iuCHfomyxDNTPnY/CprJt9Kw3JG\n\
n1ptO3lMLExBcHGzbZtFwuV/1J6FLhowc9suG14LJmME2yEZRjZXodImf8UjWwID\n\
AQABoAAwDQYJKoZIhvcNAQELBQADggEBAHAp3RXbHIgNrHgp2UltpEyZseKjpVuL\n\
r38Dc0EbtPJCIejqZQA7SOPz1rrSUbOqT9LaywY302/RjGQB4F2encCa9M4kCrpe\n\
5HcbP5uouF8mdNw+t2Wn/Xya1wcCIu86J4S9HPpvXSft3il88A9iEXVHmk2f5QM1\n\
0PVhfXfRQTRNSW1JmLed8smFqCqrFS/3TmMePHB71MuREB0L3VyahKGoOlIGdJ0X\n\
ppC5Kh2GEqRHzuWtr2Lcpsd6PLiLYT98YN/KZDeppOUsmfgR3rZoZeYfGIeVAiTS\n\
PWPV29iJ4v6CukSkOYGX165gdTZwFTcQ6oc694ai1NIee/62ElbBr7k=\n\
-----END CERTIFICATE REQUEST-----\n\
";

#[test]
fn a_weak_rsa_key_is_refused_as_too_weak_not_as_a_bad_signature() {
    let ca = ClusterCa::create("lab", NOW).unwrap();
    let err = ca
        .issue(RSA_1024_CSR, Role::Agent, 1, DEFAULT_LEAF_VALIDITY, NOW)
        .unwrap_err();
    assert!(matches!(err, BootstrapError::BadCsr { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("RSA-1024, too weak"), "{text}");
    assert!(text.contains("2048-8192 bits"), "{text}");
    assert!(!text.contains("Invalid CSR signature"), "{text}");

    let pem = ca
        .issue(RSA_2048_CSR, Role::Agent, 1, DEFAULT_LEAF_VALIDITY, NOW)
        .unwrap();
    assert!(pem.contains("BEGIN CERTIFICATE"));
}
