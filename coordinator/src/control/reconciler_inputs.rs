//! The control plane's soft state as the reconciler loop reads and writes it: results waiting
//! to be taken into account, what it remembers per VM (back-off, last Ensure), its commands
//! into the outboxes, and the live view and commands in flight its plan reads.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use fleet::reconcile::{Clock, Inflight, InflightCommand, LiveHost, LiveView, VmMemory};
use fleet::state::FleetState;
use protocol::NodeId;
use protocol::agent::Op;

use super::dispatch::Origin;
use super::{Arrived, Control};

impl Control {
    /// The results waiting for the reconciler.
    pub(crate) fn take_results(&self) -> Vec<Arrived> {
        std::mem::take(&mut self.lock().results)
    }

    /// What the reconciler remembers about `vm`.
    pub(crate) fn memory(&self, vm: &str) -> VmMemory {
        self.lock().memory.get(vm).cloned().unwrap_or_default()
    }

    /// Replaces what the reconciler remembers about `vm`.
    pub(crate) fn set_memory(&self, vm: &str, memory: VmMemory) {
        self.lock().memory.insert(vm.to_string(), memory);
    }

    /// Queues a reconciler command (dropped if the leadership changed since the plan).
    pub(crate) fn enqueue(&self, host: NodeId, generation: u64, op: Op, term: u64, now: Clock) {
        let mut inner = self.lock();
        if inner.term != Some(term) {
            return;
        }
        let vm = op.vm_name().to_string();
        let is_ensure = matches!(op, Op::Ensure(_));
        let id = inner
            .outbox
            .enqueue(host, op, generation, term, Origin::Reconciler);
        tracing::debug!(host, %id, "command queued");
        if is_ensure {
            inner.memory.entry(vm).or_default().last_ensure_ms = Some(now.mono_ms);
        }
    }

    /// The live view and the commands in flight, as the plan reads them.
    pub(crate) fn plan_inputs(&self) -> (LiveView, Inflight) {
        let inner = self.lock();
        let hosts = inner
            .live
            .hosts()
            .iter()
            .map(|(&id, h)| {
                let host = LiveHost {
                    last_beat_ms: h.last_beat_ms,
                    inventory_ms: h.inventory.as_ref().map(|_| h.inventory_ms),
                    vms: Arc::clone(&h.observed),
                };
                (id, host)
            })
            .collect();
        let live = LiveView {
            leading_since_ms: inner.leading_since_ms,
            hosts,
        };
        let mut commands = BTreeMap::new();
        for (host, p) in inner.outbox.pending() {
            commands
                .entry(p.cmd.op.vm_name().to_string())
                .or_insert_with(|| InflightCommand {
                    id: p.cmd.id.clone(),
                    kind: p.cmd.op.kind(),
                    host,
                    generation: p.generation,
                });
        }
        // A result not yet taken into account leaves the VM as it was before the command:
        // until the loop has recorded it, the command counts as in flight.
        for a in &inner.results {
            commands
                .entry(a.meta.vm.clone())
                .or_insert_with(|| InflightCommand {
                    id: a.id.clone(),
                    kind: a.meta.kind,
                    host: a.meta.host,
                    generation: a.meta.generation,
                });
        }
        let inflight = Inflight {
            commands,
            memory: inner.memory.clone(),
        };
        (live, inflight)
    }

    /// Keeps the soft state in line with the replicated one: generations for command ids,
    /// no memory of VMs that are gone, no commands for removed or fenced hosts.
    pub(crate) fn note_state(&self, state: &FleetState) {
        let mut inner = self.lock();
        let generations: HashMap<String, u64> = state
            .vms()
            .iter()
            .map(|(name, rec)| (name.clone(), rec.generation))
            .collect();
        inner.memory.retain(|vm, _| generations.contains_key(vm));
        inner.generations = generations;
        // A fenced host runs nothing: its commands are moot (their VMs are recovered
        // elsewhere), and one kept here would block the VM's next command until it expired.
        // It gets fresh ones when it is back.
        inner.outbox.retain_hosts(|h| {
            state.hosts().get(&h).is_some_and(|h| {
                !matches!(
                    h.state,
                    protocol::fleet::HostState::Removed | protocol::fleet::HostState::Fenced
                )
            })
        });
    }
}
