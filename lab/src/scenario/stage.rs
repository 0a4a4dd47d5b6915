//! Playing a scenario's events on the lab: each [`Action`] becomes the lab's fault actions
//! (power, signals, restarts), nftables cuts, simulator faults or admin calls. Targets are
//! resolved when the event is played (`@leader` through the admin API). A failure is the
//! event's, in words; the run goes on.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use client::AdminClient;
use protocol::NodeId;
use protocol::admin::{
    ClusterStatus, HostList, HostMaintenance, MaintenanceAction, ReadMode, VipStatus, VmApply,
    VmDelete, VmGet, VmMigrate, VmPower, VmPowerAction,
};
use protocol::agent::LeaveKind;
use protocol::spec::{DesiredState, HaState};
use tokio::sync::watch;

use super::model::{Action, Scenario, Target};
use super::preload::{clock_file, disk_file, write};
use crate::host_network::HostNetwork;
use crate::lab::{Lab, Part};
use crate::link_delay::LinkDelay;
use crate::partition::Partitions;
use crate::sim_control::SimControl;

/// How long `@leader` may take to be known (an election under way).
const LEADER_WAIT: Duration = Duration::from_secs(10);
/// How long a stopped agent may take to leave (the unit's `TimeoutStopSec`: a drain).
const AGENT_STOP_WAIT: Duration = Duration::from_secs(300);
/// The task error an injected start failure ends with.
const START_FAILURE: &str = "scenario: injected start failure";

/// What a `fail-migrate` makes PVE's migration task end with.
const MIGRATE_FAILURE: &str = "scenario: injected migration failure";

/// What the events act on.
pub struct Stage<'a> {
    /// The fleet.
    pub lab: &'a mut Lab,
    /// The scenario.
    pub scenario: &'a Scenario,
    /// An admin client.
    pub client: AdminClient,
    /// The cuts.
    pub partitions: &'a mut Partitions,
    /// The hosts' namespaces, when they hold VIPs for real.
    pub network: Option<&'a HostNetwork>,
    /// The slowed links, by host.
    pub delays: BTreeMap<String, LinkDelay>,
    /// The standalone hosts powered off (the sampler skips their simulators).
    pub off: watch::Sender<BTreeSet<String>>,
    /// The simulators: label → control (every cluster and standalone host).
    pub sims: BTreeMap<String, SimControl>,
    /// PVE HA resources set so far, per simulator (each call replaces the list).
    pub pve_ha: BTreeMap<String, Vec<(u32, String)>>,
    /// The host each played event acted on.
    pub event_hosts: BTreeMap<usize, String>,
    /// Each host's wall-clock offset so far, in seconds (`clock-step`).
    pub clock_offsets: BTreeMap<String, i64>,
}

/// What an event acted on.
#[derive(Debug, Clone, Default)]
pub struct Acted {
    /// The host, resolved.
    pub host: Option<String>,
    /// The other end of a cut link, resolved.
    pub peer: Option<String>,
}

impl Stage<'_> {
    /// Plays event `index`'s `action`; the host it acted on, or why it failed.
    pub async fn play(&mut self, index: usize, action: &Action) -> Result<Acted, String> {
        let host = match action.target() {
            Some(t) => Some(self.resolve(t).await?),
            None => None,
        };
        if let Some(h) = &host {
            self.event_hosts.insert(index, h.clone());
        }
        let on = || host.clone().unwrap_or_default();
        match action {
            Action::PowerOff(_) => self.power_off(&on()).await?,
            Action::PowerOn(_) => self.power_on(&on()).await?,
            Action::Reset(_) => {
                self.power_off(&on()).await?;
                self.power_on(&on()).await?;
            }
            Action::Partition(_) => {
                let addr = self.address(&on())?;
                self.partitions.cut(addr).await.map_err(|e| e.to_string())?;
            }
            Action::PartitionOneWay(_, inbound) => {
                let addr = self.address(&on())?;
                self.partitions
                    .cut_one_way(addr, *inbound)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            Action::CutLink(_, peer) => {
                let peer = self.resolve(peer).await?;
                let (a, b) = (self.address(&on())?, self.address(&peer)?);
                self.partitions
                    .cut_link(a, b)
                    .await
                    .map_err(|e| e.to_string())?;
                return Ok(Acted {
                    host,
                    peer: Some(peer),
                });
            }
            Action::Lossy(_, percent) => {
                let addr = self.address(&on())?;
                self.partitions
                    .lossy(addr, *percent)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            Action::DelayLink(_, ms) => self.delay_link(&on(), *ms)?,
            Action::Heal(Some(_)) => {
                self.delays.remove(&on());
                let addr = self.address(&on())?;
                self.partitions
                    .heal(addr)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            Action::Heal(None) => {
                self.delays.clear();
                self.partitions
                    .heal_all()
                    .await
                    .map_err(|e| e.to_string())?;
            }
            Action::KillAgent(_) => {
                let i = self.agent(&on())?;
                self.lab.kill(Part::Agent(i)).await;
            }
            Action::RestartAgent(_) => {
                let i = self.agent(&on())?;
                // Already running: its host's boot started it (a guard's reset while it was
                // down); as `systemctl start` of a running unit, nothing to do.
                if !self.lab.runs(Part::Agent(i)) {
                    self.lab.start_agent(i).await.map_err(|e| e.to_string())?;
                }
            }
            Action::StopAgent(_) => {
                let i = self.agent(&on())?;
                self.lab
                    .stop_agent(i, None, AGENT_STOP_WAIT)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            Action::Shutdown(_, kind) => {
                let i = self.agent(&on())?;
                let word = match kind {
                    LeaveKind::PowerOff => "poweroff",
                    LeaveKind::Reboot | LeaveKind::Restart => "reboot",
                };
                self.lab
                    .stop_agent(i, Some(word), AGENT_STOP_WAIT)
                    .await
                    .map_err(|e| e.to_string())?;
                // Then the host goes down: its coordinator, its guard, its PVE node.
                self.power_off(&on()).await?;
            }
            Action::FreezeAgent(_) => {
                let i = self.agent(&on())?;
                self.lab
                    .pause(Part::Agent(i))
                    .await
                    .map_err(|e| e.to_string())?;
            }
            Action::ThawAgent(_) => {
                let i = self.agent(&on())?;
                if self.lab.runs(Part::Agent(i)) {
                    self.lab
                        .resume(Part::Agent(i))
                        .await
                        .map_err(|e| e.to_string())?;
                } else {
                    // Its guard reset the host while it hung (what the guard is for): the
                    // host has booted again, and systemd starts the agent.
                    self.lab.start_agent(i).await.map_err(|e| e.to_string())?;
                }
            }
            Action::ClockStep(_, secs) => {
                let h = on();
                let offset = self.clock_offsets.entry(h.clone()).or_default();
                *offset += secs;
                write(
                    &clock_file(self.lab.root(), &h),
                    &format!("{:+}s\n", *offset),
                )
                .map_err(|e| e.to_string())?;
            }
            Action::SlowDisk(_, ms) => {
                write(&disk_file(self.lab.root(), &on()), &format!("slow {ms}\n"))
                    .map_err(|e| e.to_string())?;
            }
            Action::FailDisk(_) => {
                write(&disk_file(self.lab.root(), &on()), "fail\n").map_err(|e| e.to_string())?;
            }
            Action::HealDisk(_) => {
                let h = on();
                write(&disk_file(self.lab.root(), &h), "ok\n").map_err(|e| e.to_string())?;
                let i = self.member(&h)?;
                if !self.lab.runs(Part::Member(i)) {
                    self.lab.start_member(i).await.map_err(|e| e.to_string())?;
                }
            }
            Action::KillCoordinator(_) => {
                let i = self.member(&on())?;
                self.lab.kill(Part::Member(i)).await;
            }
            Action::RestartCoordinator(_) => {
                let i = self.member(&on())?;
                self.lab.start_member(i).await.map_err(|e| e.to_string())?;
            }
            Action::StopCoordinator(_) => {
                let i = self.member(&on())?;
                self.lab.terminate(Part::Member(i)).await;
            }
            Action::FailStart { vm, count } => {
                let (vmid, _) = self.placed(vm).await?;
                for (label, control) in &self.sims {
                    control
                        .fail_tasks(Some(vmid), "qmstart", START_FAILURE, Some(*count))
                        .await
                        .map_err(|e| format!("{label}: {e}"))?;
                }
            }
            Action::FailMigrate { vm, count } => {
                let (vmid, _) = self.placed(vm).await?;
                for (label, control) in &self.sims {
                    control
                        .fail_tasks(Some(vmid), "qmigrate", MIGRATE_FAILURE, Some(*count))
                        .await
                        .map_err(|e| format!("{label}: {e}"))?;
                }
            }
            Action::VmMigrate { vm, .. } => {
                self.client
                    .call(&VmMigrate {
                        name: vm.clone(),
                        to: host.clone(),
                    })
                    .await
                    .map_err(|e| e.to_string())?;
            }
            Action::MaintenanceEnable(_) | Action::MaintenanceDisable(_) => {
                let action = if matches!(action, Action::MaintenanceEnable(_)) {
                    MaintenanceAction::Enable
                } else {
                    MaintenanceAction::Disable
                };
                self.client
                    .call(&HostMaintenance { host: on(), action })
                    .await
                    .map_err(|e| e.to_string())?;
            }
            Action::Lock { vm, lock } => {
                let (vmid, host) = self.placed(vm).await?;
                let i = self.agent(&host)?;
                let control = self.lab.pve_control(i).map_err(|e| e.to_string())?;
                control
                    .set_vm_lock(vmid, Some(lock))
                    .await
                    .map_err(|e| e.to_string())?;
            }
            Action::Unlock { vm } => {
                let (vmid, host) = self.placed(vm).await?;
                let i = self.agent(&host)?;
                let control = self.lab.pve_control(i).map_err(|e| e.to_string())?;
                control
                    .set_vm_lock(vmid, None)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            Action::PveHa { vm, state } => {
                let (vmid, host) = self.placed(vm).await?;
                let label = self.sim_of(&host)?;
                let list = self.pve_ha.entry(label.clone()).or_default();
                list.retain(|(id, _)| *id != vmid);
                list.push((vmid, state.clone()));
                let resources: Vec<(u32, &str)> =
                    list.iter().map(|(id, s)| (*id, s.as_str())).collect();
                let control = self.sims.get(&label).ok_or("no simulator")?;
                control
                    .set_ha_resources(&resources)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            Action::VmStart { vm } => self.power(vm, VmPowerAction::Start).await?,
            Action::VmStop { vm } => self.power(vm, VmPowerAction::Stop).await?,
            Action::VmHa { vm, state } => self.set_ha(vm, *state).await?,
            Action::VmApply { vm } => {
                let spec = self
                    .scenario
                    .fleet
                    .vm
                    .iter()
                    .find(|s| &s.name == vm)
                    .cloned()
                    .ok_or_else(|| format!("no [[vm]] named {vm} in the scenario"))?;
                self.client
                    .call(&VmApply { spec })
                    .await
                    .map_err(|e| e.to_string())?;
            }
            Action::VmDelete { vm } => {
                self.client
                    .call(&VmDelete { name: vm.clone() })
                    .await
                    .map_err(|e| e.to_string())?;
            }
        }
        Ok(Acted { host, peer: None })
    }

    async fn resolve(&mut self, target: &Target) -> Result<String, String> {
        match target {
            Target::Host(h) => Ok(h.clone()),
            Target::Event(n) => self
                .event_hosts
                .get(n)
                .cloned()
                .ok_or_else(|| format!("event[{n}] acted on no host (it failed?)")),
            Target::VipOwner(vip) => {
                let reply = self
                    .client
                    .call(&VipStatus {
                        name: Some(vip.clone()),
                    })
                    .await
                    .map_err(|e| format!("@vip:{vip}: {e}"))?;
                reply
                    .vips
                    .into_iter()
                    .find(|e| &e.vip.spec.name == vip)
                    .and_then(|e| e.owner_name)
                    .ok_or_else(|| format!("@vip:{vip}: the VIP has no owner"))
            }
            Target::HostOf(vm) => {
                let rec = self
                    .client
                    .call(&VmGet {
                        name: vm.clone(),
                        read: ReadMode::Linearizable,
                    })
                    .await
                    .map_err(|e| format!("@vm:{vm}: {e}"))?;
                let id = rec
                    .assignment
                    .host
                    .ok_or_else(|| format!("@vm:{vm}: the VM has no host"))?;
                self.host_name(id).await
            }
            Target::Leader => {
                let deadline = tokio::time::Instant::now() + LEADER_WAIT;
                loop {
                    let status = self.client.call(&ClusterStatus {}).await;
                    let leader = status.as_ref().ok().and_then(|s| s.leader);
                    let member = leader
                        .and_then(|id| self.lab.members().iter().position(|m| m.node_id == id));
                    if let Some(i) = member {
                        return self
                            .scenario
                            .coordinators
                            .get(i)
                            .cloned()
                            .ok_or_else(|| format!("@leader: member {i} has no host"));
                    }
                    if tokio::time::Instant::now() > deadline {
                        return Err(match status {
                            Ok(_) => format!("@leader: no leader known within {LEADER_WAIT:?}"),
                            Err(e) => format!("@leader: {e}"),
                        });
                    }
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
            }
        }
    }

    async fn host_name(&self, id: NodeId) -> Result<String, String> {
        let hosts = self
            .client
            .call(&HostList {
                read: ReadMode::Linearizable,
            })
            .await
            .map_err(|e| e.to_string())?;
        hosts
            .hosts
            .iter()
            .find(|h| h.id == id)
            .map(|h| h.name.clone())
            .ok_or_else(|| format!("no host {id} in the fleet"))
    }

    /// VM `vm`'s VMID and host name.
    async fn placed(&self, vm: &str) -> Result<(u32, String), String> {
        let rec = self
            .client
            .call(&VmGet {
                name: vm.to_string(),
                read: ReadMode::Linearizable,
            })
            .await
            .map_err(|e| format!("{vm}: {e}"))?;
        let vmid = rec
            .assignment
            .vmid
            .ok_or_else(|| format!("{vm} has no VMID yet"))?;
        let host = rec
            .assignment
            .host
            .ok_or_else(|| format!("{vm} has no host"))?;
        Ok((vmid, self.host_name(host).await?))
    }

    fn agent(&self, host: &str) -> Result<usize, String> {
        self.lab.agent_index(host).map_err(|e| e.to_string())
    }

    fn member(&self, host: &str) -> Result<usize, String> {
        self.scenario
            .coordinators
            .iter()
            .position(|c| c == host)
            .ok_or_else(|| format!("{host} runs no coordinator"))
    }

    fn address(&self, host: &str) -> Result<std::net::IpAddr, String> {
        self.scenario
            .host_number(host)
            .map(|n| self.partitions.wiring().host_address(n))
            .ok_or_else(|| format!("no host {host}"))
    }

    /// The simulator serving `host`.
    fn sim_of(&self, host: &str) -> Result<String, String> {
        let def = self
            .scenario
            .hosts
            .iter()
            .find(|h| h.name == host)
            .ok_or_else(|| format!("no host {host}"))?;
        Ok(def.pve_cluster.clone().unwrap_or_else(|| host.to_string()))
    }

    /// Slows host `host`'s links by `ms` each way (a delay already there is replaced).
    fn delay_link(&mut self, host: &str, ms: u32) -> Result<(), String> {
        let Some(net) = self.network else {
            return Err(
                "delay-link needs hosts in network namespaces of their own (run as root)"
                    .to_string(),
            );
        };
        let h = net
            .host(host)
            .ok_or_else(|| format!("no host {host} in the network"))?;
        let n = self
            .scenario
            .host_number(host)
            .ok_or_else(|| format!("no host {host}"))?;
        // The old delay first: its rules go before the new ones come.
        self.delays.remove(host);
        let net_text = format!("{}/24", crate::partition::BRIDGE_NET);
        let delay = LinkDelay::start(
            h.netns.name(),
            u16::try_from(n).unwrap_or(u16::MAX),
            Duration::from_millis(u64::from(ms)),
            &net_text,
            &crate::host_network::CALLER_ADDRESS.to_string(),
        )
        .map_err(|e| e.to_string())?;
        self.delays.insert(host.to_string(), delay);
        Ok(())
    }

    async fn power_off(&mut self, host: &str) -> Result<(), String> {
        if let Ok(m) = self.member(host) {
            self.lab.kill(Part::Member(m)).await;
        }
        let i = self.agent(host)?;
        self.lab
            .power_off_host(i)
            .await
            .map_err(|e| e.to_string())?;
        if let Some(net) = self.network {
            net.power_off(host).map_err(|e| e.to_string())?;
        }
        if self.sim_of(host)? == host {
            self.off.send_modify(|off| {
                off.insert(host.to_string());
            });
        }
        Ok(())
    }

    async fn power_on(&mut self, host: &str) -> Result<(), String> {
        let i = self.agent(host)?;
        if let Some(net) = self.network {
            net.power_on(host).map_err(|e| e.to_string())?;
        }
        self.lab.power_on_host(i).await.map_err(|e| e.to_string())?;
        self.off.send_modify(|off| {
            off.remove(host);
        });
        if let Ok(m) = self.member(host)
            && !self.lab.runs(Part::Member(m))
        {
            self.lab
                .start_member(m)
                .await
                .map_err(|e| format!("its coordinator: {e}"))?;
        }
        if !self.lab.runs(Part::Agent(i)) {
            self.lab
                .start_agent(i)
                .await
                .map_err(|e| format!("its agent: {e}"))?;
        }
        Ok(())
    }

    async fn power(&self, vm: &str, action: VmPowerAction) -> Result<(), String> {
        self.client
            .call(&VmPower {
                name: vm.to_string(),
                request_id: format!("sim-{:016x}", rand::random::<u64>()),
                action,
            })
            .await
            .map(drop)
            .map_err(|e| e.to_string())
    }

    async fn set_ha(&self, vm: &str, state: HaState) -> Result<(), String> {
        let mut spec = self
            .client
            .call(&VmGet {
                name: vm.to_string(),
                read: ReadMode::Linearizable,
            })
            .await
            .map_err(|e| e.to_string())?
            .spec;
        spec.ha.state = Some(state);
        match state {
            HaState::Started => spec.state = DesiredState::Running,
            HaState::Stopped | HaState::Disabled => spec.state = DesiredState::Stopped,
            HaState::Ignored => {}
        }
        self.client
            .call(&VmApply { spec })
            .await
            .map(drop)
            .map_err(|e| e.to_string())
    }
}
