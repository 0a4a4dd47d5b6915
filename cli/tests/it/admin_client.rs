//! `AdminClient` against stand-in members on loopback: it follows leader hints, retries
//! unavailable and unreachable members until its timeout, stops at the cluster's refusals, and
//! refuses to trust a member whose certificate is not the id configured for its address.

use std::net::UdpSocket;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::support::{FakeMember, Pki, bounded};
use bootstrap::cli_config::CoordinatorAddr;
use cli::exit::{ExitStatus, client_status};
use client::{AdminClient, ClientError};
use protocol::admin::{ClusterStatus, ClusterStatusReply, VmGet};
use protocol::fleet::VmRecord;
use transport::{RemoteError, Router, Service};

fn status_reply(node_id: u64) -> ClusterStatusReply {
    ClusterStatusReply {
        cluster_id: "cli-test".into(),
        node_id,
        leader: Some(node_id),
        term: 4,
        commit_index: 10,
        applied_index: 10,
        members: Vec::new(),
        cluster_version: protocol::version::CURRENT,
    }
}

/// A router answering `ClusterStatus` with `answer(call number)` and counting calls.
fn status_router(
    calls: Arc<AtomicUsize>,
    answer: impl Fn(usize) -> Result<ClusterStatusReply, RemoteError> + Send + Sync + 'static,
) -> Router {
    let answer = Arc::new(answer);
    let mut router = Router::new();
    router.handle(Service::Admin, move |_caller, _req: ClusterStatus| {
        let n = calls.fetch_add(1, Ordering::SeqCst);
        let reply = answer(n);
        async move { reply }
    });
    router
}

#[tokio::test]
async fn a_follower_hint_leads_to_the_leader_which_is_then_called_directly() {
    let pki = Pki::new();
    let leader_calls = Arc::new(AtomicUsize::new(0));
    let leader = FakeMember::start(
        &pki,
        2,
        status_router(leader_calls.clone(), |_| Ok(status_reply(2))),
    );
    let hint = (2, leader.addr.to_string());
    let follower_calls = Arc::new(AtomicUsize::new(0));
    let follower = FakeMember::start(
        &pki,
        1,
        status_router(follower_calls.clone(), move |_| {
            Err(RemoteError::not_leader(Some(hint.clone())))
        }),
    );
    // Only the follower is configured: the leader is learned from its hint.
    let client = AdminClient::new(&pki.admin(), vec![follower.coordinator()]).unwrap();

    let reply = bounded(client.call(&ClusterStatus {})).await.unwrap();
    assert_eq!(reply.node_id, 2);
    assert_eq!(client.last_member(), Some(leader.coordinator()));
    let reply = bounded(client.call(&ClusterStatus {})).await.unwrap();
    assert_eq!(reply.node_id, 2);
    assert_eq!(follower_calls.load(Ordering::SeqCst), 1);
    assert_eq!(leader_calls.load(Ordering::SeqCst), 2);
    client.close().await;
}

#[tokio::test]
async fn an_unavailable_member_is_retried_until_it_answers() {
    let pki = Pki::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let member = FakeMember::start(
        &pki,
        1,
        status_router(calls.clone(), |n| {
            if n < 3 {
                Err(RemoteError::unavailable("no leader yet"))
            } else {
                Ok(status_reply(1))
            }
        }),
    );
    let client = AdminClient::new(&pki.admin(), vec![member.coordinator()])
        .unwrap()
        .with_timeout(Duration::from_secs(20));
    let reply = bounded(client.call(&ClusterStatus {})).await.unwrap();
    assert_eq!(reply.node_id, 1);
    assert_eq!(calls.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn an_unreachable_member_is_skipped_for_one_that_answers() {
    let pki = Pki::new();
    // Bound and silent: QUIC handshakes to it never finish, and no other test can take it.
    let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
    let dead = CoordinatorAddr {
        addr: silent.local_addr().unwrap().to_string(),
        id: 3,
    };
    let calls = Arc::new(AtomicUsize::new(0));
    let member = FakeMember::start(&pki, 1, status_router(calls, |_| Ok(status_reply(1))));
    let client = AdminClient::new(&pki.admin(), vec![dead, member.coordinator()])
        .unwrap()
        .with_timeout(Duration::from_secs(20));
    let reply = bounded(client.call(&ClusterStatus {})).await.unwrap();
    assert_eq!(reply.node_id, 1);
    assert_eq!(client.last_member(), Some(member.coordinator()));
}

#[tokio::test]
async fn no_member_answering_is_unavailable_after_the_timeout_naming_each_member() {
    let pki = Pki::new();
    let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
    let dead = CoordinatorAddr {
        addr: silent.local_addr().unwrap().to_string(),
        id: 1,
    };
    let calls = Arc::new(AtomicUsize::new(0));
    let no_leader = FakeMember::start(
        &pki,
        2,
        status_router(calls.clone(), |_| Err(RemoteError::not_leader(None))),
    );
    let client = AdminClient::new(&pki.admin(), vec![no_leader.coordinator(), dead.clone()])
        .unwrap()
        .with_timeout(Duration::from_secs(3));
    let err = bounded(client.call(&ClusterStatus {})).await.unwrap_err();
    let ClientError::Unavailable { failures, .. } = &err else {
        panic!("expected Unavailable, got {err:?}");
    };
    let members: Vec<_> = failures.iter().map(|f| f.member.clone()).collect();
    assert!(members.contains(&dead), "{failures:?}");
    assert!(members.contains(&no_leader.coordinator()), "{failures:?}");
    assert!(calls.load(Ordering::SeqCst) >= 1);
    assert_eq!(client_status(&err), ExitStatus::Unavailable);
    let message = err.to_string();
    assert!(message.contains("no leader is known"), "{message}");
    assert!(message.contains("--timeout"), "{message}");
}

#[tokio::test]
async fn the_clusters_refusals_are_final_and_not_retried() {
    let pki = Pki::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let mut router = Router::new();
    router.handle(Service::Admin, move |_caller, req: VmGet| {
        counted.fetch_add(1, Ordering::SeqCst);
        async move {
            Err::<VmRecord, _>(match req.name.as_str() {
                "bad" => RemoteError::bad_request("name = \"Bad\" is not allowed"),
                _ => RemoteError::not_found(format!("no VM named {}", req.name)),
            })
        }
    });
    let member = FakeMember::start(&pki, 1, router);
    let client = AdminClient::new(&pki.admin(), vec![member.coordinator()]).unwrap();

    let get = |name: &str| VmGet {
        name: name.into(),
        read: Default::default(),
    };
    let err = bounded(client.call(&get("web-9"))).await.unwrap_err();
    assert!(
        matches!(&err, ClientError::NotFound(m) if m == "no VM named web-9"),
        "{err:?}"
    );
    assert_eq!(client_status(&err), ExitStatus::NotFound);
    let err = bounded(client.call(&get("bad"))).await.unwrap_err();
    assert!(matches!(err, ClientError::Invalid(_)), "{err:?}");
    assert_eq!(client_status(&err), ExitStatus::Refused);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_member_whose_certificate_has_another_id_is_not_trusted() {
    let pki = Pki::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let member = FakeMember::start(
        &pki,
        1,
        status_router(calls.clone(), |_| Ok(status_reply(1))),
    );
    let wrong = CoordinatorAddr {
        addr: member.addr.to_string(),
        id: 7,
    };
    let client = AdminClient::new(&pki.admin(), vec![wrong])
        .unwrap()
        .with_timeout(Duration::from_secs(20));
    let err = bounded(client.call(&ClusterStatus {})).await.unwrap_err();
    assert!(matches!(err, ClientError::Untrusted { .. }), "{err:?}");
    assert_eq!(client_status(&err), ExitStatus::Refused);
    assert!(err.to_string().contains("is 7 the id"), "{err}");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_certificate_from_another_cluster_is_refused_by_the_member() {
    let pki = Pki::new();
    let other = Pki::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let member = FakeMember::start(
        &pki,
        1,
        status_router(calls.clone(), |_| Ok(status_reply(1))),
    );
    let client = AdminClient::new(&other.admin(), vec![member.coordinator()])
        .unwrap()
        .with_timeout(Duration::from_secs(20));
    let err = bounded(client.call(&ClusterStatus {})).await.unwrap_err();
    assert!(matches!(err, ClientError::Untrusted { .. }), "{err:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}
