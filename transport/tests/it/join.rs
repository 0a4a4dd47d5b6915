//! The Join service: a client without a certificate trusts the server by the CA hash its token
//! pins, and reaches only coordinators.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use crate::support;

use support::pki::TestCa;
use support::*;
use transport::{Endpoint, PeerIdentity, Role, Service, TransportError};

fn join_client(pin: [u8; 32]) -> Endpoint {
    install_provider();
    Endpoint::join_client_on(loopback(), pin, test_cfg()).unwrap()
}

#[tokio::test]
async fn join_client_with_the_right_pin_reaches_the_coordinator_without_a_certificate() {
    let ca = TestCa::new("cluster");
    let server = start_server(&ca.leaf(Role::Coordinator, 1), &Service::ALL, test_cfg());
    let joiner = join_client(ca.fingerprint());
    let conn = bounded(joiner.connect_join(server.addr)).await.unwrap();
    assert_eq!(conn.peer(), Some(PeerIdentity::coordinator(1)));
    assert_eq!(conn.service(), Service::Join);
    let reply = bounded(conn.call(&Echo("csr please".into())))
        .await
        .unwrap();
    assert_eq!((reply.caller, reply.service), (None, Service::Join));
    bounded(conn.close()).await;
    server.stop().await;
}

#[tokio::test]
async fn join_client_with_a_wrong_pin_is_refused() {
    let ca = TestCa::new("cluster");
    let other = TestCa::new("other");
    let server = start_server(&ca.leaf(Role::Coordinator, 1), &[Service::Join], test_cfg());
    let joiner = join_client(other.fingerprint());
    let err = bounded(joiner.connect_join(server.addr)).await.unwrap_err();
    assert!(
        matches!(&err, TransportError::PeerCertificate { reason, .. } if reason.contains("pinned CA hash")),
        "{err:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_server_of_the_pinned_ca_that_is_not_a_coordinator_is_refused() {
    let ca = TestCa::new("cluster");
    let server = start_server(&ca.leaf(Role::Agent, 5), &[Service::Join], test_cfg());
    let joiner = join_client(ca.fingerprint());
    let err = bounded(joiner.connect_join(server.addr)).await.unwrap_err();
    assert!(
        matches!(&err, TransportError::PeerCertificate { reason, .. } if reason.contains("not a coordinator")),
        "{err:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn endpoints_refuse_the_other_kind_of_dial() {
    let ca = TestCa::new("cluster");
    let joiner = join_client(ca.fingerprint());
    let member = client(&ca.leaf(Role::Coordinator, 2));
    let addr = loopback();
    let err = bounded(joiner.connect(addr, PeerIdentity::coordinator(1), Service::Raft))
        .await
        .unwrap_err();
    assert!(matches!(err, TransportError::Unsupported(_)), "{err:?}");
    let err = bounded(member.connect_join(addr)).await.unwrap_err();
    assert!(matches!(err, TransportError::Unsupported(_)), "{err:?}");
    assert_eq!(joiner.identity(), None);
    assert_eq!(member.identity(), Some(PeerIdentity::coordinator(2)));
}
