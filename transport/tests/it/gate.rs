//! The server's peer gate: a peer whose certificate is valid but which the application no
//! longer admits (a removed member) is refused when it connects, and on an open connection
//! from the first call after the gate turned against it.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use crate::support;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use support::pki::TestCa;
use support::*;
use tokio_util::sync::CancellationToken;
use transport::{Endpoint, PeerIdentity, Role, Server, Service, TransportError};

#[tokio::test]
async fn a_gated_peer_is_refused_at_connect_and_on_open_connections() {
    install_provider();
    let ca = TestCa::new("cluster");
    let endpoint = Endpoint::server(
        loopback(),
        &ca.leaf(Role::Coordinator, 1),
        &[Service::Raft],
        test_cfg(),
    )
    .unwrap();
    let addr = endpoint.local_addr().unwrap();
    let removed: Arc<Mutex<BTreeSet<u64>>> = Arc::new(Mutex::new(BTreeSet::from([7])));
    let check = Arc::clone(&removed);
    let server = Server::new(endpoint, test_router(Gate::new())).with_gate(Arc::new(
        move |peer: &PeerIdentity| {
            if check.lock().unwrap().contains(&peer.node_id) {
                Err(format!("{peer} was removed from the cluster"))
            } else {
                Ok(())
            }
        },
    ));
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(server.run(shutdown.clone()));
    let target = PeerIdentity::coordinator(1);

    // Node 7 is refused from the start.
    let seven = client(&ca.leaf(Role::Coordinator, 7));
    let refused = match bounded(seven.connect(addr, target, Service::Raft)).await {
        Ok(conn) => bounded(conn.call(&Echo("hello".into()))).await.unwrap_err(),
        Err(e) => e,
    };
    assert!(
        matches!(&refused, TransportError::Refused { reason } if reason.contains("removed")),
        "{refused:?}"
    );

    // Node 8 is served until it is removed; then its open connection is refused too.
    let eight = client(&ca.leaf(Role::Coordinator, 8));
    let conn = bounded(eight.connect(addr, target, Service::Raft))
        .await
        .unwrap();
    bounded(conn.call(&Echo("first".into()))).await.unwrap();
    removed.lock().unwrap().insert(8);
    let err = bounded(conn.call(&Echo("second".into())))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            TransportError::Refused { .. } | TransportError::ConnectionLost(_)
        ),
        "{err:?}"
    );
    shutdown.cancel();
    bounded(task).await.unwrap().unwrap();
}
