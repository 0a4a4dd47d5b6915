//! A whole fleet file as one write ([`Command::ApplyFleet`]): every entry goes through the
//! handler its own command uses (same validation, same events), in the file's dependency
//! order, on a copy of the state; the copy replaces the state only if every entry was
//! accepted. A refusal names the entry and leaves the state as it was, so an apply is never
//! half done.
//!
//! ```text
//!  pools ─▶ VMID ranges ─▶ VIPs ─▶ settings ─▶ groups' surplus members deleted ─▶ VMs
//!     (on a copy)   any refusal ─▶ StateError::Entry { kind, name, why } ─▶ state unchanged
//!                   all accepted ─▶ copy becomes the state ─▶ FleetApplied (outcome per entry)
//! ```
//!
//! [`Command::ApplyFleet`]: super::Command::ApplyFleet

use std::collections::BTreeSet;

use protocol::admin::{ApplyOutcome, FleetApply, FleetApplyReply, MemberDeleted, VmApplyReply};
use protocol::fleet::UnixMillis;

use super::{CommandReply, FleetState, StateError};

/// The refusal of entry `name` of kind `kind`.
fn entry(kind: &str, name: &str) -> impl Fn(StateError) -> StateError {
    move |error| StateError::Entry {
        kind: kind.to_string(),
        name: name.to_string(),
        error: Box::new(error),
    }
}

/// Refuses a name given twice within one kind: the second would silently replace the first.
fn unique<'a>(kind: &str, names: impl Iterator<Item = &'a String>) -> Result<(), StateError> {
    let mut seen = BTreeSet::new();
    for name in names {
        if !seen.insert(name) {
            return Err(entry(kind, name)(StateError::Conflict(format!(
                "{kind} {name:?} is given twice in one apply"
            ))));
        }
    }
    Ok(())
}

/// The outcome of a pool, range, VIP or settings reply (their handlers answer nothing else).
fn outcome(kind: &str, name: &str, reply: CommandReply) -> Result<ApplyOutcome, StateError> {
    match reply {
        CommandReply::Applied { outcome } => Ok(outcome),
        other => Err(unexpected(kind, name, &other)),
    }
}

/// A handler answered another kind of reply than it makes: a bug, refused rather than guessed.
fn unexpected(kind: &str, name: &str, reply: &CommandReply) -> StateError {
    entry(kind, name)(StateError::Conflict(format!(
        "unexpected state machine reply {reply:?}"
    )))
}

impl FleetState {
    /// Applies every entry of `request`, or none (see the module documentation).
    pub(super) fn apply_fleet(
        &mut self,
        request: FleetApply,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        unique("pool", request.pools.iter().map(|p| &p.name))?;
        unique("vmid_range", request.vmid_ranges.iter().map(|r| &r.name))?;
        unique("vip", request.vips.iter().map(|v| &v.name))?;
        unique("vm_group", request.groups.iter().map(|(g, _)| g))?;
        unique("vm", request.vms.iter().map(|v| &v.name))?;
        let mut next = self.clone();
        let reply = next.apply_entries(request, now)?;
        *self = next;
        Ok(CommandReply::FleetApplied(reply))
    }

    /// Applies the entries in order, stopping at the first refusal (the caller drops the
    /// partly changed state then).
    fn apply_entries(
        &mut self,
        request: FleetApply,
        now: UnixMillis,
    ) -> Result<FleetApplyReply, StateError> {
        let mut reply = FleetApplyReply::default();
        for spec in request.pools {
            let name = spec.name.clone();
            let done = self.put_pool(spec, now).map_err(entry("pool", &name))?;
            reply.pools.push(outcome("pool", &name, done)?);
        }
        for spec in request.vmid_ranges {
            let name = spec.name.clone();
            let done = self
                .put_vmid_range(spec, now)
                .map_err(entry("vmid_range", &name))?;
            reply.vmid_ranges.push(outcome("vmid_range", &name, done)?);
        }
        for spec in request.vips {
            let name = spec.name.clone();
            let done = self.put_vip(spec, now).map_err(entry("vip", &name))?;
            reply.vips.push(outcome("vip", &name, done)?);
        }
        if let Some(settings) = request.settings {
            let done = self
                .put_settings(settings, now)
                .map_err(entry("settings", "settings"))?;
            reply.settings = Some(outcome("settings", "settings", done)?);
        }
        for (group, replicas) in &request.groups {
            for name in self.surplus_members(group, *replicas) {
                let removed = match self.delete_vm(&name, now).map_err(entry("vm", &name))? {
                    CommandReply::VmDeleted { removed } => removed,
                    other => return Err(unexpected("vm", &name, &other)),
                };
                reply.deleted.push(MemberDeleted { name, removed });
            }
        }
        for spec in request.vms {
            let name = spec.name.clone();
            match self.put_vm(spec, now).map_err(entry("vm", &name))? {
                CommandReply::VmApplied {
                    outcome,
                    generation,
                } => reply.vms.push(VmApplyReply {
                    outcome,
                    generation,
                }),
                other => return Err(unexpected("vm", &name, &other)),
            }
        }
        Ok(reply)
    }

    /// The members of VM group `group` numbered past `replicas` and not being deleted yet,
    /// highest number first (what `vm scale` deletes).
    fn surplus_members(&self, group: &str, replicas: u32) -> Vec<String> {
        let mut members: Vec<(u32, &str)> = self
            .vms
            .values()
            .filter(|r| !r.deleting)
            .filter_map(|r| {
                let g = r.spec.group.as_ref()?;
                (g.group == group && g.index > replicas).then_some((g.index, r.spec.name.as_str()))
            })
            .collect();
        members.sort_unstable_by(|a, b| b.cmp(a));
        members.into_iter().map(|(_, n)| n.to_string()).collect()
    }
}
