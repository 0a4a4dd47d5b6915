//! Scenario tests of host power: a node powered off kills its VMs and stops answering, a boot
//! restarts its uptime and loses its unfinished tasks, a reset does both at once.

use std::time::Duration;

use serde_json::Value;

use super::support::{fast, scaled};
use crate::Route;
use crate::node_power::NodePowerAction;

const V100: (&str, &str) = ("vmid", "100");

/// `/nodes` entry of `node`.
async fn node_entry(s: &super::support::Sim, node: &str) -> Value {
    let nodes = s.ok(Route::Nodes, &[]).await;
    nodes
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["node"] == node)
        .cloned()
        .unwrap()
}

async fn uptime(s: &super::support::Sim, node: &str) -> u64 {
    s.ok(Route::NodeStatus, &[("node", node)]).await["uptime"]
        .as_u64()
        .unwrap()
}

#[tokio::test]
async fn power_off_kills_the_nodes_vms_and_takes_it_down() {
    let s = fast();
    s.create_vm("pve2", "100", "ceph").await;
    s.create_vm("pve2", "101", "ceph").await;
    s.create_vm("pve3", "102", "ceph").await;
    s.start("pve2", "100").await;
    s.start("pve3", "102").await;
    let stopped = s.c.power_node("pve2", NodePowerAction::Off).unwrap();
    assert_eq!(stopped, vec![100]);
    assert_eq!(s.c.vm_running(100), Some(false));
    assert_eq!(s.c.vm_running(102), Some(true), "other nodes are untouched");
    assert!(s.faults.node_down("pve2"));
    assert_eq!(node_entry(&s, "pve2").await["status"], "offline");
    // The configs stay in the dead node's directory.
    assert_eq!(s.c.vm_node(100).as_deref(), Some("pve2"));
    assert!(s.c.vm_config_text(100).is_some());
    // Powering off twice is harmless.
    assert_eq!(
        s.c.power_node("pve2", NodePowerAction::Off).unwrap(),
        Vec::<u32>::new()
    );
}

#[tokio::test]
async fn power_on_boots_with_a_new_boot_time_and_vms_stay_stopped() {
    let s = fast();
    s.create_vm("pve2", "100", "ceph").await;
    s.start("pve2", "100").await;
    assert!(uptime(&s, "pve2").await > 86_400, "hosts start up for days");
    s.c.power_node("pve2", NodePowerAction::Off).unwrap();
    assert_eq!(
        s.c.power_node("pve2", NodePowerAction::On).unwrap(),
        Vec::<u32>::new()
    );
    assert!(!s.faults.node_down("pve2"));
    assert_eq!(node_entry(&s, "pve2").await["status"], "online");
    assert!(uptime(&s, "pve2").await < 60);
    assert_eq!(s.c.vm_running(100), Some(false));
    // On of a node that is up does nothing (no reboot).
    let before = uptime(&s, "pve1").await;
    s.c.power_node("pve1", NodePowerAction::On).unwrap();
    assert!(uptime(&s, "pve1").await >= before);
}

#[tokio::test]
async fn reset_stops_the_vms_and_the_node_answers_again_at_once() {
    let s = fast();
    s.create_vm("pve3", "100", "local-lvm").await;
    s.start("pve3", "100").await;
    let stopped = s.c.power_node("pve3", NodePowerAction::Reset).unwrap();
    assert_eq!(stopped, vec![100]);
    assert_eq!(s.c.vm_running(100), Some(false));
    assert!(!s.faults.node_down("pve3"));
    assert!(uptime(&s, "pve3").await < 60);
    let status = s
        .ok(Route::VmStatusCurrent, &[("node", "pve3"), V100])
        .await;
    assert_eq!(status["status"], "stopped");
    // The VM starts again on its node (its local disk is still there).
    s.start("pve3", "100").await;
}

#[tokio::test]
async fn tasks_in_flight_on_a_node_that_loses_power_are_lost_at_boot() {
    let s = scaled(0.2);
    s.create_vm("pve2", "100", "ceph").await;
    let upid = s.task(Route::VmStart, &[("node", "pve2"), V100]).await;
    s.c.power_node("pve2", NodePowerAction::Off).unwrap();
    // Longer than the whole (scaled, 0.3 s) start: a live node would have finished it.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(s.status(&upid).await["status"], "running");
    s.c.power_node("pve2", NodePowerAction::On).unwrap();
    let status = s.status(&upid).await;
    assert_eq!(status["status"], "stopped");
    assert_eq!(status["exitstatus"], "unexpected status");
    assert!(
        !s.log(&upid).await.iter().any(|l| l.starts_with("TASK ")),
        "a killed worker writes no final line"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(s.c.vm_running(100), Some(false), "the start never happened");
}

#[tokio::test]
async fn an_unknown_node_is_named() {
    let s = fast();
    let e = s.c.power_node("pve9", NodePowerAction::Reset).unwrap_err();
    assert_eq!(
        (e.status, e.message.as_str()),
        (404, "no such cluster node 'pve9'")
    );
}
