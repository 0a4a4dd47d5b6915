//! The work of a remote migration's `qmigrate` task: the conversation with the target cluster,
//! as `PVE::AbstractMigrate::migrate` drives `PVE::QemuMigrate` for a remote target (the
//! phases themselves are `phases.rs`), its tunnel commands, its log and what it
//! does to the source VM on the way. It runs on the tokio runtime; the task ends when it is
//! over (`Job::ready`).
//!
//! ```text
//!  prepare   POST mtunnel (storages, bridges) ─▶ `remote: started tunnel worker 'UPID:..'`
//!            version ─▶ `local WS tunnel version: 2` ...     (failure: migration aborted)
//!  phase 1   `starting migration of VM ..`, lock: migrate, scan volumes (`found local disk ..`)
//!            disk (copied volumes) ─▶ `copying local disk images`, `volume 'a' is 'b' on the target`
//!            `mapped: net0 from vmbr0 to vmbr1`, disk (mirrored volumes), config
//!            (failure: `aborting phase 1 - cleanup resources`, unlock, quit cleanup=1, aborted)
//!  phase 2   start (VM paused on the target) ─▶ storage mirror ─▶ [task fault] ─▶ live migration
//!  (running) `migration status: completed`
//!            (failure: `ERROR: online migrate failure - ..`, `aborting phase 2 - cleanup
//!             resources`, `migrate_cancel`, unlock, stop, quit cleanup=1, finished with problems)
//!  phase 3   nbdstop, resume ─▶ source VM stopped ─▶ unlock ─▶ quit ─▶ with `delete`: source
//!            destroyed (config and volumes), else it stays stopped with `lock: migrate`
//! ```
//!
//! The injected task fault of `qmigrate` for the VM is consulted once, after the disks were
//! copied and before the switchover (the end of phase 1 for a stopped VM). An interrupt before
//! phase 3 stops the conversation and, best effort, stops and cleans up the target; a source
//! node that loses the task stops it without cleaning up (the target keeps a locked config, as
//! PVE's does when the migrating host dies).

use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::client::{RemoteClient, RemoteError};
use super::plan::{Phase, Plan, Progress};
use crate::cluster::clock::{hms, log_stamp, now_unix};
use crate::cluster::inner::Inner;
use crate::cluster::state::State;

/// The longest real pause between two commands: the target counts a silent source as gone.
const MAX_PAUSE: Duration = Duration::from_secs(20);

/// The conversation stopped early (interrupt, or its task is gone).
pub(super) struct Cancelled;

pub(super) type Step<T> = Result<T, Cancelled>;

/// The open tunnel: ticket and socket.
pub(super) struct OpenTunnel {
    pub(super) ticket: String,
    pub(super) socket: String,
}

/// One migration's worker.
pub(crate) struct Conversation {
    pub(super) inner: Weak<Inner>,
    pub(super) upid: String,
    pub(super) plan: Plan,
    pub(super) client: RemoteClient,
    pub(super) progress: Arc<Mutex<Progress>>,
    pub(super) cancel: CancellationToken,
    pub(super) started: i64,
    pub(super) tunnel: Option<OpenTunnel>,
    /// The target started the VM (`start` succeeded).
    pub(super) target_started: bool,
}

impl Conversation {
    /// A conversation for `plan` over `client`, reporting to `progress`.
    pub(crate) fn new(
        inner: Weak<Inner>,
        plan: Plan,
        client: RemoteClient,
        progress: Arc<Mutex<Progress>>,
        cancel: CancellationToken,
    ) -> Self {
        Self {
            inner,
            upid: String::new(),
            plan,
            client,
            progress,
            cancel,
            started: now_unix(),
            tunnel: None,
            target_started: false,
        }
    }

    /// The task whose log it writes.
    pub(super) fn set_upid(&mut self, upid: &str) {
        self.upid = upid.to_string();
    }

    /// Run to the end and leave the task's result in the progress.
    pub(super) async fn run(mut self) {
        let outcome = match self.migrate().await {
            Ok(result) => result,
            Err(Cancelled) => {
                self.after_cancel().await;
                Err("received interrupt".into())
            }
        };
        self.progress().outcome = Some(outcome);
    }

    pub(super) fn progress(&self) -> MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Run `f` on the source cluster's state (`None`: the simulator is gone).
    pub(super) fn with_source<R>(&self, f: impl FnOnce(&mut State) -> R) -> Option<R> {
        let inner = self.inner.upgrade()?;
        let mut st = inner.state();
        Some(f(&mut st))
    }

    /// Append to the task log while the task runs.
    pub(super) fn push(&self, lines: impl IntoIterator<Item = String>) {
        let upid = self.upid.clone();
        self.with_source(|st| {
            if let Some(task) = st.tasks.get_mut(&upid).filter(|t| t.end.is_none()) {
                task.log.lines.extend(lines);
            }
        });
    }

    /// `$self->log('info', ..)`: every line stamped.
    pub(super) fn info(&self, msg: impl AsRef<str>) {
        let stamp = log_stamp(now_unix());
        self.push(msg.as_ref().lines().map(|l| format!("{stamp} {l}")));
    }

    /// `$self->log('err', ..)`.
    pub(super) fn error(&self, msg: impl AsRef<str>) {
        let stamp = log_stamp(now_unix());
        self.push(msg.as_ref().lines().map(|l| format!("{stamp} ERROR: {l}")));
    }

    /// A plain `print` of the worker.
    pub(super) fn print(&self, msg: impl Into<String>) {
        self.push([msg.into()]);
    }

    pub(super) fn duration(&self) -> String {
        hms(now_unix() - self.started)
    }

    /// `migration aborted (duration ..): <err>` → `TASK ERROR: migration aborted`.
    pub(super) fn aborted(&self, err: &str) -> Result<(), String> {
        self.error(format!(
            "migration aborted (duration {}): {err}",
            self.duration()
        ));
        Err("migration aborted".into())
    }

    /// Await `fut` unless the conversation is cancelled; while the source node does not
    /// answer, its worker makes no progress.
    pub(super) async fn step<T>(&self, fut: impl Future<Output = T>) -> Step<T> {
        loop {
            let down = self
                .inner
                .upgrade()
                .is_some_and(|i| i.faults.node_down(&self.plan.node));
            if !down {
                break;
            }
            tokio::select! {
                _ = self.cancel.cancelled() => return Err(Cancelled),
                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
        }
        tokio::select! {
            _ = self.cancel.cancelled() => Err(Cancelled),
            out = fut => Ok(out),
        }
    }

    /// Simulated work of `secs` (scaled, capped).
    pub(super) async fn work(&self, secs: f64) -> Step<()> {
        let scale = self.inner.upgrade().map_or(0.0, |i| i.time_scale);
        let real = secs * scale;
        if !(real.is_finite() && real > 0.0) {
            return Ok(());
        }
        let pause = Duration::from_secs_f64(real).min(MAX_PAUSE);
        self.step(tokio::time::sleep(pause)).await
    }

    /// `write_tunnel`: one command, its reply or PVE's error text.
    pub(super) async fn send(
        &self,
        cmd: &str,
        params: Map<String, Value>,
    ) -> Result<Value, String> {
        let Some(tunnel) = &self.tunnel else {
            return Err("no tunnel".into());
        };
        let mut object = params;
        object.insert("cmd".into(), json!(cmd));
        let command = Value::Object(object);
        let text = command.to_string();
        let reply = self
            .client
            .tunnel(
                &self.plan.target_node,
                self.plan.target_vmid,
                &tunnel.ticket,
                &tunnel.socket,
                &command,
            )
            .await
            .map_err(|e| {
                let why = match e {
                    RemoteError::Timeout => "got timeout".to_string(),
                    other => other.to_string(),
                };
                format!("no reply to command '{text}': reading from tunnel failed: {why}")
            })?;
        if reply.get("success").and_then(Value::as_bool) == Some(true) {
            return Ok(reply);
        }
        Err(match reply.get("msg").and_then(Value::as_str) {
            Some(msg) => format!(
                "error - tunnel command '{text}' failed - {}",
                msg.trim_end()
            ),
            None => format!("error - tunnel command '{text}' failed"),
        })
    }

    /// A command as a cancellable step.
    pub(super) async fn command(
        &self,
        cmd: &str,
        params: Map<String, Value>,
    ) -> Step<Result<Value, String>> {
        self.step(self.send(cmd, params)).await
    }

    /// `finish_tunnel`: `quit`, with or without cleanup.
    pub(super) async fn finish_tunnel(&mut self, cleanup: bool) -> Step<Result<(), String>> {
        let mut params = Map::new();
        params.insert("cleanup".into(), json!(u8::from(cleanup)));
        let result = self.command("quit", params).await?;
        self.tunnel = None;
        Ok(result.map(|_| ()))
    }

    /// Drop the `lock: migrate` this migration set on the source VM.
    pub(super) fn unlock_source(&self) {
        let (node, vmid) = (self.plan.node.clone(), self.plan.vmid);
        let mut progress = self.progress();
        if !progress.locked {
            return;
        }
        progress.locked = false;
        drop(progress);
        self.with_source(|st| {
            if let Some(vm) = st.vm_on_mut(&node, vmid)
                && vm.conf.lock() == Some("migrate")
            {
                vm.conf.remove("lock");
            }
        });
    }

    /// After an interrupt: stop and clean up the target, best effort, quietly.
    pub(super) async fn after_cancel(&mut self) {
        let cleanup = self.progress().cleanup_on_cancel;
        if !cleanup || self.tunnel.is_none() {
            return;
        }
        if self.target_started {
            let _ = self.send("stop", Map::new()).await;
        }
        let mut params = Map::new();
        params.insert("cleanup".into(), json!(1));
        let _ = self.send("quit", params).await;
    }

    async fn migrate(&mut self) -> Step<Result<(), String>> {
        if let Err(e) = self.prepare().await? {
            return Ok(self.aborted(&e));
        }
        self.progress().phase = Phase::Migrating;
        let phase1 = match self.phase1().await? {
            Ok(p) => p,
            Err(e) => {
                self.error(&e);
                self.info("aborting phase 1 - cleanup resources");
                self.unlock_source();
                if let Err(cleanup) = self.finish_tunnel(true).await? {
                    self.error(cleanup);
                }
                return Ok(self.aborted(&e));
            }
        };
        if phase1.running
            && let Err(e) = self.phase2(&phase1).await?
        {
            self.error(format!("online migrate failure - {e}"));
            self.info("aborting phase 2 - cleanup resources");
            self.info("migrate_cancel");
            self.unlock_source();
            match self.command("stop", Map::new()).await? {
                Err(stop) => self.error(stop),
                Ok(_) => {
                    if let Err(cleanup) = self.finish_tunnel(true).await? {
                        self.error(cleanup);
                    }
                }
            }
            return Ok(self.problems());
        }
        self.progress().phase = Phase::Finishing;
        if self.phase3(&phase1).await? {
            Ok(self.problems())
        } else {
            self.info(format!(
                "migration finished successfully (duration {})",
                self.duration()
            ));
            Ok(Ok(()))
        }
    }

    /// `migration finished with problems` → `TASK ERROR: migration problems`.
    pub(super) fn problems(&self) -> Result<(), String> {
        self.error(format!(
            "migration finished with problems (duration {})",
            self.duration()
        ));
        Err("migration problems".into())
    }
}
