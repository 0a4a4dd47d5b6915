//! Running worker tasks. An operation hands a [`Job`] to [`Inner::start_task`]: `begin` runs at
//! once (the worker's first checks, locks taken), then the task "works" for its scaled duration
//! and `finish` applies the effect; failures, injected task faults and interrupts call `abort`
//! to undo what `begin` did. With a time scale of 0 the whole task completes before the API call
//! returns, unless the job is not [`Job::ready`] yet: then a driver waits for it. A dead node
//! makes no progress on its tasks until it is back; a node that boots again has lost them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::job::{Job, JobCx, TaskOwner};
use super::task::{TaskEnd, TaskLog, Upid};
use crate::cluster::clock::now_unix;
use crate::cluster::inner::Inner;
use crate::cluster::state::State;

/// Longest real sleep between progress checks of a running task.
const TICK: f64 = 0.02;

impl Inner {
    /// Fork a worker: register the task, run `begin`, then complete it now (time scale 0) or
    /// drive it on the runtime. Returns the UPID.
    pub(crate) fn start_task(
        self: &Arc<Self>,
        st: &mut State,
        owner: TaskOwner,
        mut job: Box<dyn Job>,
    ) -> String {
        let pid = st.alloc_pid(&owner.node);
        let pstart = st.node(&owner.node).map_or(0, |n| n.ticks_now());
        let upid = Upid {
            node: owner.node.clone(),
            pid,
            pstart,
            starttime: now_unix(),
            kind: owner.kind.to_string(),
            id: owner.vmid.to_string(),
            user: owner.user,
        };
        let text = st.tasks.insert(upid, Some(owner.vmid));
        let mut log = TaskLog::default();
        let mut cx = JobCx {
            st,
            log: &mut log,
            faults: &self.faults,
            upid: &text,
            followups: Vec::new(),
        };
        let begun = job.begin(&mut cx);
        let followups = cx.followups;
        self.start_followups(st, followups);
        let Some(task) = st.tasks.get_mut(&text) else {
            return text;
        };
        task.log = log;
        match begun {
            Err(msg) => task.finish(Err(msg), now_unix()),
            Ok(seconds) => {
                let scaled = (seconds * self.time_scale).max(0.0);
                task.remaining = scaled;
                let ready = job.ready(st);
                self.jobs().insert(text.clone(), job);
                if scaled <= 0.0 && ready {
                    self.complete(st, &text);
                } else {
                    self.spawn_driver(st, text.clone(), owner.node);
                }
            }
        }
        text
    }

    fn start_followups(
        self: &Arc<Self>,
        st: &mut State,
        followups: Vec<(TaskOwner, Box<dyn Job>)>,
    ) {
        for (owner, job) in followups {
            self.start_task(st, owner, job);
        }
    }

    /// Apply a task's effect (or its injected failure) and end it.
    pub(super) fn complete(self: &Arc<Self>, st: &mut State, upid: &str) {
        let Some(task) = st.tasks.get_mut(upid) else {
            return;
        };
        if task.end.is_some() {
            return;
        }
        let Some(mut job) = self.jobs().remove(upid) else {
            return;
        };
        let mut log = std::mem::take(&mut task.log);
        let kind = task.upid.kind.clone();
        let vmid = task.vmid;
        let mut cx = JobCx {
            st,
            log: &mut log,
            faults: &self.faults,
            upid,
            followups: Vec::new(),
        };
        let injected = if job.handles_faults() {
            None
        } else {
            self.faults.take_task_failure(vmid, &kind)
        };
        let result = match injected {
            Some(msg) => {
                job.abort(&mut cx);
                Err(msg)
            }
            None => job.finish(&mut cx).inspect_err(|_| job.abort(&mut cx)),
        };
        let followups = if result.is_ok() {
            cx.followups
        } else {
            Vec::new()
        };
        if let Some(task) = st.tasks.get_mut(upid) {
            task.log = log;
            task.finish(result, now_unix());
        }
        self.start_followups(st, followups);
    }

    /// Kill a running task (`DELETE /nodes/{node}/tasks/{upid}`): its effect is not applied.
    pub(crate) fn interrupt(&self, st: &mut State, upid: &str) {
        let Some(task) = st.tasks.get_mut(upid) else {
            return;
        };
        if task.end.is_some() {
            return;
        }
        let job = self.jobs().remove(upid);
        let mut log = std::mem::take(&mut task.log);
        if let Some(mut job) = job {
            job.abort(&mut JobCx {
                st,
                log: &mut log,
                faults: &self.faults,
                upid,
                followups: Vec::new(),
            });
        }
        if let Some(task) = st.tasks.get_mut(upid) {
            task.log = log;
            task.finish(Err("received interrupt".into()), now_unix());
        }
    }

    /// The node running these tasks went down hard: its workers are gone without finishing
    /// or cleaning up (locks they set stay), as after a power loss.
    pub(crate) fn lose_tasks_of(&self, st: &mut State, node: &str) {
        let lost: Vec<String> = st
            .tasks
            .iter()
            .filter(|t| t.end.is_none() && t.upid.node == node)
            .map(|t| t.upid_text.clone())
            .collect();
        let now = now_unix();
        for upid in lost {
            self.jobs().remove(&upid);
            if let Some(task) = st.tasks.get_mut(&upid) {
                task.lost(now);
            }
        }
    }

    fn spawn_driver(self: &Arc<Self>, st: &mut State, upid: String, node: String) {
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(Arc::clone(self).drive(upid, node));
            }
            // Without a runtime nothing could drive the task later: finish it now.
            Err(_) => self.complete(st, &upid),
        }
    }

    async fn drive(self: Arc<Self>, upid: String, node: String) {
        let mut last = Instant::now();
        loop {
            let wait = {
                let st = self.state();
                match st.tasks.get(&upid) {
                    // Past its duration the task only waits for its job to be ready.
                    Some(t) if t.end.is_none() && t.remaining <= 0.0 => TICK,
                    Some(t) if t.end.is_none() => t.remaining.clamp(0.001, TICK),
                    _ => return,
                }
            };
            tokio::time::sleep(Duration::from_secs_f64(wait)).await;
            let now = Instant::now();
            let elapsed = now.duration_since(last).as_secs_f64();
            last = now;
            if self.faults.node_down(&node) {
                continue;
            }
            let mut st = self.state();
            let elapsed_all = match st.tasks.get_mut(&upid) {
                Some(t) if t.end.is_none() => {
                    t.remaining -= elapsed;
                    t.remaining <= 0.0
                }
                _ => return,
            };
            let done = elapsed_all && self.jobs().get(&upid).is_none_or(|job| job.ready(&st));
            if done {
                self.complete(&mut st, &upid);
                return;
            }
        }
    }

    /// Wait up to `max` for a task to end.
    pub(crate) async fn wait_task(&self, upid: &str, max: Duration) -> Option<TaskEnd> {
        let deadline = Instant::now() + max;
        loop {
            {
                let st = self.state();
                match st.tasks.get(upid) {
                    Some(t) if t.end.is_some() => return t.end.clone(),
                    Some(_) => {}
                    None => return None,
                }
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            tokio::time::sleep((deadline - now).min(Duration::from_millis(10))).await;
        }
    }
}
