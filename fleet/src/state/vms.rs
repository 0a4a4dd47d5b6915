//! VM records: apply (create or update by name, generation bumped only on a real change),
//! delete (immediate, or marked until the VM is gone), release, placement and observed status.

use protocol::NodeId;
use protocol::admin::ApplyOutcome;
use protocol::fleet::{
    AllocationOwner, Assignment, EventKind, HostState, UnixMillis, VmRecord, VmStatus,
};
use protocol::spec::{
    Cidr, DesiredState, NicIp, RuleParty, SpecError, VmSpec, together_group, validate_spec,
};

use super::{CommandReply, FleetState, StateError};

pub(super) fn not_found(kind: EventKind, name: impl Into<String>) -> StateError {
    StateError::NotFound {
        kind,
        name: name.into(),
    }
}

/// "a defined pool: a, b" or "a defined pool (none is defined yet)".
pub(super) fn defined<'a>(what: &str, names: impl Iterator<Item = &'a String>) -> String {
    let names: Vec<&str> = names.map(String::as_str).collect();
    if names.is_empty() {
        format!("a defined {what} (none is defined yet)")
    } else {
        format!("a defined {what}: {}", names.join(", "))
    }
}

impl FleetState {
    /// Changes only the desired power state of a VM, through [`FleetState::put_vm`] so the
    /// generation and the event follow the same rules as an apply. An HA request of `started`
    /// or `stopped` follows the power (`ha-manager` does so for `qm start|stop` of an HA
    /// guest); `disabled` and `ignored` stay, so starting a disabled VM is refused by
    /// validation, naming `ha.state`. (A v1 entry's spec is always `started`/`stopped`
    /// matching its power or not HA, so a v1 member, which has no such field, computes the
    /// same state.)
    pub(super) fn set_vm_state(
        &mut self,
        name: &str,
        state: DesiredState,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let rec = self
            .vms
            .get(name)
            .ok_or_else(|| not_found(EventKind::Vm, name.to_string()))?;
        let mut spec = rec.spec.clone();
        spec.state = state;
        spec.ha = spec.ha.following(state);
        self.put_vm(spec, now)
    }

    pub(super) fn put_vm(
        &mut self,
        spec: VmSpec,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        validate_spec(&spec)?;
        self.check_vm_references(&spec)?;
        self.check_affinity(&spec)?;
        let name = spec.name.clone();
        let (outcome, generation) = match self.vms.get_mut(&name) {
            Some(rec) if rec.deleting => {
                return Err(StateError::Conflict(format!(
                    "VM {name:?} is being deleted; apply it again once it is gone"
                )));
            }
            Some(rec) if rec.spec == spec => {
                return Ok(applied(ApplyOutcome::Unchanged, rec.generation));
            }
            Some(rec) => {
                rec.spec = spec;
                rec.generation += 1;
                rec.updated_at = now;
                (ApplyOutcome::Updated, rec.generation)
            }
            None => {
                self.vms.insert(
                    name.clone(),
                    VmRecord {
                        spec,
                        generation: 1,
                        created_at: now,
                        updated_at: now,
                        deleting: false,
                        assignment: Assignment::default(),
                        status: VmStatus::default(),
                    },
                );
                (ApplyOutcome::Created, 1)
            }
        };
        self.info(
            now,
            EventKind::Vm,
            &name,
            format!("spec {outcome} (generation {generation})"),
        );
        Ok(applied(outcome, generation))
    }

    /// Checks what a spec refers to: its pools and range exist, and its static addresses
    /// collide with no pool range, VIP or other VM.
    /// Refuses a spec whose affinity rules cannot all hold with the other VMs': within the
    /// group that affinity rules tie it to (transitively, as overlapping positive rules form
    /// one group), no two VMs may be kept apart. Names both rules.
    fn check_affinity(&self, spec: &VmSpec) -> Result<(), StateError> {
        // Only positive rules group VMs: without any (the common case), the group is the VM
        // alone and nothing can contradict. Checked first, without gathering every other
        // spec, which made applying n VMs cost n² work.
        let grouped = |s: &VmSpec| !s.placement.together_with.is_empty();
        if !grouped(spec) && !self.vms.values().any(|r| !r.deleting && grouped(&r.spec)) {
            return Ok(());
        }
        let others: Vec<&VmSpec> = self
            .vms
            .values()
            .filter(|r| r.spec.name != spec.name && !r.deleting)
            .map(|r| &r.spec)
            .collect();
        let mut group: Vec<&VmSpec> = vec![spec];
        group.extend(together_group(spec, &others));
        for (a, first) in group.iter().enumerate() {
            for second in &group[a + 1..] {
                let (x, y) = (RuleParty::of(first), RuleParty::of(second));
                if let Some(apart) = x.apart(&y) {
                    let names: Vec<&str> = group.iter().map(|g| g.name.as_str()).collect();
                    return Err(StateError::Conflict(format!(
                        "VM {:?} cannot be placed with these affinity rules: {} must be on \
                         one host by placement.together_with ({}), but {apart} keeps {} and \
                         {} apart; remove one of the rules",
                        spec.name,
                        names.join(", "),
                        x.together(&y)
                            .unwrap_or_else(|| "through the other VMs of the group".into()),
                        first.name,
                        second.name,
                    )));
                }
            }
        }
        Ok(())
    }

    fn check_vm_references(&self, spec: &VmSpec) -> Result<(), StateError> {
        for (i, pool) in spec.pool_nics() {
            if !self.ip_pools.contains_key(pool) {
                return Err(SpecError::text(
                    format!("nics[{i}].ip.pool"),
                    pool,
                    defined("IP pool", self.ip_pools.keys()),
                )
                .into());
            }
        }
        if let Some(range) = &spec.vmid_range
            && !self.vmid_ranges.contains_key(range)
        {
            return Err(SpecError::text(
                "vmid_range",
                range,
                defined("VMID range", self.vmid_ranges.keys()),
            )
            .into());
        }
        for (i, nic) in spec.nics.iter().enumerate() {
            let Some(NicIp::Static { address, .. }) = &nic.ip else {
                continue;
            };
            let field = format!("nics[{i}].ip.static.address");
            let Ok(cidr) = address.parse::<Cidr>() else {
                continue; // validate_spec refused it already
            };
            let ip = cidr.address();
            if let Some((pool, bounds)) = self.pool_range_containing(ip, None) {
                return Err(SpecError::text(
                    field,
                    address,
                    format!(
                        "an address outside every pool's range (pool {pool} hands out {}-{})",
                        bounds.start, bounds.end
                    ),
                )
                .into());
            }
            if let Some(vip) = self.vip_with_address(ip, None) {
                return Err(SpecError::text(
                    field,
                    address,
                    format!("an address not held by VIP {vip}"),
                )
                .into());
            }
            if let Some(other) = self
                .vms
                .values()
                .find(|r| r.spec.name != spec.name && static_ips(&r.spec).any(|a| a == ip))
            {
                return Err(StateError::Conflict(format!(
                    "{field} = {address:?}: {ip} is already the static address of VM {:?}",
                    other.spec.name
                )));
            }
        }
        Ok(())
    }

    pub(super) fn delete_vm(
        &mut self,
        name: &str,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let rec = self
            .vms
            .get_mut(name)
            .ok_or_else(|| not_found(EventKind::Vm, name))?;
        if rec.spec.protection {
            return Err(StateError::Conflict(format!(
                "VM {name:?} is protected (protection = true): apply it with protection = false first"
            )));
        }
        if rec.deleting {
            return Ok(CommandReply::VmDeleted { removed: false });
        }
        if rec.assignment.vmid.is_none() && rec.assignment.ips.is_empty() {
            self.vms.remove(name);
            self.info(
                now,
                EventKind::Vm,
                name,
                "deleted (it held no VMID: nothing to destroy)",
            );
            return Ok(CommandReply::VmDeleted { removed: true });
        }
        rec.deleting = true;
        rec.updated_at = now;
        self.info(
            now,
            EventKind::Vm,
            name,
            "deletion requested: the VM is destroyed on its host, then its VMID and addresses are released",
        );
        Ok(CommandReply::VmDeleted { removed: false })
    }

    pub(super) fn release_vm(
        &mut self,
        name: &str,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let rec = self
            .vms
            .get(name)
            .ok_or_else(|| not_found(EventKind::Vm, name))?;
        if !rec.deleting {
            return Err(StateError::Conflict(format!(
                "VM {name:?} is not being deleted: delete it before releasing its ids"
            )));
        }
        let owner = AllocationOwner::Vm(name.to_string());
        let mut released = Vec::new();
        if let Some(vmid) = rec.assignment.vmid {
            for range in self.vmid_ranges.values_mut() {
                if range
                    .allocations
                    .get(&vmid)
                    .is_some_and(|a| a.owner == owner)
                {
                    range.allocations.remove(&vmid);
                    released.push(format!("VMID {vmid}"));
                }
            }
        }
        for nic in &rec.assignment.ips {
            if let Some(pool) = self.ip_pools.get_mut(&nic.pool)
                && pool
                    .allocations
                    .get(&nic.address)
                    .is_some_and(|a| a.owner == owner)
            {
                pool.allocations.remove(&nic.address);
                released.push(nic.address.to_string());
            }
        }
        self.vms.remove(name);
        self.recoveries.remove(name);
        self.start_failures.remove(name);
        self.migrations.remove(name);
        self.homes.remove(name);
        self.drain_failed_at.remove(name);
        let what = if released.is_empty() {
            "nothing".to_string()
        } else {
            released.join(", ")
        };
        self.info(
            now,
            EventKind::Vm,
            name,
            format!("gone from its host: released {what}"),
        );
        Ok(CommandReply::Done)
    }

    pub(super) fn schedule_vm(
        &mut self,
        name: &str,
        host: Option<NodeId>,
        expected: Option<NodeId>,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let host_name = match host {
            Some(id) => {
                let h = self
                    .hosts
                    .get(&id)
                    .ok_or_else(|| not_found(EventKind::Host, id.to_string()))?;
                if h.state != HostState::Online {
                    return Err(StateError::Conflict(format!(
                        "host {} ({id}) is {}: only an online host takes VMs",
                        h.name, h.state
                    )));
                }
                Some(format!("{} ({id})", h.name))
            }
            None => None,
        };
        let rec = self
            .vms
            .get_mut(name)
            .ok_or_else(|| not_found(EventKind::Vm, name))?;
        if rec.deleting && host.is_some() {
            return Err(StateError::Conflict(format!(
                "VM {name:?} is being deleted"
            )));
        }
        if rec.assignment.host != expected {
            return Err(StateError::Conflict(format!(
                "VM {name:?} is placed on {}, not on {} as the proposer saw",
                show_host(rec.assignment.host),
                show_host(expected)
            )));
        }
        if rec.assignment.host == host {
            return Ok(CommandReply::Done);
        }
        rec.assignment.host = host;
        let message = match host_name {
            Some(h) => format!("scheduled on host {h}"),
            None => "unscheduled".to_string(),
        };
        self.info(now, EventKind::Vm, name, message);
        Ok(CommandReply::Done)
    }

    pub(super) fn set_vm_status(
        &mut self,
        name: &str,
        mut status: VmStatus,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let rec = self
            .vms
            .get_mut(name)
            .ok_or_else(|| not_found(EventKind::Vm, name))?;
        status.updated_at = now;
        rec.status = status;
        Ok(CommandReply::Done)
    }
}

fn applied(outcome: ApplyOutcome, generation: u64) -> CommandReply {
    CommandReply::VmApplied {
        outcome,
        generation,
    }
}

fn show_host(host: Option<NodeId>) -> String {
    host.map_or_else(|| "no host".to_string(), |id| format!("host {id}"))
}

/// The static addresses a spec sets on its NICs.
pub(super) fn static_ips(spec: &VmSpec) -> impl Iterator<Item = std::net::IpAddr> + '_ {
    spec.nics.iter().filter_map(|nic| match &nic.ip {
        Some(NicIp::Static { address, .. }) => address.parse::<Cidr>().ok().map(|c| c.address()),
        _ => None,
    })
}
