//! The Raft network's guarantees against real QUIC endpoints: it reaches only the node it
//! meant, a peer's Raft answer (even a refusal) comes back as a remote Raft error, and a request
//! that speaks for another node than its certificate is refused.

// Only built as a test; lets helpers panic like tests do (clippy `allow-unwrap-in-tests`).
#![cfg(test)]

use crate::common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use common::ListMachine;
use common::certs::TestCa;
use openraft::error::RPCError;
use openraft::network::RPCOption;
use openraft::raft::VoteRequest;
use openraft::{RaftNetwork, RaftNetworkFactory, Vote};
use raft::MemberNode;
use raft::network::Network;
use raft::types::Raft;
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;
use transport::{Endpoint, Router, Server, Service, TransportConfig};

const DEADLINE: Duration = Duration::from_secs(20);

struct Peer {
    raft: Raft,
    addr: SocketAddr,
    shutdown: CancellationToken,
    _dir: TempDir,
}

/// An uninitialized member `id` serving the Raft service on loopback.
async fn serve(id: u64, ca: &TestCa) -> Peer {
    let dir = TempDir::new().unwrap();
    let (log, sm) = raft::store::open(dir.path(), ListMachine::default()).unwrap();
    let bind: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let endpoint = Endpoint::server(
        bind,
        &ca.coordinator(id),
        &[Service::Raft],
        TransportConfig::default(),
    )
    .unwrap();
    let addr = endpoint.local_addr().unwrap();
    let config = Arc::new(raft::config::default_config());
    let raft = Raft::new(id, config, Network::new(endpoint.clone()), log, sm)
        .await
        .unwrap();
    let mut router = Router::new();
    raft::network::register(&mut router, raft.clone());
    let shutdown = CancellationToken::new();
    tokio::spawn(Server::new(endpoint, router).run(shutdown.clone()));
    Peer {
        raft,
        addr,
        shutdown,
        _dir: dir,
    }
}

/// The Raft network of member `id`, dialing only.
fn network_of(id: u64, ca: &TestCa) -> Network {
    let cfg = TransportConfig {
        connect_timeout: Duration::from_secs(2),
        ..TransportConfig::default()
    };
    Network::new(Endpoint::client(&ca.coordinator(id), cfg).unwrap())
}

fn setup() -> TestCa {
    let _ = rustls::crypto::ring::default_provider().install_default();
    TestCa::new()
}

fn node(addr: SocketAddr) -> MemberNode {
    MemberNode {
        addr: addr.to_string(),
    }
}

fn vote_from(candidate: u64) -> VoteRequest<u64> {
    VoteRequest::new(Vote::new(7, candidate), None)
}

#[tokio::test]
async fn a_vote_reaches_the_peer_and_its_answer_comes_back() {
    let ca = setup();
    let peer = serve(2, &ca).await;
    let mut network = network_of(1, &ca);
    let mut client = network.new_client(2, &node(peer.addr)).await;
    let answer = client
        .vote(vote_from(1), RPCOption::new(DEADLINE))
        .await
        .unwrap();
    assert!(
        answer.vote_granted,
        "an empty member grants the first vote: {answer:?}"
    );
    assert_eq!(answer.vote, Vote::new(7, 1));
    peer.shutdown.cancel();
}

#[tokio::test]
async fn dialing_a_member_at_another_members_address_is_unreachable() {
    let ca = setup();
    let peer = serve(2, &ca).await;
    let mut network = network_of(1, &ca);
    // Membership says node 3 lives where node 2 answers: TLS must not accept node 2.
    let mut client = network.new_client(3, &node(peer.addr)).await;
    let err = client
        .vote(vote_from(1), RPCOption::new(DEADLINE))
        .await
        .unwrap_err();
    assert!(matches!(err, RPCError::Unreachable(_)), "{err:?}");
    assert!(err.to_string().contains("coordinator-3.pvefleet"), "{err}");
    peer.shutdown.cancel();
}

#[tokio::test]
async fn a_request_speaking_for_another_node_is_refused() {
    let ca = setup();
    let peer = serve(2, &ca).await;
    let mut network = network_of(1, &ca);
    let mut client = network.new_client(2, &node(peer.addr)).await;
    // Node 1's certificate asking for votes on behalf of node 3.
    let err = client
        .vote(vote_from(3), RPCOption::new(DEADLINE))
        .await
        .unwrap_err();
    assert!(matches!(err, RPCError::Unreachable(_)), "{err:?}");
    assert!(err.to_string().contains("unauthorized"), "{err}");
    peer.shutdown.cancel();
}

#[tokio::test]
async fn a_stopped_peers_raft_error_comes_back_as_a_remote_error() {
    let ca = setup();
    let peer = serve(2, &ca).await;
    peer.raft.shutdown().await.unwrap();
    let mut network = network_of(1, &ca);
    let mut client = network.new_client(2, &node(peer.addr)).await;
    let err = client
        .vote(vote_from(1), RPCOption::new(DEADLINE))
        .await
        .unwrap_err();
    assert!(matches!(err, RPCError::RemoteError(_)), "{err:?}");
    peer.shutdown.cancel();
}

#[tokio::test]
async fn nothing_listening_is_unreachable() {
    let ca = setup();
    // A port that was just free: nothing answers there.
    let free = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut network = network_of(1, &ca);
    let mut client = network.new_client(2, &node(free)).await;
    let err = client
        .vote(vote_from(1), RPCOption::new(DEADLINE))
        .await
        .unwrap_err();
    assert!(matches!(err, RPCError::Unreachable(_)), "{err:?}");
}

#[tokio::test]
async fn an_unresolvable_address_is_unreachable() {
    let ca = setup();
    let mut network = network_of(1, &ca);
    let bad = MemberNode {
        addr: "not an address".to_owned(),
    };
    let mut client = network.new_client(2, &bad).await;
    let err = client
        .vote(vote_from(1), RPCOption::new(DEADLINE))
        .await
        .unwrap_err();
    assert!(matches!(err, RPCError::Unreachable(_)), "{err:?}");
}
