#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking
//! The agent renews its certificate from two thirds of its life on, through any coordinator's
//! `renew` on the Agent service, and refuses an answer for another identity.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bootstrap::ca::DEFAULT_LEAF_VALIDITY;
use bootstrap::paths::{read_public, write_public, write_secret};
use bootstrap::{ClusterCa, NodeDir, NodeKey, cert_identity};
use node_agent::session::{CertRenewal, RenewError, Target};
use protocol::join::{RenewRequest, RenewResponse};
use protocol::{NodeId, Role};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use transport::{
    Caller, Endpoint, RemoteError, Router, Server, Service, TlsMaterial, TransportConfig,
};

const AGENT_ID: NodeId = 10;

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn loopback() -> SocketAddr {
    (Ipv4Addr::LOCALHOST, 0).into()
}

/// A coordinator whose `renew` issues for the caller, or for `other` when set.
fn coordinator(ca: &Arc<ClusterCa>, other: Option<NodeId>) -> (SocketAddr, CancellationToken) {
    let key = NodeKey::generate().unwrap();
    let cert = ca
        .issue(
            &key.csr_pem().unwrap(),
            Role::Coordinator,
            1,
            DEFAULT_LEAF_VALIDITY,
            now_secs(),
        )
        .unwrap();
    let tls = TlsMaterial::new(ca.cert_pem(), cert, key.private_key_pem());
    let endpoint = Endpoint::server(
        loopback(),
        &tls,
        &[Service::Agent],
        TransportConfig::default(),
    )
    .unwrap();
    let addr = endpoint.local_addr().unwrap();
    let issuer = Arc::clone(ca);
    let mut router = Router::new();
    router.handle::<RenewRequest, _, _>(Service::Agent, move |caller: Caller, req| {
        let peer = caller.peer.unwrap();
        let answer = issuer
            .issue(
                &req.csr_pem,
                peer.role,
                other.unwrap_or(peer.node_id),
                DEFAULT_LEAF_VALIDITY,
                now_secs(),
            )
            .map(|cert_pem| RenewResponse { cert_pem })
            .map_err(|e| RemoteError::bad_request(e.to_string()));
        async move { answer }
    });
    let stop = CancellationToken::new();
    let server = Server::new(endpoint, router);
    let token = stop.clone();
    tokio::spawn(async move { server.run(token).await });
    (addr, stop)
}

/// An agent directory with a certificate issued at `issued_at`.
fn agent_dir(ca: &ClusterCa, dir: &std::path::Path, issued_at: u64) -> (NodeDir, TlsMaterial) {
    let node = NodeDir::new(dir);
    node.create().unwrap();
    let key = NodeKey::generate().unwrap();
    let cert = ca
        .issue(
            &key.csr_pem().unwrap(),
            Role::Agent,
            AGENT_ID,
            DEFAULT_LEAF_VALIDITY,
            issued_at,
        )
        .unwrap();
    write_secret(&node.node_key(), key.private_key_pem()).unwrap();
    write_public(&node.node_cert(), &cert).unwrap();
    write_public(&node.ca_cert(), ca.cert_pem()).unwrap();
    let tls = node.load_node_material().unwrap();
    (node, tls)
}

fn setup(other: Option<NodeId>) -> (tempfile::TempDir, CertRenewal, CancellationToken) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let ca = Arc::new(ClusterCa::create("lab", now_secs()).unwrap());
    let (addr, stop) = coordinator(&ca, other);
    let tmp = tempfile::tempdir().unwrap();
    let (dir, tls) = agent_dir(&ca, tmp.path(), now_secs());
    let endpoint = Endpoint::client_on(loopback(), &tls, TransportConfig::default()).unwrap();
    let renewal = CertRenewal {
        endpoint,
        dir,
        // A dead member first: the next one answers.
        members: vec![
            Target {
                id: 3,
                addr: "127.0.0.1:1".into(),
            },
            Target {
                id: 1,
                addr: addr.to_string(),
            },
        ],
        every: Duration::from_secs(3600),
    };
    (tmp, renewal, stop)
}

#[tokio::test]
async fn a_certificate_past_two_thirds_of_its_life_is_renewed_for_the_same_identity() {
    let (_tmp, renewal, stop) = setup(None);
    let before = read_public(&renewal.dir.node_cert()).unwrap();
    assert!(
        renewal.check(now_secs()).await.unwrap().is_none(),
        "not due yet"
    );
    assert_eq!(read_public(&renewal.dir.node_cert()).unwrap(), before);
    let later = now_secs() + DEFAULT_LEAF_VALIDITY.as_secs() * 3 / 4;
    let renewed = tokio::time::timeout(Duration::from_secs(20), renewal.check(later))
        .await
        .unwrap()
        .unwrap()
        .expect("due and renewed");
    assert_eq!((renewed.role, renewed.node_id), (Role::Agent, AGENT_ID));
    let after = read_public(&renewal.dir.node_cert()).unwrap();
    assert_ne!(after, before);
    assert_eq!(cert_identity(&after).unwrap().node_id, AGENT_ID);
    stop.cancel();
}

#[tokio::test]
async fn a_certificate_for_another_identity_is_refused_and_not_written() {
    let (_tmp, renewal, stop) = setup(Some(99));
    let before = read_public(&renewal.dir.node_cert()).unwrap();
    let later = now_secs() + DEFAULT_LEAF_VALIDITY.as_secs() * 3 / 4;
    let err = tokio::time::timeout(Duration::from_secs(20), renewal.check(later))
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, RenewError::Check(_)), "{err}");
    assert!(err.to_string().contains("agent-10"), "{err}");
    assert_eq!(read_public(&renewal.dir.node_cert()).unwrap(), before);
    stop.cancel();
}
