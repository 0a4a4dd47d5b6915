//! Power state: `GET .../status/current` and the `POST .../status/<action>` tasks (`qmstart`,
//! `qmstop`, `qmshutdown`, `qmreboot`, `qmreset`, `qmpause`/`qmsuspend`, `qmresume`).
//!
//! Stop and shutdown of an already stopped VM end `TASK OK`; most state errors surface only in
//! the task (NOTES §7), so callers wait for the task.

use crate::calls::paths::vm_path;
use crate::client::Client;
use crate::error::PveError;
use crate::props::check_storage;
use crate::props::kv::invalid;
use crate::request::{ApiRequest, Method};
use crate::types::VmStatus;
use crate::upid::Upid;

/// Start parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StartOptions {
    /// Seconds to wait for QEMU to come up (default `max(30, memory GiB)`).
    pub timeout: Option<u32>,
    /// Ignore the config lock (root@pam only).
    pub skiplock: Option<bool>,
}

/// Hard stop parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StopOptions {
    /// Seconds to wait.
    pub timeout: Option<u32>,
    /// Abort a running shutdown task and stop instead.
    pub overrule_shutdown: Option<bool>,
    /// Keep storage volumes active (root@pam only).
    pub keep_active: Option<bool>,
    /// Ignore the config lock (root@pam only).
    pub skiplock: Option<bool>,
}

/// Clean shutdown parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShutdownOptions {
    /// Seconds to wait (default 60 or the `startup` down value).
    pub timeout: Option<u32>,
    /// Stop hard if the guest does not shut down in time.
    pub force_stop: Option<bool>,
    /// Keep storage volumes active (root@pam only).
    pub keep_active: Option<bool>,
    /// Ignore the config lock (root@pam only).
    pub skiplock: Option<bool>,
}

/// Reboot parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RebootOptions {
    /// Seconds to wait for the shutdown part.
    pub timeout: Option<u32>,
}

/// Reset parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResetOptions {
    /// Ignore the config lock (root@pam only).
    pub skiplock: Option<bool>,
}

/// Suspend parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SuspendOptions {
    /// Hibernate: save RAM to disk and stop (default: pause in RAM).
    pub todisk: Option<bool>,
    /// Storage for the RAM state (only with `todisk`).
    pub statestorage: Option<String>,
    /// Ignore the config lock (root@pam only).
    pub skiplock: Option<bool>,
}

/// Resume parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResumeOptions {
    /// Ignore the config lock (root@pam only).
    pub skiplock: Option<bool>,
}

fn action(node: &str, vmid: u32, action: &str) -> Result<ApiRequest, PveError> {
    Ok(ApiRequest::new(
        Method::Post,
        vm_path(node, vmid, &format!("/status/{action}"))?,
    ))
}

/// `GET /nodes/{node}/qemu/{vmid}/status/current`.
pub fn vm_status_request(node: &str, vmid: u32) -> Result<ApiRequest, PveError> {
    Ok(ApiRequest::new(
        Method::Get,
        vm_path(node, vmid, "/status/current")?,
    ))
}

/// `POST .../status/start`.
pub fn vm_start_request(
    node: &str,
    vmid: u32,
    opts: &StartOptions,
) -> Result<ApiRequest, PveError> {
    Ok(action(node, vmid, "start")?
        .opt("timeout", opts.timeout)
        .flag("skiplock", opts.skiplock))
}

/// `POST .../status/stop`.
pub fn vm_stop_request(node: &str, vmid: u32, opts: &StopOptions) -> Result<ApiRequest, PveError> {
    Ok(action(node, vmid, "stop")?
        .opt("timeout", opts.timeout)
        .flag("overrule-shutdown", opts.overrule_shutdown)
        .flag("keepActive", opts.keep_active)
        .flag("skiplock", opts.skiplock))
}

/// `POST .../status/shutdown`.
pub fn vm_shutdown_request(
    node: &str,
    vmid: u32,
    opts: &ShutdownOptions,
) -> Result<ApiRequest, PveError> {
    Ok(action(node, vmid, "shutdown")?
        .opt("timeout", opts.timeout)
        .flag("forceStop", opts.force_stop)
        .flag("keepActive", opts.keep_active)
        .flag("skiplock", opts.skiplock))
}

/// `POST .../status/reboot`.
pub fn vm_reboot_request(
    node: &str,
    vmid: u32,
    opts: &RebootOptions,
) -> Result<ApiRequest, PveError> {
    Ok(action(node, vmid, "reboot")?.opt("timeout", opts.timeout))
}

/// `POST .../status/reset`.
pub fn vm_reset_request(
    node: &str,
    vmid: u32,
    opts: &ResetOptions,
) -> Result<ApiRequest, PveError> {
    Ok(action(node, vmid, "reset")?.flag("skiplock", opts.skiplock))
}

/// `POST .../status/suspend`.
pub fn vm_suspend_request(
    node: &str,
    vmid: u32,
    opts: &SuspendOptions,
) -> Result<ApiRequest, PveError> {
    if let Some(s) = &opts.statestorage {
        if opts.todisk != Some(true) {
            return Err(invalid("statestorage", "requires todisk"));
        }
        check_storage("statestorage", s)?;
    }
    Ok(action(node, vmid, "suspend")?
        .flag("todisk", opts.todisk)
        .opt("statestorage", opts.statestorage.as_deref())
        .flag("skiplock", opts.skiplock))
}

/// `POST .../status/resume`.
pub fn vm_resume_request(
    node: &str,
    vmid: u32,
    opts: &ResumeOptions,
) -> Result<ApiRequest, PveError> {
    Ok(action(node, vmid, "resume")?.flag("skiplock", opts.skiplock))
}

impl Client {
    /// Live status of a VM.
    pub async fn vm_status(&self, node: &str, vmid: u32) -> Result<VmStatus, PveError> {
        self.fetch(&vm_status_request(node, vmid)?).await
    }

    /// Start a VM (`qmstart` task).
    pub async fn vm_start(
        &self,
        node: &str,
        vmid: u32,
        opts: &StartOptions,
    ) -> Result<Upid, PveError> {
        self.start_task(&vm_start_request(node, vmid, opts)?).await
    }

    /// Stop a VM hard (`qmstop` task).
    pub async fn vm_stop(
        &self,
        node: &str,
        vmid: u32,
        opts: &StopOptions,
    ) -> Result<Upid, PveError> {
        self.start_task(&vm_stop_request(node, vmid, opts)?).await
    }

    /// Shut a VM down through ACPI or the agent (`qmshutdown` task).
    pub async fn vm_shutdown(
        &self,
        node: &str,
        vmid: u32,
        opts: &ShutdownOptions,
    ) -> Result<Upid, PveError> {
        self.start_task(&vm_shutdown_request(node, vmid, opts)?)
            .await
    }

    /// Reboot a running VM (`qmreboot` task).
    pub async fn vm_reboot(
        &self,
        node: &str,
        vmid: u32,
        opts: &RebootOptions,
    ) -> Result<Upid, PveError> {
        self.start_task(&vm_reboot_request(node, vmid, opts)?).await
    }

    /// Reset a running VM (`qmreset` task).
    pub async fn vm_reset(
        &self,
        node: &str,
        vmid: u32,
        opts: &ResetOptions,
    ) -> Result<Upid, PveError> {
        self.start_task(&vm_reset_request(node, vmid, opts)?).await
    }

    /// Pause a VM in RAM or hibernate it (`qmpause` / `qmsuspend` task).
    pub async fn vm_suspend(
        &self,
        node: &str,
        vmid: u32,
        opts: &SuspendOptions,
    ) -> Result<Upid, PveError> {
        self.start_task(&vm_suspend_request(node, vmid, opts)?)
            .await
    }

    /// Resume a paused VM (`qmresume` task).
    pub async fn vm_resume(
        &self,
        node: &str,
        vmid: u32,
        opts: &ResumeOptions,
    ) -> Result<Upid, PveError> {
        self.start_task(&vm_resume_request(node, vmid, opts)?).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(r: &ApiRequest) -> Vec<(&str, &str)> {
        r.params
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }

    #[test]
    fn actions_post_to_status_paths_with_exact_params() {
        let start = vm_start_request(
            "pve1",
            100,
            &StartOptions {
                timeout: Some(60),
                skiplock: Some(true),
            },
        )
        .unwrap();
        assert_eq!(
            (start.method, start.path.as_str()),
            (Method::Post, "/nodes/pve1/qemu/100/status/start")
        );
        assert_eq!(pairs(&start), [("timeout", "60"), ("skiplock", "1")]);
        let stop = vm_stop_request(
            "pve1",
            100,
            &StopOptions {
                timeout: Some(5),
                overrule_shutdown: Some(true),
                keep_active: Some(false),
                skiplock: None,
            },
        )
        .unwrap();
        assert_eq!(
            pairs(&stop),
            [
                ("timeout", "5"),
                ("overrule-shutdown", "1"),
                ("keepActive", "0")
            ]
        );
        let sd = vm_shutdown_request(
            "pve1",
            100,
            &ShutdownOptions {
                timeout: Some(30),
                force_stop: Some(true),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(pairs(&sd), [("timeout", "30"), ("forceStop", "1")]);
        assert_eq!(
            pairs(&vm_reboot_request("pve1", 100, &RebootOptions { timeout: Some(9) }).unwrap()),
            [("timeout", "9")]
        );
        assert_eq!(
            vm_reset_request("pve1", 100, &ResetOptions::default())
                .unwrap()
                .path,
            "/nodes/pve1/qemu/100/status/reset"
        );
        assert_eq!(
            vm_resume_request("pve1", 100, &ResumeOptions::default())
                .unwrap()
                .path,
            "/nodes/pve1/qemu/100/status/resume"
        );
        assert_eq!(vm_status_request("pve1", 100).unwrap().method, Method::Get);
    }

    #[test]
    fn suspend_statestorage_needs_todisk() {
        let ok = SuspendOptions {
            todisk: Some(true),
            statestorage: Some("local-lvm".into()),
            skiplock: None,
        };
        assert_eq!(
            pairs(&vm_suspend_request("pve1", 100, &ok).unwrap()),
            [("todisk", "1"), ("statestorage", "local-lvm")]
        );
        let bad = SuspendOptions {
            todisk: None,
            ..ok.clone()
        };
        let e = vm_suspend_request("pve1", 100, &bad).unwrap_err();
        assert!(matches!(e, PveError::Invalid { ref field, .. } if field == "statestorage"));
        let bad = SuspendOptions {
            statestorage: Some("x y".into()),
            ..ok
        };
        assert!(vm_suspend_request("pve1", 100, &bad).is_err());
    }

    #[test]
    fn invalid_vmid_is_refused_before_sending() {
        let e = vm_start_request("pve1", 5, &StartOptions::default()).unwrap_err();
        assert!(matches!(e, PveError::Invalid { ref field, .. } if field == "vmid"));
    }
}
