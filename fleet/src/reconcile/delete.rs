//! Deleting a VM whose spec was deleted: a VM that never got a host or a VMID was never created
//! and is released at once; one on a host that is gone for good is released with a warning;
//! otherwise a Delete goes to its host (when it reports, nothing else is in flight for the VM
//! and no back-off holds), and the Deleted result releases it (see `status::on_result`).

use protocol::agent::{DeleteVm, Op};
use protocol::fleet::{EventLevel, HostState, VmPhase, VmRecord, VmStatus};

use super::planner::{Inputs, Planner};
use super::{Action, VmMemory};

impl Planner<'_> {
    /// The actions for a record marked `deleting`.
    pub(super) fn delete(&mut self, rec: &VmRecord, memory: &VmMemory) {
        let Inputs {
            state,
            live,
            inflight,
            policy,
            now,
        } = self.inputs;
        let out = &mut *self.out;
        let vm = rec.spec.name.clone();
        let (Some(host), Some(vmid)) = (rec.assignment.host, rec.assignment.vmid) else {
            out.push(Action::Release { vm });
            return;
        };
        let host_record = state.hosts().get(&host);
        if host_record.is_none_or(|h| h.state == HostState::Removed) {
            out.push(Action::Event {
                vm: vm.clone(),
                level: EventLevel::Warning,
                message: format!(
                    "host {host} was removed from the fleet: VMID {vmid} is released without \
                     destroying the VM there"
                ),
            });
            out.push(Action::Release { vm });
            return;
        }
        if inflight.commands.contains_key(&vm)
            || !live.is_reporting(host, policy, now)
            || memory
                .backoff
                .is_some_and(|b| b.holds(rec.generation, now.mono_ms))
        {
            return;
        }
        if rec.status.phase != VmPhase::Deleting && rec.status.phase != VmPhase::Failed {
            let host_name = host_record.map_or_else(|| host.to_string(), |h| h.name.clone());
            out.push(Action::SetStatus {
                vm: vm.clone(),
                status: VmStatus {
                    phase: VmPhase::Deleting,
                    message: format!("destroying VMID {vmid} on host {host_name}"),
                    updated_at: now.unix_ms,
                    ..rec.status.clone()
                },
            });
        }
        out.push(Action::Send {
            host,
            generation: rec.generation,
            op: Op::Delete(DeleteVm { name: vm, vmid }),
        });
    }
}
