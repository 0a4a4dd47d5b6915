//! [`Builder`]: collects the changes of one configure plan against the config PVE has now; every
//! part of the plan (general settings, hardware, NICs, disks, cloud-init) writes through it.

use pve::PveError;
use pve::calls::ConfigChanges;
use pve::types::VmConfig;

use super::config_plan::ConfigPlan;
use crate::ops::desired::DesiredVm;
use crate::ops::plan_error::PlanError;

/// Collects the changes of one plan against the current config.
pub(super) struct Builder<'a> {
    pub(super) current: &'a VmConfig,
    pub(super) plan: ConfigPlan,
}

impl Builder<'_> {
    pub(super) fn set(&mut self, key: &str, value: String) {
        self.plan.set.insert(key.to_string(), value);
    }

    pub(super) fn set_if(&mut self, key: &str, differs: bool, value: impl FnOnce() -> String) {
        if differs {
            self.set(key, value());
        }
    }

    /// Renders one key through the client's validated setter.
    pub(super) fn set_via(
        &mut self,
        key: &str,
        build: impl FnOnce(ConfigChanges) -> ConfigChanges,
    ) -> Result<(), PlanError> {
        let changes = build(ConfigChanges::new());
        changes.validate().map_err(|e| match e {
            PveError::Invalid { field, reason } => PlanError::Invalid { field, reason },
            other => PlanError::Invalid {
                field: key.to_string(),
                reason: other.to_string(),
            },
        })?;
        let value = changes.get(key).ok_or_else(|| PlanError::Invalid {
            field: key.to_string(),
            reason: "no value rendered".into(),
        })?;
        self.set(key, value.to_string());
        Ok(())
    }

    pub(super) fn text(&self, key: &str) -> Option<String> {
        self.current.get_str(key)
    }

    /// Storage for volumes the spec does not place itself (EFI vars, cloud-init drive): the
    /// first spec disk's storage, else the storage of the first disk the VM has.
    pub(super) fn helper_storage(&self, d: &DesiredVm, what: &str) -> Result<String, PlanError> {
        if let Some(s) = d.disks.iter().find_map(|d| d.storage.clone()) {
            return Ok(s);
        }
        self.current
            .disks()
            .into_iter()
            .filter_map(|(_, _, disk)| disk.ok())
            .filter(|disk| !disk.is_cdrom())
            .find_map(|disk| disk.storage().map(str::to_string))
            .ok_or_else(|| PlanError::NoStorage {
                what: what.to_string(),
            })
    }
}
