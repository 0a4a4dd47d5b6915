//! The unauthenticated surface: a client without a certificate (Join) is held to small limits
//! (KiB frames, few streams, a request deadline, a connection lifetime, a cap on connections, a
//! per-address budget) and every attack is refused cheaply while a member with a certificate
//! keeps being served by the same server, under its own, larger limits.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use crate::support;

use std::time::Duration;

use support::pki::TestCa;
use support::*;
use transport::codes::{STREAM_DEADLINE, STREAM_TOO_LARGE};
use transport::frame::{ResponseEnvelope, decode, read_frame};
use transport::{
    Connection, Endpoint, JoinLimits, PeerIdentity, RemoteCode, RemoteError, Role, Service,
    TransportConfig, TransportError,
};

/// A server of every service, a member that may call it, and a joiner.
struct Surface {
    server: Running,
    member: Endpoint,
    joiner: Endpoint,
}

fn surface(join: JoinLimits) -> Surface {
    let ca = TestCa::new("cluster");
    let cfg = TransportConfig { join, ..test_cfg() };
    let server = start_server(&ca.leaf(Role::Coordinator, 1), &Service::ALL, cfg);
    let member = client(&ca.leaf(Role::Coordinator, 2));
    let joiner = Endpoint::join_client_on(loopback(), ca.fingerprint(), test_cfg()).unwrap();
    Surface {
        server,
        member,
        joiner,
    }
}

/// Generous budgets, so only the limit a test is about can refuse it.
fn lenient() -> JoinLimits {
    JoinLimits {
        attempt_burst: 10_000,
        attempts_per_sec: 10_000,
        ..JoinLimits::default()
    }
}

impl Surface {
    async fn member_conn(&self) -> Connection {
        let conn = self.member.connect(
            self.server.addr,
            PeerIdentity::coordinator(1),
            Service::Raft,
        );
        bounded(conn).await.unwrap()
    }

    async fn join_conn(&self) -> Connection {
        bounded(self.joiner.connect_join(self.server.addr))
            .await
            .unwrap()
    }

    /// A member's call of `len` bytes is served: far above the Join frame limit.
    async fn member_is_served(&self, len: usize) {
        let conn = self.member_conn().await;
        let text = "m".repeat(len);
        let reply = bounded(conn.call(&Echo(text.clone()))).await.unwrap();
        assert_eq!(reply.text, text);
        bounded(conn.close()).await;
    }
}

/// The server's refusal read from a raw stream.
async fn refusal(recv: &mut quinn::RecvStream) -> RemoteError {
    let payload = bounded(read_frame(recv, 1 << 20)).await.unwrap();
    decode::<ResponseEnvelope>(&payload).unwrap().unwrap_err()
}

/// Waits until the server resets `recv`; the reset code.
async fn reset_code(recv: &mut quinn::RecvStream) -> quinn::VarInt {
    let mut buf = [0u8; 64];
    loop {
        match bounded(recv.read(&mut buf)).await {
            Ok(Some(_)) => {}
            Err(quinn::ReadError::Reset(code)) => return code,
            other => panic!("expected a reset, got {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_announced_length_from_a_joiner_is_refused_from_its_header() {
    let s = surface(JoinLimits {
        request_timeout: Duration::from_secs(30),
        call_timeout: Duration::from_secs(30),
        connection_lifetime: Duration::from_secs(60),
        ..lenient()
    });
    let conn = s.join_conn().await;
    // 64 MiB − 1 announced (what authenticated peers may send) and the body held back: the
    // answer can only come from the header, long before any deadline.
    for announced in [64 * 1024 * 1024 - 1, 16 * 1024 + 1] {
        let (mut send, mut recv) = bounded(conn.quic().open_bi()).await.unwrap();
        send.write_all(&u32::to_be_bytes(announced)).await.unwrap();
        // The server may already have stopped the stream when these arrive.
        match send.write_all(&[0u8; 1000]).await {
            Ok(()) => {}
            Err(quinn::WriteError::Stopped(code)) => assert_eq!(code, STREAM_TOO_LARGE.into()),
            Err(e) => panic!("{e}"),
        }
        let refused = refusal(&mut recv).await;
        assert_eq!(refused.code, RemoteCode::BadRequest);
        assert!(
            refused.message.contains("exceeds the 16384-byte maximum"),
            "{refused}"
        );
        assert_eq!(
            bounded(send.stopped()).await.unwrap(),
            Some(STREAM_TOO_LARGE.into())
        );
    }
    // The frame limit of a joiner is not a member's: 1 MiB still goes through for the member.
    s.member_is_served(1024 * 1024).await;
    let reply = bounded(conn.call(&Echo("small".into()))).await.unwrap();
    assert_eq!(reply.service, Service::Join);
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_joiner_cannot_open_more_streams_than_its_limit() {
    // Deadlines far away: no stream is freed by the server while the test looks.
    let s = surface(JoinLimits {
        max_concurrent_calls: 2,
        request_timeout: Duration::from_secs(60),
        call_timeout: Duration::from_secs(60),
        connection_lifetime: Duration::from_secs(120),
        ..lenient()
    });
    let conn = s.join_conn().await;
    // Two streams each hold a half-sent request (a stream exists for the server once it
    // carries data).
    let mut held = Vec::new();
    for _ in 0..2 {
        let (mut send, recv) = bounded(conn.quic().open_bi()).await.unwrap();
        send.write_all(&100u32.to_be_bytes()).await.unwrap();
        held.push((send, recv));
    }
    // The third waits for stream credit the server does not give.
    let third = tokio::time::timeout(Duration::from_millis(300), conn.quic().open_bi()).await;
    assert!(third.is_err(), "a third stream opened under a limit of two");
    // A member is served meanwhile, with many more concurrent calls than a joiner may make.
    let member = s.member_conn().await;
    let mut blocked = tokio::task::JoinSet::new();
    for i in 0..8u32 {
        let member = member.clone();
        blocked.spawn(async move { member.call(&Blocked(i)).await.unwrap() });
    }
    eventually("8 member calls in their handlers", || {
        s.server.gate.entered() == 8
    })
    .await;
    s.server.gate.open();
    while let Some(done) = bounded(blocked.join_next()).await {
        done.unwrap();
    }
    // Giving a stream up returns its credit: the joiner can call again.
    let (mut send, mut recv) = held.pop().unwrap();
    send.reset(0u32.into()).unwrap();
    recv.stop(0u32.into()).unwrap();
    let reply = bounded(conn.call(&Echo("after".into()))).await.unwrap();
    assert_eq!(reply.text, "after");
    // The server's shutdown waits for calls in flight: give up the last held one too.
    for (mut send, mut recv) in held {
        send.reset(0u32.into()).unwrap();
        recv.stop(0u32.into()).unwrap();
    }
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_loris_joiner_is_cut_at_the_request_deadline() {
    let s = surface(JoinLimits {
        request_timeout: Duration::from_millis(500),
        call_timeout: Duration::from_secs(10),
        connection_lifetime: Duration::from_secs(60),
        ..lenient()
    });
    let conn = s.join_conn().await;
    // One stream stalls mid-frame; another drips a byte every 50 ms (it would need 5 s).
    let (mut stalled, mut stalled_recv) = bounded(conn.quic().open_bi()).await.unwrap();
    stalled.write_all(&100u32.to_be_bytes()).await.unwrap();
    stalled.write_all(&[0u8; 10]).await.unwrap();
    let (mut drip, mut drip_recv) = bounded(conn.quic().open_bi()).await.unwrap();
    drip.write_all(&100u32.to_be_bytes()).await.unwrap();
    let dripping = tokio::spawn(async move {
        for _ in 0..100 {
            if drip.write_all(&[1]).await.is_err() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    });
    // A member is served while the joiner's streams are held.
    s.member_is_served(10).await;
    assert_eq!(reset_code(&mut stalled_recv).await, STREAM_DEADLINE.into());
    assert_eq!(reset_code(&mut drip_recv).await, STREAM_DEADLINE.into());
    assert!(
        bounded(dripping).await.unwrap(),
        "the dripping stream was never stopped"
    );
    let _ = stalled;
    // The connection itself still serves a joiner's well-formed call.
    let reply = bounded(conn.call(&Echo("in time".into()))).await.unwrap();
    assert_eq!(reply.text, "in time");
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_from_a_joiner_is_refused_and_the_server_keeps_serving() {
    let s = surface(lenient());
    let conn = s.join_conn().await;
    // Text where a length belongs: "GET " announces about 1.2 GB.
    let (mut send, mut recv) = bounded(conn.quic().open_bi()).await.unwrap();
    send.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    let _ = send.finish();
    let refused = refusal(&mut recv).await;
    assert_eq!(refused.code, RemoteCode::BadRequest);
    assert!(refused.message.contains("exceeds"), "{refused}");
    // A frame of the right length whose bytes are no envelope.
    let (mut send, mut recv) = bounded(conn.quic().open_bi()).await.unwrap();
    let mut junk = 64u32.to_be_bytes().to_vec();
    junk.extend((0..64u8).map(|i| i.wrapping_mul(37) | 0x80));
    send.write_all(&junk).await.unwrap();
    send.finish().unwrap();
    let refused = refusal(&mut recv).await;
    assert_eq!(refused.code, RemoteCode::BadRequest);
    // A frame that ends early.
    let (mut send, mut recv) = bounded(conn.quic().open_bi()).await.unwrap();
    send.write_all(b"\x00\x00\x01\x00short").await.unwrap();
    send.finish().unwrap();
    let code = reset_code(&mut recv).await;
    assert_eq!(code, transport::codes::STREAM_BAD_FRAME.into());
    // Datagrams that are not QUIC at all, straight at the server's port.
    let udp = std::net::UdpSocket::bind(loopback()).unwrap();
    for i in 0..200u32 {
        let noise: Vec<u8> = (0..1200u32).map(|j| (i * 31 + j * 7) as u8).collect();
        udp.send_to(&noise, s.server.addr).unwrap();
    }
    // Everyone is still served: the member, this joiner and a new one.
    s.member_is_served(100).await;
    let reply = bounded(conn.call(&Echo("still".into()))).await.unwrap();
    assert_eq!(reply.text, "still");
    let fresh = s.join_conn().await;
    assert_eq!(
        bounded(fresh.call(&Echo("new".into()))).await.unwrap().text,
        "new"
    );
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_attempts_over_the_budget_are_answered_unavailable_while_members_are_served() {
    const BURST: u32 = 6;
    let s = surface(JoinLimits {
        attempt_burst: BURST,
        attempts_per_sec: 1,
        ..JoinLimits::default()
    });
    let member = s.member_conn().await;
    let (mut served, mut throttled) = (0u32, 0u32);
    // Each attempt on a new connection: one attempt for the connection, one for the call.
    for _ in 0..40 {
        let conn = s.join_conn().await;
        match bounded(conn.call(&Echo("let me in".into()))).await {
            Ok(_) => served += 1,
            Err(TransportError::Remote(e)) => {
                assert_eq!(e.code, RemoteCode::Unavailable, "{e}");
                assert!(
                    e.message.contains("too many join attempts from 127.0.0.1")
                        && e.message.contains("retry in"),
                    "{e}"
                );
                throttled += 1;
            }
            Err(e) => panic!("a throttled joiner must be told to retry, got {e:?}"),
        }
        bounded(conn.close()).await;
        // The member's calls never touch the budget.
        let reply = bounded(member.call(&Echo("member".into()))).await.unwrap();
        assert_eq!(reply.caller, Some(PeerIdentity::coordinator(2)));
    }
    assert!(served >= 1, "the burst admits the first joins");
    assert!(throttled >= 1, "40 joins in a row, none throttled");
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joiner_connections_are_capped_and_end_with_their_lifetime() {
    let s = surface(JoinLimits {
        max_connections: 3,
        request_timeout: Duration::from_millis(500),
        call_timeout: Duration::from_secs(1),
        connection_lifetime: Duration::from_secs(2),
        ..lenient()
    });
    let mut held = Vec::new();
    for _ in 0..3 {
        let conn = s.join_conn().await;
        bounded(conn.call(&Echo("hold".into()))).await.unwrap();
        held.push(conn);
    }
    // A fourth is closed after its handshake, with a reason that says why and what to do.
    let extra = s.join_conn().await;
    let err = bounded(extra.call(&Echo("one more".into())))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, TransportError::Refused { reason } if reason.contains("join.max_connections") && reason.contains("retry")),
        "{err:?}"
    );
    // Members are not counted.
    s.member_is_served(10).await;
    // Keep-alives do not keep a joiner's connection: it ends with its lifetime...
    for conn in &held {
        let closed = bounded(async {
            loop {
                if let Some(reason) = conn.closed_reason() {
                    return reason;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await;
        assert!(
            closed.to_string().contains("join.connection_lifetime"),
            "{closed}"
        );
    }
    // ...and frees its slot.
    let later = s.join_conn().await;
    assert_eq!(
        bounded(later.call(&Echo("now".into()))).await.unwrap().text,
        "now"
    );
    s.server.stop().await;
}
