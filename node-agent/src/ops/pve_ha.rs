//! PVE's own HA manager: a guest it drives (`vm:<vmid>` in `GET /cluster/ha/resources`) is
//! never driven by the fleet as well, or both would start, stop and recover it. Ensure and the
//! power actions that start a guest refuse such a VM before they change anything.

use std::sync::atomic::{AtomicBool, Ordering};

use protocol::agent::{CommandFailure, FailureKind};

use super::VmOps;
use super::failure::Subject;

/// A VM the fleet was asked to drive is a resource of PVE's own HA manager.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "vm:{vmid} is managed by PVE's HA manager (state {state}): two HA managers must never drive one guest; remove it there (ha-manager remove vm:{vmid}) and apply again, or leave this VM to PVE"
)]
pub(crate) struct PveHaConflict {
    /// The VMID.
    pub(crate) vmid: u32,
    /// The resource's requested state in PVE (`started` when none is configured).
    pub(crate) state: String,
}

/// True the first time only: whether the warning about an unreadable HA resource list is due
/// (once per [`VmOps`] and its clones).
fn first_time(warned: &AtomicBool) -> bool {
    !warned.swap(true, Ordering::Relaxed)
}

impl VmOps {
    /// Refuses (permanently, at `step`) when the VM is a resource of PVE's HA manager. Reads
    /// `GET /cluster/ha/resources` once. A failed read (a token without `Sys.Audit` on `/`
    /// gets a 403, a node may be busy) does not block the operation: it is logged as a warning
    /// the first time for these operations (at debug level after that) and the check passes.
    pub(super) async fn refuse_pve_ha(
        &self,
        s: &Subject<'_>,
        step: &str,
    ) -> Result<(), CommandFailure> {
        let resources = match self.client.ha_resources(None).await {
            Ok(list) => list,
            Err(e) => {
                if first_time(&self.ha_read_warned) {
                    tracing::warn!(
                        vm = s.name,
                        vmid = s.vmid,
                        error = %e,
                        "cannot read PVE's HA resources (GET /cluster/ha/resources needs Sys.Audit on /); guests PVE's HA manager drives are not detected"
                    );
                } else {
                    tracing::debug!(vm = s.name, vmid = s.vmid, error = %e, "cannot read PVE's HA resources");
                }
                return Ok(());
            }
        };
        match resources.iter().find(|r| r.vm_id() == Some(s.vmid)) {
            Some(r) => Err(s.fail(
                FailureKind::Permanent,
                step,
                PveHaConflict {
                    vmid: s.vmid,
                    state: r.requested_state().to_string(),
                },
            )),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_says_what_is_wrong_and_what_to_do() {
        let e = PveHaConflict {
            vmid: 101,
            state: "started".into(),
        };
        assert_eq!(
            e.to_string(),
            "vm:101 is managed by PVE's HA manager (state started): two HA managers must never drive one guest; remove it there (ha-manager remove vm:101) and apply again, or leave this VM to PVE"
        );
        let warned = AtomicBool::new(false);
        assert!(first_time(&warned));
        assert!(!first_time(&warned));
    }
}
