//! The listener's TLS identity: a self-signed certificate (as a fresh PVE node has, for
//! `localhost`, `127.0.0.1` and the node names) or one loaded from PEM files, plus the SHA-256
//! fingerprint clients pin (`AA:BB:...`, as PVE's `ssl_fingerprint`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::certificate::{CertificateInfo, fingerprint_of, san_ip};
use crate::error::SimError;

/// The file name PVE reports for a node's own certificate.
const CERT_FILENAME: &str = "pve-ssl.pem";

/// Where a listener's certificate comes from.
#[derive(Debug, Clone)]
pub enum CertSource {
    /// Generate a self-signed certificate for `localhost`, `127.0.0.1`, `::1` and the node;
    /// with `dir`, also write `pve-ssl.pem` and `pve-ssl.key` (mode 0600) there.
    SelfSigned {
        /// Directory for the PEM files.
        dir: Option<PathBuf>,
    },
    /// Load a certificate chain and its key from PEM files.
    Files {
        /// Certificate chain (leaf first).
        cert: PathBuf,
        /// Private key.
        key: PathBuf,
    },
    /// An identity made beforehand (e.g. one self-signed certificate shared by the listeners
    /// of all nodes).
    Identity(TlsIdentity),
}

/// A certificate with its key.
#[derive(Clone)]
pub struct TlsIdentity {
    cert_pem: String,
    key_pem: String,
    cert_der: Vec<u8>,
    fingerprint: String,
    cert_path: Option<PathBuf>,
    /// What `certificates/info` reports about it (boxed: an identity is moved around a lot).
    info: Box<CertificateInfo>,
}

impl std::fmt::Debug for TlsIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsIdentity")
            .field("fingerprint", &self.fingerprint)
            .field("cert_path", &self.cert_path)
            .finish_non_exhaustive()
    }
}

fn tls_err(what: &str, e: impl std::fmt::Display) -> SimError {
    SimError::Tls(format!("{what}: {e}"))
}

fn write_file(path: &Path, content: &str, private: bool) -> Result<(), SimError> {
    let err = |source| SimError::Write {
        path: path.to_path_buf(),
        source,
    };
    std::fs::write(path, content).map_err(err)?;
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(err)?;
    }
    #[cfg(not(unix))]
    let _ = private;
    Ok(())
}

/// The first certificate block of a PEM chain (the leaf), with its trailing newline.
fn first_pem_block(chain: &str) -> String {
    const END: &str = "-----END CERTIFICATE-----";
    let start = chain.find("-----BEGIN CERTIFICATE-----").unwrap_or(0);
    match chain[start..].find(END) {
        Some(end) => format!("{}\n", &chain[start..start + end + END.len()]),
        None => chain.to_string(),
    }
}

impl TlsIdentity {
    /// A self-signed certificate for `localhost`, `127.0.0.1`, `::1` and `names`; written to
    /// `dir/pve-ssl.pem` and `dir/pve-ssl.key` (0600) when `dir` is given.
    pub fn self_signed(names: &[String], dir: Option<&Path>) -> Result<Self, SimError> {
        let mut sans = vec![
            "localhost".to_string(),
            "127.0.0.1".to_string(),
            "::1".to_string(),
        ];
        for n in names {
            if !sans.contains(n) {
                sans.push(n.clone());
            }
        }
        let mut params = rcgen::CertificateParams::new(sans)
            .map_err(|e| tls_err("generating the certificate", e))?;
        // The subject of a PVE node certificate (`pve-ssl.pem`), named for the first node.
        let cn = names.first().map_or("localhost", String::as_str);
        let mut dn = rcgen::DistinguishedName::new();
        dn.push(rcgen::DnType::OrganizationalUnitName, "PVE Cluster Node");
        dn.push(
            rcgen::DnType::OrganizationName,
            "Proxmox Virtual Environment",
        );
        dn.push(rcgen::DnType::CommonName, cn);
        params.distinguished_name = dn;
        let key = rcgen::KeyPair::generate().map_err(|e| tls_err("generating the key", e))?;
        let cert = params
            .self_signed(&key)
            .map_err(|e| tls_err("generating the certificate", e))?;
        let cert_pem = cert.pem();
        let key_pem = key.serialize_pem();
        let cert_der = cert.der().to_vec();
        let mut cert_path = None;
        if let Some(dir) = dir {
            std::fs::create_dir_all(dir).map_err(|source| SimError::Write {
                path: dir.to_path_buf(),
                source,
            })?;
            let cert_file = dir.join("pve-ssl.pem");
            write_file(&cert_file, &cert_pem, false)?;
            write_file(&dir.join("pve-ssl.key"), &key_pem, true)?;
            cert_path = Some(cert_file);
        }
        let fingerprint = fingerprint_of(&cert_der);
        let subject = format!("/OU=PVE Cluster Node/O=Proxmox Virtual Environment/CN={cn}");
        let san = params
            .subject_alt_names
            .iter()
            .filter_map(|s| match s {
                rcgen::SanType::DnsName(name) => Some(name.to_string()),
                rcgen::SanType::IpAddress(ip) => Some(san_ip(*ip)),
                _ => None,
            })
            .collect();
        let info = Box::new(CertificateInfo {
            filename: CERT_FILENAME.into(),
            fingerprint: fingerprint.clone(),
            issuer: Some(subject.clone()),
            subject: Some(subject),
            notbefore: Some(params.not_before.unix_timestamp()),
            notafter: Some(params.not_after.unix_timestamp()),
            san: Some(san),
            pem: cert_pem.clone(),
            // rcgen's default key: ECDSA on P-256.
            public_key_type: Some("id-ecPublicKey".into()),
            public_key_bits: Some(256),
        });
        Ok(Self {
            cert_pem,
            key_pem,
            cert_der,
            fingerprint,
            cert_path,
            info,
        })
    }

    /// Load a certificate chain and key from PEM files.
    pub fn from_files(cert: &Path, key: &Path) -> Result<Self, SimError> {
        let read = |p: &Path| {
            std::fs::read_to_string(p).map_err(|e| tls_err(&format!("reading {}", p.display()), e))
        };
        let cert_pem = read(cert)?;
        let key_pem = read(key)?;
        let first = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
            .next()
            .ok_or_else(|| SimError::Tls(format!("no certificate in {}", cert.display())))?
            .map_err(|e| tls_err("parsing the certificate", e))?;
        let cert_der = first.to_vec();
        let fingerprint = fingerprint_of(&cert_der);
        // Only what can be told without parsing the certificate (the other fields are
        // optional in PVE's answer too).
        let info = Box::new(CertificateInfo {
            filename: CERT_FILENAME.into(),
            fingerprint: fingerprint.clone(),
            subject: None,
            issuer: None,
            notbefore: None,
            notafter: None,
            san: None,
            pem: first_pem_block(&cert_pem),
            public_key_type: None,
            public_key_bits: None,
        });
        Ok(Self {
            cert_pem,
            key_pem,
            cert_der,
            fingerprint,
            cert_path: Some(cert.to_path_buf()),
            info,
        })
    }

    /// The certificate chain in PEM.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// What a client must trust: the self-signed certificate itself (or the loaded chain).
    pub fn ca_pem(&self) -> &str {
        &self.cert_pem
    }

    /// SHA-256 fingerprint of the leaf certificate, `AA:BB:...` (upper case, as PVE).
    pub fn fingerprint_sha256(&self) -> &str {
        &self.fingerprint
    }

    /// The leaf certificate in DER.
    pub fn cert_der(&self) -> &[u8] {
        &self.cert_der
    }

    /// What `GET /nodes/{node}/certificates/info` reports about the certificate.
    pub(crate) fn info(&self) -> &CertificateInfo {
        &self.info
    }

    /// The PEM file of the certificate, when it was written or loaded from disk.
    pub fn cert_path(&self) -> Option<&Path> {
        self.cert_path.as_deref()
    }

    /// A rustls server configuration (ring provider, HTTP/1.1 only as pveproxy).
    pub(crate) fn server_config(&self) -> Result<Arc<rustls::ServerConfig>, SimError> {
        let chain: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(self.cert_pem.as_bytes())
                .collect::<Result<_, _>>()
                .map_err(|e| tls_err("parsing the certificate", e))?;
        let key = PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes())
            .map_err(|e| tls_err("parsing the key", e))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| tls_err("protocol versions", e))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| tls_err("certificate and key", e))?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_signed_identity_is_written_with_a_private_key_file() {
        let dir = tempfile::tempdir().unwrap();
        let id = TlsIdentity::self_signed(&["pve1".into()], Some(dir.path())).unwrap();
        assert_eq!(
            id.cert_path(),
            Some(dir.path().join("pve-ssl.pem").as_path())
        );
        let fp = id.fingerprint_sha256();
        assert_eq!(fp.len(), 32 * 3 - 1);
        assert!(
            fp.chars()
                .all(|c| c == ':' || c.is_ascii_digit() || c.is_ascii_uppercase())
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("pve-ssl.key"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let loaded = TlsIdentity::from_files(
            &dir.path().join("pve-ssl.pem"),
            &dir.path().join("pve-ssl.key"),
        )
        .unwrap();
        assert_eq!(loaded.fingerprint_sha256(), fp);
        assert!(loaded.server_config().is_ok());
    }
}
