//! The work of one worker task: a [`Job`] with its three steps, what it sees while it runs
//! ([`JobCx`]) and who the task belongs to ([`TaskOwner`]). An operation builds one and hands it
//! to `Inner::start_task` (worker.rs), which runs the steps.
//!
//! Most jobs are pure state changes after a simulated duration. A job whose work happens
//! elsewhere (a remote migration talking to another cluster over HTTPS, the tunnel endpoint
//! waiting for its commands) says through [`Job::ready`] when it may finish, and consults the
//! injected task faults itself ([`Job::handles_faults`]) at the point where its work can fail.

use super::task::TaskLog;
use crate::cluster::state::State;
use crate::faults::Faults;

/// What a job sees while it runs: the state (locked), its log and the faults.
pub(crate) struct JobCx<'a> {
    pub(crate) st: &'a mut State,
    pub(crate) log: &'a mut TaskLog,
    pub(crate) faults: &'a Faults,
    /// The task's UPID (for work that writes to its log later, from elsewhere).
    pub(crate) upid: &'a str,
    /// Tasks the job forks when it finishes (`start=1` after create runs as its own `qmstart`).
    pub(crate) followups: Vec<(TaskOwner, Box<dyn Job>)>,
}

/// The work of one task.
pub(crate) trait Job: Send {
    /// The worker's first steps: checks (an error ends the task at once), locks, first log
    /// lines. Returns the unscaled duration in seconds.
    fn begin(&mut self, cx: &mut JobCx<'_>) -> Result<f64, String>;

    /// The effect, once the duration has passed. On error it must leave the state as it found
    /// it; `abort` runs afterwards.
    fn finish(&mut self, cx: &mut JobCx<'_>) -> Result<(), String>;

    /// Undo `begin` (locks, temporary configs) after a failure or an interrupt.
    fn abort(&mut self, _cx: &mut JobCx<'_>) {}

    /// Whether `finish` may run once the duration has passed (a job waiting for work done
    /// elsewhere answers `false` until it is done).
    fn ready(&self, _st: &State) -> bool {
        true
    }

    /// Whether the job consults `Faults::take_task_failure` itself, so the worker must not
    /// consume the same fault a second time before `finish`.
    fn handles_faults(&self) -> bool {
        false
    }
}

/// Who a task belongs to: the UPID fields besides pid and times.
pub(crate) struct TaskOwner {
    /// Node in the UPID (the node holding the VM's config).
    pub(crate) node: String,
    /// Task type (`qmstart`, ...).
    pub(crate) kind: &'static str,
    /// VM the task acts on (UPID id; also matched against task faults).
    pub(crate) vmid: u32,
    /// `root@pam` or `root@pam!fleet`.
    pub(crate) user: String,
}
