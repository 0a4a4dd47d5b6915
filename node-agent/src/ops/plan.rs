//! The configure plan, a pure function: the [`DesiredVm`] against the config PVE has now →
//! the keys to set, the keys to delete, the disks to grow, and which of those changes a running
//! VM cannot take live (they stay pending until a restart).
//!
//! Values are compared the way PVE means them, not as text: a NIC keeps the MAC PVE generated,
//! a disk keeps its volume and only grows, tags compare as sets, absent keys count as PVE's
//! defaults (`cores` 1, `memory` 512, `bios` seabios, ...). Applying a plan and planning again
//! gives an empty plan.

use pve::calls::Bios;
use pve::props::{Discard, Disk, DiskCache, NetDevice};
use pve::types::VmConfig;

use super::desired::{DesiredDisk, DesiredNic, DesiredVm};
use super::hotplug::applies_live;
use super::notes;
use builder::Builder;

mod builder;
mod cloud_init;
mod config_plan;

pub use super::plan_error::PlanError;
pub use config_plan::{ConfigPlan, Resize};

const GIB: u64 = 1 << 30;
/// PVE's defaults for keys a config may omit.
const DEFAULT_MEMORY_MIB: u64 = 512;

fn bad(key: &str, e: impl std::fmt::Display) -> PlanError {
    PlanError::Invalid {
        field: key.to_string(),
        reason: format!("cannot read the current value: {e}"),
    }
}

/// The plan to turn `current` into `desired`; `running` marks what will stay pending.
pub fn plan(
    desired: &DesiredVm,
    current: &VmConfig,
    running: bool,
) -> Result<ConfigPlan, PlanError> {
    let mut b = Builder {
        current,
        plan: ConfigPlan::default(),
    };
    general(&mut b, desired)?;
    hardware(&mut b, desired)?;
    nics(&mut b, &desired.nics)?;
    disks(&mut b, &desired.disks)?;
    efi_disk(&mut b, desired)?;
    cloud_init::cloud_init(&mut b, desired)?;
    if running {
        let hotplug = current.get_str("hotplug");
        let keys = b.plan.set.keys().chain(&b.plan.delete);
        let pending: Vec<String> = keys
            .filter(|k| !applies_live(k, hotplug.as_deref()))
            .cloned()
            .collect();
        b.plan.needs_restart = pending;
    }
    Ok(b.plan)
}

fn general(b: &mut Builder<'_>, d: &DesiredVm) -> Result<(), PlanError> {
    b.set_if("name", b.text("name").as_deref() != Some(&d.name), || {
        d.name.clone()
    });
    let now = b.current.description();
    let notes =
        notes::desired_description(now.as_deref(), &d.description, &d.name, d.generation, d.ha);
    let same = now.as_deref().map(str::trim_end) == Some(notes.trim_end());
    if !same {
        b.set_via("description", |c| c.description(&notes))?;
    }
    let mut tags: Vec<String> = b
        .current
        .tags()
        .map_err(|e| bad("tags", e))?
        .iter()
        .map(|t| t.to_lowercase())
        .collect();
    tags.sort();
    tags.dedup();
    if tags != d.tags {
        b.set_via("tags", |c| c.tags(&d.tags))?;
    }
    let onboot = b.current.onboot();
    b.set_if("onboot", onboot != d.onboot, || flag(d.onboot));
    let protection = b.current.protection();
    b.set_if("protection", protection != d.protection, || {
        flag(d.protection)
    });
    let agent = match b.current.agent() {
        Some(Ok(a)) => Some(a),
        Some(Err(_)) | None => None,
    };
    if agent.as_ref().is_some_and(|a| a.enabled) != d.agent {
        let mut next = agent.unwrap_or_default();
        next.enabled = d.agent;
        b.set_via("agent", |c| c.agent(&next))?;
    }
    Ok(())
}

fn flag(on: bool) -> String {
    if on { "1" } else { "0" }.to_string()
}

/// The CPU model of a `cpu` value (`host`, `cputype=host,flags=+aes`).
fn cpu_type(value: &str) -> Option<&str> {
    value
        .split(',')
        .find_map(|part| match part.split_once('=') {
            None => Some(part),
            Some(("cputype", t)) => Some(t),
            Some(_) => None,
        })
}

fn hardware(b: &mut Builder<'_>, d: &DesiredVm) -> Result<(), PlanError> {
    let cores = b.current.cores().map_err(|e| bad("cores", e))?.unwrap_or(1);
    if cores != u64::from(d.cores) {
        b.set_via("cores", |c| c.cores(d.cores))?;
    }
    let sockets = b
        .current
        .sockets()
        .map_err(|e| bad("sockets", e))?
        .unwrap_or(1);
    if sockets != u64::from(d.sockets) {
        b.set_via("sockets", |c| c.sockets(d.sockets))?;
    }
    let memory = b
        .current
        .memory_mib()
        .map_err(|e| bad("memory", e))?
        .unwrap_or(DEFAULT_MEMORY_MIB);
    if memory != d.memory_mib {
        b.set_via("memory", |c| c.memory_mib(d.memory_mib))?;
    }
    if let Some(want) = d.balloon_mib {
        let now = b.current.balloon().map_err(|e| bad("balloon", e))?;
        if now != Some(want) {
            b.set_via("balloon", |c| c.balloon_mib(want))?;
        }
    }
    if let Some(want) = &d.cpu {
        let now = b.text("cpu");
        if now.as_deref().and_then(cpu_type) != Some(want.as_str()) {
            b.set_via("cpu", |c| c.cpu(want))?;
        }
    }
    if let Some(want) = &d.machine
        && b.text("machine").as_deref() != Some(want.as_str())
    {
        b.set_via("machine", |c| c.machine(want))?;
    }
    let wanted = [
        ("bios", "seabios", d.bios.map(|v| v.as_str())),
        ("scsihw", "lsi", d.scsihw.map(|v| v.as_str())),
        ("ostype", "other", d.ostype.map(|v| v.as_str())),
    ];
    for (key, default, want) in wanted {
        let now = b.text(key).unwrap_or_else(|| default.to_string());
        if let Some(want) = want
            && now != want
        {
            b.set(key, want.to_string());
        }
    }
    Ok(())
}

fn nics(b: &mut Builder<'_>, want: &[DesiredNic]) -> Result<(), PlanError> {
    for (i, nic) in want.iter().enumerate() {
        let n = u8::try_from(i).map_err(|_| bad("net", "too many NICs"))?;
        let key = format!("net{n}");
        let now = b.current.net(n).and_then(Result::ok);
        let differs = now.as_ref().is_none_or(|dev| {
            dev.model != nic.model
                || dev.bridge.as_deref() != Some(nic.bridge.as_str())
                || dev.tag != nic.vlan
                || dev.firewall.unwrap_or(false) != nic.firewall
                || nic.mac.is_some_and(|m| dev.macaddr != Some(m))
                || nic.mtu.is_some_and(|m| dev.mtu != Some(m))
        });
        if !differs {
            continue;
        }
        let mut dev = now.unwrap_or_else(|| NetDevice::new(nic.model));
        dev.model = nic.model;
        dev.macaddr = nic.mac.or(dev.macaddr);
        dev.bridge = Some(nic.bridge.clone());
        dev.tag = nic.vlan;
        dev.firewall = (nic.firewall || dev.firewall.is_some()).then_some(nic.firewall);
        dev.mtu = nic.mtu.or(dev.mtu);
        b.set_via(&key, |c| c.net(n, &dev))?;
    }
    // A declared NIC list is the whole list; an empty one leaves the template's NICs alone.
    if !want.is_empty() {
        for (n, _) in b.current.nets() {
            if usize::from(n) >= want.len() {
                b.plan.delete.push(format!("net{n}"));
            }
        }
    }
    Ok(())
}

fn disk_options_differ(now: &Disk, want: &DesiredDisk) -> bool {
    now.ssd.unwrap_or(false) != want.ssd
        || (now.discard == Some(Discard::On)) != want.discard
        || now.iothread.unwrap_or(false) != want.iothread
        || want
            .cache
            .is_some_and(|c| now.cache.unwrap_or(DiskCache::None) != c)
}

fn with_options(mut disk: Disk, want: &DesiredDisk) -> Disk {
    disk.ssd = want.ssd.then_some(true);
    disk.discard = want.discard.then_some(Discard::On);
    disk.iothread = want.iothread.then_some(true);
    if let Some(c) = want.cache {
        disk.cache = Some(c);
    }
    disk
}

fn disks(b: &mut Builder<'_>, want: &[DesiredDisk]) -> Result<(), PlanError> {
    for d in want {
        let key = d.key();
        let size = d.size_gib * GIB;
        match b.current.disk(d.bus, d.index) {
            Some(Err(e)) => return Err(bad(&key, e)),
            Some(Ok(now)) if now.is_cdrom() => {
                return Err(PlanError::SlotTaken {
                    slot: key,
                    holds: format!(
                        "a CD-ROM ({})",
                        now.to_property_string().unwrap_or_default()
                    ),
                });
            }
            Some(Ok(now)) => {
                if let Some(current) = now.size {
                    if size < current {
                        return Err(PlanError::Shrink {
                            slot: key,
                            current_gib: current.div_ceil(GIB),
                            desired_gib: d.size_gib,
                        });
                    }
                    if size > current {
                        b.plan.resizes.push(Resize {
                            slot: key.clone(),
                            from_bytes: current,
                            to_bytes: size,
                        });
                    }
                }
                if disk_options_differ(&now, d) {
                    let next = with_options(now, d);
                    b.set_via(&key, |c| c.disk(d.bus, d.index, &next))?;
                }
            }
            None => {
                let storage = d.storage.clone().ok_or_else(|| PlanError::NoStorage {
                    what: format!("disk {key}"),
                })?;
                let next = with_options(Disk::new_volume(&storage, d.size_gib), d);
                b.set_via(&key, |c| c.disk(d.bus, d.index, &next))?;
            }
        }
    }
    Ok(())
}

fn efi_disk(b: &mut Builder<'_>, d: &DesiredVm) -> Result<(), PlanError> {
    if d.bios != Some(Bios::Ovmf) || b.text("efidisk0").is_some() {
        return Ok(());
    }
    let storage = b.helper_storage(d, "the EFI disk of bios = \"ovmf\"")?;
    b.set(
        "efidisk0",
        format!("{storage}:1,efitype=4m,pre-enrolled-keys=0"),
    );
    Ok(())
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
