//! When an inventory is worth sending (pure): anything but the volatile fields changed, a
//! volatile field moved by more than its threshold, or [`REFRESH_AFTER`] passed since the last
//! one sent. Volatile fields are used memory, load, free space and uptime: they change on every
//! sample, and sending them on every beat would make every beat carry the whole inventory.

use std::time::{Duration, Instant};

use protocol::agent::Inventory;

/// Send at least this often, changed or not.
pub const REFRESH_AFTER: Duration = Duration::from_secs(30);
/// Used memory must move by more than this percentage of total memory.
pub const MEMORY_MOVE_PERCENT: u64 = 5;
/// A load average must move by more than this percentage of its previous value (a previous
/// load below 1.0 counts as 1.0, so an idle host's jitter is not news).
pub const LOAD_MOVE_PERCENT: u64 = 25;
/// Free space of a storage or disk must move by more than this.
pub const FREE_SPACE_MOVE_BYTES: u64 = 1 << 30;

/// The last inventory the leader acknowledged, and when its beat was sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentInventory {
    /// What was sent.
    pub inventory: Inventory,
    /// When its beat was sent.
    pub at: Instant,
}

/// Whether `current` should go on the next beat, given the last one sent (none yet: send).
pub fn worth_sending(last: Option<&SentInventory>, current: &Inventory, now: Instant) -> bool {
    let Some(last) = last else {
        return true;
    };
    now.saturating_duration_since(last.at) >= REFRESH_AFTER
        || without_volatile(&last.inventory) != without_volatile(current)
        || volatile_moved(&last.inventory, current)
}

/// The inventory with every volatile field zeroed: what must be equal for "nothing changed".
fn without_volatile(inv: &Inventory) -> Inventory {
    let mut stable = inv.clone();
    stable.resources.memory_used_bytes = 0;
    stable.resources.load_milli = [0; 3];
    for d in &mut stable.resources.disks {
        d.available_bytes = 0;
    }
    stable.pve.memory_used_bytes = 0;
    stable.pve.uptime_secs = 0;
    for s in &mut stable.storages {
        s.available_bytes = 0;
    }
    stable
}

/// Whether a volatile field moved past its threshold. Called only when the stable parts are
/// equal, so disks and storages pair up by position.
fn volatile_moved(old: &Inventory, new: &Inventory) -> bool {
    let (r0, r1) = (&old.resources, &new.resources);
    memory_moved(
        r0.memory_used_bytes,
        r1.memory_used_bytes,
        r1.memory_total_bytes,
    ) || memory_moved(
        old.pve.memory_used_bytes,
        new.pve.memory_used_bytes,
        new.pve.memory_total_bytes,
    ) || r0
        .load_milli
        .iter()
        .zip(&r1.load_milli)
        .any(|(a, b)| load_moved(*a, *b))
        || r0
            .disks
            .iter()
            .zip(&r1.disks)
            .any(|(a, b)| a.available_bytes.abs_diff(b.available_bytes) > FREE_SPACE_MOVE_BYTES)
        || old
            .storages
            .iter()
            .zip(&new.storages)
            .any(|(a, b)| a.available_bytes.abs_diff(b.available_bytes) > FREE_SPACE_MOVE_BYTES)
}

fn memory_moved(old: u64, new: u64, total: u64) -> bool {
    u128::from(old.abs_diff(new)) * 100 > u128::from(total) * u128::from(MEMORY_MOVE_PERCENT)
}

fn load_moved(old_milli: u32, new_milli: u32) -> bool {
    let base = u64::from(old_milli.max(1000));
    u64::from(old_milli.abs_diff(new_milli)) * 100 > base * LOAD_MOVE_PERCENT
}

#[cfg(test)]
mod tests {
    use protocol::agent::{DiskUsage, ObservedVm, StorageInfo, TemplateInfo};

    use super::*;

    const GIB: u64 = 1 << 30;

    fn base() -> Inventory {
        let mut inv = Inventory::default();
        inv.resources.cpus = 8;
        inv.resources.memory_total_bytes = 100 * GIB;
        inv.resources.memory_used_bytes = 50 * GIB;
        inv.resources.load_milli = [2000, 1500, 1000];
        inv.resources.disks = vec![DiskUsage {
            mount: "/".into(),
            total_bytes: 100 * GIB,
            available_bytes: 40 * GIB,
        }];
        inv.pve.cpus = 8;
        inv.pve.memory_total_bytes = 100 * GIB;
        inv.pve.memory_used_bytes = 50 * GIB;
        inv.pve.uptime_secs = 1000;
        inv.storages = vec![StorageInfo {
            id: "local-lvm".into(),
            total_bytes: 500 * GIB,
            available_bytes: 300 * GIB,
            ..StorageInfo::default()
        }];
        inv.vms = vec![ObservedVm {
            vmid: 100,
            status: "running".into(),
            ..ObservedVm::default()
        }];
        inv
    }

    #[test]
    fn change_detection_table() {
        let t0 = Instant::now();
        let sent = SentInventory {
            inventory: base(),
            at: t0,
        };
        let soon = t0 + Duration::from_secs(1);
        type Edit = fn(&mut Inventory);
        let table: &[(&str, Edit, bool)] = &[
            ("nothing changed", |_| {}, false),
            ("uptime only", |i| i.pve.uptime_secs += 100, false),
            (
                "memory +4%",
                |i| i.resources.memory_used_bytes += 4 * GIB,
                false,
            ),
            (
                "memory +6%",
                |i| i.resources.memory_used_bytes += 6 * GIB,
                true,
            ),
            (
                "memory -6%",
                |i| i.resources.memory_used_bytes -= 6 * GIB,
                true,
            ),
            (
                "pve memory +6%",
                |i| i.pve.memory_used_bytes += 6 * GIB,
                true,
            ),
            (
                "load 2.0 -> 2.4",
                |i| i.resources.load_milli[0] = 2400,
                false,
            ),
            (
                "load 2.0 -> 2.6",
                |i| i.resources.load_milli[0] = 2600,
                true,
            ),
            (
                "load 15m 1.0 -> 0.7",
                |i| i.resources.load_milli[2] = 700,
                true,
            ),
            (
                "storage free -0.5 GiB",
                |i| i.storages[0].available_bytes -= GIB / 2,
                false,
            ),
            (
                "storage free -2 GiB",
                |i| i.storages[0].available_bytes -= 2 * GIB,
                true,
            ),
            (
                "disk free +2 GiB",
                |i| i.resources.disks[0].available_bytes += 2 * GIB,
                true,
            ),
            ("vm stopped", |i| i.vms[0].status = "stopped".into(), true),
            ("vm gone", |i| i.vms.clear(), true),
            (
                "template added",
                |i| {
                    i.templates.push(TemplateInfo {
                        vmid: 9000,
                        name: "t".into(),
                    })
                },
                true,
            ),
            (
                "bridge added",
                |i| _ = i.bridges.insert("vmbr1".into()),
                true,
            ),
            ("storage size", |i| i.storages[0].total_bytes += 1, true),
        ];
        for (what, edit, expected) in table {
            let mut current = base();
            edit(&mut current);
            assert_eq!(
                worth_sending(Some(&sent), &current, soon),
                *expected,
                "{what}"
            );
        }
    }

    #[test]
    fn the_first_inventory_and_a_stale_one_are_always_sent() {
        let t0 = Instant::now();
        assert!(worth_sending(None, &base(), t0));
        let sent = SentInventory {
            inventory: base(),
            at: t0,
        };
        assert!(!worth_sending(Some(&sent), &base(), t0 + REFRESH_AFTER / 2));
        assert!(worth_sending(Some(&sent), &base(), t0 + REFRESH_AFTER));
    }

    #[test]
    fn an_idle_host_load_jitter_is_not_news() {
        assert!(!load_moved(100, 300));
        assert!(load_moved(100, 1300));
        assert!(!load_moved(4000, 4900));
        assert!(load_moved(4000, 5100));
    }
}
