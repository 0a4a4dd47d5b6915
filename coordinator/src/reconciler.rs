//! The reconciler loop of the leader: every tick (and at once when a result or an inventory
//! arrives) it turns the results received into status and events, then plans every VM and
//! applies the plan: proposals through Raft, commands into the hosts' outboxes. On a member
//! that does not lead it only keeps the control plane's soft state dropped.
//!
//! ```text
//!  tick │ wake ─▶ leading? ─no─▶ drop soft state
//!                   │ yes (new term: confirm the quorum and catch up the state machine first)
//!                   ▼
//!  results ─▶ on_result ─▶ apply ─▶ recovery::plan(state) ─▶ RecoverVm | EndRecovery
//!          ─▶ maintenance::plan, failback::plan, gather::plan ─▶ StartMigration (drain, home,
//!             failback, gather)
//!          ─▶ rebalancer::decide (hold kept per term) ─▶ StartMigration (rebalance, one at a time)
//!          ─▶ plan(state, live, inflight) ─▶ apply (batches of VMs, one entry each; each VM's
//!                                                   actions in order)
//! ```

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::control::{Arrived, Control};
use crate::leader_ticks::LeaderTicks;
use crate::service::Ctx;
use fleet::rebalancer::{self, Hold};
use fleet::reconcile::batch::{self, VmSteps};
use fleet::reconcile::status::{allocation_failed, on_result};
use fleet::reconcile::{Action, Backoff, Clock, plan};
use fleet::recovery::{self, RecoveryAction};
use fleet::state::{Command, CommandReply, FleetState, StateError};
use fleet::{failback, gather, maintenance};
use protocol::version::{BATCHES, MIGRATION, RECOVERY};

/// VMs whose actions are applied at the same time (each VM's in order), one entry per action.
const PARALLEL_VMS: usize = 16;
/// VMs whose commands share one batched log entry.
const BATCH_VMS: usize = 500;
/// Batched entries proposed at the same time.
const PARALLEL_BATCHES: usize = 4;
/// Passes run at once, one after the other, while each places VMs or allocates their ids.
const EAGER_PASSES: u32 = 3;

/// The reconciler of one member (it acts only while the member leads).
pub(crate) struct Reconciler {
    ctx: Arc<Ctx>,
    /// Automatic rebalancing's hold, and the term it was kept in (a new term starts over).
    rebalance_hold: Mutex<(u64, Hold)>,
}

impl Reconciler {
    /// The reconciler over the member's shared context.
    pub(crate) fn new(ctx: Arc<Ctx>) -> Reconciler {
        Reconciler {
            ctx,
            rebalance_hold: Mutex::new((0, Hold::default())),
        }
    }

    /// Runs until `shutdown`.
    pub(crate) async fn run(self, shutdown: CancellationToken) {
        let period = self.ctx.control.config().tick;
        let mut ticks = LeaderTicks::new(period, true, "reconciler");
        let mut eager = 0;
        while let Some(term) = ticks.next(&self.ctx, &shutdown).await {
            let unlocked = tokio::select! {
                () = shutdown.cancelled() => break,
                unlocked = self.step(term) => unlocked,
            };
            // Placements and ids just committed make Ensures due: plan them now rather than
            // a tick later, a bounded number of times in a row.
            if unlocked && eager < EAGER_PASSES {
                eager += 1;
                self.ctx.control.wake();
            } else {
                eager = 0;
            }
        }
    }

    /// One pass: the results, then the plan; whether the plan placed VMs or allocated their
    /// ids (which makes their next steps due at once).
    async fn step(&self, term: u64) -> bool {
        let control = &self.ctx.control;
        let arrived = control.take_results();
        if !arrived.is_empty() {
            let now = control.now();
            match self.ctx.read_local(|s| react(control, s, &arrived, now)) {
                Ok(actions) => self.apply(term, now, actions).await,
                Err(e) => tracing::warn!(error = %e, "reconciler: cannot read the state"),
            }
        }
        self.recover().await;
        self.maintain().await;
        self.rebalance(term).await;
        let now = control.now();
        let (live, inflight) = control.plan_inputs();
        let policy = control.policy();
        let planned = self.ctx.read_local(|s| {
            control.note_state(s);
            plan(s, &live, &inflight, &policy, now)
        });
        match planned {
            Ok(actions) => {
                let unlocks = actions.iter().any(|a| {
                    matches!(
                        a,
                        Action::Schedule { .. }
                            | Action::AllocateVmid { .. }
                            | Action::AllocateIps { .. }
                    )
                });
                self.apply(term, now, actions).await;
                unlocks
            }
            Err(e) => {
                tracing::warn!(error = %e, "reconciler: cannot read the state");
                false
            }
        }
    }

    /// Recovers the VMs of fenced hosts (once the cluster reads the commands that do it):
    /// the decisions of [`recovery::plan`], one proposal each. A refusal is the state moving
    /// under the plan (the host came back, the VM was deleted): the next pass sees it.
    async fn recover(&self) {
        let now = self.ctx.control.now();
        let planned = self.ctx.read_local(|s| {
            (s.cluster_version() >= RECOVERY).then(|| recovery::plan(s, now.unix_ms))
        });
        let actions = match planned {
            Ok(Some(actions)) => actions,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(error = %e, "reconciler: cannot read the state");
                return;
            }
        };
        for action in actions {
            match self.ctx.propose_raw(&action.command(now.unix_ms)).await {
                Ok(Ok(_)) => match &action {
                    RecoveryAction::Recover {
                        vm,
                        to: Some(to),
                        message,
                        ..
                    }
                    | RecoveryAction::Relocate {
                        vm, to, message, ..
                    }
                    | RecoveryAction::MoveWithGroup { vm, to, message } => {
                        tracing::warn!(vm, to, message, "moving an HA VM");
                    }
                    RecoveryAction::Recover { vm, message, .. }
                    | RecoveryAction::GiveUp { vm, message } => {
                        tracing::warn!(vm, message, "an HA VM waits or is given up");
                    }
                    RecoveryAction::End { vm, message, .. }
                    | RecoveryAction::ClearFailures { vm, message } => {
                        tracing::info!(vm, message, "HA recovery over");
                    }
                },
                Ok(Err(refusal)) => {
                    tracing::debug!(vm = action.vm(), error = %refusal, "reconciler: recovery refused");
                }
                Err(e) => {
                    tracing::debug!(vm = action.vm(), error = %e, "reconciler: recovery not proposed");
                    return;
                }
            }
        }
    }

    /// Drains the hosts in maintenance and brings their guests back home afterwards (once the
    /// cluster reads migrations): the decisions of [`maintenance::plan`], one proposal each.
    /// A refusal is the state moving under the plan: the next pass sees it.
    async fn maintain(&self) {
        let now = self.ctx.control.now();
        let planned = self.ctx.read_local(|s| {
            (s.cluster_version() >= MIGRATION).then(|| {
                let views = self.ctx.control.running_host_views(s);
                let mut commands = maintenance::plan(s, views.clone(), now.unix_ms);
                commands.extend(failback::plan(s, &views, now.unix_ms));
                commands.extend(gather::plan(s, &views, now.unix_ms));
                commands
            })
        });
        let commands = match planned {
            Ok(Some(commands)) => commands,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(error = %e, "reconciler: cannot read the state");
                return;
            }
        };
        for cmd in commands {
            match self.ctx.propose_raw(&cmd).await {
                Ok(Ok(_)) => tracing::info!(command = ?cmd, "maintenance: moving a guest"),
                Ok(Err(refusal)) => {
                    tracing::debug!(error = %refusal, "reconciler: maintenance move refused");
                }
                Err(e) => {
                    tracing::debug!(error = %e, "reconciler: maintenance move not proposed");
                    return;
                }
            }
        }
    }

    /// Automatic rebalancing (once the cluster reads migrations, and when it is on): the
    /// decision of [`rebalancer::decide`], at most one move. A refusal is the state moving
    /// under the decision (another move, rebalancing turned off): the next pass sees it.
    async fn rebalance(&self, term: u64) {
        let now = self.ctx.control.now();
        let held = {
            let held = lock(&self.rebalance_hold);
            if held.0 == term {
                held.1.clone()
            } else {
                Hold::default()
            }
        };
        let decided = self.ctx.read_local(|s| {
            (s.cluster_version() >= MIGRATION).then(|| {
                let views = self.ctx.control.host_views(s);
                rebalancer::decide(s, &views, &held, now.mono_ms, now.unix_ms)
            })
        });
        let decision = match decided {
            Ok(Some(d)) => d,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(error = %e, "reconciler: cannot read the state");
                return;
            }
        };
        *lock(&self.rebalance_hold) = (term, decision.hold);
        let Some(cmd) = decision.command else {
            return;
        };
        match self.ctx.propose_raw(&cmd).await {
            Ok(Ok(_)) => tracing::info!(command = ?cmd, "rebalancing: moving a guest"),
            Ok(Err(refusal)) => {
                tracing::debug!(error = %refusal, "reconciler: rebalancing move refused");
            }
            Err(e) => tracing::debug!(error = %e, "reconciler: rebalancing move not proposed"),
        }
    }

    /// Applies `actions`: in batches of VMs (one log entry each) once the cluster reads them,
    /// else VMs in parallel, one entry per action; each VM's actions in order either way.
    async fn apply(&self, term: u64, now: Clock, actions: Vec<Action>) {
        if actions.is_empty() {
            return;
        }
        match self.ctx.read_local(FleetState::cluster_version) {
            Ok(cluster) if cluster >= BATCHES => self.apply_batched(term, now, actions).await,
            _ => self.apply_one_by_one(term, now, actions).await,
        }
    }

    /// Every VM's commands in a few [`Command::Batch`] entries of at most [`BATCH_VMS`] VMs,
    /// [`PARALLEL_BATCHES`] in flight; then each VM's sends and refusal as
    /// [`VmSteps::settle`] says.
    async fn apply_batched(&self, term: u64, now: Clock, actions: Vec<Action>) {
        let mut steps = batch::by_vm(actions).into_iter().peekable();
        let mut running = JoinSet::new();
        while steps.peek().is_some() {
            let chunk: Vec<VmSteps> = steps.by_ref().take(BATCH_VMS).collect();
            while running.len() >= PARALLEL_BATCHES {
                running.join_next().await;
            }
            running.spawn(apply_chunk(Arc::clone(&self.ctx), term, now, chunk));
        }
        while running.join_next().await.is_some() {}
    }

    /// VMs in parallel, each VM's actions in order, one log entry per command (a cluster that
    /// does not read batches yet).
    async fn apply_one_by_one(&self, term: u64, now: Clock, actions: Vec<Action>) {
        let mut groups: Vec<Vec<Action>> = Vec::new();
        for action in actions {
            match groups.last_mut() {
                Some(group) if group[0].vm() == action.vm() => group.push(action),
                _ => groups.push(vec![action]),
            }
        }
        let mut running = JoinSet::new();
        for group in groups {
            while running.len() >= PARALLEL_VMS {
                running.join_next().await;
            }
            running.spawn(apply_vm(Arc::clone(&self.ctx), term, now, group));
        }
        while running.join_next().await.is_some() {}
    }
}

/// The guarded value, even if a holder panicked (the hold is only a delay to keep).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The reactions to the results, memory updated as each is taken into account.
fn react(control: &Control, state: &FleetState, arrived: &[Arrived], now: Clock) -> Vec<Action> {
    let mut actions: Vec<Action> = Vec::new();
    for a in arrived {
        let host_name = state
            .hosts()
            .get(&a.meta.host)
            .map_or_else(|| a.meta.host.to_string(), |h| h.name.clone());
        let memory = control.memory(&a.meta.vm);
        let reaction = on_result(
            state.vm(&a.meta.vm),
            state.migration(&a.meta.vm),
            &host_name,
            &a.meta,
            &a.outcome,
            &memory,
            now,
        );
        control.set_memory(&a.meta.vm, reaction.memory);
        // Keep each VM's actions together (and in order) for `apply`.
        for action in reaction.actions {
            let at = actions
                .iter()
                .rposition(|x| x.vm() == action.vm())
                .map_or(actions.len(), |i| i + 1);
            actions.insert(at, action);
        }
    }
    actions
}

/// Proposes the commands of `chunk` (VMs) as one [`Command::Batch`], then queues each VM's
/// sends and handles its refusal.
async fn apply_chunk(ctx: Arc<Ctx>, term: u64, now: Clock, chunk: Vec<VmSteps>) {
    let chains: Vec<Vec<Command>> = chunk.iter().map(|s| s.chain(now.unix_ms)).collect();
    let replies: Option<Vec<Vec<CommandReply>>> = if chains.iter().all(Vec::is_empty) {
        Some(vec![Vec::new(); chains.len()])
    } else {
        match ctx.propose_raw(&Command::Batch { chains }).await {
            Ok(Ok(CommandReply::Batch(replies))) if replies.len() == chunk.len() => Some(replies),
            Ok(other) => {
                tracing::warn!(reply = ?other, "reconciler: unexpected reply to a batch");
                None
            }
            Err(e) => {
                tracing::debug!(vms = chunk.len(), error = %e, "reconciler: batch not proposed");
                None
            }
        }
    };
    for (i, steps) in chunk.into_iter().enumerate() {
        let chain = replies.as_ref().and_then(|r| r.get(i)).map(Vec::as_slice);
        let settled = steps.settle(chain);
        for send in settled.sends {
            ctx.control
                .enqueue(send.host, send.generation, send.op, term, now);
        }
        if let Some((action, refusal)) = settled.refused {
            refused(&ctx, &action, &refusal, now).await;
        }
    }
}

/// Applies one VM's actions in order; a refusal stops the rest.
async fn apply_vm(ctx: Arc<Ctx>, term: u64, now: Clock, actions: Vec<Action>) {
    for action in actions {
        if let Action::Send {
            host,
            generation,
            op,
        } = action
        {
            ctx.control.enqueue(host, generation, op, term, now);
            continue;
        }
        let Some(cmd) = action.command(now.unix_ms) else {
            continue;
        };
        match ctx.propose_raw(&cmd).await {
            Ok(Ok(_)) => {}
            Ok(Err(refusal)) => {
                refused(&ctx, &action, &refusal, now).await;
                return;
            }
            Err(e) => {
                tracing::debug!(vm = action.vm(), error = %e, "reconciler: proposal failed");
                return;
            }
        }
    }
}

/// An allocation refused (range or pool exhausted...) backs off and says why in the status;
/// anything else is the state moving under the plan, which the next tick sees.
async fn refused(ctx: &Ctx, action: &Action, refusal: &StateError, now: Clock) {
    let vm = action.vm();
    if !matches!(
        action,
        Action::AllocateVmid { .. } | Action::AllocateIps { .. }
    ) {
        tracing::debug!(vm, error = %refusal, "reconciler: action refused");
        return;
    }
    tracing::warn!(vm, error = %refusal, "reconciler: allocation refused");
    let Ok(Some(rec)) = ctx.read_local(|s| s.vm(vm).cloned()) else {
        return;
    };
    let mut memory = ctx.control.memory(vm);
    memory.backoff = Some(Backoff::after(memory.backoff, rec.generation, now.mono_ms));
    ctx.control.set_memory(vm, memory);
    for follow_up in allocation_failed(&rec, &refusal.to_string(), now) {
        if let Some(cmd) = follow_up.command(now.unix_ms)
            && let Err(e) = ctx.propose(&cmd).await
        {
            tracing::debug!(vm, error = %e, "reconciler: status after a refusal not recorded");
            return;
        }
    }
}
