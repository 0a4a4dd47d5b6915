//! Turning what went wrong into a [`CommandFailure`]: the class decides whether the leader
//! retries (a lock, a busy node, a lost connection) or gives up until the spec changes (a bad
//! parameter, a missing template, a full storage). The message names the VM and the step and
//! carries PVE's own text.

use protocol::agent::{CommandFailure, FailureKind};
use pve::PveError;

/// The VM an operation is about, for messages.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Subject<'a> {
    /// Fleet name.
    pub(crate) name: &'a str,
    /// VMID on this host.
    pub(crate) vmid: u32,
}

impl Subject<'_> {
    /// A failure of `step` caused by PVE (or the connection to it).
    pub(crate) fn pve(&self, step: &str, err: &PveError) -> CommandFailure {
        CommandFailure {
            kind: kind_of(err),
            step: step.to_string(),
            message: format!("{step} of VM {} ({}): {err}", self.vmid, self.name),
        }
    }

    /// A failure of `step` with its own class and explanation.
    pub(crate) fn fail(
        &self,
        kind: FailureKind,
        step: &str,
        why: impl std::fmt::Display,
    ) -> CommandFailure {
        CommandFailure {
            kind,
            step: step.to_string(),
            message: format!("{step} of VM {} ({}): {why}", self.vmid, self.name),
        }
    }
}

/// `result.at(subject, "clone")`: a PVE error becomes the failure of that step.
pub(crate) trait AtStep<T> {
    /// Maps the error with [`Subject::pve`].
    fn at(self, subject: &Subject<'_>, step: &str) -> Result<T, CommandFailure>;
}

impl<T> AtStep<T> for Result<T, PveError> {
    fn at(self, subject: &Subject<'_>, step: &str) -> Result<T, CommandFailure> {
        self.map_err(|e| subject.pve(step, &e))
    }
}

/// Texts of PVE errors that go away by themselves: config locks, host file locks that timed
/// out, a concurrent config change, a cluster without quorum.
fn transient_text(text: &str) -> bool {
    text.contains("is locked (")
        || text.contains("got timeout")
        || text.contains("checksum mismatch")
        || text.contains("file changed by other user")
        || text.contains("no quorum")
}

/// The class of a PVE error.
pub(crate) fn kind_of(err: &PveError) -> FailureKind {
    match err {
        PveError::Connect { .. }
        | PveError::Transport { .. }
        | PveError::Timeout { .. }
        | PveError::TaskTimeout { .. } => FailureKind::Transient,
        // Host-level problems the operator fixes without changing the command (a rotated
        // token, an unreadable token file, a broken `pvesh`): retry once they are fixed.
        PveError::Auth { .. } | PveError::Config(_) | PveError::Pvesh { .. } => {
            FailureKind::Transient
        }
        PveError::Api { .. } if err.is_transient() => FailureKind::Transient,
        PveError::Api { .. } if err.is_missing_config() => FailureKind::NotFound,
        PveError::Api { message, .. } if transient_text(message) => FailureKind::Transient,
        PveError::TaskFailed { exitstatus, .. } if transient_text(exitstatus) => {
            FailureKind::Transient
        }
        PveError::Api { .. }
        | PveError::TaskFailed { .. }
        | PveError::Invalid { .. }
        | PveError::Decode { .. } => FailureKind::Permanent,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use super::*;

    fn api(status: u16, message: &str) -> PveError {
        PveError::Api {
            method: "PUT",
            path: "/nodes/pve1/qemu/100/config".into(),
            status,
            reason: message.into(),
            message: message.into(),
            errors: BTreeMap::new(),
        }
    }

    fn task(exitstatus: &str) -> PveError {
        PveError::TaskFailed {
            upid: Box::new(
                "UPID:pve1:0000C346:165A0CE4:68D7279C:qmclone:9000:root@pam:"
                    .parse()
                    .unwrap(),
            ),
            exitstatus: exitstatus.into(),
            log_tail: vec![],
        }
    }

    #[test]
    fn pve_errors_map_to_retry_classes() {
        let cases = [
            (api(500, "VM is locked (clone)"), FailureKind::Transient),
            (
                api(
                    500,
                    "can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout",
                ),
                FailureKind::Transient,
            ),
            (
                api(500, "checksum mismatch (file change by other user?)"),
                FailureKind::Transient,
            ),
            (
                api(500, "cluster not ready - no quorum?"),
                FailureKind::Transient,
            ),
            (api(503, "service unavailable"), FailureKind::Transient),
            (api(595, "No route to host"), FailureKind::Transient),
            (
                api(400, "Parameter verification failed."),
                FailureKind::Permanent,
            ),
            (
                api(403, "Permission check failed (/vms/100, VM.Config.Disk)"),
                FailureKind::Permanent,
            ),
            (
                api(
                    500,
                    "Configuration file 'nodes/pve1/qemu-server/100.conf' does not exist",
                ),
                FailureKind::NotFound,
            ),
            (task("VM is locked (backup)"), FailureKind::Transient),
            (
                task("clone failed: not enough space on storage 'local-lvm'"),
                FailureKind::Permanent,
            ),
            (
                task("shrinking disks is not supported"),
                FailureKind::Permanent,
            ),
            (
                PveError::Connect {
                    endpoint: "https://pve1:8006".into(),
                    reason: "refused".into(),
                },
                FailureKind::Transient,
            ),
            (
                PveError::Timeout {
                    method: "GET",
                    path: "/x".into(),
                    timeout: Duration::from_secs(1),
                },
                FailureKind::Transient,
            ),
            (
                PveError::Invalid {
                    field: "net0.tag".into(),
                    reason: "out of range".into(),
                },
                FailureKind::Permanent,
            ),
        ];
        for (err, kind) in cases {
            assert_eq!(kind_of(&err), kind, "{err}");
        }
    }

    #[test]
    fn messages_name_the_step_the_vm_and_pve_text() {
        let subject = Subject {
            name: "web-1",
            vmid: 101,
        };
        let f = subject.pve("clone", &task("clone failed: not enough space"));
        assert_eq!(f.step, "clone");
        assert!(
            f.message.starts_with("clone of VM 101 (web-1): "),
            "{}",
            f.message
        );
        assert!(f.message.contains("not enough space"), "{}", f.message);
    }
}
