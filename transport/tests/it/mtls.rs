//! Mutual TLS under the cluster CA: foreign and expired certificates on either side, roles per
//! service, the node id dialed, and clients without a certificate.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use crate::support;

use std::sync::Arc;

use quinn::crypto::rustls::QuicClientConfig;
use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use support::pki::{TestCa, Validity, trusting};
use support::*;
use transport::codes::CLOSE_REFUSED;
use transport::{PeerIdentity, Role, Service, TransportError};

fn echo(text: &str) -> Echo {
    Echo(text.to_string())
}

#[tokio::test]
async fn client_certificate_from_another_ca_is_refused_and_the_server_keeps_serving() {
    let ca = TestCa::new("cluster");
    let rogue = TestCa::new("rogue");
    let server = start_server(&ca.leaf(Role::Coordinator, 1), &[Service::Raft], test_cfg());
    // The rogue trusts our CA, so only the server's check can stop it.
    let intruder = client(&trusting(rogue.leaf(Role::Coordinator, 9), &ca));
    let target = PeerIdentity::coordinator(1);
    let conn = bounded(intruder.connect(server.addr, target, Service::Raft)).await;
    let refused = match conn {
        Ok(conn) => bounded(conn.call(&echo("let me in"))).await.unwrap_err(),
        Err(e) => e,
    };
    assert!(
        matches!(&refused, TransportError::Refused { reason } if reason.contains("UnknownIssuer")),
        "{refused:?}"
    );

    let member = client(&ca.leaf(Role::Coordinator, 2));
    let conn = bounded(member.connect(server.addr, target, Service::Raft))
        .await
        .unwrap();
    let reply = bounded(conn.call(&echo("hello"))).await.unwrap();
    assert_eq!(reply.caller, Some(PeerIdentity::coordinator(2)));
    server.stop().await;
}

#[tokio::test]
async fn server_certificate_from_another_ca_is_refused_by_the_client() {
    let ca = TestCa::new("cluster");
    let rogue = TestCa::new("rogue");
    // An impostor with the right name, signed by the wrong CA, trusting our clients.
    let impostor = start_server(
        &trusting(rogue.leaf(Role::Coordinator, 1), &ca),
        &[Service::Raft],
        test_cfg(),
    );
    let member = client(&ca.leaf(Role::Coordinator, 2));
    let err = bounded(member.connect(impostor.addr, PeerIdentity::coordinator(1), Service::Raft))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, TransportError::PeerCertificate { reason, .. } if reason.contains("UnknownIssuer")),
        "{err:?}"
    );
    impostor.stop().await;
}

#[tokio::test]
async fn expired_client_certificate_is_refused() {
    let ca = TestCa::new("cluster");
    let server = start_server(&ca.leaf(Role::Coordinator, 1), &[Service::Raft], test_cfg());
    let expired = client(&ca.leaf_with(Role::Coordinator, 2, Validity::Expired, &[]));
    let target = PeerIdentity::coordinator(1);
    let refused = match bounded(expired.connect(server.addr, target, Service::Raft)).await {
        Ok(conn) => bounded(conn.call(&echo("stale"))).await.unwrap_err(),
        Err(e) => e,
    };
    assert!(
        matches!(&refused, TransportError::Refused { reason } if reason.contains("expired")),
        "{refused:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn expired_server_certificate_is_refused_by_the_client() {
    let ca = TestCa::new("cluster");
    let server = start_server(
        &ca.leaf_with(Role::Coordinator, 1, Validity::Expired, &[]),
        &[Service::Raft],
        test_cfg(),
    );
    let member = client(&ca.leaf(Role::Coordinator, 2));
    let err = bounded(member.connect(server.addr, PeerIdentity::coordinator(1), Service::Raft))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, TransportError::PeerCertificate { reason, .. } if reason.contains("expired")),
        "{err:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn agent_certificate_is_refused_on_raft_and_admitted_on_agent() {
    let ca = TestCa::new("cluster");
    let services = [Service::Raft, Service::Agent];
    let server = start_server(&ca.leaf(Role::Coordinator, 1), &services, test_cfg());
    let agent = client(&ca.leaf(Role::Agent, 7));
    let target = PeerIdentity::coordinator(1);

    let raft = bounded(agent.connect(server.addr, target, Service::Raft))
        .await
        .unwrap();
    let err = bounded(raft.call(&echo("vote for me"))).await.unwrap_err();
    assert!(
        matches!(&err, TransportError::Refused { reason } if reason == "role agent is not allowed on pvefleet-raft/1"),
        "{err:?}"
    );

    let conn = bounded(agent.connect(server.addr, target, Service::Agent))
        .await
        .unwrap();
    let reply = bounded(conn.call(&echo("heartbeat"))).await.unwrap();
    assert_eq!(reply.caller, Some(PeerIdentity::new(Role::Agent, 7)));
    assert_eq!(reply.service, Service::Agent);
    assert_eq!(conn.peer(), Some(target));
    server.stop().await;
}

#[tokio::test]
async fn reaching_node_2_when_node_3_was_dialed_is_refused() {
    let ca = TestCa::new("cluster");
    let server = start_server(&ca.leaf(Role::Coordinator, 2), &[Service::Raft], test_cfg());
    let member = client(&ca.leaf(Role::Coordinator, 1));
    let err = bounded(member.connect(server.addr, PeerIdentity::coordinator(3), Service::Raft))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, TransportError::PeerCertificate { reason, .. } if reason.contains("coordinator-3.pvefleet")),
        "{err:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_certificate_valid_for_the_dialed_name_but_another_identity_is_refused() {
    let ca = TestCa::new("cluster");
    // Passes the TLS name check for node 3, but its identity URI says node 2.
    let two_faced = ca.leaf_with(
        Role::Coordinator,
        2,
        Validity::Current,
        &["coordinator-3.pvefleet"],
    );
    let server = start_server(&two_faced, &[Service::Raft], test_cfg());
    let member = client(&ca.leaf(Role::Coordinator, 1));
    let err = bounded(member.connect(server.addr, PeerIdentity::coordinator(3), Service::Raft))
        .await
        .unwrap_err();
    assert!(
        matches!(err, TransportError::WrongPeer { expected, found: Some(found) }
            if expected == PeerIdentity::coordinator(3) && found == PeerIdentity::coordinator(2)),
        "{err:?}"
    );
    server.stop().await;
}

/// A raw quinn client without a certificate, speaking `service`'s ALPN.
async fn dial_without_certificate(
    ca: &TestCa,
    addr: std::net::SocketAddr,
    service: Service,
) -> quinn::Connection {
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca.cert_pem.as_bytes()).unwrap())
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![service.alpn().to_vec()];
    let config = quinn::ClientConfig::new(Arc::new(QuicClientConfig::try_from(tls).unwrap()));
    let endpoint = quinn::Endpoint::client(loopback()).unwrap();
    let connecting = endpoint
        .connect_with(config, addr, "coordinator-1.pvefleet")
        .unwrap();
    bounded(connecting).await.unwrap()
}

#[tokio::test]
async fn a_client_without_certificate_is_refused_on_every_service_but_join() {
    let ca = TestCa::new("cluster");
    let server = start_server(&ca.leaf(Role::Coordinator, 1), &Service::ALL, test_cfg());
    for service in [Service::Raft, Service::Agent, Service::Admin] {
        let conn = dial_without_certificate(&ca, server.addr, service).await;
        match bounded(conn.closed()).await {
            quinn::ConnectionError::ApplicationClosed(close) => {
                assert_eq!(close.error_code, CLOSE_REFUSED.into(), "{service}");
                let reason = String::from_utf8_lossy(&close.reason);
                assert!(
                    reason.contains("requires a client certificate"),
                    "{service}: {reason}"
                );
            }
            other => panic!("{service}: expected a refusal, got {other:?}"),
        }
    }

    // Join admits it (and only it: a certificate holder is refused there).
    let joiner = dial_without_certificate(&ca, server.addr, Service::Join).await;
    let (mut send, mut recv) = bounded(joiner.open_bi()).await.unwrap();
    let request =
        transport::frame::encode_request(&echo("new node"), protocol::version::CURRENT, 1024)
            .unwrap();
    send.write_all(&request).await.unwrap();
    send.finish().unwrap();
    let payload = bounded(transport::frame::read_frame(&mut recv, 1024))
        .await
        .unwrap();
    let body = transport::frame::decode::<transport::frame::ResponseEnvelope>(&payload)
        .unwrap()
        .unwrap();
    let reply = transport::versioned_body::decode_response::<Echo>(&body).unwrap();
    assert_eq!((reply.caller, reply.service), (None, Service::Join));

    let member = client(&ca.leaf(Role::Coordinator, 2));
    let conn = bounded(member.connect(server.addr, PeerIdentity::coordinator(1), Service::Join))
        .await
        .unwrap();
    let err = bounded(conn.call(&echo("renew me"))).await.unwrap_err();
    assert!(
        matches!(&err, TransportError::Refused { reason } if reason.contains("role coordinator")),
        "{err:?}"
    );
    server.stop().await;
}
