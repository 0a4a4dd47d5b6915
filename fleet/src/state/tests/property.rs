//! Many random interleavings of apply, allocate, delete and release: no VMID or address is ever
//! held twice, and the allocation tables always agree with the VMs (checked after every command
//! by [`Fleet::run`]'s audit, and here independently).

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use super::{Fleet, pool_spec, vm_with_pools};
use crate::state::{Command, CommandReply, FleetState, StateError};

/// SplitMix64: a tiny seeded generator, so every run of a seed is the same.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const POOLS: [&str; 2] = ["a", "b"];

fn random_command(rng: &mut SplitMix64, state: &FleetState, now: u64) -> Command {
    let vm = format!("vm-{}", rng.below(24));
    match rng.below(9) {
        0 | 1 => {
            let nics: Vec<&str> = (0..rng.below(3))
                .map(|_| POOLS[rng.below(2) as usize])
                .collect();
            Command::apply_vm(vm_with_pools(&vm, &nics), now)
        }
        2 | 3 => Command::AllocateVmid {
            vm,
            avoid: vec![],
            now,
        },
        4 => Command::AllocateIps { vm, now },
        5 => Command::DeleteVm { name: vm, now },
        6 => Command::ReleaseVm { name: vm, now },
        7 => Command::AllocateIp {
            pool: POOLS[rng.below(2) as usize].into(),
            owner: format!("ext-{}", rng.below(4)),
            now,
        },
        _ => {
            // Release an external address if there is one, else a stale-address sweep.
            let held: Vec<(String, IpAddr)> = state
                .ip_pools()
                .iter()
                .flat_map(|(p, pool)| pool.allocations.keys().map(move |ip| (p.clone(), *ip)))
                .collect();
            match held.get(rng.below(held.len().max(1) as u64) as usize) {
                Some((pool, address)) => Command::ReleaseIp {
                    pool: pool.clone(),
                    address: *address,
                    now,
                },
                None => Command::ReleaseStaleIps { vm, now },
            }
        }
    }
}

/// Every VMID and address held by VMs and external owners, checked distinct.
fn check_unique(state: &FleetState) {
    let mut vmids = BTreeSet::new();
    for rec in state.vms().values() {
        if let Some(vmid) = rec.assignment.vmid {
            assert!(vmids.insert(vmid), "VMID {vmid} held twice");
        }
    }
    let mut ips = BTreeSet::new();
    for pool in state.ip_pools().values() {
        for ip in pool.allocations.keys() {
            assert!(ips.insert(*ip), "{ip} allocated twice");
        }
    }
    let vm_ips: Vec<IpAddr> = state
        .vms()
        .values()
        .flat_map(|r| r.assignment.ips.iter().map(|a| a.address))
        .collect();
    let distinct: BTreeSet<_> = vm_ips.iter().collect();
    assert_eq!(distinct.len(), vm_ips.len(), "an address held by two VMs");
}

#[test]
fn random_interleavings_never_hand_out_a_vmid_or_address_twice() {
    let (mut exhausted, mut reused) = (0, 0);
    for seed in 1..=40u64 {
        let mut f = Fleet::new();
        // Small ranges so exhaustion and reuse happen often.
        f.range("r", 100, 115);
        f.pool(pool_spec(
            "a",
            "10.0.0.0/24",
            Some("10.0.0.5"),
            "10.0.0.1",
            "10.0.0.12",
        ));
        f.pool(pool_spec(
            "b",
            "10.0.0.0/24",
            None,
            "10.0.0.13",
            "10.0.0.20",
        ));
        let mut rng = SplitMix64(seed);
        let mut allocated = 0;
        let mut first_holder: BTreeMap<u32, String> = BTreeMap::new();
        for _ in 0..400 {
            let cmd = random_command(&mut rng, &f.state, f.now);
            let vm = match &cmd {
                Command::AllocateVmid { vm, .. } => vm.clone(),
                _ => String::new(),
            };
            f.now += 1;
            match f.run(cmd) {
                CommandReply::Vmid { vmid, .. } => {
                    allocated += 1;
                    if first_holder.entry(vmid).or_insert_with(|| vm.clone()) != &vm {
                        reused += 1;
                    }
                }
                CommandReply::Ip { .. } => allocated += 1,
                CommandReply::Refused(
                    StateError::VmidsExhausted { .. } | StateError::IpsExhausted { .. },
                ) => exhausted += 1,
                _ => {}
            }
            check_unique(&f.state);
        }
        assert!(
            allocated > 20,
            "seed {seed}: the run allocated only {allocated} ids"
        );
    }
    // The workload really reaches the interesting cases.
    assert!(exhausted > 0, "no run exhausted a range or pool");
    assert!(reused > 0, "no run reused a released VMID");
}

#[test]
fn the_same_seed_replays_to_the_same_state() {
    let play = |seed| {
        let mut f = Fleet::new();
        f.range("r", 100, 115);
        f.pool(pool_spec("a", "10.0.0.0/24", None, "10.0.0.1", "10.0.0.12"));
        f.pool(pool_spec(
            "b",
            "10.0.0.0/24",
            None,
            "10.0.0.13",
            "10.0.0.20",
        ));
        let mut rng = SplitMix64(seed);
        for _ in 0..300 {
            let cmd = random_command(&mut rng, &f.state, f.now);
            f.now += 1;
            f.run(cmd);
        }
        crate::state::encode_snapshot(&f.state, protocol::version::CURRENT).unwrap()
    };
    assert_eq!(play(7), play(7));
    assert_ne!(play(7), play(8));
}
