#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking
//! Delete against a simulated PVE node: a running, protected fleet VM is stopped, unprotected
//! and destroyed with its disks; an absent VM is success; someone else's VM is refused and
//! left as it was.

use crate::ops_support;

use std::time::Duration;

use ops_support::{NODE, ensure_cmd, harness, web_spec};
use protocol::agent::{DeleteVm, FailureKind};
use pve::Method;
use pve::calls::{ConfigChanges, CreateOptions, StorageContent};

#[tokio::test]
async fn a_running_protected_fleet_vm_is_destroyed_with_its_disks() {
    let h = harness();
    let mut spec = web_spec("web-1");
    spec.protection = true;
    h.ops.ensure(&ensure_cmd(spec, 101)).await.unwrap();
    assert_eq!(h.sim.vm_running(101), Some(true));
    assert_eq!(h.value(101, "protection").await.as_deref(), Some("1"));

    let existed = h
        .ops
        .delete(&DeleteVm {
            name: "web-1".into(),
            vmid: 101,
        })
        .await
        .unwrap();
    assert!(existed);
    assert!(h.sim.vm_node(101).is_none(), "VM gone");
    let images = h
        .client
        .storage_content(NODE, "local-lvm", Some(StorageContent::Images), Some(101))
        .await
        .unwrap();
    assert!(images.is_empty(), "disks purged: {images:?}");
    assert_eq!(h.count(Method::Post, "/status/stop"), 1, "stopped hard");
    assert_eq!(h.count(Method::Post, "/status/shutdown"), 0);
}

#[tokio::test]
async fn deleting_an_absent_vm_succeeds_without_doing_anything() {
    let h = harness();
    let existed = h
        .ops
        .delete(&DeleteVm {
            name: "web-1".into(),
            vmid: 101,
        })
        .await
        .unwrap();
    assert!(!existed);
    for method in [Method::Post, Method::Put, Method::Delete] {
        assert_eq!(h.count(method, ""), 0, "{method}");
    }
}

#[tokio::test]
async fn a_vm_the_fleet_does_not_own_is_not_deleted() {
    let h = harness();
    let upid = h
        .client
        .create_vm(
            NODE,
            150,
            &ConfigChanges::new()
                .name("web-1")
                .protection(true)
                .tags(&["prod"]),
            &CreateOptions::default(),
        )
        .await
        .unwrap();
    h.client
        .wait_task(&upid, Duration::from_secs(10))
        .await
        .unwrap();
    let before = h.config(150).await.digest();
    h.reset_calls();

    let err = h
        .ops
        .delete(&DeleteVm {
            name: "web-1".into(),
            vmid: 150,
        })
        .await
        .unwrap_err();
    assert_eq!(err.kind, FailureKind::NotOwned, "{}", err.message);
    assert_eq!(h.config(150).await.digest(), before);
    assert_eq!(h.value(150, "protection").await.as_deref(), Some("1"));
    for method in [Method::Post, Method::Put, Method::Delete] {
        assert_eq!(h.count(method, ""), 0, "{method}");
    }
}
