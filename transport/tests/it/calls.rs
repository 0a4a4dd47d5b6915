//! Typed calls: concurrency on one connection, typed refusals, deadlines, keep-alive, and
//! graceful close on both sides without losing replies.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use crate::support;

use std::time::Duration;

use support::pki::TestCa;
use support::*;
use tokio::task::JoinSet;
use transport::{
    Connection, PeerIdentity, RemoteCode, RemoteError, Role, Service, TransportConfig,
    TransportError,
};

async fn raft_pair(cfg: TransportConfig) -> (Running, Connection) {
    let ca = TestCa::new("cluster");
    let server = start_server(
        &ca.leaf(Role::Coordinator, 1),
        &[Service::Raft],
        cfg.clone(),
    );
    let member =
        transport::Endpoint::client_on(loopback(), &ca.leaf(Role::Coordinator, 2), cfg).unwrap();
    let conn = member.connect(server.addr, PeerIdentity::coordinator(1), Service::Raft);
    let conn = bounded(conn).await.unwrap();
    (server, conn)
}

/// Starts `n` `Blocked` calls and waits until all of them are inside the handler.
async fn block_calls(server: &Running, conn: &Connection, n: u32) -> JoinSet<(u32, u32)> {
    let mut calls = JoinSet::new();
    for i in 0..n {
        let conn = conn.clone();
        calls.spawn(async move { (i, conn.call(&Blocked(i)).await.unwrap()) });
    }
    eventually("all calls reach the handler", || {
        server.gate.entered() == n as usize
    })
    .await;
    calls
}

async fn all_answered(mut calls: JoinSet<(u32, u32)>, n: u32) {
    let mut answered = 0;
    while let Some(done) = bounded(calls.join_next()).await {
        let (sent, got) = done.unwrap();
        assert_eq!(sent, got);
        answered += 1;
    }
    assert_eq!(answered, n);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_calls_share_one_connection() {
    let (server, conn) = raft_pair(test_cfg()).await;
    // 64 calls held in their handlers at the same time: truly concurrent streams.
    let blocked = block_calls(&server, &conn, 64).await;
    assert_eq!(conn.in_flight(), 64);
    let mut echoes = JoinSet::new();
    for i in 0..200 {
        let conn = conn.clone();
        echoes.spawn(async move { (i, conn.call(&Echo(format!("msg {i}"))).await.unwrap()) });
    }
    while let Some(done) = bounded(echoes.join_next()).await {
        let (i, reply) = done.unwrap();
        assert_eq!(reply.text, format!("msg {i}"));
        assert_eq!(reply.caller, Some(PeerIdentity::coordinator(2)));
    }
    server.gate.open();
    all_answered(blocked, 64).await;
    server.stop().await;
}

#[tokio::test]
async fn a_handler_refusal_arrives_typed() {
    let (server, conn) = raft_pair(test_cfg()).await;
    let err = bounded(conn.call(&NotLeaderPlease)).await.unwrap_err();
    let TransportError::Remote(RemoteError { code, .. }) = err else {
        panic!("expected a remote error, got {err:?}");
    };
    assert_eq!(
        code,
        RemoteCode::NotLeader {
            leader: Some((2, "10.0.0.2:7400".into()))
        }
    );
    let err = bounded(conn.call(&Unregistered)).await.unwrap_err();
    assert!(
        matches!(&err, TransportError::Remote(e) if e.code == RemoteCode::UnknownMethod),
        "{err:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_call_without_reply_in_time_times_out_and_the_connection_still_works() {
    let (server, conn) = raft_pair(test_cfg()).await;
    let deadline = Duration::from_millis(200);
    let err = bounded(conn.call_with_timeout(&Blocked(1), deadline))
        .await
        .unwrap_err();
    assert!(
        matches!(err, TransportError::Timeout { method: "test.blocked", after } if after == deadline),
        "{err:?}"
    );
    let reply = bounded(conn.call(&Echo("still here".into())))
        .await
        .unwrap();
    assert_eq!(reply.text, "still here");
    server.gate.open();
    server.stop().await;
}

#[tokio::test]
async fn closing_a_connection_delivers_the_replies_in_flight() {
    let (server, conn) = raft_pair(test_cfg()).await;
    let calls = block_calls(&server, &conn, 10).await;
    let closing = tokio::spawn(conn.clone().close());
    // The close has begun once new calls are refused; the 10 calls are still waiting.
    let probe = conn.clone();
    bounded(async {
        while !matches!(
            probe.call(&Echo("late".into())).await,
            Err(TransportError::Closed)
        ) {}
    })
    .await;
    assert!(!closing.is_finished());
    server.gate.open();
    all_answered(calls, 10).await;
    bounded(closing).await.unwrap();
    let reason = conn.closed_reason();
    assert!(matches!(reason, Some(TransportError::Closed)), "{reason:?}");
    server.stop().await;
}

#[tokio::test]
async fn stopping_the_server_delivers_the_replies_in_flight() {
    let (server, conn) = raft_pair(test_cfg()).await;
    let calls = block_calls(&server, &conn, 10).await;
    server.shutdown.cancel();
    server.gate.open();
    all_answered(calls, 10).await;
    bounded(server.task).await.unwrap().unwrap();
    // The server closed the connection after answering.
    let err = bounded(conn.call(&Echo("anyone?".into())))
        .await
        .unwrap_err();
    assert!(matches!(err, TransportError::ConnectionLost(_)), "{err:?}");
}

#[tokio::test]
async fn keep_alive_holds_an_idle_connection_open_past_the_idle_timeout() {
    let cfg = TransportConfig {
        idle_timeout: Duration::from_millis(600),
        keep_alive: Duration::from_millis(150),
        ..test_cfg()
    };
    let (server, conn) = raft_pair(cfg).await;
    // Stay silent for three idle timeouts; only keep-alives cross the wire.
    tokio::time::sleep(Duration::from_millis(1800)).await;
    assert!(conn.closed_reason().is_none());
    let reply = bounded(conn.call(&Echo("awake".into()))).await.unwrap();
    assert_eq!(reply.text, "awake");
    server.stop().await;
}
