//! This host's HA guests as the agent knows them without a coordinator: its running fleet
//! VMs whose managed notes say `ha=1` (`ops::notes`). The fencing reads the set
//! (docs/design/fencing-agent.md); it must be right from the agent's first inventory on,
//! before any lease, so it comes from PVE, not from the leader.
//!
//! The VM list has no notes, so each one costs a config read. [`HaGuests`] keeps what it read
//! and reads a VM's notes again only when it matters or may have changed:
//!
//! ```text
//!  running fleet VM ─▶ not read yet, or its list entry changed (name, status, tags),
//!                      or read more than REREAD ago (an operator's edit) ─▶ read its config
//!                   ─▶ otherwise what was read before
//!  stopped or foreign VM ─▶ nothing to read (only running guests are fenced)
//! ```
//!
//! A VM whose config cannot be read and was never read counts as HA: the set errs on the side
//! of arming the guard.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use protocol::agent::ObservedVm;
use pve::calls::ConfigView;

use crate::ops::notes;

/// How long notes read once are trusted while the VM's list entry does not change.
pub const REREAD: Duration = Duration::from_secs(60);

/// What a VM's list entry looked like when its notes were read.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    name: String,
    status: String,
    tags: Vec<String>,
}

impl Seen {
    fn of(vm: &ObservedVm) -> Seen {
        Seen {
            name: vm.name.clone(),
            status: vm.status.clone(),
            tags: vm.tags.clone(),
        }
    }
}

#[derive(Debug, Clone)]
struct Known {
    ha: bool,
    seen: Seen,
    read_at: Instant,
}

/// Whether PVE's status may mean a QEMU process (running, paused, anything but stopped).
pub fn may_run(vm: &ObservedVm) -> bool {
    vm.status != "stopped"
}

/// Whether VM `vmid`'s managed notes say `ha=1` (notes without a block: no).
pub async fn read_ha_mark(
    client: &pve::Client,
    node: &str,
    vmid: u32,
) -> Result<bool, pve::PveError> {
    let cfg = client.vm_config(node, vmid, &ConfigView::Current).await?;
    Ok(cfg
        .description()
        .and_then(|d| notes::parse(&d))
        .is_some_and(|n| n.ha))
}

/// The HA notes read so far, by VMID.
#[derive(Debug, Clone, Default)]
pub struct HaGuests {
    known: BTreeMap<u32, Known>,
}

impl HaGuests {
    /// Nothing read yet.
    pub fn new() -> HaGuests {
        HaGuests::default()
    }

    /// The running fleet VMs of `vms` whose notes must be read at `now`.
    fn due(&self, vms: &[ObservedVm], now: Instant) -> Vec<u32> {
        vms.iter()
            .filter(|vm| vm.owned && may_run(vm))
            .filter(|vm| match self.known.get(&vm.vmid) {
                None => true,
                Some(k) => k.seen != Seen::of(vm) || now.duration_since(k.read_at) >= REREAD,
            })
            .map(|vm| vm.vmid)
            .collect()
    }

    /// Takes in the notes just read for `vmid` (`None`: unreadable) and forgets VMs gone
    /// from `vms`.
    fn learn(&mut self, vms: &[ObservedVm], read: Vec<(u32, Option<bool>)>, now: Instant) {
        for (vmid, ha) in read {
            let Some(vm) = vms.iter().find(|v| v.vmid == vmid) else {
                continue;
            };
            match (ha, self.known.get_mut(&vmid)) {
                (Some(ha), _) => {
                    self.known.insert(
                        vmid,
                        Known {
                            ha,
                            seen: Seen::of(vm),
                            read_at: now,
                        },
                    );
                }
                // Unreadable now: keep what was read before (it is read again next round).
                (None, Some(_)) => {}
                (None, None) => {
                    // Never read: HA until proven otherwise, and due again next round (its
                    // `seen` differs from any list entry).
                    self.known.insert(
                        vmid,
                        Known {
                            ha: true,
                            seen: Seen {
                                status: String::new(),
                                ..Seen::of(vm)
                            },
                            read_at: now,
                        },
                    );
                }
            }
        }
        self.known
            .retain(|vmid, _| vms.iter().any(|v| v.vmid == *vmid));
    }

    /// The running HA guests among `vms`, by what was read.
    pub fn running(&self, vms: &[ObservedVm]) -> BTreeSet<u32> {
        vms.iter()
            .filter(|vm| vm.owned && may_run(vm))
            .filter(|vm| self.known.get(&vm.vmid).is_none_or(|k| k.ha))
            .map(|vm| vm.vmid)
            .collect()
    }

    /// Reads the notes that are due through `client` and answers the running HA guests of
    /// `vms` (this node's VMs, just listed).
    pub async fn update(
        &mut self,
        client: &pve::Client,
        node: &str,
        vms: &[ObservedVm],
    ) -> BTreeSet<u32> {
        let now = Instant::now();
        let due = self.due(vms, now);
        let reads = due.iter().map(|&vmid| async move {
            match read_ha_mark(client, node, vmid).await {
                Ok(ha) => (vmid, Some(ha)),
                Err(e) => {
                    tracing::debug!(vmid, error = %e, "cannot read a VM's notes for its HA mark");
                    (vmid, None)
                }
            }
        });
        let read = futures_util::future::join_all(reads).await;
        self.learn(vms, read, now);
        self.running(vms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vm(vmid: u32, status: &str, owned: bool) -> ObservedVm {
        ObservedVm {
            vmid,
            name: format!("vm-{vmid}"),
            tags: if owned {
                vec!["pvefleet".into()]
            } else {
                vec![]
            },
            owned,
            status: status.into(),
            lock: None,
            cpus: 1,
            memory_bytes: 1 << 30,
        }
    }

    #[test]
    fn only_running_fleet_vms_are_read_and_only_when_due() {
        let t0 = Instant::now();
        let mut ha = HaGuests::new();
        let vms = [
            vm(100, "running", true),
            vm(101, "stopped", true),
            vm(102, "running", false),
            vm(103, "running", true),
        ];
        assert_eq!(
            ha.due(&vms, t0),
            [100, 103],
            "foreign and stopped VMs are not read"
        );
        ha.learn(&vms, vec![(100, Some(true)), (103, Some(false))], t0);
        assert_eq!(ha.due(&vms, t0 + Duration::from_secs(5)), Vec::<u32>::new());
        assert_eq!(ha.running(&vms), BTreeSet::from([100]));
        // Read again after REREAD (an operator may have edited the notes)...
        assert_eq!(ha.due(&vms, t0 + REREAD), [100, 103]);
        // ...or when the entry changed: 101 started, 103 was renamed.
        let mut changed = vms.clone();
        changed[1].status = "running".into();
        changed[3].name = "renamed".into();
        assert_eq!(ha.due(&changed, t0 + Duration::from_secs(1)), [101, 103]);
    }

    #[test]
    fn an_unreadable_vm_counts_as_ha_until_read_and_keeps_what_was_read_before() {
        let t0 = Instant::now();
        let mut ha = HaGuests::new();
        let vms = [vm(100, "running", true), vm(101, "running", true)];
        ha.learn(&vms, vec![(100, None), (101, Some(false))], t0);
        assert_eq!(ha.running(&vms), BTreeSet::from([100]), "unknown: armed");
        assert_eq!(ha.due(&vms, t0), [100], "read again next round");
        ha.learn(&vms, vec![(100, Some(false))], t0);
        assert!(ha.running(&vms).is_empty());
        // Later unreadable: what was read stays.
        ha.learn(&vms, vec![(100, None)], t0 + REREAD);
        assert!(ha.running(&vms).is_empty());
    }

    #[test]
    fn a_vm_gone_from_the_list_is_forgotten_and_a_stopped_one_is_not_running() {
        let t0 = Instant::now();
        let mut ha = HaGuests::new();
        let vms = [vm(100, "running", true)];
        ha.learn(&vms, vec![(100, Some(true))], t0);
        assert_eq!(ha.running(&vms), BTreeSet::from([100]));
        let stopped = [vm(100, "stopped", true)];
        assert!(ha.running(&stopped).is_empty());
        ha.learn(&[], Vec::new(), t0);
        assert!(ha.known.is_empty());
        // Paused or any state PVE names other than stopped may be a QEMU process.
        assert!(may_run(&vm(1, "paused", true)) && !may_run(&vm(1, "stopped", true)));
    }
}
