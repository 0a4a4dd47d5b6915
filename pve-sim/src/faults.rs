//! Fault injection, shared by the HTTP edge (latency, 5xx, dropped responses, dead nodes) and
//! the cluster model (failing tasks, dead nodes' tasks, guest agents that never answer).
//!
//! Tests drive it through [`crate::Sim::faults`]; the HTTPS server also exposes it under
//! `/_sim/faults` (root only) for the testbed of later issues.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

/// A task that must fail: the next task(s) of `task_type` (`qmstart`, `qmclone`, ...) for `vmid`
/// (any VM when `None`) end with `TASK ERROR: <message>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskFault {
    /// VM the fault applies to; `None` = every VM.
    pub vmid: Option<u32>,
    /// Task type as in the UPID (`qmstart`, `qmclone`, `qmcreate`, `qmigrate`, `resize`, ...).
    pub task_type: String,
    /// The error text; the task log ends with `TASK ERROR: <message>`.
    pub message: String,
    /// How many tasks fail before the fault clears itself; `None` = until cleared.
    pub remaining: Option<u32>,
}

/// A request whose effect happens but whose response is never delivered (the connection is
/// closed instead): the ambiguous failure a client's retry logic must handle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DropRule {
    /// `GET`, `POST`, `PUT` or `DELETE`.
    pub method: String,
    /// The request path (below `/api2/json`) must start with this.
    pub path_prefix: String,
    /// How many responses to drop.
    pub remaining: u32,
}

/// The fault settings as one serializable value (the `/_sim/faults` body).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FaultSettings {
    /// Added to every API response, in milliseconds (real time, not scaled).
    pub latency_ms: u64,
    /// Fraction (0.0..=1.0) of API requests answered `503 Service Unavailable` without effect.
    pub error_rate: f64,
    /// Failing tasks.
    pub failing_tasks: Vec<TaskFault>,
    /// Nodes that stop answering: their own listener hangs, requests proxied to them end in
    /// `595 No route to host` (after the ARP timeout, 3 s scaled), and their running tasks make no progress.
    /// [`crate::Sim::power_node`] adds a node powered off here and removes it when it boots.
    pub dead_nodes: BTreeSet<String>,
    /// VMs whose guest agent never answers (`QEMU guest agent is not running`).
    pub dead_agents: BTreeSet<u32>,
    /// Responses to drop after the request took effect.
    pub drop_responses: Vec<DropRule>,
}

/// The live fault registry.
#[derive(Debug)]
pub struct Faults {
    settings: Mutex<FaultSettings>,
    rng: Mutex<StdRng>,
}

impl Faults {
    /// No faults; `seed` makes the error rate reproducible.
    pub fn new(seed: u64) -> Self {
        Self {
            settings: Mutex::new(FaultSettings::default()),
            rng: Mutex::new(StdRng::seed_from_u64(seed)),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut FaultSettings) -> R) -> R {
        // A poisoned lock only means a panicking test thread; the settings stay usable.
        let mut guard = self.settings.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut guard)
    }

    /// A copy of the current settings.
    pub fn snapshot(&self) -> FaultSettings {
        self.with(|s| s.clone())
    }

    /// Replace all settings at once.
    pub fn replace(&self, settings: FaultSettings) {
        self.with(|s| *s = settings);
    }

    /// Clear every fault.
    pub fn clear(&self) {
        self.replace(FaultSettings::default());
    }

    /// Added latency for every response.
    pub fn set_latency(&self, latency: Duration) {
        let ms = u64::try_from(latency.as_millis()).unwrap_or(u64::MAX);
        self.with(|s| s.latency_ms = ms);
    }

    /// The added latency.
    pub fn latency(&self) -> Duration {
        Duration::from_millis(self.with(|s| s.latency_ms))
    }

    /// Answer this fraction of requests with a 503.
    pub fn set_error_rate(&self, rate: f64) {
        self.with(|s| s.error_rate = rate.clamp(0.0, 1.0));
    }

    /// Roll the dice for one request: `true` = answer 503.
    pub fn roll_error(&self) -> bool {
        let rate = self.with(|s| s.error_rate);
        if rate <= 0.0 {
            return false;
        }
        let mut rng = self.rng.lock().unwrap_or_else(|e| e.into_inner());
        rng.random::<f64>() < rate
    }

    /// Make tasks fail (see [`TaskFault`]).
    pub fn fail_task(&self, fault: TaskFault) {
        self.with(|s| s.failing_tasks.push(fault));
    }

    /// Consume a matching task fault, if any, returning its message.
    pub fn take_task_failure(&self, vmid: Option<u32>, task_type: &str) -> Option<String> {
        self.with(|s| {
            let idx = s
                .failing_tasks
                .iter()
                .position(|f| f.task_type == task_type && (f.vmid.is_none() || f.vmid == vmid))?;
            let fault = &mut s.failing_tasks[idx];
            let message = fault.message.clone();
            if let Some(n) = fault.remaining.as_mut() {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    s.failing_tasks.remove(idx);
                }
            }
            Some(message)
        })
    }

    /// Mark a node as not answering (or answering again).
    pub fn set_node_down(&self, node: &str, down: bool) {
        self.with(|s| {
            if down {
                s.dead_nodes.insert(node.to_string());
            } else {
                s.dead_nodes.remove(node);
            }
        });
    }

    /// Whether a node stopped answering.
    pub fn node_down(&self, node: &str) -> bool {
        self.with(|s| s.dead_nodes.contains(node))
    }

    /// Make a VM's guest agent never answer (or answer again).
    pub fn set_agent_dead(&self, vmid: u32, dead: bool) {
        self.with(|s| {
            if dead {
                s.dead_agents.insert(vmid);
            } else {
                s.dead_agents.remove(&vmid);
            }
        });
    }

    /// Whether a VM's guest agent is made mute.
    pub fn agent_dead(&self, vmid: u32) -> bool {
        self.with(|s| s.dead_agents.contains(&vmid))
    }

    /// Drop the next `count` responses to requests matching `method` and `path_prefix`.
    pub fn drop_responses(&self, method: &str, path_prefix: &str, count: u32) {
        self.with(|s| {
            s.drop_responses.push(DropRule {
                method: method.to_string(),
                path_prefix: path_prefix.to_string(),
                remaining: count,
            })
        });
    }

    /// Consume one matching drop rule: `true` = execute the request but drop its response.
    pub fn take_drop(&self, method: &str, path: &str) -> bool {
        self.with(|s| {
            let Some(idx) = s
                .drop_responses
                .iter()
                .position(|r| r.method == method && path.starts_with(&r.path_prefix))
            else {
                return false;
            };
            s.drop_responses[idx].remaining = s.drop_responses[idx].remaining.saturating_sub(1);
            if s.drop_responses[idx].remaining == 0 {
                s.drop_responses.remove(idx);
            }
            true
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_fault_with_count_clears_itself() {
        let f = Faults::new(1);
        f.fail_task(TaskFault {
            vmid: Some(100),
            task_type: "qmstart".into(),
            message: "boom".into(),
            remaining: Some(1),
        });
        assert_eq!(f.take_task_failure(Some(101), "qmstart"), None);
        assert_eq!(f.take_task_failure(Some(100), "qmstop"), None);
        assert_eq!(
            f.take_task_failure(Some(100), "qmstart").as_deref(),
            Some("boom")
        );
        assert_eq!(f.take_task_failure(Some(100), "qmstart"), None);
    }

    #[test]
    fn error_rate_bounds() {
        let f = Faults::new(7);
        assert!(!(0..100).any(|_| f.roll_error()));
        f.set_error_rate(1.0);
        assert!((0..100).all(|_| f.roll_error()));
    }

    #[test]
    fn drop_rule_counts_down() {
        let f = Faults::new(1);
        f.drop_responses("POST", "/nodes/pve1/qemu", 2);
        assert!(!f.take_drop("GET", "/nodes/pve1/qemu"));
        assert!(f.take_drop("POST", "/nodes/pve1/qemu"));
        assert!(f.take_drop("POST", "/nodes/pve1/qemu/100/clone"));
        assert!(!f.take_drop("POST", "/nodes/pve1/qemu"));
    }
}
