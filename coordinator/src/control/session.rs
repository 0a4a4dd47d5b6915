//! The leader's side of an agent session, beat by beat: record the beat and its inventory,
//! decide (purely) whether the host's registration or its replicated facts must change, take
//! the results, and hand out the commands due. The agent service (`service::agent`) drives
//! these steps around its Raft proposals and the quorum check.
//!
//! Facts are replicated, so they are compared with what the state holds and proposed only on a
//! real change; storage sizes move with every disk written, so a size counts as changed only
//! beyond [`FACTS_SIZE_SLACK`].

use std::collections::BTreeSet;
use std::sync::Arc;

use protocol::NodeId;
use protocol::agent::{AgentCommand, CommandResult, Heartbeat, Inventory, StorageInfo};
use protocol::fleet::{Capacity, Host, HostFacts, UnixMillis};
use protocol::spec::Labels;

use super::dispatch::Origin;
use super::live::BeatRecord;
use super::{Arrived, Control};
use fleet::reconcile::status::ResultMeta;

/// Storage sizes within this many bytes of the recorded ones are not a change of facts.
pub(crate) const FACTS_SIZE_SLACK: u64 = 1024 * 1024 * 1024;

const MIB: u64 = 1024 * 1024;

/// A beat as recorded: what changed, and the inventory held for the beating boot.
#[derive(Debug, Clone)]
pub(crate) struct RecordedBeat {
    /// What recording changed.
    pub(crate) record: BeatRecord,
    /// The inventory of this boot (this beat's or an earlier one).
    pub(crate) inventory: Option<Arc<Inventory>>,
}

/// The capacity a host offers: what PVE reports, or the operating system's view when PVE
/// reported nothing.
pub(crate) fn capacity_of(inv: &Inventory) -> Capacity {
    let cpus = if inv.pve.cpus > 0 {
        inv.pve.cpus
    } else {
        inv.resources.cpus
    };
    let bytes = if inv.pve.memory_total_bytes > 0 {
        inv.pve.memory_total_bytes
    } else {
        inv.resources.memory_total_bytes
    };
    Capacity {
        cpus,
        memory_mib: bytes / MIB,
    }
}

/// Whether the host must be (re-)registered: unknown, or its name, labels or capacity changed.
pub(crate) fn needs_registration(
    host: Option<&Host>,
    name: &str,
    labels: &Labels,
    capacity: Capacity,
) -> bool {
    host.is_none_or(|h| h.name != name || h.labels != *labels || h.capacity != capacity)
}

/// The replicated facts an inventory shows, in a canonical order.
pub(crate) fn facts_of(inv: &Inventory, now: UnixMillis) -> HostFacts {
    let mut storages = inv.storages.clone();
    storages.sort_by(|a, b| a.id.cmp(&b.id));
    let mut templates = inv.templates.clone();
    templates.sort_by(|a, b| a.vmid.cmp(&b.vmid).then_with(|| a.name.cmp(&b.name)));
    let foreign: BTreeSet<u32> = inv
        .vms
        .iter()
        .filter(|v| !v.owned)
        .map(|v| v.vmid)
        .collect();
    HostFacts {
        pve_version: inv.pve.version.clone(),
        storages,
        bridges: inv.bridges.clone(),
        templates,
        foreign_vmids: foreign.into_iter().collect(),
        updated_at: now,
    }
}

/// Whether `new` differs from the recorded facts enough to be replicated.
pub(crate) fn facts_changed(old: Option<&HostFacts>, new: &HostFacts) -> bool {
    let Some(old) = old else {
        return true;
    };
    old.pve_version != new.pve_version
        || old.bridges != new.bridges
        || old.templates != new.templates
        || old.foreign_vmids != new.foreign_vmids
        || old.storages.len() != new.storages.len()
        || old
            .storages
            .iter()
            .zip(&new.storages)
            .any(|(a, b)| storage_changed(a, b))
}

fn storage_changed(a: &StorageInfo, b: &StorageInfo) -> bool {
    let far = |x: u64, y: u64| x.abs_diff(y) > FACTS_SIZE_SLACK;
    a.id != b.id
        || a.kind != b.kind
        || a.content != b.content
        || a.shared != b.shared
        || a.active != b.active
        || far(a.total_bytes, b.total_bytes)
        || far(a.available_bytes, b.available_bytes)
}

impl Control {
    /// Records a beat of `host` (this member must lead); the inventory held afterwards.
    pub(crate) fn record_beat(&self, host: NodeId, beat: &Heartbeat) -> RecordedBeat {
        let now = self.now();
        let mut inner = self.lock();
        let record = inner.live.record_beat(
            host,
            beat.boot_id,
            beat.seq,
            beat.inventory.as_ref(),
            now.mono_ms,
        );
        if record.new_boot {
            tracing::info!(host, boot_id = beat.boot_id, name = %beat.host_name, "agent session");
        }
        let inventory = inner.live.host(host).and_then(|h| h.inventory.clone());
        RecordedBeat { record, inventory }
    }

    /// Takes the results `host` returned: a waiting caller gets its result, the reconciler its
    /// own. Every id is acknowledged, those of unknown commands too (an earlier leader's, or
    /// one recorded already), so the agent stops sending them. `true` in the second place when
    /// the reconciler has new results.
    pub(crate) fn record_results(
        &self,
        host: NodeId,
        results: Vec<CommandResult>,
    ) -> (Vec<String>, bool) {
        let mut inner = self.lock();
        inner.live.note_results(host, results.len());
        let mut acked = Vec::with_capacity(results.len());
        let mut for_reconciler = false;
        for result in results {
            acked.push(result.id.clone());
            let Some(done) = inner.outbox.complete(host, &result.id) else {
                tracing::debug!(host, id = %result.id, "result of a command not pending here");
                continue;
            };
            match done.origin {
                Origin::Caller => {
                    if let Some(tx) = inner.waiters.remove(&result.id) {
                        // The caller may have given up; its loss.
                        let _ = tx.send(result.outcome);
                    }
                }
                Origin::Reconciler => {
                    for_reconciler = true;
                    inner.results.push(Arrived {
                        id: result.id.clone(),
                        meta: ResultMeta {
                            vm: done.cmd.op.vm_name().to_string(),
                            host,
                            kind: done.cmd.op.kind(),
                            generation: done.generation,
                        },
                        outcome: result.outcome,
                    });
                }
            }
        }
        (acked, for_reconciler)
    }

    /// The commands due for the agent `boot_id` of `host`, marked delivered.
    pub(crate) fn deliver(
        &self,
        host: NodeId,
        boot_id: u64,
        running: &[String],
    ) -> Vec<AgentCommand> {
        let now = self.now();
        let running: BTreeSet<&str> = running.iter().map(String::as_str).collect();
        self.lock()
            .outbox
            .deliver(host, boot_id, &running, now.mono_ms)
    }
}

#[cfg(test)]
mod tests {
    use protocol::agent::{ObservedVm, PveNodeInfo, TemplateInfo};

    use super::*;
    use protocol::fleet::HostState;

    const GIB: u64 = 1024 * MIB;

    fn inventory() -> Inventory {
        Inventory {
            pve: PveNodeInfo {
                node: "pve-a".into(),
                version: "9.1.1".into(),
                cpus: 16,
                memory_total_bytes: 64 * GIB,
                ..PveNodeInfo::default()
            },
            storages: vec![
                StorageInfo {
                    id: "local-lvm".into(),
                    kind: "lvmthin".into(),
                    content: ["images".to_string()].into(),
                    active: true,
                    total_bytes: 500 * GIB,
                    available_bytes: 400 * GIB,
                    ..StorageInfo::default()
                },
                StorageInfo {
                    id: "local".into(),
                    kind: "dir".into(),
                    active: true,
                    ..StorageInfo::default()
                },
            ],
            bridges: ["vmbr0".to_string()].into(),
            templates: vec![TemplateInfo {
                vmid: 9000,
                name: "debian-12".into(),
            }],
            vms: vec![
                ObservedVm {
                    vmid: 300,
                    owned: false,
                    ..ObservedVm::default()
                },
                ObservedVm {
                    vmid: 101,
                    owned: true,
                    ..ObservedVm::default()
                },
                ObservedVm {
                    vmid: 200,
                    owned: false,
                    ..ObservedVm::default()
                },
            ],
            ..Inventory::default()
        }
    }

    #[test]
    fn facts_are_canonical_and_list_only_foreign_vmids() {
        let facts = facts_of(&inventory(), 5);
        let ids: Vec<_> = facts.storages.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["local", "local-lvm"]);
        assert_eq!(facts.foreign_vmids, [200, 300]);
        assert_eq!(facts.pve_version, "9.1.1");
        assert_eq!(facts.updated_at, 5);
    }

    #[test]
    fn facts_change_on_anything_but_small_size_moves_and_the_time() {
        let base = facts_of(&inventory(), 1);
        let with = |f: &dyn Fn(&mut Inventory)| {
            let mut inv = inventory();
            f(&mut inv);
            facts_of(&inv, 2)
        };
        let table: [(&str, HostFacts, bool); 10] = [
            ("same, later", with(&|_| {}), false),
            (
                "free space -1 GiB",
                with(&|i| i.storages[0].available_bytes -= GIB),
                false,
            ),
            (
                "free space -1 GiB -1 B",
                with(&|i| i.storages[0].available_bytes -= GIB + 1),
                true,
            ),
            (
                "total +2 GiB",
                with(&|i| i.storages[0].total_bytes += 2 * GIB),
                true,
            ),
            (
                "storage inactive",
                with(&|i| i.storages[0].active = false),
                true,
            ),
            (
                "storage gone",
                with(&|i| {
                    i.storages.pop();
                }),
                true,
            ),
            (
                "bridge added",
                with(&|i| {
                    i.bridges.insert("vmbr1".into());
                }),
                true,
            ),
            ("template gone", with(&|i| i.templates.clear()), true),
            (
                "foreign VM added",
                with(&|i| {
                    i.vms.push(ObservedVm {
                        vmid: 400,
                        ..ObservedVm::default()
                    })
                }),
                true,
            ),
            (
                "pve upgraded",
                with(&|i| i.pve.version = "9.2".into()),
                true,
            ),
        ];
        for (what, new, changed) in table {
            assert_eq!(facts_changed(Some(&base), &new), changed, "{what}");
        }
        assert!(facts_changed(None, &base), "first facts");
        let owned_vm_added = with(&|i| {
            i.vms.push(ObservedVm {
                vmid: 102,
                owned: true,
                ..ObservedVm::default()
            })
        });
        assert!(!facts_changed(Some(&base), &owned_vm_added));
    }

    #[test]
    fn registration_follows_name_labels_and_capacity() {
        let inv = inventory();
        let capacity = capacity_of(&inv);
        assert_eq!(
            capacity,
            Capacity {
                cpus: 16,
                memory_mib: 64 * 1024
            }
        );
        let host = Host {
            id: 7,
            name: "pve-a".into(),
            labels: Labels::new(),
            capacity,
            state: HostState::Online,
            registered_at: 1,
            state_since: 1,
            state_reason: String::new(),
            facts: None,
            operator_labels: Default::default(),
        };
        assert!(needs_registration(None, "pve-a", &Labels::new(), capacity));
        assert!(!needs_registration(
            Some(&host),
            "pve-a",
            &Labels::new(),
            capacity
        ));
        assert!(needs_registration(
            Some(&host),
            "pve-b",
            &Labels::new(),
            capacity
        ));
        let labels: Labels = [("zone".to_string(), "a".to_string())].into();
        assert!(needs_registration(Some(&host), "pve-a", &labels, capacity));
        let bigger = Capacity {
            cpus: 32,
            ..capacity
        };
        assert!(needs_registration(
            Some(&host),
            "pve-a",
            &Labels::new(),
            bigger
        ));
        let no_pve = Inventory {
            pve: PveNodeInfo::default(),
            resources: protocol::agent::HostResources {
                cpus: 4,
                memory_total_bytes: 8 * GIB,
                ..Default::default()
            },
            ..Inventory::default()
        };
        assert_eq!(
            capacity_of(&no_pve),
            Capacity {
                cpus: 4,
                memory_mib: 8 * 1024
            }
        );
    }
}
