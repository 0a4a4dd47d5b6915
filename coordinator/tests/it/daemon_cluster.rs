//! A 3-member cluster in-process on loopback, formed by `init` and two `join`s with tokens:
//! writes through a follower are forwarded to the leader, linearizable reads see them on every
//! member, stale reads catch up on each, allocations made through different members never
//! collide, invalid specs are refused before they reach the log, and every member serves
//! `/metrics`, `/healthz` and `/readyz`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::daemon_support;

use std::collections::BTreeSet;

use daemon_support::{Cluster, eventually, http_get};
use protocol::admin::{
    AllocateVmid, ApplyOutcome, ClusterStatus, MemberList, ReadMode, VmApply, VmGet, VmList,
    VmidRangeApply,
};
use protocol::fleet::MemberRole;
use protocol::spec::{VmSpec, VmidRangeSpec};
use transport::{RemoteCode, TransportError};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_three_member_cluster_forwards_writes_and_reads_them_everywhere() {
    let mut cluster = Cluster::found(None).await;
    cluster.add_member(0).await;
    // The third joins through the second member: a follower redirects the join to the leader.
    cluster.add_member(1).await;
    let status = cluster.wait_voters(0, 3).await;
    assert_eq!(status.cluster_id, "daemon-test");
    let ids: BTreeSet<u64> = status.members.iter().map(|m| m.id).collect();
    assert_eq!(ids.len(), 3, "{status:?}");
    // Every member reports what its build reads; the cluster writes the newest all read.
    let this_build = protocol::version::VersionRange::this_build();
    let status = eventually("every member's encodings", || async {
        let s = cluster.call(0, &ClusterStatus {}).await.ok()?;
        s.members
            .iter()
            .all(|m| m.versions == Some(this_build))
            .then_some(s)
    })
    .await;
    assert_eq!(status.cluster_version, protocol::version::CURRENT);

    let leader = cluster.leader().await;
    let follower = (leader + 1) % 3;
    // A write through a follower is forwarded; its reply is the leader's.
    let range = VmidRangeApply {
        spec: VmidRangeSpec {
            name: "main".into(),
            start: 1000,
            end: 1999,
        },
    };
    let applied = cluster.call(follower, &range).await.unwrap();
    assert_eq!(applied.outcome, ApplyOutcome::Created);
    let vm = VmApply {
        spec: VmSpec::new("web", 1024),
    };
    let created = cluster.call(follower, &vm).await.unwrap();
    assert_eq!(
        (created.outcome, created.generation),
        (ApplyOutcome::Created, 1)
    );

    // A linearizable read right after the write sees it on every member.
    for i in 0..3 {
        let got = cluster
            .call(
                i,
                &VmGet {
                    name: "web".into(),
                    read: ReadMode::Linearizable,
                },
            )
            .await
            .unwrap();
        assert_eq!(got.spec.name, "web", "member {i}");
    }
    // A stale read answers from the member's own state, which catches up.
    for i in 0..3 {
        eventually("stale read sees the write", || async {
            let vms = cluster
                .call(
                    i,
                    &VmList {
                        read: ReadMode::Stale,
                    },
                )
                .await
                .ok()?;
            vms.vms.iter().any(|v| v.spec.name == "web").then_some(())
        })
        .await;
    }

    // VMIDs allocated through different members are all different.
    let mut vmids = BTreeSet::new();
    for n in 0..6 {
        let name = format!("vm{n}");
        cluster
            .call(
                n % 3,
                &VmApply {
                    spec: VmSpec::new(name.clone(), 512),
                },
            )
            .await
            .unwrap();
        let got = cluster
            .call(n % 3, &AllocateVmid { vm: name })
            .await
            .unwrap();
        assert!(vmids.insert(got.vmid), "vmid {} given twice", got.vmid);
    }

    // An invalid spec is refused with its field, through a follower too.
    let bad = VmApply {
        spec: VmSpec::new("bad", 1),
    };
    match cluster.call(follower, &bad).await {
        Err(TransportError::Remote(e)) => {
            assert_eq!(e.code, RemoteCode::BadRequest);
            assert!(e.message.contains("memory_mib"), "{}", e.message);
        }
        other => panic!("invalid spec accepted: {other:?}"),
    }
    // A missing VM is NotFound.
    match cluster
        .call(
            follower,
            &VmGet {
                name: "nope".into(),
                read: ReadMode::Linearizable,
            },
        )
        .await
    {
        Err(TransportError::Remote(e)) => assert_eq!(e.code, RemoteCode::NotFound),
        other => panic!("missing vm answered: {other:?}"),
    }

    // The members recorded in the state are the three voters.
    let members = cluster
        .call(follower, &MemberList::default())
        .await
        .unwrap()
        .members;
    assert_eq!(members.len(), 3);
    assert!(
        members.iter().all(|m| m.role == MemberRole::Voter),
        "{members:?}"
    );

    // A follower's status is the leader's view: replication progress of every member.
    let status = cluster.call(follower, &ClusterStatus {}).await.unwrap();
    assert_eq!(status.node_id, cluster.members[leader].id);
    assert!(status.commit_index >= 10, "{status:?}");
    assert!(
        status.members.iter().all(|m| m.matched_index.is_some()),
        "{status:?}"
    );

    // Every member serves its metrics, health and readiness.
    for m in &cluster.members {
        let http = m.http.unwrap();
        let (code, body) = http_get(http, "/metrics").await;
        assert_eq!(code, 200, "{body}");
        assert!(body.contains("pvefleet_raft_members 3"), "{body}");
        assert!(body.contains("pvefleet_raft_term "), "{body}");
        assert_eq!(http_get(http, "/healthz").await.0, 200);
        let ready = eventually("ready", || async {
            let (code, body) = http_get(http, "/readyz").await;
            (code == 200).then_some(body)
        })
        .await;
        assert!(ready.starts_with("ready"), "{ready}");
        assert_eq!(http_get(http, "/nope").await.0, 404);
    }
    let (_, leader_metrics) = http_get(cluster.members[leader].http.unwrap(), "/metrics").await;
    assert!(
        leader_metrics.contains(r#"method="admin.vm_apply",outcome="ok""#),
        "{leader_metrics}"
    );
    cluster.stop_all().await;
}
