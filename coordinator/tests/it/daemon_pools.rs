//! Direct address allocations on an in-process member: an owner with control characters is
//! refused before the log, an address given with `AllocateIp` comes back with `ReleaseIp`, and
//! a pool refused for deletion while it held that address is deleted once it is empty.

use crate::daemon_support;

use daemon_support::Cluster;
use protocol::admin::{AllocateIp, PoolApply, PoolDelete, PoolList, ReadMode, ReleaseIp};
use protocol::spec::IpPoolSpec;
use transport::{RemoteCode, TransportError};

fn refused(result: Result<impl std::fmt::Debug, TransportError>, code: RemoteCode) -> String {
    match result {
        Err(TransportError::Remote(e)) if e.code == code => e.message,
        other => panic!("expected {code:?}, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_released_address_lets_its_emptied_pool_be_deleted() {
    let mut cluster = Cluster::found(None).await;
    let pool = IpPoolSpec {
        name: "lab".into(),
        cidr: "10.60.0.0/24".into(),
        gateway: Some("10.60.0.1".into()),
        range_start: "10.60.0.10".into(),
        range_end: "10.60.0.20".into(),
        dns: vec![],
    };
    cluster.call(0, &PoolApply { spec: pool }).await.unwrap();

    let escape = AllocateIp {
        pool: "lab".into(),
        owner: "ci \u{1b}[2J runner".into(),
    };
    let message = refused(cluster.call(0, &escape).await, RemoteCode::BadRequest);
    assert!(message.contains("owner"), "{message}");
    assert!(message.contains("without control characters"), "{message}");

    let held = cluster
        .call(
            0,
            &AllocateIp {
                pool: "lab".into(),
                owner: "ci runner".into(),
            },
        )
        .await
        .unwrap();
    let delete = PoolDelete { name: "lab".into() };
    let message = refused(cluster.call(0, &delete).await, RemoteCode::Conflict);
    assert!(message.contains("lab"), "{message}");

    let other = "10.60.0.19".parse().unwrap();
    assert_ne!(held.address, other);
    let not_held = ReleaseIp {
        pool: "lab".into(),
        address: other,
    };
    refused(cluster.call(0, &not_held).await, RemoteCode::NotFound);

    let release = ReleaseIp {
        pool: "lab".into(),
        address: held.address,
    };
    cluster.call(0, &release).await.unwrap();
    cluster.call(0, &delete).await.unwrap();
    let pools = cluster
        .call(
            0,
            &PoolList {
                read: ReadMode::Linearizable,
            },
        )
        .await
        .unwrap();
    assert!(pools.pools.is_empty(), "{pools:?}");
    cluster.stop_all().await;
}
