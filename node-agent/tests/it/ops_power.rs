#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking
//! Power actions against a simulated PVE node: start, shutdown (with a hard stop when the
//! guest takes longer than the timeout), stop, restart, each answering the VM as it is after.

use crate::ops_support;

use ops_support::{ensure_cmd, harness, pool_ip, web_spec};
use protocol::agent::{FailureKind, PowerAction, PowerOp};
use protocol::spec::DesiredState;
use pve::Method;

fn op(action: PowerAction) -> PowerOp {
    PowerOp {
        name: "web-1".into(),
        vmid: 101,
        action,
    }
}

#[tokio::test]
async fn power_actions_answer_the_vm_after_them() {
    let h = harness();
    let mut spec = web_spec("web-1");
    spec.state = DesiredState::Stopped;
    let mut cmd = ensure_cmd(spec, 101);
    cmd.generation = 4;
    h.ops.ensure(&cmd).await.unwrap();
    assert_eq!(h.sim.vm_running(101), Some(false));

    let obs = h.ops.power(&op(PowerAction::Start)).await.unwrap();
    assert!(obs.running);
    assert_eq!(obs.generation, 4, "read back from the managed notes");
    assert_eq!(obs.ips, vec![pool_ip()]);
    assert_eq!(obs.digest, h.config(101).await.digest().unwrap());
    // Start of a running VM is a no-op.
    h.reset_calls();
    h.ops.power(&op(PowerAction::Start)).await.unwrap();
    assert_eq!(h.count(Method::Post, "/status/start"), 0);

    let obs = h
        .ops
        .power(&op(PowerAction::Restart { timeout_secs: 60 }))
        .await
        .unwrap();
    assert!(obs.running);
    assert_eq!(h.count(Method::Post, "/status/shutdown"), 1);
    assert_eq!(h.count(Method::Post, "/status/start"), 1);

    let obs = h
        .ops
        .power(&op(PowerAction::Shutdown { timeout_secs: 60 }))
        .await
        .unwrap();
    assert!(!obs.running && obs.ips.is_empty());
    assert_eq!(
        h.count(Method::Post, "/status/stop"),
        0,
        "the guest went down by itself"
    );

    h.ops.power(&op(PowerAction::Start)).await.unwrap();
    let obs = h.ops.power(&op(PowerAction::Stop)).await.unwrap();
    assert!(!obs.running);
    assert_eq!(h.sim.vm_running(101), Some(false));
}

#[tokio::test]
async fn a_guest_slower_than_the_shutdown_timeout_is_stopped_hard() {
    let h = harness();
    h.ops
        .ensure(&ensure_cmd(web_spec("web-1"), 101))
        .await
        .unwrap();
    h.reset_calls();
    // The simulated guest needs 3 s to power off: 1 s is too short.
    let obs = h
        .ops
        .power(&op(PowerAction::Shutdown { timeout_secs: 1 }))
        .await
        .unwrap();
    assert!(!obs.running);
    assert_eq!(h.count(Method::Post, "/status/shutdown"), 1);
    assert_eq!(h.count(Method::Post, "/status/stop"), 1);
}

#[tokio::test]
async fn power_on_an_absent_vm_is_not_found() {
    let h = harness();
    let err = h.ops.power(&op(PowerAction::Start)).await.unwrap_err();
    assert_eq!(err.kind, FailureKind::NotFound, "{}", err.message);
}

#[tokio::test]
async fn starting_a_vm_under_pves_ha_manager_is_refused() {
    let h = harness();
    let mut spec = web_spec("web-1");
    spec.state = DesiredState::Stopped;
    h.ops.ensure(&ensure_cmd(spec, 101)).await.unwrap();
    h.sim
        .set_ha_resources(vec![pve_sim::ha::HaResource {
            sid: "vm:101".into(),
            state: Some(pve_sim::ha::HaState::Stopped),
            ..pve_sim::ha::HaResource::default()
        }])
        .unwrap();
    h.reset_calls();
    for action in [PowerAction::Start, PowerAction::Restart { timeout_secs: 5 }] {
        let err = h.ops.power(&op(action)).await.unwrap_err();
        assert_eq!(err.kind, FailureKind::Permanent, "{}", err.message);
        assert!(
            err.message
                .contains("vm:101 is managed by PVE's HA manager (state stopped)"),
            "{}",
            err.message
        );
    }
    assert_eq!(h.count(Method::Post, ""), 0);
    assert_eq!(h.sim.vm_running(101), Some(false));
    // A stop is not a start: still allowed.
    h.ops.power(&op(PowerAction::Stop)).await.unwrap();
}
