//! `status/start|stop|shutdown|reboot|reset|suspend|resume`: the few checks PVE makes before
//! forking (`VM 100 not running`, `VM is paused - cannot shutdown`, root-only options) and the
//! worker's checks and effects (`VM is locked (x)`, `VM 100 already running`, stop of a stopped
//! VM is `TASK OK`).

use std::sync::Arc;
use std::time::Instant;

use super::start_job::StartJob;
use crate::cluster::clock::{log_stamp, now_unix};
use crate::cluster::config::update::apply_all_pending;
use crate::cluster::inner::Inner;
use crate::cluster::power::{mark_running, mark_stopped};
use crate::cluster::request::{check_quorum, node, root_only, truthy, upid_reply, vmid};
use crate::cluster::tasks::job::{Job, JobCx, TaskOwner};
use crate::cluster::vm::{check_lock, conf_not_found, memory_mib};
use crate::{ApiError, Caller, Params, Reply};

fn owner(node: &str, kind: &'static str, vmid: u32, caller: &Caller) -> TaskOwner {
    TaskOwner {
        node: node.to_string(),
        kind,
        vmid,
        user: caller.upid_user(),
    }
}

/// `check_running`: the VM must have its config on this node; whether it runs.
fn check_running(cx: &Inner, node: &str, vmid: u32) -> Result<bool, ApiError> {
    let st = cx.state();
    let vm = st
        .vm_on(node, vmid)
        .ok_or_else(|| ApiError::internal(conf_not_found(node, vmid)))?;
    Ok(vm.run.running)
}

fn paused(cx: &Inner, node: &str, vmid: u32) -> bool {
    cx.state()
        .vm_on(node, vmid)
        .is_some_and(|vm| vm.run.running && vm.run.paused)
}

/// `POST .../status/start`.
pub(crate) fn start(cx: &Arc<Inner>, p: &Params, caller: &Caller) -> Result<Reply, ApiError> {
    let node = node(p)?;
    let vmid = vmid(p)?;
    root_only(
        p,
        caller,
        &[
            "stateuri",
            "skiplock",
            "migratedfrom",
            "migration_type",
            "migration_network",
            "targetstorage",
            "force-cpu",
            "with-conntrack-state",
            "nets-host-mtu",
        ],
    )?;
    if truthy(p, "targetstorage") && !truthy(p, "migratedfrom") {
        return Err(ApiError::param(
            "targetstorage",
            "targetstorage can only by used with migratedfrom.",
        ));
    }
    let job = StartJob {
        node: node.to_string(),
        vmid,
        skiplock: p.flag("skiplock", false),
    };
    let mut st = cx.state();
    check_quorum(&st, &cx.faults)?;
    Ok(upid_reply(cx.start_task(
        &mut st,
        owner(node, "qmstart", vmid, caller),
        Box::new(job),
    )))
}

/// How a VM goes down.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Halt {
    Stop,
    Shutdown,
}

/// Seconds a guest needs to power down after the ACPI request.
const GUEST_SHUTDOWN_SECS: f64 = 3.0;

struct HaltJob {
    node: String,
    vmid: u32,
    skiplock: bool,
    how: Halt,
    /// Shutdown: the `timeout` parameter.
    timeout: Option<f64>,
    /// Decided at begin: the timeout is shorter than the guest needs.
    times_out: bool,
    /// Shutdown: `forceStop` escalates a timeout to a stop.
    force: bool,
}

impl Job for HaltJob {
    fn begin(&mut self, cx: &mut JobCx<'_>) -> Result<f64, String> {
        let vm = cx
            .st
            .vm_on(&self.node, self.vmid)
            .ok_or_else(|| conf_not_found(&self.node, self.vmid))?;
        if !self.skiplock {
            check_lock(&vm.conf)?;
        }
        if !vm.run.running {
            return Ok(0.0);
        }
        Ok(match (self.how, self.timeout) {
            (Halt::Stop, _) => 1.0,
            (Halt::Shutdown, Some(t)) if t < GUEST_SHUTDOWN_SECS => {
                self.times_out = true;
                t
            }
            (Halt::Shutdown, _) => GUEST_SHUTDOWN_SECS,
        })
    }

    fn finish(&mut self, cx: &mut JobCx<'_>) -> Result<(), String> {
        cx.st.load_mut(&self.node, self.vmid)?;
        if self.times_out {
            if !self.force {
                return Err("VM quit/powerdown failed - got timeout".into());
            }
            cx.log
                .line("VM quit/powerdown failed - terminating now with SIGTERM");
        }
        mark_stopped(cx.st, self.vmid);
        Ok(())
    }
}

/// `POST .../status/stop`.
pub(crate) fn stop(cx: &Arc<Inner>, p: &Params, caller: &Caller) -> Result<Reply, ApiError> {
    let node = node(p)?;
    let vmid = vmid(p)?;
    root_only(p, caller, &["skiplock", "keepActive", "migratedfrom"])?;
    let mut st = cx.state();
    let job = HaltJob {
        node: node.to_string(),
        vmid,
        skiplock: p.flag("skiplock", false),
        how: Halt::Stop,
        timeout: None,
        times_out: false,
        force: true,
    };
    let overrule = p.flag("overrule-shutdown", false);
    let upid = cx.start_task(&mut st, owner(node, "qmstop", vmid, caller), Box::new(job));
    if overrule {
        let victims: Vec<String> = st
            .tasks
            .iter()
            .filter(|t| {
                t.end.is_none()
                    && t.upid.kind == "qmshutdown"
                    && t.vmid == Some(vmid)
                    && t.upid.node == node
            })
            .map(|t| t.upid_text.clone())
            .collect();
        for v in &victims {
            cx.interrupt(&mut st, v);
        }
        if let (false, Some(t)) = (victims.is_empty(), st.tasks.get_mut(&upid)) {
            t.log.lines.insert(
                0,
                format!("overruled qmshutdown tasks: {}", victims.join(", ")),
            );
        }
    }
    Ok(upid_reply(upid))
}

/// `POST .../status/shutdown`.
pub(crate) fn shutdown(cx: &Arc<Inner>, p: &Params, caller: &Caller) -> Result<Reply, ApiError> {
    let node = node(p)?;
    let vmid = vmid(p)?;
    root_only(p, caller, &["skiplock", "keepActive"])?;
    let mut how = Halt::Shutdown;
    if paused(cx, node, vmid) {
        if p.flag("forceStop", false) {
            how = Halt::Stop;
        } else {
            return Err(ApiError::internal("VM is paused - cannot shutdown"));
        }
    }
    let job = HaltJob {
        node: node.to_string(),
        vmid,
        skiplock: p.flag("skiplock", false),
        how,
        timeout: p.int("timeout").map(|t| t as f64),
        times_out: false,
        force: p.flag("forceStop", false),
    };
    let mut st = cx.state();
    Ok(upid_reply(cx.start_task(
        &mut st,
        owner(node, "qmshutdown", vmid, caller),
        Box::new(job),
    )))
}

/// Reboot, reset, pause, resume: a running VM changes state in place.
#[derive(Clone, Copy, PartialEq, Eq)]
enum InPlace {
    Reboot,
    Reset,
    Pause,
    Resume,
}

struct InPlaceJob {
    node: String,
    vmid: u32,
    skiplock: bool,
    what: InPlace,
}

impl Job for InPlaceJob {
    fn begin(&mut self, cx: &mut JobCx<'_>) -> Result<f64, String> {
        let vm = cx.st.load_mut(&self.node, self.vmid)?;
        if !self.skiplock {
            check_lock(&vm.conf)?;
        }
        if !vm.run.running {
            // vm_reboot returns quietly when the VM stopped meanwhile.
            if self.what == InPlace::Reboot {
                return Ok(0.0);
            }
            return Err(format!("VM {} not running", self.vmid));
        }
        Ok(match self.what {
            InPlace::Reboot => 4.0,
            InPlace::Reset | InPlace::Pause | InPlace::Resume => 0.5,
        })
    }

    fn finish(&mut self, cx: &mut JobCx<'_>) -> Result<(), String> {
        let vmid = self.vmid;
        let vm = cx.st.load_mut(&self.node, vmid)?;
        if !vm.run.running {
            if self.what == InPlace::Reboot {
                return Ok(());
            }
            return Err(format!("VM {vmid} not running"));
        }
        match self.what {
            InPlace::Reboot => {
                apply_all_pending(cx.st, &self.node, vmid);
                mark_running(cx.st, &self.node, vmid);
            }
            InPlace::Reset => {
                if let Some(vm) = cx.st.vms.get_mut(&vmid) {
                    vm.run.guest_booted = Some(Instant::now());
                    vm.run.paused = false;
                }
            }
            InPlace::Pause => vm.run.paused = true,
            InPlace::Resume => vm.run.paused = false,
        }
        Ok(())
    }
}

fn in_place(
    cx: &Arc<Inner>,
    p: &Params,
    caller: &Caller,
    what: InPlace,
    kind: &'static str,
) -> Result<Reply, ApiError> {
    let node = node(p)?;
    let vmid = vmid(p)?;
    let job = InPlaceJob {
        node: node.to_string(),
        vmid,
        skiplock: p.flag("skiplock", false),
        what,
    };
    let mut st = cx.state();
    Ok(upid_reply(cx.start_task(
        &mut st,
        owner(node, kind, vmid, caller),
        Box::new(job),
    )))
}

/// `POST .../status/reboot`.
pub(crate) fn reboot(cx: &Arc<Inner>, p: &Params, caller: &Caller) -> Result<Reply, ApiError> {
    let (node, vmid) = (node(p)?, vmid(p)?);
    if paused(cx, node, vmid) {
        return Err(ApiError::internal("VM is paused - cannot shutdown"));
    }
    if !check_running(cx, node, vmid)? {
        return Err(ApiError::internal(format!("VM {vmid} not running")));
    }
    in_place(cx, p, caller, InPlace::Reboot, "qmreboot")
}

/// `POST .../status/reset`.
pub(crate) fn reset(cx: &Arc<Inner>, p: &Params, caller: &Caller) -> Result<Reply, ApiError> {
    let (node, vmid) = (node(p)?, vmid(p)?);
    root_only(p, caller, &["skiplock"])?;
    if !check_running(cx, node, vmid)? {
        return Err(ApiError::internal(format!("VM {vmid} not running")));
    }
    in_place(cx, p, caller, InPlace::Reset, "qmreset")
}

/// Suspend to disk: `suspending` lock, then the state is saved and the VM stops `suspended`.
struct SuspendToDiskJob {
    node: String,
    vmid: u32,
    skiplock: bool,
    storage: Option<String>,
}

impl Job for SuspendToDiskJob {
    fn begin(&mut self, cx: &mut JobCx<'_>) -> Result<f64, String> {
        let vm = cx.st.load_mut(&self.node, self.vmid)?;
        if !self.skiplock {
            check_lock(&vm.conf)?;
        }
        if !vm.run.running {
            return Err(format!("VM {} not running", self.vmid));
        }
        vm.conf.set("lock", "suspending");
        Ok(2.0)
    }

    fn finish(&mut self, cx: &mut JobCx<'_>) -> Result<(), String> {
        let (node, vmid) = (self.node.clone(), self.vmid);
        let vm = cx.st.load_mut(&node, vmid)?;
        let mem = memory_mib(&vm.conf) << 20;
        let storage = match &self.storage {
            Some(s) => s.clone(),
            None => super::snapshot::vmstate_storage(cx.st, &node, vmid),
        };
        let name = format!(
            "vm-{vmid}-state-suspend-{}",
            log_stamp(now_unix()).replace([' ', ':'], "-")
        );
        let volid = cx.st.storages.alloc(
            &storage,
            &node,
            vmid,
            Some(&name),
            Some("raw"),
            mem,
            now_unix(),
        )?;
        cx.log
            .line(format!("suspend to disk: saving VM state to '{volid}'"));
        if let Some(vm) = cx.st.vms.get_mut(&vmid) {
            vm.conf.set("vmstate", volid);
            vm.conf.set("runningmachine", "pc-i440fx-9.2+pve1");
            vm.conf.set("lock", "suspended");
        }
        mark_stopped(cx.st, vmid);
        Ok(())
    }

    fn abort(&mut self, cx: &mut JobCx<'_>) {
        if let Some(vm) = cx.st.vm_on_mut(&self.node, self.vmid)
            && vm.conf.lock() == Some("suspending")
        {
            vm.conf.remove("lock");
        }
    }
}

/// `POST .../status/suspend` (`qmpause`, or `qmsuspend` with `todisk`).
pub(crate) fn suspend(cx: &Arc<Inner>, p: &Params, caller: &Caller) -> Result<Reply, ApiError> {
    let (node, vmid) = (node(p)?, vmid(p)?);
    root_only(p, caller, &["skiplock"])?;
    if !check_running(cx, node, vmid)? {
        return Err(ApiError::internal(format!("VM {vmid} not running")));
    }
    if !p.flag("todisk", false) {
        return in_place(cx, p, caller, InPlace::Pause, "qmpause");
    }
    let mut st = cx.state();
    if let Some(s) = p.get("statestorage") {
        st.storages
            .check_enabled(s, node)
            .map_err(ApiError::internal)?;
    }
    let job = SuspendToDiskJob {
        node: node.to_string(),
        vmid,
        skiplock: p.flag("skiplock", false),
        storage: p.get("statestorage").map(str::to_string),
    };
    Ok(upid_reply(cx.start_task(
        &mut st,
        owner(node, "qmsuspend", vmid, caller),
        Box::new(job),
    )))
}

/// `POST .../status/resume`: resumes a paused VM, or starts one suspended to disk.
pub(crate) fn resume(cx: &Arc<Inner>, p: &Params, caller: &Caller) -> Result<Reply, ApiError> {
    let (node, vmid) = (node(p)?, vmid(p)?);
    root_only(p, caller, &["skiplock", "nocheck"])?;
    let suspended = cx
        .state()
        .vm_on(node, vmid)
        .is_some_and(|vm| vm.conf.lock() == Some("suspended"));
    if !suspended && !check_running(cx, node, vmid)? {
        return Err(ApiError::internal(format!("VM {vmid} not running")));
    }
    if !suspended {
        return in_place(cx, p, caller, InPlace::Resume, "qmresume");
    }
    let job = StartJob {
        node: node.to_string(),
        vmid,
        skiplock: p.flag("skiplock", false),
    };
    let mut st = cx.state();
    Ok(upid_reply(cx.start_task(
        &mut st,
        owner(node, "qmresume", vmid, caller),
        Box::new(job),
    )))
}
