//! [`VmRecord`] as encoding v1 lays it out, frozen: the record around a [`VmSpecV1`]. Snapshots
//! (exact, or refused) and replies to a v1 reader (what it can show) use it.

use serde::{Deserialize, Serialize};

use super::UnixMillis;
use super::vm::{Assignment, VmRecord, VmStatus};
use crate::spec::{VmSpec, VmSpecV1};

/// A VM record in the v1 layout (see [`VmRecord`] for the fields).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmRecordV1 {
    /// The desired state, in the v1 layout.
    pub spec: VmSpecV1,
    /// The spec's generation.
    pub generation: u64,
    /// When the VM was first applied.
    pub created_at: UnixMillis,
    /// When the spec last changed.
    pub updated_at: UnixMillis,
    /// Marked for deletion.
    pub deleting: bool,
    /// What the fleet decided for the VM.
    pub assignment: Assignment,
    /// What the agents last observed.
    pub status: VmStatus,
}

impl From<VmRecordV1> for VmRecord {
    fn from(v1: VmRecordV1) -> VmRecord {
        VmRecord {
            spec: VmSpec::from(v1.spec),
            generation: v1.generation,
            created_at: v1.created_at,
            updated_at: v1.updated_at,
            deleting: v1.deleting,
            assignment: v1.assignment,
            status: v1.status,
        }
    }
}

impl VmRecordV1 {
    /// `vm` in the v1 layout if v1 carries its spec exactly ([`VmSpecV1::exact`]), for
    /// snapshots, which must read back exactly.
    pub fn exact(vm: &VmRecord) -> Option<VmRecordV1> {
        Some(VmRecordV1::with_spec(vm, VmSpecV1::exact(&vm.spec)?))
    }

    /// What a v1 reader can show of `vm` ([`VmSpecV1::shown`]).
    pub fn shown(vm: &VmRecord) -> VmRecordV1 {
        VmRecordV1::with_spec(vm, VmSpecV1::shown(&vm.spec))
    }

    fn with_spec(vm: &VmRecord, spec: VmSpecV1) -> VmRecordV1 {
        VmRecordV1 {
            spec,
            generation: vm.generation,
            created_at: vm.created_at,
            updated_at: vm.updated_at,
            deleting: vm.deleting,
            assignment: vm.assignment.clone(),
            status: vm.status.clone(),
        }
    }
}
