//! Membership over time: a member stopped while the log is compacted rejoins on its data
//! directory and catches up by snapshot; a removed member's certificate is refused from then
//! on, even on a connection it opened before; the last voter cannot be removed; a leader that
//! removes itself hands the removal over to its successor.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::daemon_support;

use std::collections::BTreeSet;

use daemon_support::{Cluster, bounded, eventually};
use protocol::admin::{ClusterStatus, MemberList, MemberRemove, ReadMode, VmApply, VmList};
use protocol::spec::VmSpec;
use transport::{Endpoint, PeerIdentity, RemoteCode, Service, TransportConfig, TransportError};

/// A client endpoint with member `i`'s own coordinator certificate.
fn endpoint_of(cluster: &Cluster, i: usize) -> Endpoint {
    Endpoint::client_on(
        "127.0.0.1:0".parse().unwrap(),
        &cluster.members[i].material(),
        TransportConfig::default(),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restarted_member_catches_up_and_a_removed_member_is_refused() {
    // A snapshot every 5 entries, at most 5 kept behind it: the log is compacted quickly.
    let mut cluster = Cluster::found(Some(5)).await;
    cluster.add_member(0).await;
    cluster.add_member(0).await;
    cluster.wait_voters(0, 3).await;

    let leader = cluster.leader().await;
    let down = (leader + 1) % 3;
    let stopped_at = cluster.members[down]
        .raft()
        .metrics()
        .borrow()
        .last_log_index
        .unwrap_or(0);
    cluster.members[down].stop().await;
    let up = (down + 1) % 3;
    for n in 0..20 {
        let vm = VmApply {
            spec: VmSpec::new(format!("vm{n}"), 256),
        };
        cluster.call(up, &vm).await.unwrap();
    }
    // The leader has purged entries the stopped member never received: only a snapshot can
    // bring it up to date.
    eventually("the leader to compact its log", || async {
        let purged = cluster.members[leader]
            .raft()
            .metrics()
            .borrow()
            .purged
            .map_or(0, |l| l.index);
        (purged > stopped_at).then_some(())
    })
    .await;

    let snapshot_logs = cluster.snapshot_logs;
    cluster.members[down].start(snapshot_logs).await;
    eventually("the restarted member to catch up", || async {
        let vms = cluster
            .call(
                down,
                &VmList {
                    read: ReadMode::Stale,
                },
            )
            .await
            .ok()?;
        (vms.vms.len() == 20).then_some(())
    })
    .await;

    // Remove it, through a follower (forwarded to the leader).
    let removed_id = cluster.members[down].id;
    let removed_tls = endpoint_of(&cluster, down);
    let addr0 = cluster.members[leader].listen;
    let leader_id = cluster.members[leader].id;
    let early = bounded(
        "connect before removal",
        removed_tls.connect(addr0, PeerIdentity::coordinator(leader_id), Service::Admin),
    )
    .await
    .unwrap();
    early.call(&ClusterStatus {}).await.unwrap();

    cluster
        .call(up, &MemberRemove { id: removed_id })
        .await
        .unwrap();
    let status = cluster.wait_voters(leader, 2).await;
    assert!(
        status.members.iter().all(|m| m.id != removed_id),
        "{status:?}"
    );
    let members = cluster
        .call(leader, &MemberList::default())
        .await
        .unwrap()
        .members;
    assert!(members.iter().all(|m| m.id != removed_id), "{members:?}");

    // Its certificate is refused: on the connection it already had...
    eventually("the open connection to be refused", || async {
        match early.call(&ClusterStatus {}).await {
            Err(TransportError::Refused { reason }) => Some(reason),
            Err(TransportError::ConnectionLost(_)) | Err(TransportError::Stream(_)) => None,
            Ok(_) => None,
            Err(e) => panic!("unexpected {e:?}"),
        }
    })
    .await;
    // ... and on new ones, by every remaining member, on Admin and on Raft.
    for i in (0..3).filter(|i| *i != down) {
        let m = &cluster.members[i];
        for service in [Service::Admin, Service::Raft] {
            let outcome = async {
                let conn = removed_tls
                    .connect(m.listen, PeerIdentity::coordinator(m.id), service)
                    .await?;
                conn.call(&ClusterStatus {}).await
            };
            match bounded("refused call", outcome).await {
                Err(TransportError::Refused { reason }) => {
                    assert!(reason.contains("was removed"), "{reason}");
                }
                other => panic!(
                    "member {} let a removed member in on {service}: {other:?}",
                    m.id
                ),
            }
        }
    }
    // The cluster goes on with two voters.
    let vm = VmApply {
        spec: VmSpec::new("after", 256),
    };
    cluster.call(up, &vm).await.unwrap();
    cluster.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_last_voter_stays_and_a_leader_can_remove_itself() {
    let mut cluster = Cluster::found(None).await;
    match cluster.call(0, &MemberRemove { id: 1 }).await {
        Err(TransportError::Remote(e)) => {
            assert_eq!(e.code, RemoteCode::Conflict);
            assert!(e.message.contains("only voter"), "{}", e.message);
        }
        other => panic!("the last voter was removed: {other:?}"),
    }
    cluster.add_member(0).await;
    cluster.add_member(0).await;
    cluster.wait_voters(0, 3).await;

    let leader = cluster.leader().await;
    let leader_id = cluster.members[leader].id;
    cluster
        .call(leader, &MemberRemove { id: leader_id })
        .await
        .unwrap();
    let others: Vec<usize> = (0..3).filter(|i| *i != leader).collect();
    let status = cluster.wait_voters(others[0], 2).await;
    let voters: BTreeSet<u64> = status.members.iter().map(|m| m.id).collect();
    assert!(!voters.contains(&leader_id), "{status:?}");
    assert_ne!(status.leader, Some(leader_id));
    // The new leader recorded the removal: the old leader's id is gone from the state too.
    eventually("the removal to be recorded", || async {
        let members = cluster
            .call(others[1], &MemberList::default())
            .await
            .ok()?
            .members;
        members.iter().all(|m| m.id != leader_id).then_some(())
    })
    .await;
    let vm = VmApply {
        spec: VmSpec::new("after", 256),
    };
    cluster.call(others[0], &vm).await.unwrap();
    cluster.stop_all().await;
}
