//! The cloud-init part of the plan: a cloud-init drive when the VM has none, `ciuser`,
//! `sshkeys` (compared decoded: PVE stores them URL-encoded), `ipconfigN`, `nameserver`,
//! `searchdomain`, and `cicustom` pointing at the VM's user-data snippet (removed again when
//! the spec drops its user data, but only when it is the fleet's own snippet).

use pve::props::{Disk, DiskBus, Media};

use super::builder::Builder;
use crate::ops::desired::{DesiredVm, snippet_file};
use crate::ops::plan_error::PlanError;

/// A cloud-init drive: `local-lvm:vm-101-cloudinit`, `local:101/vm-101-cloudinit.qcow2`.
fn is_cloudinit_drive(disk: &Disk) -> bool {
    let stem = |volid: &str| {
        let file = volid.rsplit(['/', ':']).next().unwrap_or(volid);
        file.split_once('.')
            .map_or(file, |(stem, _)| stem)
            .to_string()
    };
    disk.is_cdrom()
        && disk
            .volid()
            .map(stem)
            .is_some_and(|s| s == "cloudinit" || s.ends_with("-cloudinit"))
}

/// Where to attach a cloud-init drive: `ide2` as PVE's UI does, else the first free IDE or
/// SATA slot.
fn cloudinit_slot(b: &Builder<'_>, d: &DesiredVm) -> Option<(DiskBus, u8)> {
    let taken = |bus: DiskBus, n: u8| {
        b.current.disk(bus, n).is_some() || d.disks.iter().any(|x| x.bus == bus && x.index == n)
    };
    std::iter::once((DiskBus::Ide, 2))
        .chain((0..=3).map(|n| (DiskBus::Ide, n)))
        .chain((0..=5).map(|n| (DiskBus::Sata, n)))
        .find(|(bus, n)| !taken(*bus, *n))
}

/// `sshkeys` as the lines it stands for (PVE stores it URL-encoded).
fn key_lines(text: &str) -> Vec<String> {
    percent_decode(text)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(v)) => {
                out.push(v);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn words(text: Option<String>) -> Vec<String> {
    text.unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

pub(super) fn cloud_init(b: &mut Builder<'_>, d: &DesiredVm) -> Result<(), PlanError> {
    let own_snippet = format!("snippets/{}", snippet_file(&d.name));
    let Some(ci) = &d.cloud_init else {
        if b.text("cicustom").is_some_and(|c| c.contains(&own_snippet)) {
            b.plan.delete.push("cicustom".into());
        }
        return Ok(());
    };
    let has_drive = b
        .current
        .disks()
        .into_iter()
        .any(|(_, _, disk)| disk.is_ok_and(|disk| is_cloudinit_drive(&disk)));
    if !has_drive {
        let storage = b.helper_storage(d, "the cloud-init drive")?;
        let (bus, n) = cloudinit_slot(b, d).ok_or_else(|| PlanError::SlotTaken {
            slot: "ide0-3, sata0-5".into(),
            holds: "other drives (no free slot for the cloud-init drive)".into(),
        })?;
        let drive = Disk {
            media: Some(Media::Cdrom),
            ..Disk::volume(&format!("{storage}:cloudinit"))
        };
        b.set_via(&format!("{}{n}", bus.prefix()), |c| c.disk(bus, n, &drive))?;
    }
    if let Some(user) = &ci.user
        && b.text("ciuser").as_deref() != Some(user.as_str())
    {
        b.set_via("ciuser", |c| c.ciuser(user))?;
    }
    if !ci.ssh_keys.is_empty() {
        let want: Vec<String> = ci.ssh_keys.iter().map(|k| k.trim().to_string()).collect();
        if b.text("sshkeys").as_deref().map(key_lines) != Some(want.clone()) {
            b.set_via("sshkeys", |c| c.sshkeys(&want.join("\n")))?;
        }
    }
    for (n, want) in &ci.ipconfig {
        let now = b.current.ipconfig(*n).and_then(Result::ok);
        if now.as_ref() != Some(want) {
            b.set_via(&format!("ipconfig{n}"), |c| c.ipconfig(*n, want))?;
        }
    }
    if !ci.nameservers.is_empty() {
        let want: Vec<String> = ci.nameservers.iter().map(|s| s.to_string()).collect();
        if words(b.text("nameserver")) != want {
            b.set_via("nameserver", |c| c.nameserver(&ci.nameservers))?;
        }
    }
    if let Some(domain) = &ci.searchdomain
        && words(b.text("searchdomain")) != [domain.clone()]
    {
        b.set_via("searchdomain", |c| c.searchdomain(&[domain]))?;
    }
    match &ci.user_snippet {
        Some(volid) => {
            let want = format!("user={volid}");
            if b.text("cicustom").as_deref() != Some(want.as_str()) {
                b.set_via("cicustom", |c| c.cicustom(&want))?;
            }
        }
        None => {
            if b.text("cicustom").is_some_and(|c| c.contains(&own_snippet)) {
                b.plan.delete.push("cicustom".into());
            }
        }
    }
    Ok(())
}
