//! How a refusal is written: the entry and key, and what is wrong (`event[3].host: no host
//! "pve-x" in the scenario (its hosts: pve-a, pve-b)`).

use std::time::Duration;

use super::super::duration;
use super::super::error::ScenarioError;

pub(super) type Checked<T> = Result<T, ScenarioError>;

pub(super) fn invalid<T>(at: impl Into<String>, problem: impl Into<String>) -> Checked<T> {
    Err(ScenarioError::invalid(at, problem))
}

/// `time` at `at`, or the problem naming it.
pub(super) fn time(at: &str, text: &str) -> Checked<Duration> {
    duration::parse(text).map_err(|p| ScenarioError::invalid(at, p))
}

pub(super) fn unknown_host(name: &str, hosts: &[&str]) -> String {
    format!(
        "no host {name:?} in the scenario (its hosts: {})",
        hosts.join(", ")
    )
}

pub(super) fn unknown_vm(name: &str, vms: &[&str]) -> String {
    format!(
        "no VM {name:?} in the scenario (its VMs: {})",
        vms.join(", ")
    )
}
