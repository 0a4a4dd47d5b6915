//! Why a certificate signing request was refused, in words an operator can act on. rcgen checks
//! the CSR's signature with ring, which verifies RSA signatures only for keys of 2048 to 8192
//! bits, so a CSR made with a weak key fails as "Invalid CSR signature" although nothing was
//! forged. Reading the CSR's public key tells the two apart.

use x509_parser::prelude::{FromDer, X509CertificationRequest};
use x509_parser::public_key::PublicKey;

/// Smallest RSA modulus ring verifies (and so the cluster accepts), in bits.
pub(crate) const MIN_RSA_BITS: usize = 2048;
/// Largest RSA modulus ring verifies, in bits.
pub(crate) const MAX_RSA_BITS: usize = 8192;

/// What is wrong with the CSR's key, when its size is the reason it was refused.
pub(crate) fn key_problem(csr_pem: &str) -> Option<String> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(csr_pem.as_bytes()).ok()?;
    let (_, csr) = X509CertificationRequest::from_der(&pem.contents).ok()?;
    let spki = &csr.certification_request_info.subject_pki;
    match spki.parsed().ok()? {
        PublicKey::RSA(rsa) => {
            let bits = rsa.key_size();
            if bits < MIN_RSA_BITS {
                Some(format!(
                    "its key is RSA-{bits}, too weak: the cluster accepts RSA keys of \
                     {MIN_RSA_BITS}-{MAX_RSA_BITS} bits, ECDSA P-256/P-384 or Ed25519; \
                     make a new key (pvefleet's own tools make ECDSA P-256 keys)"
                ))
            } else if bits > MAX_RSA_BITS {
                Some(format!(
                    "its key is RSA-{bits}, larger than the {MAX_RSA_BITS} bits the cluster \
                     can verify; use a smaller RSA key, ECDSA P-256/P-384 or Ed25519"
                ))
            } else {
                None
            }
        }
        _ => None,
    }
}
