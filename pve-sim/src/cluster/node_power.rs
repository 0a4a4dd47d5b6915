//! What powering a host off, on or through a reset does to the cluster (see
//! [`crate::node_power`]): the node's QEMU processes die, the `dead_nodes` fault marks it down
//! while it is off, and a boot gives it a new boot time and loses its unfinished tasks.

use super::clock::now_unix_f64;
use super::inner::Inner;
use super::power::mark_stopped;
use super::state::State;
use crate::ApiError;
use crate::node_power::NodePowerAction;

/// Kill every QEMU process of VMs whose config lives on `node`; the VMs that were running.
fn kill_vms(st: &mut State, node: &str) -> Vec<u32> {
    let running: Vec<u32> = st
        .vms
        .values()
        .filter(|vm| vm.node == node && vm.run.running)
        .map(|vm| vm.vmid)
        .collect();
    for vmid in &running {
        mark_stopped(st, *vmid);
    }
    running
}

/// The host comes up: nothing of before runs on it, uptime restarts.
fn boot(cx: &Inner, st: &mut State, node: &str) {
    cx.lose_tasks_of(st, node);
    if let Some(n) = st.node_mut(node) {
        n.boot_unix = now_unix_f64();
    }
    cx.faults.set_node_down(node, false);
}

/// Apply `action` to `node`; returns the VMs it stopped (404 for an unknown node).
pub(super) fn power(cx: &Inner, node: &str, action: NodePowerAction) -> Result<Vec<u32>, ApiError> {
    let mut st = cx.state();
    if st.node(node).is_none() {
        return Err(ApiError::status(
            404,
            format!("no such cluster node '{node}'"),
        ));
    }
    let stopped = match action {
        NodePowerAction::Off => {
            cx.faults.set_node_down(node, true);
            kill_vms(&mut st, node)
        }
        NodePowerAction::On if !cx.faults.node_down(node) => Vec::new(),
        NodePowerAction::On | NodePowerAction::Reset => {
            let stopped = kill_vms(&mut st, node);
            boot(cx, &mut st, node);
            stopped
        }
    };
    Ok(stopped)
}
