//! What `run` serves with, resolved in one place from its flags, the configuration file and
//! what `init`/`join` recorded in the data directory (ripgrep's `HiArgs::from_low_args`):
//! a flag wins over the file, the file over the record, the record over the default. A bad
//! value is refused with the place it came from, so the operator knows what to change.

use std::net::SocketAddr;
use std::time::Duration;

use super::args::RunFlags;
use crate::config::file::{LEASE_SECS_RANGE, http_address};
use crate::config::{ControlConfig, CoordinatorConfig, RunConfig};
use crate::dashboard::{DEFAULT_SCENARIO_DIR, DEFAULT_SESSION, DashboardCert, DashboardConfig};

/// A value `run` cannot serve with, and where it came from.
#[derive(Debug, thiserror::Error)]
#[error("{source_of_value}: {reason}")]
pub struct SettingsError {
    /// `--lease-secs 90`, or `lease_secs in /etc/pvefleet/coordinator.toml`.
    pub source_of_value: String,
    /// What is wrong and what is allowed.
    pub reason: String,
}

/// The member's settings and its control plane's.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// Where it serves from and what it serves.
    pub config: RunConfig,
    /// The leader's control plane.
    pub control: ControlConfig,
}

/// The configuration file as `run` sees it: its values and the name to show for it.
#[derive(Debug, Clone, Copy)]
pub struct FileInForce<'a> {
    /// Its values (the defaults when there is none).
    pub file: &'a CoordinatorConfig,
    /// Its path as messages name it.
    pub shown: &'a str,
}

impl RunSettings {
    /// Resolves `run`'s settings: each from its flag, else the file, else `recorded_http` (the
    /// HTTP address `init` recorded, for `http` only), else the default; then checks the
    /// control plane's values against each other and names where a bad one came from.
    ///
    /// # Errors
    /// [`SettingsError`] naming the flag or the file's field.
    pub fn resolve(
        flags: &RunFlags,
        at: FileInForce<'_>,
        recorded_http: Option<SocketAddr>,
    ) -> Result<RunSettings, SettingsError> {
        let file = at.file;
        let data_dir = flags
            .data_dir
            .clone()
            .unwrap_or_else(|| file.data_dir.clone());
        let mut dashboard = match (&file.dashboard, flags.dashboard) {
            (Some(table), flag) => Some(table.config(flag)),
            (None, Some(listen)) => Some(DashboardConfig {
                listen,
                cert: DashboardCert::Member,
                session: DEFAULT_SESSION,
                scenario_dir: DEFAULT_SCENARIO_DIR.into(),
            }),
            (None, None) => None,
        };
        if let (Some(d), Some(dir)) = (dashboard.as_mut(), flags.scenario_dir.clone()) {
            d.scenario_dir = dir;
        }
        let config = RunConfig {
            data_dir,
            http: Some(http_address(flags.http, file.http, recorded_http)),
            snapshot_logs: flags.snapshot_logs,
            dashboard,
            renew_check: Duration::from_secs(flags.renew_check_secs),
        };
        let control = ControlConfig {
            lease: flags.lease_secs.map_or(file.lease(), Duration::from_secs),
            resync: flags.resync_secs.map_or(file.resync(), Duration::from_secs),
            ip_wait_secs: flags.ip_wait_secs.unwrap_or(file.ip_wait_secs),
            tick: Duration::from_millis(flags.reconcile_tick_ms),
        };
        control.validate().map_err(|reason| {
            let place = |flag: Option<u64>, name: &str, value: u64| match flag {
                Some(v) => format!("--{} {v}", name.replace('_', "-")),
                None => format!("{name} = {value} in {}", at.shown),
            };
            let lease = control.lease.as_secs();
            let source_of_value = if !LEASE_SECS_RANGE.contains(&lease) {
                place(flags.lease_secs, "lease_secs", lease)
            } else if control.resync < control.lease {
                place(flags.resync_secs, "resync_secs", control.resync.as_secs())
            } else {
                "run's control-plane options".to_string()
            };
            SettingsError {
                source_of_value,
                reason,
            }
        })?;
        Ok(RunSettings { config, control })
    }
}

#[cfg(test)]
#[path = "settings_tests.rs"]
mod tests;
