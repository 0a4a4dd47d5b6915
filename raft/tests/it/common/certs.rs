//! A throw-away cluster CA and coordinator certificates following the transport's identity
//! convention (SAN DNS `coordinator-<id>.pvefleet`, SAN URI `urn:pvefleet:coordinator:<id>`).

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use transport::{Role, TlsMaterial};

/// The test CA.
pub struct TestCa {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl TestCa {
    pub fn new() -> TestCa {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params
            .distinguished_name
            .push(DnType::CommonName, "raft test cluster CA");
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        TestCa {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// TLS material of a coordinator with node id `id`.
    pub fn coordinator(&self, id: u64) -> TlsMaterial {
        let names = transport::identity::cert_names(Role::Coordinator, id);
        let mut params = CertificateParams::new(vec![names.dns]).unwrap();
        params
            .subject_alt_names
            .push(SanType::URI(names.uri.try_into().unwrap()));
        params
            .distinguished_name
            .push(DnType::CommonName, format!("coordinator {id}"));
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        params.use_authority_key_identifier_extension = true;
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        TlsMaterial::new(self.pem.clone(), cert.pem(), key.serialize_pem())
    }
}
