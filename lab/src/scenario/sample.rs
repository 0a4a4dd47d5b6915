//! One look at the running scenario: the guests as every PVE simulator lists them (the ground
//! truth) and the fleet as the admin API reports it (hosts, VMs, recoveries, VIP holders).
//! Built from the replies by pure functions; the runner's sampler reads them, PVE first, then
//! the VMs, then the hosts (see [`super::invariants`] for why that order).

use std::collections::BTreeMap;

use protocol::admin::{HostListReply, VipStatusReply, VmListReply};
use protocol::fleet::{HostState, MigrationPurpose, VmPhase};
use protocol::spec::{DesiredState, HaState};
use serde::Serialize;

use crate::sim_control::SimVm;

/// One sample, `t_ms` after t=0.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sample {
    /// When it was taken (its first read), in ms after t=0.
    pub t_ms: i64,
    /// The guests in PVE.
    pub pve: PveSample,
    /// The fleet; `None` when it did not answer (no leader, no quorum).
    pub fleet: Option<FleetSample>,
    /// Who answered for each VIP on the hosts' network since the previous sample, by VIP
    /// name; empty unless the hosts hold VIPs for real.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub answers: BTreeMap<String, VipAnswerSample>,
}

/// Who answered ARP requests for one VIP between two samples (the VIP prober's view: what a
/// client on the hosts' network sees).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct VipAnswerSample {
    /// The hosts that answered the latest request whose answers are in.
    pub now: Vec<String>,
    /// The most hosts that answered any one request since the previous sample.
    pub most: Vec<String>,
    /// How many requests went out since the previous sample.
    pub asked: u32,
}

/// The guests of every simulator that answered.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PveSample {
    /// Every guest that is no template.
    pub guests: Vec<PveGuest>,
    /// The simulators that did not answer (their guests are unknown in this sample).
    pub unread: Vec<String>,
}

/// A guest as PVE lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PveGuest {
    /// The simulator: its PVE cluster's name, or the standalone host's.
    pub sim: String,
    /// Its VMID.
    pub vmid: u32,
    /// Its name (`None` while its node is off).
    pub name: Option<String>,
    /// The node whose directory holds its config.
    pub node: String,
    /// Whether it runs.
    pub running: bool,
    /// The `lock:` of its config.
    pub lock: Option<String>,
}

/// The fleet as the admin API reported it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FleetSample {
    /// Hosts by name.
    pub hosts: BTreeMap<String, HostSample>,
    /// VMs by name.
    pub vms: BTreeMap<String, VmSample>,
    /// VIPs by name: the hosts holding each, as reported.
    pub vips: BTreeMap<String, Vec<String>>,
    /// VIPs by name: every host the spec admits (eligible or not now).
    pub vip_hosts: BTreeMap<String, Vec<String>>,
    /// The host of the coordinator member leading, when the scenario asks about it.
    pub leader: Option<String>,
}

/// A host in the fleet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostSample {
    /// Its state.
    pub state: HostState,
    /// Why, in the words of its transition.
    pub reason: String,
}

/// A VM in the fleet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VmSample {
    /// Its host (by name).
    pub host: Option<String>,
    /// Its VMID.
    pub vmid: Option<u32>,
    /// Its phase.
    pub phase: VmPhase,
    /// Its desired power.
    pub desired: DesiredState,
    /// Its HA state (`None`: not HA).
    pub ha: Option<HaState>,
    /// The latest explanation.
    pub message: String,
    /// The recovery under way for it: what was decided or why it waits.
    pub recovery: Option<String>,
    /// Why it is moving, while a migration is under way.
    pub migrating: Option<MigrationPurpose>,
}

impl VmSample {
    /// Whether it must not run: desired stopped, or HA `stopped`/`disabled`.
    pub fn must_be_stopped(&self) -> bool {
        self.desired == DesiredState::Stopped
            || matches!(self.ha, Some(HaState::Stopped | HaState::Disabled))
    }
}

impl PveSample {
    /// The guests of simulator `sim` as `vms()` listed them (templates left out).
    pub fn add(&mut self, sim: &str, vms: Vec<SimVm>) {
        self.guests
            .extend(vms.into_iter().filter(|v| !v.template).map(|v| PveGuest {
                sim: sim.to_string(),
                vmid: v.vmid,
                name: v.name,
                node: v.node,
                running: v.running,
                lock: v.lock,
            }));
    }

    /// The nodes running a guest named `name`.
    pub fn running_nodes(&self, name: &str) -> Vec<&str> {
        self.guests
            .iter()
            .filter(|g| g.running && g.name.as_deref() == Some(name))
            .map(|g| g.node.as_str())
            .collect()
    }

    /// This sample with the guests of the simulators it could not read taken from `prev`
    /// (for comparisons: an unread simulator is unknown, not empty).
    pub fn filled_from(&self, prev: &PveSample) -> PveSample {
        let mut out = self.clone();
        for sim in &self.unread {
            out.guests
                .extend(prev.guests.iter().filter(|g| &g.sim == sim).cloned());
        }
        out
    }
}

impl FleetSample {
    /// The fleet from a VM list and a host list (host ids named), and the VIP holders when
    /// the scenario has VIPs.
    pub fn from_replies(
        vms: &VmListReply,
        hosts: &HostListReply,
        vips: Option<&VipStatusReply>,
    ) -> FleetSample {
        let name_of: BTreeMap<u64, &str> = hosts
            .hosts
            .iter()
            .map(|h| (h.id, h.name.as_str()))
            .collect();
        let named = |id: Option<u64>| {
            id.map(|id| {
                name_of
                    .get(&id)
                    .map_or_else(|| format!("host {id}"), |n| (*n).to_string())
            })
        };
        FleetSample {
            hosts: hosts
                .hosts
                .iter()
                .map(|h| {
                    (
                        h.name.clone(),
                        HostSample {
                            state: h.state,
                            reason: h.state_reason.clone(),
                        },
                    )
                })
                .collect(),
            vms: vms
                .vms
                .iter()
                .map(|v| {
                    let sample = VmSample {
                        host: named(v.assignment.host),
                        vmid: v.assignment.vmid,
                        phase: v.status.phase,
                        desired: v.spec.state,
                        ha: v.spec.ha.state,
                        message: v.status.message.clone(),
                        recovery: vms.recoveries.get(&v.spec.name).map(|r| r.message.clone()),
                        migrating: vms.migrations.get(&v.spec.name).map(|m| m.purpose),
                    };
                    (v.spec.name.clone(), sample)
                })
                .collect(),
            vips: vips
                .map(|reply| {
                    reply
                        .vips
                        .iter()
                        .map(|e| {
                            let holders = match (&e.owner_name, e.held) {
                                (Some(owner), true) => vec![owner.clone()],
                                _ => Vec::new(),
                            };
                            (e.vip.spec.name.clone(), holders)
                        })
                        .collect()
                })
                .unwrap_or_default(),
            vip_hosts: vips
                .map(|reply| {
                    reply
                        .vips
                        .iter()
                        .map(|e| {
                            let hosts = e.hosts.iter().map(|h| h.host.clone()).collect();
                            (e.vip.spec.name.clone(), hosts)
                        })
                        .collect()
                })
                .unwrap_or_default(),
            leader: None,
        }
    }

    /// The number of VMs whose host is `host`.
    pub fn vms_on(&self, host: &str) -> usize {
        self.vms
            .values()
            .filter(|v| v.host.as_deref() == Some(host))
            .count()
    }
}

#[cfg(test)]
pub(crate) mod fixtures {
    //! Samples for the pure parts' tests.

    use super::*;

    /// A guest `name` (VMID `vmid`) on `node` of simulator `alpha`.
    pub(crate) fn guest(name: &str, vmid: u32, node: &str, running: bool) -> PveGuest {
        PveGuest {
            sim: "alpha".into(),
            vmid,
            name: Some(name.into()),
            node: node.into(),
            running,
            lock: None,
        }
    }

    /// An HA started VM on `host`, running.
    pub(crate) fn vm(host: &str) -> VmSample {
        VmSample {
            host: Some(host.into()),
            vmid: Some(100),
            phase: VmPhase::Running,
            desired: DesiredState::Running,
            ha: Some(HaState::Started),
            message: String::new(),
            recovery: None,
            migrating: None,
        }
    }

    /// A host in `state`.
    pub(crate) fn host(state: HostState) -> HostSample {
        HostSample {
            state,
            reason: String::new(),
        }
    }

    /// A sample at `t_ms` with `guests` and the fleet of `hosts` and `vms`.
    pub(crate) fn sample(
        t_ms: i64,
        guests: Vec<PveGuest>,
        hosts: &[(&str, HostState)],
        vms: &[(&str, VmSample)],
    ) -> Sample {
        Sample {
            t_ms,
            pve: PveSample {
                guests,
                unread: Vec::new(),
            },
            fleet: Some(FleetSample {
                hosts: hosts
                    .iter()
                    .map(|(n, s)| ((*n).to_string(), host(*s)))
                    .collect(),
                vms: vms
                    .iter()
                    .map(|(n, v)| ((*n).to_string(), v.clone()))
                    .collect(),
                vips: BTreeMap::new(),
                vip_hosts: BTreeMap::new(),
                leader: None,
            }),
            answers: BTreeMap::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;

    #[test]
    fn running_nodes_count_only_running_guests_of_that_name() {
        let pve = PveSample {
            guests: vec![
                guest("web-1", 100, "pve-a", true),
                guest("web-1", 100, "pve-b", false),
                guest("web-2", 101, "pve-b", true),
            ],
            unread: Vec::new(),
        };
        assert_eq!(pve.running_nodes("web-1"), ["pve-a"]);
        assert!(pve.running_nodes("db-1").is_empty());
    }

    #[test]
    fn an_unread_simulator_keeps_its_previous_guests_for_comparisons() {
        let prev = PveSample {
            guests: vec![guest("web-1", 100, "pve-a", true)],
            unread: Vec::new(),
        };
        let next = PveSample {
            guests: Vec::new(),
            unread: vec!["alpha".into()],
        };
        assert_eq!(next.filled_from(&prev).running_nodes("web-1"), ["pve-a"]);
    }

    #[test]
    fn stopped_and_disabled_ha_vms_must_not_run() {
        let mut v = vm("pve-a");
        assert!(!v.must_be_stopped());
        v.ha = Some(HaState::Disabled);
        assert!(v.must_be_stopped());
        v.ha = Some(HaState::Ignored);
        v.desired = DesiredState::Stopped;
        assert!(v.must_be_stopped());
    }
}
