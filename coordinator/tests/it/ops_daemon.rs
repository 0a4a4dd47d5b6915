//! The VM operation requests against a real one-member coordinator: start and stop change the
//! desired state through Raft (once: a repeat changes nothing), and the requests that need a
//! placed VM, a valid snapshot name or a known VM are refused with what to do; `vm explain` and
//! `host ls` answer from the replicated state with no hosts yet.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use crate::daemon_support;

use daemon_support::Cluster;
use protocol::admin::{
    HostStatus, ReadMode, VmApply, VmExplain, VmGet, VmPower, VmPowerAction, VmSnapshot,
};
use protocol::agent::SnapshotAction;
use protocol::spec::{DesiredState, VmSpec};
use transport::{RemoteCode, RemoteError, TransportError};

fn refusal(e: TransportError) -> RemoteError {
    match e {
        TransportError::Remote(r) => r,
        other => panic!("expected a refusal, got {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn power_snapshot_explain_and_host_requests_on_a_real_member() {
    let mut cluster = Cluster::found(None).await;
    let created = cluster
        .call(
            0,
            &VmApply {
                spec: VmSpec::new("web-1", 1024),
            },
        )
        .await
        .unwrap();
    assert_eq!(created.generation, 1);
    let power = |action| VmPower {
        name: "web-1".into(),
        request_id: "r1".into(),
        action,
    };

    let stopped = cluster.call(0, &power(VmPowerAction::Stop)).await.unwrap();
    assert_eq!(stopped.generation, 2);
    assert!(
        stopped.message.contains("now kept stopped (generation 2)"),
        "{}",
        stopped.message
    );
    let again = cluster.call(0, &power(VmPowerAction::Stop)).await.unwrap();
    assert_eq!(again.generation, 2, "a repeated stop writes nothing");
    assert!(
        again.message.contains("already kept stopped"),
        "{}",
        again.message
    );
    let vm = cluster
        .call(
            0,
            &VmGet {
                name: "web-1".into(),
                read: ReadMode::Linearizable,
            },
        )
        .await
        .unwrap();
    assert_eq!(vm.spec.state, DesiredState::Stopped);
    assert_eq!(vm.spec, {
        let mut spec = VmSpec::new("web-1", 1024);
        spec.state = DesiredState::Stopped;
        spec
    });
    let started = cluster.call(0, &power(VmPowerAction::Start)).await.unwrap();
    assert_eq!(started.generation, 3);

    let unplaced = refusal(
        cluster
            .call(0, &power(VmPowerAction::Restart))
            .await
            .unwrap_err(),
    );
    assert_eq!(unplaced.code, RemoteCode::Conflict);
    assert!(
        unplaced.message.contains("not placed on a host yet"),
        "{}",
        unplaced.message
    );
    let missing = refusal(
        cluster
            .call(
                0,
                &VmPower {
                    name: "web-9".into(),
                    request_id: "r2".into(),
                    action: VmPowerAction::Start,
                },
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(missing.code, RemoteCode::NotFound);

    let snapshot = |name: &str| VmSnapshot {
        name: "web-1".into(),
        request_id: format!("snap-{name}"),
        action: SnapshotAction::Create {
            snapshot: name.into(),
            description: String::new(),
            vmstate: false,
        },
    };
    let bad = refusal(cluster.call(0, &snapshot("current")).await.unwrap_err());
    assert_eq!(bad.code, RemoteCode::BadRequest);
    assert!(bad.message.contains("reserves"), "{}", bad.message);
    let unplaced = refusal(cluster.call(0, &snapshot("pre-upgrade")).await.unwrap_err());
    assert_eq!(unplaced.code, RemoteCode::Conflict);

    let explained = cluster
        .call(
            0,
            &VmExplain {
                name: "web-1".into(),
            },
        )
        .await
        .unwrap();
    assert_eq!(explained.vm, "web-1");
    assert_eq!(explained.placed_on, None);
    assert!(explained.verdicts.is_empty(), "no host has joined");
    let missing = refusal(
        cluster
            .call(
                0,
                &VmExplain {
                    name: "web-9".into(),
                },
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(missing.code, RemoteCode::NotFound);

    let hosts = cluster.call(0, &HostStatus {}).await.unwrap();
    assert!(hosts.hosts.is_empty());
    cluster.stop_all().await;
}
