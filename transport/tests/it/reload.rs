//! Reloading an endpoint's certificate (a renewal): new connections, accepted or dialed, use
//! the new certificate while the connections already open keep working; a certificate of
//! another identity is refused and changes nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use crate::support;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use support::pki::{TestCa, Validity};
use support::*;
use transport::{Connection, PeerIdentity, Role, Service, TlsMaterial, TransportError};

fn echo(text: &str) -> Echo {
    Echo(text.to_string())
}

/// The DER of the certificate the peer presented on `conn`.
fn presented(conn: &Connection) -> Vec<u8> {
    let any = conn.quic().peer_identity().expect("peer presented a chain");
    let chain = any
        .downcast::<Vec<CertificateDer<'static>>>()
        .expect("a rustls certificate chain");
    chain[0].to_vec()
}

/// The DER of the leaf certificate in `material`.
fn leaf_der(material: &TlsMaterial) -> Vec<u8> {
    CertificateDer::pem_slice_iter(material.cert_chain_pem.as_bytes())
        .next()
        .unwrap()
        .unwrap()
        .to_vec()
}

/// Serial number and `notAfter` (unix seconds) of a DER certificate.
fn serial_and_expiry(der: &[u8]) -> (Vec<u8>, i64) {
    let (_, cert) = x509_parser::parse_x509_certificate(der).unwrap();
    (
        cert.raw_serial().to_vec(),
        cert.validity().not_after.timestamp(),
    )
}

#[tokio::test]
async fn a_reloaded_server_presents_the_new_certificate_on_new_connections_and_keeps_old_ones() {
    let ca = TestCa::new("cluster");
    // The old certificate expires in 2030, the renewal far later: both valid now.
    let old = ca.leaf_with(Role::Coordinator, 1, Validity::Until(2030), &[]);
    let new = ca.leaf(Role::Coordinator, 1);
    let server = start_server(&old, &[Service::Raft], test_cfg());
    let member = client(&ca.leaf(Role::Coordinator, 2));
    let target = PeerIdentity::coordinator(1);

    let before = bounded(member.connect(server.addr, target, Service::Raft))
        .await
        .unwrap();
    assert_eq!(presented(&before), leaf_der(&old));

    server.endpoint.reload(&new).unwrap();

    let after = bounded(member.connect(server.addr, target, Service::Raft))
        .await
        .unwrap();
    let (new_serial, new_expiry) = serial_and_expiry(&presented(&after));
    let (old_serial, old_expiry) = serial_and_expiry(&leaf_der(&old));
    assert_eq!(presented(&after), leaf_der(&new));
    assert_ne!(new_serial, old_serial);
    assert!(new_expiry > old_expiry, "{new_expiry} vs {old_expiry}");
    let reply = bounded(after.call(&echo("new"))).await.unwrap();
    assert_eq!(reply.caller, Some(PeerIdentity::coordinator(2)));

    // The connection made before the reload still serves calls, with the old certificate.
    let reply = bounded(before.call(&echo("old"))).await.unwrap();
    assert_eq!(reply.text, "old");
    assert_eq!(presented(&before), leaf_der(&old));

    before.close().await;
    after.close().await;
    server.stop().await;
}

#[tokio::test]
async fn a_reloaded_client_presents_the_new_certificate_when_it_dials() {
    let ca = TestCa::new("cluster");
    let server = start_server(&ca.leaf(Role::Coordinator, 1), &[Service::Raft], test_cfg());
    let target = PeerIdentity::coordinator(1);
    // An expired client certificate is refused; once reloaded with a current one, a new
    // connection is admitted, which proves the new certificate is the one presented.
    let member = client(&ca.leaf_with(Role::Coordinator, 2, Validity::Expired, &[]));
    let refused = match bounded(member.connect(server.addr, target, Service::Raft)).await {
        Ok(conn) => bounded(conn.call(&echo("stale"))).await.unwrap_err(),
        Err(e) => e,
    };
    assert!(
        matches!(&refused, TransportError::Refused { .. }),
        "{refused:?}"
    );

    member.reload(&ca.leaf(Role::Coordinator, 2)).unwrap();
    let conn = bounded(member.connect(server.addr, target, Service::Raft))
        .await
        .unwrap();
    let reply = bounded(conn.call(&echo("renewed"))).await.unwrap();
    assert_eq!(reply.caller, Some(PeerIdentity::coordinator(2)));
    conn.close().await;
    server.stop().await;
}

#[tokio::test]
async fn a_certificate_of_another_identity_is_not_reloaded() {
    let ca = TestCa::new("cluster");
    let current = ca.leaf(Role::Coordinator, 1);
    let server = start_server(&current, &[Service::Raft], test_cfg());
    let err = server
        .endpoint
        .reload(&ca.leaf(Role::Coordinator, 3))
        .unwrap_err();
    assert!(
        matches!(&err, TransportError::Identity(m) if m.contains("coordinator-3")),
        "{err:?}"
    );
    let garbage = TlsMaterial::new(ca.cert_pem.clone(), "not a certificate", "nor a key");
    assert!(matches!(
        server.endpoint.reload(&garbage),
        Err(TransportError::Material(_))
    ));

    // Nothing changed: new connections still get the current certificate.
    let member = client(&ca.leaf(Role::Coordinator, 2));
    let conn = bounded(member.connect(server.addr, PeerIdentity::coordinator(1), Service::Raft))
        .await
        .unwrap();
    assert_eq!(presented(&conn), leaf_der(&current));
    conn.close().await;
    server.stop().await;
}

#[tokio::test]
async fn a_join_client_has_no_certificate_to_reload() {
    let ca = TestCa::new("cluster");
    install_provider();
    let joiner =
        transport::Endpoint::join_client_on(loopback(), ca.fingerprint(), test_cfg()).unwrap();
    let err = joiner.reload(&ca.leaf(Role::Agent, 4)).unwrap_err();
    assert!(matches!(err, TransportError::Unsupported(_)), "{err:?}");
}
