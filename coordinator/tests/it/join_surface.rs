//! The Join service under attack: wrong tokens at a high rate are refused (as wrong, or as too
//! many attempts) while the cluster keeps serving its members and an honest joiner from another
//! address; and a wrong secret is refused by the local check alone, with no quorum to ask,
//! while a right one still waits for the quorum.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::daemon_support;

use bootstrap::{NodeDir, prepare_join};
use daemon_support::{Cluster, bounded};
use protocol::Role;
use protocol::admin::{ClusterStatus, ReadMode, TokenList};
use protocol::join::JoinResponse;
use tokio::task::JoinSet;
use transport::{Connection, Endpoint, RemoteCode, TransportConfig, TransportError};

/// A join connection to member `i` from `bind` (another loopback address is another source
/// for the server's per-address budget).
async fn join_conn(cluster: &Cluster, i: usize, bind: &str) -> Connection {
    let ca_pem = std::fs::read_to_string(NodeDir::new(cluster.founder_dir()).ca_cert()).unwrap();
    let pin = transport::ca_fingerprint(&ca_pem).unwrap();
    let joiner =
        Endpoint::join_client_on(bind.parse().unwrap(), pin, TransportConfig::default()).unwrap();
    bounded(
        "connect join",
        joiner.connect_join(cluster.members[i].listen),
    )
    .await
    .unwrap()
}

async fn ask(conn: &Connection, token: &str) -> Result<JoinResponse, TransportError> {
    let pending = prepare_join(token, None).unwrap();
    conn.call(pending.request()).await
}

/// `token` with its secret replaced by another of the same length.
fn wrong_secret(token: &str) -> String {
    let mut parts: Vec<String> = token.split('.').map(str::to_string).collect();
    let secret = &parts[3];
    let other = if secret.starts_with('z') { 'y' } else { 'z' };
    parts[3] = other.to_string().repeat(secret.len());
    parts.join(".")
}

/// `token` with another id (6 characters a-z 0-9), the secret kept.
fn unknown_id(token: &str) -> String {
    let mut parts: Vec<String> = token.split('.').map(str::to_string).collect();
    parts[2] = if parts[2] == "zzzzzz" {
        "yyyyyy"
    } else {
        "zzzzzz"
    }
    .to_string();
    parts.join(".")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn wrong_tokens_at_a_high_rate_are_refused_while_the_cluster_keeps_serving() {
    let mut cluster = Cluster::found(None).await;
    let token = cluster.token(0, Role::Agent, Some(3), None).await;
    let bad = wrong_secret(&token);

    // 4 joiners × 50 calls with the wrong secret, as fast as they are answered.
    let mut flood = JoinSet::new();
    for _ in 0..4 {
        let conn = join_conn(&cluster, 0, "127.0.0.1:0").await;
        let bad = bad.clone();
        flood.spawn(async move {
            let (mut wrong, mut throttled) = (0u32, 0u32);
            for _ in 0..50 {
                match ask(&conn, &bad).await {
                    Err(TransportError::Remote(e)) if e.code == RemoteCode::Unauthorized => {
                        assert!(e.message.contains("wrong secret"), "{e}");
                        wrong += 1;
                    }
                    Err(TransportError::Remote(e)) if e.code == RemoteCode::Unavailable => {
                        assert!(e.message.contains("too many join attempts"), "{e}");
                        throttled += 1;
                    }
                    // The connection reached its lifetime: a new one would be needed.
                    Err(TransportError::ConnectionLost(_)) => break,
                    other => panic!("a wrong secret must be refused: {other:?}"),
                }
            }
            (wrong, throttled)
        });
    }
    // Members are served throughout.
    for _ in 0..20 {
        let status = bounded("status", cluster.call(0, &ClusterStatus {})).await;
        assert!(status.unwrap().leader.is_some());
    }
    let (mut wrong, mut throttled) = (0, 0);
    while let Some(done) = bounded("flood", flood.join_next()).await {
        let (w, t) = done.unwrap();
        wrong += w;
        throttled += t;
    }
    assert!(wrong >= 1, "no wrong secret was looked at");
    assert!(
        throttled >= 1,
        "{wrong} wrong secrets in a row, none throttled"
    );
    // Nothing was spent: all three uses are left, and an honest joiner from another address
    // (its own budget) is admitted at once.
    let tokens = cluster
        .call(
            0,
            &TokenList {
                read: ReadMode::Linearizable,
            },
        )
        .await
        .unwrap();
    let id = token.split('.').nth(2).unwrap();
    let view = tokens.tokens.iter().find(|t| t.id == id).unwrap();
    assert_eq!(view.uses_left, Some(3), "{view:?}");
    let honest = join_conn(&cluster, 0, "127.0.0.2:0").await;
    let admitted = bounded("honest join", ask(&honest, &token)).await.unwrap();
    assert!(admitted.node_id >= 2, "{admitted:?}");
    cluster.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_wrong_secret_is_refused_without_a_quorum_and_a_right_one_waits_for_it() {
    let mut cluster = Cluster::found(None).await;
    cluster.add_member(0).await;
    cluster.add_member(0).await;
    cluster.wait_voters(0, 3).await;
    let token = cluster.token(0, Role::Agent, Some(1), None).await;
    let leader = cluster.leader().await;
    // Both followers stop: the leader cannot confirm anything with a quorum any more.
    for i in 0..3 {
        if i != leader {
            cluster.members[i].stop().await;
        }
    }
    let conn = join_conn(&cluster, leader, "127.0.0.1:0").await;
    for (token, says) in [
        (wrong_secret(&token), "wrong secret"),
        (unknown_id(&token), "is unknown"),
    ] {
        let err = bounded("refusal", ask(&conn, &token)).await.unwrap_err();
        assert!(
            matches!(&err, TransportError::Remote(e) if e.code == RemoteCode::Unauthorized && e.message.contains(says)),
            "{err:?}"
        );
    }
    // The right secret is not admitted on the local copy's word: it needs the quorum.
    let out = bounded("right secret", ask(&conn, &token)).await;
    assert!(
        matches!(&out, Err(TransportError::Remote(e)) if e.code == RemoteCode::Unavailable && e.message.contains("quorum")),
        "{out:?}"
    );
    cluster.stop_all().await;
}
