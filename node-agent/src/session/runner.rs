//! Running admitted commands: serialized per VM name, in delivery order, and at most
//! [`MAX_CONCURRENT`] at once across VMs. Each VM with work has one worker task that runs its
//! queue; a worker takes a slot only for the command it is running, so commands waiting behind
//! their VM never hold a slot.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use protocol::agent::{AgentCommand, CommandResult};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::{Id, JoinSet};

use crate::executor::Executor;

/// Commands running at once, across VMs.
pub const MAX_CONCURRENT: usize = 8;

/// What runs a command to its result (the [`Executor`]; tests put a fake here).
pub trait CommandRunner: Send + Sync + 'static {
    /// Runs `cmd` (at most once per id) and answers its result.
    fn run(&self, cmd: AgentCommand) -> impl Future<Output = CommandResult> + Send;
}

impl CommandRunner for Executor {
    fn run(&self, cmd: AgentCommand) -> impl Future<Output = CommandResult> + Send {
        self.execute(cmd)
    }
}

/// What a finished command left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Done {
    /// Its result.
    Result(CommandResult),
    /// A worker died: these ids (running and queued for its VM) ended without a result.
    Lost(Vec<String>),
    /// The last worker ended: nothing is queued or running any more.
    Idle,
}

/// One VM's work: the command running now and the ones delivered after it.
#[derive(Debug, Default)]
struct VmQueue {
    current: String,
    waiting: VecDeque<AgentCommand>,
}

type Queues = Arc<Mutex<HashMap<String, VmQueue>>>;

/// Spawns VM workers and collects their results.
pub(crate) struct Dispatcher<R> {
    runner: Arc<R>,
    slots: Arc<Semaphore>,
    queues: Queues,
    workers: JoinSet<()>,
    /// Worker task id → VM name, to name what a dead worker lost.
    worker_vm: HashMap<Id, String>,
    results_tx: mpsc::UnboundedSender<CommandResult>,
    results_rx: mpsc::UnboundedReceiver<CommandResult>,
}

impl<R: CommandRunner> Dispatcher<R> {
    /// A dispatcher running at most `max_concurrent` commands at once.
    pub(crate) fn new(runner: Arc<R>, max_concurrent: usize) -> Dispatcher<R> {
        let (results_tx, results_rx) = mpsc::unbounded_channel();
        Dispatcher {
            runner,
            slots: Arc::new(Semaphore::new(max_concurrent.max(1))),
            queues: Arc::new(Mutex::new(HashMap::new())),
            workers: JoinSet::new(),
            worker_vm: HashMap::new(),
            results_tx,
            results_rx,
        }
    }

    /// Queues `cmd` behind the commands for the same VM delivered before it.
    pub(crate) fn spawn(&mut self, cmd: AgentCommand) {
        let vm = cmd.op.vm_name().to_string();
        {
            let mut queues = lock(&self.queues);
            if let Some(queue) = queues.get_mut(&vm) {
                queue.waiting.push_back(cmd);
                return;
            }
            queues.insert(
                vm.clone(),
                VmQueue {
                    current: cmd.id.clone(),
                    waiting: VecDeque::new(),
                },
            );
        }
        let worker = Worker {
            vm: vm.clone(),
            runner: Arc::clone(&self.runner),
            slots: Arc::clone(&self.slots),
            queues: Arc::clone(&self.queues),
            results: self.results_tx.clone(),
        };
        let handle = self.workers.spawn(worker.run(cmd));
        self.worker_vm.insert(handle.id(), vm);
    }

    /// The next finished command, or [`Done::Idle`] when the last worker ended. Pending while
    /// nothing finishes (cancel-safe).
    pub(crate) async fn next_done(&mut self) -> Done {
        loop {
            tokio::select! {
                biased;
                Some(result) = self.results_rx.recv() => return Done::Result(result),
                Some(joined) = self.workers.join_next_with_id(), if !self.workers.is_empty() => {
                    match joined {
                        Ok((task, ())) => {
                            self.worker_vm.remove(&task);
                            // Results are read first (biased), so none is left behind.
                            if self.workers.is_empty() {
                                return Done::Idle;
                            }
                        }
                        Err(e) => return Done::Lost(self.lost(e)),
                    }
                }
                else => return std::future::pending().await,
            }
        }
    }

    fn lost(&mut self, e: tokio::task::JoinError) -> Vec<String> {
        let vm = self.worker_vm.remove(&e.id()).unwrap_or_default();
        let ids: Vec<String> = lock(&self.queues)
            .remove(&vm)
            .map(|q| {
                std::iter::once(q.current)
                    .chain(q.waiting.into_iter().map(|c| c.id))
                    .collect()
            })
            .unwrap_or_default();
        tracing::error!(vm = %vm, lost = ?ids, error = %e, "a command worker died without results");
        ids
    }

    /// Whether no command is queued or running.
    pub(crate) fn is_idle(&self) -> bool {
        self.workers.is_empty()
    }

    /// Aborts every command still queued or running (shutdown after the grace period); their
    /// journal entries stay "started", so a restarted agent treats them as in doubt.
    pub(crate) async fn abort_all(&mut self) {
        self.workers.shutdown().await;
        self.worker_vm.clear();
        lock(&self.queues).clear();
    }
}

/// Runs one VM's commands, one after the other, until its queue is empty.
struct Worker<R> {
    vm: String,
    runner: Arc<R>,
    slots: Arc<Semaphore>,
    queues: Queues,
    results: mpsc::UnboundedSender<CommandResult>,
}

impl<R: CommandRunner> Worker<R> {
    async fn run(self, first: AgentCommand) {
        let mut cmd = first;
        loop {
            let result = match Arc::clone(&self.slots).acquire_owned().await {
                Ok(_slot) => self.runner.run(cmd).await,
                // The semaphore is never closed; should it be, nothing may run.
                Err(_) => not_run(cmd),
            };
            // The session owns the receiver for as long as workers exist.
            let _ = self.results.send(result);
            match self.next_command() {
                Some(next) => cmd = next,
                None => return,
            }
        }
    }

    /// The VM's next command, or `None` (and the VM's queue removed) when there is none.
    fn next_command(&self) -> Option<AgentCommand> {
        let mut queues = lock(&self.queues);
        let queue = queues.get_mut(&self.vm)?;
        match queue.waiting.pop_front() {
            Some(next) => {
                queue.current = next.id.clone();
                Some(next)
            }
            None => {
                queues.remove(&self.vm);
                None
            }
        }
    }
}

fn lock(queues: &Queues) -> std::sync::MutexGuard<'_, HashMap<String, VmQueue>> {
    // The map is only read and written whole under the lock; a panic cannot leave it torn.
    queues.lock().unwrap_or_else(PoisonError::into_inner)
}

fn not_run(cmd: AgentCommand) -> CommandResult {
    CommandResult {
        id: cmd.id,
        outcome: Err(protocol::agent::CommandFailure {
            kind: protocol::agent::FailureKind::Transient,
            step: "schedule".into(),
            message: "the agent is shutting down".into(),
        }),
    }
}
