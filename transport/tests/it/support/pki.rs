//! Test certificates made with rcgen: a cluster CA and leaves that follow the identity
//! convention (SAN DNS `<role>-<id>.pvefleet` + SAN URI `urn:pvefleet:<role>:<id>`), the same
//! shape bootstrap issues. Also the broken ones the tests need (expired, foreign CA, lying SANs).

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType, date_time_ymd,
};
use transport::{NodeId, Role, TlsMaterial, cert_names};

/// A throw-away cluster CA.
pub(crate) struct TestCa {
    /// The CA certificate, PEM.
    pub(crate) cert_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

/// When a leaf is valid.
#[derive(Clone, Copy)]
pub(crate) enum Validity {
    /// rcgen's default, 1975 to 4096.
    Current,
    /// January to June 2020: long expired.
    Expired,
    /// From 2020 to the first of January of this year.
    Until(i32),
}

impl TestCa {
    /// A new CA named `name`.
    pub(crate) fn new(name: &str) -> TestCa {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params
            .distinguished_name
            .push(DnType::CommonName, format!("pvefleet test CA {name}"));
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        TestCa {
            cert_pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// The join-token pin of this CA.
    pub(crate) fn fingerprint(&self) -> [u8; 32] {
        transport::ca_fingerprint(&self.cert_pem).unwrap()
    }

    /// A current leaf for `role` `node_id`, trusting this CA.
    pub(crate) fn leaf(&self, role: Role, node_id: NodeId) -> TlsMaterial {
        self.leaf_with(role, node_id, Validity::Current, &[])
    }

    /// A leaf for `role` `node_id` with the given validity and extra DNS SANs.
    pub(crate) fn leaf_with(
        &self,
        role: Role,
        node_id: NodeId,
        validity: Validity,
        extra_dns: &[&str],
    ) -> TlsMaterial {
        let names = cert_names(role, node_id);
        let mut dns = vec![names.dns.clone()];
        dns.extend(extra_dns.iter().map(|d| d.to_string()));
        let mut params = CertificateParams::new(dns).unwrap();
        params
            .subject_alt_names
            .push(SanType::URI(names.uri.as_str().try_into().unwrap()));
        params
            .distinguished_name
            .push(DnType::CommonName, names.dns);
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.use_authority_key_identifier_extension = true;
        match validity {
            Validity::Current => {}
            Validity::Expired => {
                params.not_before = date_time_ymd(2020, 1, 1);
                params.not_after = date_time_ymd(2020, 6, 1);
            }
            Validity::Until(year) => {
                params.not_before = date_time_ymd(2020, 1, 1);
                params.not_after = date_time_ymd(year, 1, 1);
            }
        }
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        TlsMaterial::new(self.cert_pem.clone(), cert.pem(), key.serialize_pem())
    }
}

/// `material`'s own certificate and key, but trusting `ca` (e.g. a leaf of another CA that
/// trusts our servers).
pub(crate) fn trusting(material: TlsMaterial, ca: &TestCa) -> TlsMaterial {
    TlsMaterial {
        ca_pem: ca.cert_pem.clone(),
        ..material
    }
}
