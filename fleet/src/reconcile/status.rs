//! What an agent's result means for a VM: its status (phase, conditions with the time each
//! last changed, addresses, the generation seen), the events of real transitions (created,
//! started, stopped, failed: never one per resync), stale addresses to release, and the
//! reconciler's back-off after a failure.
//!
//! A status is proposed only when it differs from the recorded one, timestamps aside, so a
//! resync of a VM in order writes nothing to the Raft log.

use protocol::NodeId;
use protocol::agent::{
    CloseTargetOp, CommandFailure, CommandOutput, FailureKind, Op, OpKind, VmObservation,
};
use protocol::fleet::{
    Condition, ConditionKind, EventLevel, Migration, VmPhase, VmRecord, VmStatus,
};
use protocol::spec::DesiredState;

use super::ensure::condition;
use super::{Action, Backoff, Clock, VmMemory};

/// Which command a result answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultMeta {
    /// The VM.
    pub vm: String,
    /// The host that ran it.
    pub host: NodeId,
    /// What the command did.
    pub kind: OpKind,
    /// The generation it was made for.
    pub generation: u64,
}

/// What to do about a result, and the VM's memory after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reaction {
    /// Actions, in order.
    pub actions: Vec<Action>,
    /// The VM's memory from now on.
    pub memory: VmMemory,
}

/// The reaction to the result of a reconciler command for `rec` (`None`: the record is gone),
/// whose migration under way is `migration`.
pub fn on_result(
    rec: Option<&VmRecord>,
    migration: Option<&Migration>,
    host_name: &str,
    meta: &ResultMeta,
    outcome: &Result<CommandOutput, CommandFailure>,
    memory: &VmMemory,
    now: Clock,
) -> Reaction {
    let mut memory = VmMemory {
        last_result_ms: Some(now.mono_ms),
        ..memory.clone()
    };
    let mut actions = Vec::new();
    // The answers of a move's target host (its VM is not placed there yet).
    if matches!(meta.kind, OpKind::OpenTarget | OpKind::CloseTarget) {
        if let (Some(rec), Some(m)) = (rec, migration)
            && m.to_host == meta.host
        {
            target_answer(meta.kind, rec, m, outcome, &mut memory, &mut actions);
        }
        return Reaction { actions, memory };
    }
    let Some(rec) = rec.filter(|r| r.assignment.host == Some(meta.host)) else {
        // Gone, or placed elsewhere since: the result describes nothing the fleet tracks.
        return Reaction { actions, memory };
    };
    if rec.deleting != (meta.kind == OpKind::Delete) {
        // An Ensure that finished after the spec was deleted (the Delete follows it).
        return Reaction { actions, memory };
    }
    match (meta.kind, outcome) {
        (OpKind::RemoteMigrate, result) => {
            memory.remote_endpoint = None;
            let (node, message) = match result {
                Ok(CommandOutput::Migrated { node, running }) => (
                    Some(node.clone()),
                    format!(
                        "{} on {node} (remote migration)",
                        if *running { "running" } else { "stopped" }
                    ),
                ),
                Ok(other) => (None, format!("unexpected answer {other:?}")),
                Err(f) => (None, format!("at step {}: {}", f.step, f.message)),
            };
            actions.push(Action::EndMigration {
                vm: meta.vm.clone(),
                node,
                message,
            });
            // The token is of no use any more, moved or not.
            if let (Some(m), Some(vmid)) = (migration, rec.assignment.vmid) {
                actions.push(Action::Send {
                    host: m.to_host,
                    generation: rec.generation,
                    op: Op::CloseMigrationTarget(CloseTargetOp {
                        name: meta.vm.clone(),
                        vmid,
                    }),
                });
            }
        }
        (OpKind::Vacate, result) => {
            let gone = match result {
                Ok(_) => Ok(()),
                Err(f) if f.kind == FailureKind::NotFound => Ok(()),
                Err(f) => Err(format!("at step {}: {}", f.step, f.message)),
            };
            if let Some(m) = migration {
                actions.push(match gone {
                    Ok(()) => Action::EndMigration {
                        vm: meta.vm.clone(),
                        node: Some(m.to_node.clone()),
                        message: format!(
                            "removed from {host_name}; rebuilt from its spec on {} next",
                            m.to_node
                        ),
                    },
                    Err(message) => Action::EndMigration {
                        vm: meta.vm.clone(),
                        node: None,
                        message,
                    },
                });
            }
        }
        (OpKind::Migrate, Ok(CommandOutput::Migrated { node, running })) => {
            actions.push(Action::EndMigration {
                vm: meta.vm.clone(),
                node: Some(node.clone()),
                message: format!("{} on {node}", if *running { "running" } else { "stopped" }),
            });
        }
        (OpKind::Migrate, Err(f)) => actions.push(Action::EndMigration {
            vm: meta.vm.clone(),
            node: None,
            message: format!("at step {}: {}", f.step, f.message),
        }),
        (OpKind::Delete, Ok(_)) => actions.push(Action::Release {
            vm: meta.vm.clone(),
        }),
        (OpKind::Delete, Err(f))
            if matches!(f.kind, FailureKind::NotFound | FailureKind::NotOwned) =>
        {
            if f.kind == FailureKind::NotOwned {
                actions.push(Action::Event {
                    vm: meta.vm.clone(),
                    level: EventLevel::Warning,
                    message: format!(
                        "VMID {} on host {host_name} now holds a VM the fleet does not own: \
                         left untouched, the fleet's VM is taken as gone ({})",
                        rec.assignment.vmid.unwrap_or_default(),
                        f.message
                    ),
                });
            }
            actions.push(Action::Release {
                vm: meta.vm.clone(),
            });
        }
        (OpKind::Ensure, Ok(CommandOutput::Vm(obs))) => {
            memory.backoff = None;
            memory.not_owned_generation = None;
            observed(rec, host_name, obs, now, &mut actions);
        }
        (OpKind::Ensure, Err(f)) if f.kind == FailureKind::NotOwned => {
            memory.not_owned_generation = Some(rec.generation);
            let message = format!(
                "VMID {} on host {host_name} holds a VM the fleet does not own (it lacks the \
                 `{}` tag or has another name): it is left untouched and nothing is retried \
                 until the spec changes; remove or rename that VM, or delete this spec ({})",
                rec.assignment.vmid.unwrap_or_default(),
                protocol::agent::OWNERSHIP_TAG,
                f.message
            );
            failed(rec, VmPhase::Failed, message, now, &mut actions);
        }
        (kind, Err(f)) => {
            memory.backoff = Some(Backoff::after(memory.backoff, rec.generation, now.mono_ms));
            let keeps_running = kind == OpKind::Ensure
                && f.kind == FailureKind::Transient
                && rec.status.phase == VmPhase::Running;
            // An HA `started` guest whose start failed is not failed yet: PVE HA retries it
            // (max_restart), moves it (max_relocate), and only then gives up (`HaGiveUp` sets
            // the phase `failed`). Until then it is stopped, and the message says why.
            let ha_start = kind == OpKind::Ensure
                && f.step == "start"
                && rec.spec.ha.state == Some(protocol::spec::HaState::Started);
            let phase = if keeps_running {
                VmPhase::Running
            } else if ha_start {
                VmPhase::Stopped
            } else {
                VmPhase::Failed
            };
            let message = format!(
                "{kind} failed at step {} ({}): {}",
                f.step,
                failure_kind(f.kind),
                f.message
            );
            // PVE HA counts the failed starts of a `started` guest (max_restart, then
            // max_relocate): the recovery planner decides from the count.
            if ha_start {
                actions.push(Action::HaStartFailed {
                    vm: meta.vm.clone(),
                    host: meta.host,
                    message: f.message.clone(),
                });
            }
            failed(rec, phase, message, now, &mut actions);
        }
        // Other kinds are not the reconciler's, and an unexpected output changes nothing.
        _ => {}
    }
    Reaction { actions, memory }
}

fn failure_kind(kind: FailureKind) -> &'static str {
    match kind {
        FailureKind::Transient => "transient, retried with back-off",
        FailureKind::Permanent => "permanent, retried with back-off: fix the cause or the spec",
        FailureKind::NotOwned => "not owned",
        FailureKind::NotFound => "not found",
        FailureKind::InDoubt => "in doubt after an agent restart, retried",
    }
}

/// The failed status and, when the message is new, one warning.
fn failed(rec: &VmRecord, phase: VmPhase, message: String, now: Clock, out: &mut Vec<Action>) {
    let status = VmStatus {
        phase,
        message: message.clone(),
        updated_at: now.unix_ms,
        ..rec.status.clone()
    };
    let vm = rec.spec.name.clone();
    if !same_status(&rec.status, &status) {
        out.push(Action::SetStatus {
            vm: vm.clone(),
            status,
        });
    }
    if rec.status.message != message {
        out.push(Action::Event {
            vm,
            level: EventLevel::Warning,
            message,
        });
    }
}

/// Status, events and stale addresses after a successful Ensure.
fn observed(
    rec: &VmRecord,
    host_name: &str,
    obs: &VmObservation,
    now: Clock,
    out: &mut Vec<Action>,
) {
    let vm = rec.spec.name.clone();
    let status = observed_status(rec, host_name, obs, now);
    if !same_status(&rec.status, &status) {
        out.push(Action::SetStatus {
            vm: vm.clone(),
            status,
        });
    }
    let was = |kind| condition(&rec.status, kind) == Some(true);
    let mut event = |message: String| {
        out.push(Action::Event {
            vm: vm.clone(),
            level: EventLevel::Info,
            message,
        });
    };
    if !was(ConditionKind::Created) {
        event(format!(
            "created on host {host_name} with VMID {}",
            obs.vmid
        ));
    }
    if obs.running && !was(ConditionKind::Running) {
        event(format!("started on host {host_name}"));
    }
    if !obs.running && was(ConditionKind::Running) {
        event(format!("stopped on host {host_name}"));
    }
    let stale = rec.assignment.ips.iter().any(|a| !a.is_current(&rec.spec));
    if stale && obs.generation == rec.generation {
        // The guest was reconfigured for this generation: the old addresses are free now.
        out.push(Action::ReleaseStaleIps { vm });
    }
}

/// The status an observation shows.
pub fn observed_status(
    rec: &VmRecord,
    host_name: &str,
    obs: &VmObservation,
    now: Clock,
) -> VmStatus {
    let prev = &rec.status;
    let cond = |kind, status: bool, reason: &str, message: String| Condition {
        kind,
        status,
        reason: reason.to_string(),
        message,
        since: prev
            .conditions
            .iter()
            .find(|c| c.kind == kind && c.status == status)
            .map_or(now.unix_ms, |c| c.since),
    };
    let up_to_date = obs.generation == rec.generation;
    let configured = up_to_date && obs.pending_restart.is_empty();
    let (configured_reason, configured_message) = if configured {
        ("UpToDate", format!("matches generation {}", rec.generation))
    } else if !obs.pending_restart.is_empty() {
        (
            "PendingRestart",
            format!("waiting for a restart: {}", obs.pending_restart.join(", ")),
        )
    } else {
        (
            "OutOfDate",
            format!(
                "matches generation {}, the spec is at {}",
                obs.generation, rec.generation
            ),
        )
    };
    let ready = obs.running && !obs.ips.is_empty();
    let ips: Vec<String> = obs.ips.iter().map(ToString::to_string).collect();
    let (ready_reason, ready_message) = if ready {
        ("AddressesReported", ips.join(", "))
    } else if obs.running {
        ("NoAddresses", "no guest address reported yet".to_string())
    } else {
        ("NotRunning", "the VM is not running".to_string())
    };
    let conditions = vec![
        cond(
            ConditionKind::Scheduled,
            true,
            "Placed",
            format!("placed on host {host_name}"),
        ),
        cond(
            ConditionKind::Created,
            true,
            "Exists",
            format!("VMID {} exists on host {host_name}", obs.vmid),
        ),
        cond(
            ConditionKind::Configured,
            configured,
            configured_reason,
            configured_message,
        ),
        cond(
            ConditionKind::Running,
            obs.running,
            if obs.running { "Running" } else { "Stopped" },
            String::new(),
        ),
        cond(ConditionKind::Ready, ready, ready_reason, ready_message),
    ];
    let phase = if obs.running {
        VmPhase::Running
    } else if rec.spec.state == DesiredState::Stopped {
        VmPhase::Stopped
    } else {
        VmPhase::Provisioning
    };
    let message = if !obs.pending_restart.is_empty() {
        format!(
            "changes wait for a restart (restart = \"{}\"): {}",
            rec.spec.restart.as_str(),
            obs.pending_restart.join(", ")
        )
    } else if phase == VmPhase::Provisioning {
        "created, not running yet".to_string()
    } else {
        String::new()
    };
    VmStatus {
        phase,
        conditions,
        current_host: rec.assignment.host,
        ips: obs.ips.clone(),
        message,
        observed_generation: obs.generation,
        updated_at: now.unix_ms,
    }
}

/// Whether two statuses say the same, the times they were recorded aside.
pub fn same_status(a: &VmStatus, b: &VmStatus) -> bool {
    let strip = |s: &VmStatus| VmStatus {
        updated_at: 0,
        conditions: s
            .conditions
            .iter()
            .map(|c| Condition {
                since: 0,
                ..c.clone()
            })
            .collect(),
        ..s.clone()
    };
    strip(a) == strip(b)
}

/// The status and warning after an allocation (VMID or addresses) was refused.
pub fn allocation_failed(rec: &VmRecord, reason: &str, now: Clock) -> Vec<Action> {
    let mut out = Vec::new();
    failed(
        rec,
        VmPhase::Pending,
        format!("cannot allocate the VM's ids: {reason}"),
        now,
        &mut out,
    );
    out
}

/// What the target of `m` answered: a token for the remote migration (kept in memory for the
/// source), or, closing the target of a move whose source was lost, whether the VM arrived.
fn target_answer(
    kind: OpKind,
    rec: &VmRecord,
    m: &Migration,
    outcome: &Result<CommandOutput, CommandFailure>,
    memory: &mut VmMemory,
    actions: &mut Vec<Action>,
) {
    let vm = rec.spec.name.clone();
    match outcome {
        Ok(CommandOutput::MigrationTarget(endpoint)) => {
            // Progress for `vm migrate --wait`; the token's id only, never its secret.
            actions.push(Action::Event {
                vm,
                level: EventLevel::Info,
                message: format!(
                    "{} is ready to receive it: token {} for VMID {} minted, valid until {}",
                    m.to_node,
                    endpoint.token_id,
                    rec.assignment.vmid.unwrap_or_default(),
                    endpoint.expires_unix
                ),
            });
            memory.remote_endpoint = Some(endpoint.clone());
        }
        Ok(CommandOutput::TargetClosed { arrived, running }) if m.source_lost_at.is_some() => {
            actions.push(Action::EndMigration {
                vm,
                node: arrived.then(|| m.to_node.clone()),
                message: if *arrived {
                    format!(
                        "found on {} ({}) after {} was fenced halfway",
                        m.to_node,
                        if *running { "running" } else { "stopped" },
                        m.from_node
                    )
                } else {
                    format!(
                        "not on {} after {} was fenced halfway: recovered as a VM of {}",
                        m.to_node, m.from_node, m.from_node
                    )
                },
            });
        }
        Ok(_) => {}
        Err(f) if kind == OpKind::OpenTarget => {
            actions.push(Action::EndMigration {
                vm,
                node: None,
                message: format!(
                    "the target {} could not receive it (step {}): {}",
                    m.to_node, f.step, f.message
                ),
            });
        }
        // A failed close: the token expires on its own, and the target of a move whose
        // source was lost is asked again at the next tick.
        Err(_) => {}
    }
}
