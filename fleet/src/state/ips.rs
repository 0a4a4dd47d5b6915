//! IP pools and address allocation: the lowest free address of a pool's range, never its
//! gateway, never one held by anyone else. Pool ranges never overlap each other, VIPs or static
//! NIC addresses, so an address is unique across all pools.

use std::collections::BTreeSet;
use std::net::IpAddr;

use protocol::admin::ApplyOutcome;
use protocol::fleet::{AllocationOwner, EventKind, IpAllocation, IpPool, NicAddress, UnixMillis};
use protocol::spec::{IpPoolSpec, PoolBounds, SpecError, next_ip, validate_ip_pool};

use super::vms::{not_found, static_ips};
use super::{CommandReply, FleetState, StateError};

impl FleetState {
    pub(super) fn allocate_vm_ips(
        &mut self,
        vm: &str,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let rec = self
            .vms
            .get(vm)
            .ok_or_else(|| not_found(EventKind::Vm, vm))?;
        if rec.deleting {
            return Err(StateError::Conflict(format!("VM {vm:?} is being deleted")));
        }
        let mut planned: Vec<NicAddress> = Vec::new();
        let mut taken = BTreeSet::new();
        for (i, pool_name) in rec.spec.pool_nics() {
            let nic = u32::try_from(i).unwrap_or(u32::MAX);
            let has_current = rec
                .assignment
                .ips
                .iter()
                .any(|a| a.nic == nic && a.is_current(&rec.spec));
            if has_current {
                continue;
            }
            let pool = self
                .ip_pools
                .get(pool_name)
                .ok_or_else(|| not_found(EventKind::Pool, pool_name))?;
            let bounds = pool.spec.bounds()?;
            let address = lowest_free(pool, &bounds, &taken)?;
            taken.insert(address);
            planned.push(NicAddress {
                nic,
                pool: pool_name.to_string(),
                address,
                prefix_len: bounds.cidr.prefix_len(),
                gateway: bounds.gateway,
            });
        }
        // Everything was found free: now commit, all or nothing.
        let owner = AllocationOwner::Vm(vm.to_string());
        for a in &planned {
            if let Some(pool) = self.ip_pools.get_mut(&a.pool) {
                pool.allocations.insert(
                    a.address,
                    IpAllocation {
                        owner: owner.clone(),
                        nic: Some(a.nic),
                        at: now,
                    },
                );
            }
        }
        let mut addresses = Vec::new();
        if let Some(rec) = self.vms.get_mut(vm) {
            rec.assignment.ips.extend(planned.iter().cloned());
            rec.assignment.ips.sort_by_key(|a| a.nic);
            addresses = current_ips(rec);
        }
        for a in planned {
            self.info(
                now,
                EventKind::Vm,
                vm,
                format!(
                    "address {}/{} allocated to net{} from pool {}",
                    a.address, a.prefix_len, a.nic, a.pool
                ),
            );
        }
        Ok(CommandReply::Ips { addresses })
    }

    pub(super) fn release_stale_ips(
        &mut self,
        vm: &str,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let rec = self
            .vms
            .get_mut(vm)
            .ok_or_else(|| not_found(EventKind::Vm, vm))?;
        let (current, stale): (Vec<_>, Vec<_>) = std::mem::take(&mut rec.assignment.ips)
            .into_iter()
            .partition(|a| a.is_current(&rec.spec));
        rec.assignment.ips = current;
        let addresses = current_ips(rec);
        let owner = AllocationOwner::Vm(vm.to_string());
        for a in stale {
            if let Some(pool) = self.ip_pools.get_mut(&a.pool)
                && pool
                    .allocations
                    .get(&a.address)
                    .is_some_and(|x| x.owner == owner)
            {
                pool.allocations.remove(&a.address);
            }
            self.info(
                now,
                EventKind::Vm,
                vm,
                format!(
                    "stale address {} (net{}) released to pool {}",
                    a.address, a.nic, a.pool
                ),
            );
        }
        Ok(CommandReply::Ips { addresses })
    }

    pub(super) fn allocate_external_ip(
        &mut self,
        pool_name: &str,
        owner: String,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        if owner.is_empty() || owner.len() > 128 {
            return Err(
                SpecError::text("owner", &owner, "1-128 characters naming the holder").into(),
            );
        }
        let pool = self
            .ip_pools
            .get_mut(pool_name)
            .ok_or_else(|| not_found(EventKind::Pool, pool_name))?;
        let bounds = pool.spec.bounds()?;
        let address = lowest_free(pool, &bounds, &BTreeSet::new())?;
        pool.allocations.insert(
            address,
            IpAllocation {
                owner: AllocationOwner::External(owner.clone()),
                nic: None,
                at: now,
            },
        );
        self.info(
            now,
            EventKind::Pool,
            pool_name,
            format!("address {address} allocated to {owner}"),
        );
        Ok(CommandReply::Ip {
            address,
            prefix_len: bounds.cidr.prefix_len(),
            gateway: bounds.gateway,
        })
    }

    pub(super) fn release_external_ip(
        &mut self,
        pool_name: &str,
        address: IpAddr,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let pool = self
            .ip_pools
            .get_mut(pool_name)
            .ok_or_else(|| not_found(EventKind::Pool, pool_name))?;
        let held = pool
            .allocations
            .get(&address)
            .ok_or_else(|| not_found(EventKind::Pool, format!("{pool_name}/{address}")))?;
        if let AllocationOwner::Vm(vm) = &held.owner {
            return Err(StateError::Conflict(format!(
                "{address} is held by VM {vm:?}: it is released when the VM is gone"
            )));
        }
        pool.allocations.remove(&address);
        self.info(
            now,
            EventKind::Pool,
            pool_name,
            format!("address {address} released"),
        );
        Ok(CommandReply::Done)
    }

    pub(super) fn put_pool(
        &mut self,
        spec: IpPoolSpec,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        validate_ip_pool(&spec)?;
        let bounds = spec.bounds()?;
        self.check_pool_overlaps(&spec, &bounds)?;
        let outcome = match self.ip_pools.get_mut(&spec.name) {
            Some(pool) if pool.spec == spec => {
                return Ok(CommandReply::Applied {
                    outcome: ApplyOutcome::Unchanged,
                });
            }
            Some(pool) => {
                let old = pool.spec.bounds()?;
                if !pool.allocations.is_empty()
                    && (old.cidr != bounds.cidr || old.gateway != bounds.gateway)
                {
                    return Err(StateError::Conflict(format!(
                        "pool {} has {} addresses allocated: its cidr and gateway cannot change",
                        spec.name,
                        pool.allocations.len()
                    )));
                }
                if let Some((ip, a)) = pool
                    .allocations
                    .iter()
                    .find(|(ip, _)| !(bounds.start..=bounds.end).contains(*ip))
                {
                    return Err(SpecError::text(
                        "range_start",
                        &spec.range_start,
                        format!(
                            "a range that keeps allocated address {ip} (held by {})",
                            a.owner
                        ),
                    )
                    .into());
                }
                pool.spec = spec.clone();
                ApplyOutcome::Updated
            }
            None => {
                self.ip_pools.insert(
                    spec.name.clone(),
                    IpPool {
                        spec: spec.clone(),
                        allocations: Default::default(),
                    },
                );
                ApplyOutcome::Created
            }
        };
        self.info(
            now,
            EventKind::Pool,
            &spec.name,
            format!(
                "{outcome}: {} hands out {}-{}",
                spec.cidr, bounds.start, bounds.end
            ),
        );
        Ok(CommandReply::Applied { outcome })
    }

    /// A pool's range must not meet another pool's range or gateway, a VIP, or a static NIC
    /// address: then no address can be handed out twice.
    fn check_pool_overlaps(&self, spec: &IpPoolSpec, b: &PoolBounds) -> Result<(), StateError> {
        let in_range =
            |ip: IpAddr| ip.is_ipv4() == b.start.is_ipv4() && b.start <= ip && ip <= b.end;
        for (name, other) in &self.ip_pools {
            let Ok(o) = other.spec.bounds() else { continue };
            if *name == spec.name {
                continue;
            }
            let same_family = o.start.is_ipv4() == b.start.is_ipv4();
            if same_family && b.start <= o.end && o.start <= b.end {
                return Err(StateError::Conflict(format!(
                    "pool {} range {}-{} overlaps pool {name} range {}-{}",
                    spec.name, b.start, b.end, o.start, o.end
                )));
            }
            if let Some(gw) = o.gateway.filter(|gw| in_range(*gw)) {
                return Err(StateError::Conflict(format!(
                    "pool {} range {}-{} contains {gw}, the gateway of pool {name}",
                    spec.name, b.start, b.end
                )));
            }
            if let Some(gw) = b
                .gateway
                .filter(|gw| o.start.is_ipv4() == gw.is_ipv4() && o.start <= *gw && *gw <= o.end)
            {
                return Err(StateError::Conflict(format!(
                    "gateway {gw} of pool {} is inside the range of pool {name}",
                    spec.name
                )));
            }
        }
        if let Some(vip) = self
            .vips
            .values()
            .find(|v| v.spec.cidr().is_ok_and(|c| in_range(c.address())))
        {
            return Err(StateError::Conflict(format!(
                "pool {} range {}-{} contains VIP {} ({})",
                spec.name, b.start, b.end, vip.spec.name, vip.spec.address
            )));
        }
        for rec in self.vms.values() {
            if let Some(ip) = static_ips(&rec.spec).find(|ip| in_range(*ip)) {
                return Err(StateError::Conflict(format!(
                    "pool {} range {}-{} contains {ip}, a static address of VM {:?}",
                    spec.name, b.start, b.end, rec.spec.name
                )));
            }
        }
        Ok(())
    }

    pub(super) fn delete_pool(
        &mut self,
        name: &str,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let pool = self
            .ip_pools
            .get(name)
            .ok_or_else(|| not_found(EventKind::Pool, name))?;
        if let Some((ip, a)) = pool.allocations.iter().next() {
            return Err(StateError::Conflict(format!(
                "pool {name} still has {} addresses allocated (e.g. {ip} held by {})",
                pool.allocations.len(),
                a.owner
            )));
        }
        if let Some(rec) = self
            .vms
            .values()
            .find(|r| r.spec.pool_nics().any(|(_, p)| p == name))
        {
            return Err(StateError::Conflict(format!(
                "pool {name} is used by VM {:?}",
                rec.spec.name
            )));
        }
        self.ip_pools.remove(name);
        self.info(now, EventKind::Pool, name, "deleted");
        Ok(CommandReply::Done)
    }

    /// The pool whose range holds `ip` (other than `except`), with its bounds.
    pub(super) fn pool_range_containing(
        &self,
        ip: IpAddr,
        except: Option<&str>,
    ) -> Option<(&str, PoolBounds)> {
        self.ip_pools.iter().find_map(|(name, pool)| {
            let b = pool.spec.bounds().ok()?;
            let inside = ip.is_ipv4() == b.start.is_ipv4() && b.start <= ip && ip <= b.end;
            (inside && Some(name.as_str()) != except).then_some((name.as_str(), b))
        })
    }
}

/// The VM's addresses its spec still wants, by NIC.
fn current_ips(rec: &protocol::fleet::VmRecord) -> Vec<NicAddress> {
    rec.assignment
        .ips
        .iter()
        .filter(|a| a.is_current(&rec.spec))
        .cloned()
        .collect()
}

/// The lowest address of the pool's range that is not allocated, not the gateway, and not in
/// `taken` (addresses planned earlier in the same command).
fn lowest_free(
    pool: &IpPool,
    b: &PoolBounds,
    taken: &BTreeSet<IpAddr>,
) -> Result<IpAddr, StateError> {
    let exhausted = || StateError::IpsExhausted {
        pool: pool.spec.name.clone(),
        start: b.start,
        end: b.end,
    };
    // The allocated and planned addresses walked in order beside the candidate (both sets are
    // sorted): one pass, not a lookup per candidate, which made n allocations cost n² lookups.
    let mut allocated = pool
        .allocations
        .range(b.start..)
        .map(|(a, _)| *a)
        .peekable();
    let mut planned = taken.range(b.start..).copied().peekable();
    let mut candidate = b.start;
    // Each step skips one taken address, so this ends within allocations + taken + 2 steps.
    loop {
        while allocated.next_if(|a| *a < candidate).is_some() {}
        while planned.next_if(|a| *a < candidate).is_some() {}
        let free = allocated.peek() != Some(&candidate)
            && Some(candidate) != b.gateway
            && planned.peek() != Some(&candidate);
        if free {
            return Ok(candidate);
        }
        if candidate >= b.end {
            return Err(exhausted());
        }
        candidate = next_ip(candidate).ok_or_else(exhausted)?;
    }
}
