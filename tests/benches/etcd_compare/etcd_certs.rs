//! Certificates for the etcd cluster with client mutual TLS, made with rcgen: a CA, one
//! server certificate the members share (`localhost`, 127.0.0.1) and one client certificate,
//! as PEM files in the cluster's directory.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

use crate::etcd_api::ClientTls;

/// The files etcd's TLS flags name, and what the bench's clients present.
#[derive(Debug, Clone)]
pub(crate) struct EtcdCerts {
    /// `--trusted-ca-file`: the CA client certificates must chain to.
    pub(crate) ca_file: PathBuf,
    /// `--cert-file`.
    pub(crate) cert_file: PathBuf,
    /// `--key-file`.
    pub(crate) key_file: PathBuf,
    /// The clients' side.
    pub(crate) client: ClientTls,
}

/// Makes the CA and certificates and writes the members' files into `dir`.
pub(crate) fn make(dir: &Path) -> Result<EtcdCerts, String> {
    fn err(what: &'static str) -> impl Fn(rcgen::Error) -> String {
        move |e| format!("{what}: {e}")
    }
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(err("CA"))?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "pvefleet bench etcd CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = KeyPair::generate().map_err(err("CA key"))?;
    let ca = CertifiedIssuer::self_signed(ca_params, ca_key).map_err(err("CA"))?;

    let mut server = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
        .map_err(err("server"))?;
    server
        .distinguished_name
        .push(DnType::CommonName, "etcd member");
    // etcd dials itself with its server certificate (its gRPC gateway), so client auth too.
    server.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let server_key = KeyPair::generate().map_err(err("server key"))?;
    let server_cert = server
        .signed_by(&server_key, &ca)
        .map_err(err("server certificate"))?;

    let mut client = CertificateParams::new(Vec::<String>::new()).map_err(err("client"))?;
    client
        .distinguished_name
        .push(DnType::CommonName, "pvefleet bench client");
    client.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let client_key = KeyPair::generate().map_err(err("client key"))?;
    let client_cert = client
        .signed_by(&client_key, &ca)
        .map_err(err("client certificate"))?;

    let certs = EtcdCerts {
        ca_file: dir.join("ca.pem"),
        cert_file: dir.join("member.pem"),
        key_file: dir.join("member-key.pem"),
        client: ClientTls {
            ca_pem: ca.pem(),
            cert_pem: client_cert.pem(),
            key_pem: client_key.serialize_pem(),
        },
    };
    let write = |path: &Path, text: &str| {
        std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
    };
    write(&certs.ca_file, &certs.client.ca_pem)?;
    write(&certs.cert_file, &server_cert.pem())?;
    write(&certs.key_file, &server_key.serialize_pem())?;
    Ok(certs)
}
