//! `PUT .../{vmid}/resize` (`resize_vm`): a `resize` task whose checks all run in the worker
//! (digest, lock, disk exists, not a CD-ROM, grow only; same size is a no-op `TASK OK`).

use std::sync::Arc;

use crate::cluster::drive::{Drive, split_volid};
use crate::cluster::inner::Inner;
use crate::cluster::request::{node, root_only, upid_reply, vmid};
use crate::cluster::state::State;
use crate::cluster::tasks::job::{Job, JobCx, TaskOwner};
use crate::cluster::vm::{check_lock, conf_missing};
use crate::{ApiError, Caller, Params, Reply};

/// `PUT .../resize`.
pub(crate) fn resize(cx: &Arc<Inner>, p: &Params, caller: &Caller) -> Result<Reply, ApiError> {
    let node = node(p)?;
    let vmid = vmid(p)?;
    root_only(p, caller, &["skiplock"])?;
    let job = ResizeJob {
        node: node.to_string(),
        vmid,
        disk: p.req("disk")?.to_string(),
        size: p.req("size")?.to_string(),
        digest: p.get("digest").map(str::to_string),
        skiplock: p.flag("skiplock", false),
        plan: None,
    };
    let mut st = cx.state();
    let owner = TaskOwner {
        node: node.to_string(),
        kind: "resize",
        vmid,
        user: caller.upid_user(),
    };
    Ok(upid_reply(cx.start_task(&mut st, owner, Box::new(job))))
}

/// Resolve `+2G` / `40G` / `1073741824` against the current size.
pub(super) fn new_size(spec: &str, current: u64) -> Option<u64> {
    let (relative, rest) = match spec.strip_prefix('+') {
        Some(r) => (true, r),
        None => (false, spec),
    };
    let (num, mult) = match rest.chars().last()? {
        'K' => (&rest[..rest.len() - 1], 1024f64),
        'M' => (&rest[..rest.len() - 1], 1024f64 * 1024.0),
        'G' => (&rest[..rest.len() - 1], 1024f64 * 1024.0 * 1024.0),
        'T' => (&rest[..rest.len() - 1], 1024f64 * 1024.0 * 1024.0 * 1024.0),
        _ => (rest, 1.0),
    };
    let v: f64 = num.parse().ok()?;
    let bytes = v * mult + if relative { current as f64 } else { 0.0 };
    Some(bytes as u64)
}

struct ResizeJob {
    node: String,
    vmid: u32,
    disk: String,
    size: String,
    digest: Option<String>,
    skiplock: bool,
    /// (volid, old size, new size)
    plan: Option<(String, u64, u64)>,
}

impl ResizeJob {
    fn check(&self, st: &State) -> Result<(String, u64, u64), String> {
        let vm = st
            .vm_on(&self.node, self.vmid)
            .ok_or_else(|| conf_missing(&self.node, self.vmid))?;
        if let Some(d) = self.digest.as_deref().filter(|d| !d.is_empty())
            && d != vm.conf.digest()
        {
            return Err("checksum mismatch (file change by other user?)".into());
        }
        if !self.skiplock {
            check_lock(&vm.conf)?;
        }
        let value = vm
            .conf
            .get(&self.disk)
            .ok_or_else(|| format!("disk '{}' does not exist", self.disk))?;
        let drive = Drive::parse(value)
            .ok_or_else(|| format!("disk '{}' has no associated volume", self.disk))?;
        if drive.is_cdrom() {
            return Err("you can't resize a cdrom".into());
        }
        let current = st
            .storages
            .find(&drive.file, &self.node)
            .map(|v| v.size)
            .or(drive.size());
        let current = current.ok_or_else(|| {
            format!(
                "Could not determine current size of volume '{}'",
                drive.file
            )
        })?;
        let new = new_size(&self.size, current).ok_or("internal error")?;
        if new < current {
            return Err("shrinking disks is not supported".into());
        }
        Ok((drive.file, current, new))
    }
}

impl Job for ResizeJob {
    fn begin(&mut self, cx: &mut JobCx<'_>) -> Result<f64, String> {
        let plan = self.check(cx.st)?;
        let secs = if plan.1 == plan.2 { 0.0 } else { 0.5 };
        self.plan = Some(plan);
        Ok(secs)
    }

    fn finish(&mut self, cx: &mut JobCx<'_>) -> Result<(), String> {
        let (volid, old, new) = self.check(cx.st)?;
        if old == new {
            return Ok(());
        }
        let kind = split_volid(&volid)
            .and_then(|(s, _)| cx.st.storages.def(s))
            .map(|s| s.kind.clone());
        let name = split_volid(&volid)
            .map_or(volid.as_str(), |(_, n)| n)
            .to_string();
        match kind.as_deref() {
            Some("lvmthin") | Some("lvm") => {
                cx.log.line(format!(
                    "  Size of logical volume pve/{name} changed from {:.2} GiB to {:.2} GiB.",
                    old as f64 / f64::from(1u32 << 30),
                    new as f64 / f64::from(1u32 << 30)
                ));
                cx.log
                    .line(format!("  Logical volume pve/{name} successfully resized."));
            }
            Some("rbd") => cx.log.line("Resizing image: 100% complete...done."),
            _ => cx.log.line("Image resized.".to_string()),
        }
        cx.st.storages.set_size(&volid, &self.node, new);
        if let Some(vm) = cx.st.vms.get_mut(&self.vmid)
            && let Some(mut d) = vm.conf.get(&self.disk).and_then(Drive::parse)
        {
            d.set_size(new);
            vm.conf.set(&self.disk, d.print());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_absolute_or_relative() {
        let g = 1u64 << 30;
        assert_eq!(new_size("+2G", 8 * g), Some(10 * g));
        assert_eq!(new_size("40G", 8 * g), Some(40 * g));
        assert_eq!(new_size("1024", 8 * g), Some(1024));
        assert_eq!(new_size("+0.5G", g), Some(g + g / 2));
        assert_eq!(new_size("+1T", 0), Some(1 << 40));
        assert_eq!(new_size("x", 0), None);
    }
}
