//! Checking `[[event]]` entries: the action is known, it has the keys it takes and only
//! those, its target (a host name, `@leader`, `@vm:NAME`, `@vip:NAME`, `@event[N]`) and its VM
//! exist.

use protocol::agent::LeaveKind;
use protocol::spec::HaState;

use super::super::error::ScenarioError;
use super::super::file::RawEvent;
use super::super::model::{Action, Refusal, ScenarioEvent, Target};
use super::refusal::{Checked, invalid, time, unknown_host, unknown_vm};

/// PVE's HA resource states, for `pve-ha`.
const PVE_HA_STATES: [&str; 4] = ["started", "stopped", "disabled", "ignored"];

/// The actions that are an operator's call through the admin API, which the fleet may refuse.
const OPERATOR_CALLS: &str = "vm-migrate, vm-start, vm-stop, vm-apply, vm-delete, vm-ha, \
     maintenance-enable, maintenance-disable";

fn operator_call(action: &Action) -> bool {
    matches!(
        action,
        Action::VmMigrate { .. }
            | Action::VmStart { .. }
            | Action::VmStop { .. }
            | Action::VmApply { .. }
            | Action::VmDelete { .. }
            | Action::VmHa { .. }
            | Action::MaintenanceEnable(_)
            | Action::MaintenanceDisable(_)
    )
}

/// `@event[N]` → `Some(N)`.
pub(super) fn event_ref(text: &str) -> Option<Result<usize, ()>> {
    let inner = text.strip_prefix("@event[")?.strip_suffix(']');
    Some(inner.and_then(|n| n.parse().ok()).ok_or(()))
}

/// The names a target may refer to.
struct Names<'a> {
    hosts: &'a [&'a str],
    vms: &'a [&'a str],
    vips: &'a [&'a str],
}

fn target(at: &str, text: &str, names: &Names<'_>) -> Checked<Target> {
    let Names { hosts, vms, vips } = *names;
    if text == "@leader" {
        return Ok(Target::Leader);
    }
    if let Some(vip) = text.strip_prefix("@vip:") {
        if !vips.contains(&vip) {
            return invalid(
                at,
                format!(
                    "no VIP {vip:?} in the fleet; its VIPs: {}",
                    if vips.is_empty() {
                        "none".to_string()
                    } else {
                        vips.join(", ")
                    }
                ),
            );
        }
        return Ok(Target::VipOwner(vip.to_string()));
    }
    if let Some(vm) = text.strip_prefix("@vm:") {
        if !vms.contains(&vm) {
            return invalid(at, unknown_vm(vm, vms));
        }
        return Ok(Target::HostOf(vm.to_string()));
    }
    match event_ref(text) {
        Some(Ok(n)) => return Ok(Target::Event(n)),
        Some(Err(())) => return invalid(at, format!("{text:?}: write @event[N], N a number")),
        None => {}
    }
    if text.starts_with('@') {
        return invalid(
            at,
            format!("{text:?}: expected a host name, @leader, @vm:NAME, @vip:NAME or @event[N]"),
        );
    }
    if !hosts.contains(&text) {
        return invalid(at, unknown_host(text, hosts));
    }
    Ok(Target::Host(text.to_string()))
}

/// The keys an action takes besides `at` and `action`.
fn keys_of(action: &str) -> Option<&'static [&'static str]> {
    Some(match action {
        "power-off"
        | "power-on"
        | "reset"
        | "partition"
        | "kill-agent"
        | "restart-agent"
        | "stop-agent"
        | "freeze-agent"
        | "thaw-agent"
        | "kill-coordinator"
        | "restart-coordinator"
        | "stop-coordinator"
        | "fail-disk"
        | "heal-disk"
        | "partition-in"
        | "partition-out"
        | "maintenance-enable"
        | "maintenance-disable" => &["host"],
        "heal" => &["host"],
        "cut-link" => &["host", "peer"],
        "lossy" => &["host", "loss"],
        "delay-link" => &["host", "delay"],
        "clock-step" => &["host", "by"],
        "slow-disk" => &["host", "delay"],
        "shutdown" => &["host", "state"],
        "fail-start" | "fail-migrate" => &["vm", "count"],
        "vm-migrate" => &["vm", "host"],
        "lock" => &["vm", "lock"],
        "pve-ha" | "vm-ha" => &["vm", "state"],
        "vm-start" | "vm-stop" | "vm-apply" | "vm-delete" | "unlock" => &["vm"],
        _ => return None,
    })
}

const ACTIONS: &str = "power-off, power-on, reset, shutdown, partition, partition-in, \
     partition-out, cut-link, lossy, delay-link, heal, kill-agent, restart-agent, stop-agent, freeze-agent, \
     thaw-agent, clock-step, slow-disk, fail-disk, heal-disk, kill-coordinator, restart-coordinator, stop-coordinator, \
     fail-start, fail-migrate, lock, unlock, pve-ha, vm-start, vm-stop, vm-ha, vm-apply, vm-delete, \
     vm-migrate, maintenance-enable, maintenance-disable";

pub(super) fn event(
    i: usize,
    e: RawEvent,
    hosts: &[&str],
    vms: &[&str],
    vips: &[&str],
    coordinators: &[String],
) -> Checked<ScenarioEvent> {
    let names = Names { hosts, vms, vips };
    let at = |key: &str| format!("event[{i}].{key}");
    let when = time(&at("at"), &e.at)?;
    let Some(allowed) = keys_of(&e.action) else {
        return invalid(
            at("action"),
            format!("unknown action {:?}; expected one of {ACTIONS}", e.action),
        );
    };
    let given = [
        ("host", e.host.is_some()),
        ("vm", e.vm.is_some()),
        ("count", e.count.is_some()),
        ("lock", e.lock.is_some()),
        ("state", e.state.is_some()),
        ("peer", e.peer.is_some()),
        ("loss", e.loss.is_some()),
        ("by", e.by.is_some()),
        ("delay", e.delay.is_some()),
    ];
    for (key, present) in given {
        if present && !allowed.contains(&key) {
            return invalid(
                at(key),
                format!(
                    "action {} does not take {key} (it takes {})",
                    e.action,
                    allowed.join(", ")
                ),
            );
        }
    }
    let optional_host = || -> Checked<Option<Target>> {
        e.host
            .as_deref()
            .map(|h| target(&at("host"), h, &names))
            .transpose()
    };
    let host = || -> Checked<Target> {
        optional_host()?.ok_or_else(|| {
            ScenarioError::invalid(
                at("host"),
                format!(
                    "action {} needs host = a host name, @leader, @vm:NAME or @event[N]",
                    e.action
                ),
            )
        })
    };
    let vm = || -> Checked<String> {
        match &e.vm {
            Some(v) if vms.contains(&v.as_str()) => Ok(v.clone()),
            Some(v) => invalid(at("vm"), unknown_vm(v, vms)),
            None => invalid(at("vm"), format!("action {} needs vm = NAME", e.action)),
        }
    };
    let coordinator_host = || -> Checked<Target> {
        let t = host()?;
        if let Target::Host(h) = &t
            && !coordinators.contains(h)
        {
            return invalid(
                at("host"),
                format!(
                    "{h} runs no coordinator (the coordinators run on {})",
                    coordinators.join(", ")
                ),
            );
        }
        Ok(t)
    };
    let action = match e.action.as_str() {
        "power-off" => Action::PowerOff(host()?),
        "power-on" => Action::PowerOn(host()?),
        "reset" => Action::Reset(host()?),
        "partition" => Action::Partition(host()?),
        "partition-in" => Action::PartitionOneWay(host()?, true),
        "partition-out" => Action::PartitionOneWay(host()?, false),
        "cut-link" => {
            let a = host()?;
            let b = match e.peer.as_deref() {
                Some(p) => target(&at("peer"), p, &names)?,
                None => {
                    return invalid(
                        at("peer"),
                        "cut-link needs peer = the other host (a host name, @leader, @vm:NAME \
                         or @event[N])",
                    );
                }
            };
            if a == b {
                return invalid(at("peer"), "a link joins two hosts: peer is host");
            }
            Action::CutLink(a, b)
        }
        "lossy" => match e.loss {
            Some(pct @ 1..=100) => Action::Lossy(host()?, pct),
            Some(pct) => return invalid(at("loss"), format!("{pct}: a percentage, 1 to 100")),
            None => return invalid(at("loss"), "lossy needs loss = PERCENT (1 to 100)"),
        },
        "delay-link" => {
            let Some(text) = e.delay.as_deref() else {
                return invalid(at("delay"), "delay-link needs delay = \"100ms\" (each way)");
            };
            let d = time(&at("delay"), text)?;
            if d.is_zero() || d.as_millis() > 5000 {
                return invalid(at("delay"), format!("{text:?}: 1 ms to 5 s"));
            }
            let ms = u32::try_from(d.as_millis()).unwrap_or(5000);
            Action::DelayLink(host()?, ms)
        }
        "clock-step" => {
            let Some(text) = e.by.as_deref() else {
                return invalid(
                    at("by"),
                    "clock-step needs by = \"30s\" (or \"-30s\": back)",
                );
            };
            let (sign, magnitude) = match text.trim().strip_prefix('-') {
                Some(rest) => (-1, rest),
                None => (1, text.trim().trim_start_matches('+')),
            };
            let d = time(&at("by"), magnitude)?;
            if d.subsec_millis() != 0 || d.as_secs() == 0 || d.as_secs() > 3600 {
                return invalid(
                    at("by"),
                    format!("{text:?}: whole seconds, 1 s to 1 h, either way"),
                );
            }
            Action::ClockStep(host()?, sign * i64::try_from(d.as_secs()).unwrap_or(0))
        }
        "heal" => Action::Heal(optional_host()?),
        "kill-agent" => Action::KillAgent(host()?),
        "restart-agent" => Action::RestartAgent(host()?),
        "stop-agent" => Action::StopAgent(host()?),
        "shutdown" => {
            let kind = match e.state.as_deref() {
                Some("reboot") => LeaveKind::Reboot,
                Some("poweroff") => LeaveKind::PowerOff,
                other => {
                    return invalid(
                        at("state"),
                        format!("{other:?}: shutdown needs state = \"reboot\" or \"poweroff\""),
                    );
                }
            };
            Action::Shutdown(host()?, kind)
        }
        "freeze-agent" => Action::FreezeAgent(host()?),
        "thaw-agent" => Action::ThawAgent(host()?),
        "kill-coordinator" => Action::KillCoordinator(coordinator_host()?),
        "restart-coordinator" => Action::RestartCoordinator(coordinator_host()?),
        "stop-coordinator" => Action::StopCoordinator(coordinator_host()?),
        "slow-disk" => {
            let Some(text) = e.delay.as_deref() else {
                return invalid(at("delay"), "slow-disk needs delay = \"500ms\" (per sync)");
            };
            let d = time(&at("delay"), text)?;
            if d.is_zero() || d.as_secs() > 30 {
                return invalid(at("delay"), format!("{text:?}: 1 ms to 30 s"));
            }
            let ms = u32::try_from(d.as_millis()).unwrap_or(30_000);
            Action::SlowDisk(coordinator_host()?, ms)
        }
        "fail-disk" => Action::FailDisk(coordinator_host()?),
        "heal-disk" => Action::HealDisk(coordinator_host()?),
        "fail-start" => {
            let count = match e.count {
                Some(n) if n >= 1 => n,
                Some(_) => return invalid(at("count"), "at least 1"),
                None => return invalid(at("count"), "fail-start needs count = N (at least 1)"),
            };
            Action::FailStart { vm: vm()?, count }
        }
        "fail-migrate" => {
            let count = match e.count {
                Some(n) if n >= 1 => n,
                Some(_) => return invalid(at("count"), "at least 1"),
                None => return invalid(at("count"), "fail-migrate needs count = N (at least 1)"),
            };
            Action::FailMigrate { vm: vm()?, count }
        }
        "vm-migrate" => Action::VmMigrate {
            vm: vm()?,
            to: optional_host()?,
        },
        "maintenance-enable" => Action::MaintenanceEnable(host()?),
        "maintenance-disable" => Action::MaintenanceDisable(host()?),
        "lock" => {
            let lock = match &e.lock {
                Some(l)
                    if !l.is_empty() && l.chars().all(|c| c.is_ascii_lowercase() || c == '-') =>
                {
                    l.clone()
                }
                Some(l) => {
                    return invalid(
                        at("lock"),
                        format!("{l:?}: a PVE lock name (backup, create, ...)"),
                    );
                }
                None => return invalid(at("lock"), "lock needs lock = NAME (backup, create, ...)"),
            };
            Action::Lock { vm: vm()?, lock }
        }
        "pve-ha" => {
            let state = e.state.clone().unwrap_or_else(|| "started".to_string());
            if !PVE_HA_STATES.contains(&state.as_str()) {
                return invalid(
                    at("state"),
                    format!("{state:?}: expected one of {}", PVE_HA_STATES.join(", ")),
                );
            }
            Action::PveHa { vm: vm()?, state }
        }
        "vm-ha" => {
            let state = match e.state.as_deref() {
                Some("started") => HaState::Started,
                Some("stopped") => HaState::Stopped,
                Some("disabled") => HaState::Disabled,
                Some("ignored") => HaState::Ignored,
                Some(other) => {
                    return invalid(
                        at("state"),
                        format!("{other:?}: expected started, stopped, disabled or ignored"),
                    );
                }
                None => {
                    return invalid(
                        at("state"),
                        "vm-ha needs state = started|stopped|disabled|ignored",
                    );
                }
            };
            Action::VmHa { vm: vm()?, state }
        }
        "unlock" => Action::Unlock { vm: vm()? },
        "vm-start" => Action::VmStart { vm: vm()? },
        "vm-stop" => Action::VmStop { vm: vm()? },
        "vm-apply" => Action::VmApply { vm: vm()? },
        "vm-delete" => Action::VmDelete { vm: vm()? },
        other => return invalid(at("action"), format!("unknown action {other:?}")),
    };
    let refusal = match e.refusal.as_deref() {
        None => Refusal::Never,
        Some(_) if !operator_call(&action) => {
            return invalid(
                at("refusal"),
                format!(
                    "action {} is not an operator's call the fleet could refuse (refusal is \
                     for {OPERATOR_CALLS})",
                    e.action
                ),
            );
        }
        Some("allowed") => Refusal::Allowed,
        Some("expected") => Refusal::Expected,
        Some(other) => {
            return invalid(
                at("refusal"),
                format!("{other:?}: expected \"allowed\" or \"expected\""),
            );
        }
    };
    Ok(ScenarioEvent {
        index: i,
        at: when,
        action,
        refusal,
    })
}

/// Every `@event[N]` target names an event with a host that is played before it.
pub(super) fn check_event_refs(events: &[ScenarioEvent]) -> Checked<()> {
    for e in events {
        let Some(Target::Event(n)) = e.action.target() else {
            continue;
        };
        let at = format!("event[{}].host", e.index);
        let Some(earlier) = events.iter().find(|x| x.index == *n) else {
            return invalid(at, format!("@event[{n}]: the scenario has no event[{n}]"));
        };
        if earlier.action.target().is_none() {
            return invalid(
                at,
                format!(
                    "@event[{n}]: event[{n}] ({}) acts on no host",
                    earlier.action.name()
                ),
            );
        }
        if (earlier.at, earlier.index) >= (e.at, e.index) {
            return invalid(
                at,
                format!("@event[{n}]: event[{n}] is not played before this one"),
            );
        }
    }
    Ok(())
}
