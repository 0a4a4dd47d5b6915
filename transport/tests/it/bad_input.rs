//! Bad input on raw streams: garbage, oversized frames and stalled peers are refused cleanly,
//! and the server keeps serving the same and new connections.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use crate::support;

use std::time::Duration;

use support::pki::TestCa;
use support::*;
use transport::codes::{STREAM_BAD_FRAME, STREAM_DEADLINE, STREAM_TOO_LARGE};
use transport::frame::{ResponseEnvelope, decode, read_frame};
use transport::{
    Connection, PeerIdentity, RemoteCode, Role, Service, TlsMaterial, TransportConfig,
    TransportError,
};

struct Setup {
    server: Running,
    member: TlsMaterial,
}

fn setup(cfg: TransportConfig) -> Setup {
    let ca = TestCa::new("cluster");
    let server = start_server(&ca.leaf(Role::Coordinator, 1), &[Service::Raft], cfg);
    Setup {
        server,
        member: ca.leaf(Role::Coordinator, 2),
    }
}

async fn connect(setup: &Setup, cfg: TransportConfig) -> Connection {
    let endpoint = transport::Endpoint::client_on(loopback(), &setup.member, cfg).unwrap();
    let target = PeerIdentity::coordinator(1);
    bounded(endpoint.connect(setup.server.addr, target, Service::Raft))
        .await
        .unwrap()
}

async fn echo_works(conn: &Connection) {
    let reply = bounded(conn.call(&Echo("fine".into()))).await.unwrap();
    assert_eq!(reply.text, "fine");
}

/// Reads the server's answer on a raw stream and returns its refusal.
async fn refusal(recv: &mut quinn::RecvStream) -> transport::RemoteError {
    let payload = bounded(read_frame(recv, 1 << 20)).await.unwrap();
    decode::<ResponseEnvelope>(&payload).unwrap().unwrap_err()
}

#[tokio::test]
async fn garbage_is_answered_or_reset_and_the_server_keeps_serving() {
    let setup = setup(test_cfg());
    let conn = connect(&setup, test_cfg()).await;

    // A well-formed frame whose payload is not an envelope: answered with BadRequest.
    let (mut send, mut recv) = bounded(conn.quic().open_bi()).await.unwrap();
    let mut garbage = 16u32.to_be_bytes().to_vec();
    garbage.extend_from_slice(&[0xFF; 16]);
    send.write_all(&garbage).await.unwrap();
    send.finish().unwrap();
    let refused = refusal(&mut recv).await;
    assert_eq!(refused.code, RemoteCode::BadRequest);
    assert!(
        refused.message.contains("malformed request frame"),
        "{refused}"
    );

    // Bytes that end before the announced length: nothing to answer, the stream is reset.
    let (mut send, mut recv) = bounded(conn.quic().open_bi()).await.unwrap();
    send.write_all(b"\x00\x00\x01\x00not quite 256 bytes")
        .await
        .unwrap();
    send.finish().unwrap();
    let mut buf = [0u8; 4];
    let err = bounded(recv.read_exact(&mut buf)).await.unwrap_err();
    assert!(
        matches!(err, quinn::ReadExactError::ReadError(quinn::ReadError::Reset(code)) if code == STREAM_BAD_FRAME.into()),
        "{err:?}"
    );

    echo_works(&conn).await;
    echo_works(&connect(&setup, test_cfg()).await).await;
    setup.server.stop().await;
}

#[tokio::test]
async fn an_oversized_frame_is_refused_from_its_header_alone() {
    // A long server deadline: an answer can only come from the header, not from a timeout.
    let cfg = TransportConfig {
        call_timeout: Duration::from_secs(60),
        ..test_cfg()
    };
    let setup = setup(cfg.clone());
    let conn = connect(&setup, cfg).await;
    let (mut send, mut recv) = bounded(conn.quic().open_bi()).await.unwrap();
    // Announce 4 GiB and send none of it; the stream stays open.
    send.write_all(&u32::MAX.to_be_bytes()).await.unwrap();
    let refused = refusal(&mut recv).await;
    assert_eq!(refused.code, RemoteCode::BadRequest);
    assert!(refused.message.contains("exceeds"), "{refused}");
    let stopped = bounded(send.stopped()).await.unwrap();
    assert_eq!(stopped, Some(STREAM_TOO_LARGE.into()));
    echo_works(&conn).await;
    setup.server.stop().await;
}

#[tokio::test]
async fn a_request_over_the_servers_limit_is_refused_typed() {
    let small = TransportConfig {
        max_frame: 1024,
        ..test_cfg()
    };
    let setup = setup(small.clone());
    // Our own limit refuses before sending anything.
    let strict = connect(&setup, small).await;
    let err = bounded(strict.call(&Echo("x".repeat(4096))))
        .await
        .unwrap_err();
    assert!(
        matches!(err, TransportError::FrameTooLarge { max: 1024, .. }),
        "{err:?}"
    );
    // A client with a larger limit sends it; the server refuses it with a typed answer.
    let lax = connect(&setup, test_cfg()).await;
    let err = bounded(lax.call(&Echo("x".repeat(64 * 1024))))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, TransportError::Remote(e) if e.code == RemoteCode::BadRequest && e.message.contains("exceeds")),
        "{err:?}"
    );
    echo_works(&lax).await;
    setup.server.stop().await;
}

#[tokio::test]
async fn a_peer_stalled_mid_frame_is_freed_by_the_server_deadline() {
    let cfg = TransportConfig {
        call_timeout: Duration::from_millis(500),
        ..test_cfg()
    };
    let setup = setup(cfg);
    let conn = connect(&setup, test_cfg()).await;
    let (mut send, mut recv) = bounded(conn.quic().open_bi()).await.unwrap();
    // Announce 100 bytes, send 10, then go quiet without finishing.
    send.write_all(&100u32.to_be_bytes()).await.unwrap();
    send.write_all(&[0u8; 10]).await.unwrap();
    // Other calls on the same connection are served meanwhile.
    echo_works(&conn).await;
    let mut buf = [0u8; 4];
    let err = bounded(recv.read_exact(&mut buf)).await.unwrap_err();
    assert!(
        matches!(err, quinn::ReadExactError::ReadError(quinn::ReadError::Reset(code)) if code == STREAM_DEADLINE.into()),
        "{err:?}"
    );
    echo_works(&conn).await;
    setup.server.stop().await;
}
