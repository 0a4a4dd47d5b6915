//! Cross-checks of the allocation invariants (docs/design/architecture.md, safety rule 6): no VMID or address
//! held twice, and the VMs' assignments agree with the ranges' and pools' allocation tables.
//! Tests run it after every command; operators and end-to-end tests can run it on any member.

use std::collections::BTreeMap;
use std::net::IpAddr;

use protocol::fleet::AllocationOwner;

use super::FleetState;

impl FleetState {
    /// Every violated allocation invariant, as a sentence; empty when all hold.
    pub fn audit(&self) -> Vec<String> {
        let mut problems = Vec::new();
        self.audit_vmids(&mut problems);
        self.audit_ips(&mut problems);
        problems
    }

    fn audit_vmids(&self, problems: &mut Vec<String>) {
        let mut holders: BTreeMap<u32, Vec<String>> = BTreeMap::new();
        for (range_name, range) in &self.vmid_ranges {
            for (vmid, a) in &range.allocations {
                holders
                    .entry(*vmid)
                    .or_default()
                    .push(format!("range {range_name} for {}", a.owner));
                if !(range.spec.start..=range.spec.end).contains(vmid) {
                    problems.push(format!(
                        "VMID {vmid} is allocated outside range {range_name}"
                    ));
                }
                if let AllocationOwner::Vm(vm) = &a.owner
                    && self.vms.get(vm).and_then(|r| r.assignment.vmid) != Some(*vmid)
                {
                    problems.push(format!(
                        "range {range_name} gives VMID {vmid} to VM {vm}, which does not hold it"
                    ));
                }
            }
        }
        let mut by_vm: BTreeMap<u32, Vec<&str>> = BTreeMap::new();
        for (name, rec) in &self.vms {
            let Some(vmid) = rec.assignment.vmid else {
                continue;
            };
            by_vm.entry(vmid).or_default().push(name);
            let owner = AllocationOwner::Vm(name.clone());
            let recorded = self
                .vmid_ranges
                .values()
                .filter(|r| r.allocations.get(&vmid).is_some_and(|a| a.owner == owner))
                .count();
            if recorded != 1 {
                problems.push(format!(
                    "VM {name} holds VMID {vmid}, recorded in {recorded} ranges"
                ));
            }
        }
        for (vmid, who) in holders.iter().filter(|(_, w)| w.len() > 1) {
            problems.push(format!(
                "VMID {vmid} allocated {} times: {}",
                who.len(),
                who.join("; ")
            ));
        }
        for (vmid, vms) in by_vm.iter().filter(|(_, v)| v.len() > 1) {
            problems.push(format!(
                "VMID {vmid} held by several VMs: {}",
                vms.join(", ")
            ));
        }
    }

    fn audit_ips(&self, problems: &mut Vec<String>) {
        let mut holders: BTreeMap<IpAddr, Vec<String>> = BTreeMap::new();
        for (pool_name, pool) in &self.ip_pools {
            let bounds = pool.spec.bounds().ok();
            for (ip, a) in &pool.allocations {
                holders
                    .entry(*ip)
                    .or_default()
                    .push(format!("pool {pool_name} for {}", a.owner));
                let inside = bounds
                    .is_some_and(|b| b.start <= *ip && *ip <= b.end && b.gateway != Some(*ip));
                if !inside {
                    problems.push(format!(
                        "{ip} is allocated outside the range of pool {pool_name}"
                    ));
                }
                if let AllocationOwner::Vm(vm) = &a.owner {
                    let held = self.vms.get(vm).is_some_and(|r| {
                        r.assignment.ips.iter().any(|n| {
                            n.address == *ip && n.pool == *pool_name && Some(n.nic) == a.nic
                        })
                    });
                    if !held {
                        problems.push(format!(
                            "pool {pool_name} gives {ip} to VM {vm}, which does not hold it"
                        ));
                    }
                }
            }
        }
        let mut by_vm: BTreeMap<IpAddr, Vec<&str>> = BTreeMap::new();
        for (name, rec) in &self.vms {
            let owner = AllocationOwner::Vm(name.clone());
            for n in &rec.assignment.ips {
                by_vm.entry(n.address).or_default().push(name);
                let recorded = self
                    .ip_pools
                    .get(&n.pool)
                    .and_then(|p| p.allocations.get(&n.address))
                    .is_some_and(|a| a.owner == owner);
                if !recorded {
                    problems.push(format!(
                        "VM {name} holds {} not recorded in pool {}",
                        n.address, n.pool
                    ));
                }
            }
        }
        for (ip, who) in holders.iter().filter(|(_, w)| w.len() > 1) {
            problems.push(format!(
                "{ip} allocated {} times: {}",
                who.len(),
                who.join("; ")
            ));
        }
        for (ip, vms) in by_vm.iter().filter(|(_, v)| v.len() > 1) {
            problems.push(format!(
                "{ip} held several times by VMs: {}",
                vms.join(", ")
            ));
        }
    }
}
