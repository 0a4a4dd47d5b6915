//! VMID ranges and VMID allocation: the lowest free VMID of the VM's range, never one held by
//! another VM (until that VM is gone and released), never one of the `avoid` list.

use std::collections::BTreeSet;

use protocol::admin::ApplyOutcome;
use protocol::fleet::{AllocationOwner, EventKind, UnixMillis, VmidAllocation, VmidRange};
use protocol::spec::{SpecError, VmidRangeSpec, validate_vmid_range};

use super::vms::{defined, not_found};
use super::{CommandReply, FleetState, StateError};

impl FleetState {
    pub(super) fn allocate_vmid(
        &mut self,
        vm: &str,
        avoid: &[u32],
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let rec = self
            .vms
            .get(vm)
            .ok_or_else(|| not_found(EventKind::Vm, vm))?;
        if rec.deleting {
            return Err(StateError::Conflict(format!("VM {vm:?} is being deleted")));
        }
        let owner = AllocationOwner::Vm(vm.to_string());
        if let Some(vmid) = rec.assignment.vmid {
            // Asked again (a retried proposal, a restarted reconciler): same answer.
            let range = self
                .vmid_ranges
                .iter()
                .find(|(_, r)| r.allocations.get(&vmid).is_some_and(|a| a.owner == owner))
                .map(|(name, _)| name.clone())
                .unwrap_or_default();
            return Ok(CommandReply::Vmid { vmid, range });
        }
        let range_name = self.range_for(rec.spec.vmid_range.as_deref())?;
        let range = self
            .vmid_ranges
            .get_mut(&range_name)
            .ok_or_else(|| not_found(EventKind::VmidRange, &range_name))?;
        let vmid = lowest_free(range, avoid)?;
        range
            .allocations
            .insert(vmid, VmidAllocation { owner, at: now });
        if let Some(rec) = self.vms.get_mut(vm) {
            rec.assignment.vmid = Some(vmid);
        }
        self.info(
            now,
            EventKind::Vm,
            vm,
            format!("VMID {vmid} allocated from range {range_name}"),
        );
        Ok(CommandReply::Vmid {
            vmid,
            range: range_name,
        })
    }

    /// The range a VM allocates from: its own, else the default, else the only one.
    fn range_for(&self, wanted: Option<&str>) -> Result<String, StateError> {
        let name = match (wanted, self.settings.default_vmid_range.as_deref()) {
            (Some(name), _) | (None, Some(name)) => name.to_string(),
            (None, None) if self.vmid_ranges.len() == 1 => {
                self.vmid_ranges.keys().next().cloned().unwrap_or_default()
            }
            (None, None) => {
                return Err(StateError::Conflict(format!(
                    "no VMID range to allocate from: name one in the spec's vmid_range or set the \
                     default_vmid_range setting ({})",
                    defined("VMID range", self.vmid_ranges.keys())
                )));
            }
        };
        if self.vmid_ranges.contains_key(&name) {
            Ok(name)
        } else {
            Err(not_found(EventKind::VmidRange, name))
        }
    }

    pub(super) fn put_vmid_range(
        &mut self,
        spec: VmidRangeSpec,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        validate_vmid_range(&spec)?;
        for (name, other) in &self.vmid_ranges {
            if *name != spec.name && spec.start <= other.spec.end && other.spec.start <= spec.end {
                return Err(StateError::Conflict(format!(
                    "VMID range {} ({}-{}) overlaps range {name} ({}-{})",
                    spec.name, spec.start, spec.end, other.spec.start, other.spec.end
                )));
            }
        }
        let outcome = match self.vmid_ranges.get_mut(&spec.name) {
            Some(range) if range.spec == spec => return Ok(applied(ApplyOutcome::Unchanged)),
            Some(range) => {
                if let Some((vmid, a)) = range
                    .allocations
                    .iter()
                    .find(|(vmid, _)| !(spec.start..=spec.end).contains(*vmid))
                {
                    return Err(StateError::Invalid(SpecError::new(
                        "start",
                        spec.start,
                        format!(
                            "bounds that keep allocated VMID {vmid} (held by {})",
                            a.owner
                        ),
                    )));
                }
                range.spec = spec.clone();
                ApplyOutcome::Updated
            }
            None => {
                self.vmid_ranges.insert(
                    spec.name.clone(),
                    VmidRange {
                        spec: spec.clone(),
                        allocations: Default::default(),
                    },
                );
                ApplyOutcome::Created
            }
        };
        self.info(
            now,
            EventKind::VmidRange,
            &spec.name,
            format!("{outcome}: VMIDs {}-{}", spec.start, spec.end),
        );
        Ok(applied(outcome))
    }

    pub(super) fn delete_vmid_range(
        &mut self,
        name: &str,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let range = self
            .vmid_ranges
            .get(name)
            .ok_or_else(|| not_found(EventKind::VmidRange, name))?;
        if let Some((vmid, a)) = range.allocations.iter().next() {
            return Err(StateError::Conflict(format!(
                "VMID range {name} still has {} VMIDs allocated (e.g. {vmid} held by {})",
                range.allocations.len(),
                a.owner
            )));
        }
        if self.settings.default_vmid_range.as_deref() == Some(name) {
            return Err(StateError::Conflict(format!(
                "VMID range {name} is the default_vmid_range setting: change the setting first"
            )));
        }
        if let Some(vm) = self
            .vms
            .values()
            .find(|r| r.spec.vmid_range.as_deref() == Some(name))
        {
            return Err(StateError::Conflict(format!(
                "VMID range {name} is named by VM {:?}",
                vm.spec.name
            )));
        }
        self.vmid_ranges.remove(name);
        self.info(now, EventKind::VmidRange, name, "deleted");
        Ok(CommandReply::Done)
    }
}

fn applied(outcome: ApplyOutcome) -> CommandReply {
    CommandReply::Applied { outcome }
}

/// The lowest VMID of the range that is neither allocated nor to be avoided.
fn lowest_free(range: &VmidRange, avoid: &[u32]) -> Result<u32, StateError> {
    let avoid: BTreeSet<u32> = avoid.iter().copied().collect();
    let (start, end) = (range.spec.start, range.spec.end);
    // The taken VMIDs walked in order beside the candidate (both sets are sorted): one pass,
    // not a lookup per candidate, which made allocating n VMIDs cost n² lookups.
    let mut allocated = range.allocations.range(start..).map(|(v, _)| *v).peekable();
    let mut avoided = avoid.range(start..).copied().peekable();
    let mut candidate = start;
    // Each step skips one taken VMID, so this ends within allocations + avoid + 1 steps.
    while candidate <= end {
        while allocated.next_if(|v| *v < candidate).is_some() {}
        while avoided.next_if(|v| *v < candidate).is_some() {}
        let taken = allocated.peek() == Some(&candidate) || avoided.peek() == Some(&candidate);
        if !taken {
            return Ok(candidate);
        }
        let Some(next) = candidate.checked_add(1) else {
            break;
        };
        candidate = next;
    }
    Err(StateError::VmidsExhausted {
        range: range.spec.name.clone(),
        start,
        end,
        size: u64::from(end - start) + 1,
    })
}
