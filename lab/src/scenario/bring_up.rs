//! Bringing a scenario's fleet up, before t=0: the coordinator members on their hosts'
//! addresses, the simulated PVE clusters, the agents (each dialling from its host's address),
//! the fleet applied, and the wait until every VM is in its desired state, in the fleet and in
//! PVE.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::time::Duration;

use client::AdminClient;
use protocol::Role;
use protocol::admin::{
    HostList, PoolApply, ReadMode, SettingsPut, VipApply, VmApply, VmList, VmMigrate,
    VmidRangeApply,
};
use protocol::fleet::VmPhase;
use protocol::spec::{DesiredState, VmidRangeSpec};
use tokio::time::Instant;

use super::error::ScenarioError;
use super::model::Scenario;
use super::observer::Observer;
use super::preload::Preload;
use super::sampler::SimSource;
use crate::error::LabError;
use crate::host::{HostOptions, PveAccess, VipHolding};
use crate::host_network::HostNetwork;
use crate::lab::{Lab, MemberAt};
use crate::partition::Wiring;
use crate::pve_cluster::{PveClusterOptions, PveNodeOptions};

/// How long the members may take to become voters, and the hosts to come online.
const START_WAIT: Duration = Duration::from_secs(120);
/// How long the VMs may take to reach their desired state before t=0.
const CONVERGE_WAIT: Duration = Duration::from_secs(120);
/// The VMID range applied when the scenario has none (below the templates' 9000).
const DEFAULT_RANGE: (u32, u32) = (1000, 8999);

/// What the bring-up leaves for the play.
pub(crate) struct Started {
    pub(crate) client: AdminClient,
    pub(crate) sims: Vec<SimSource>,
    pub(crate) startup: Duration,
}

/// A member's QUIC port in a host namespace of its own (nothing else listens there).
const MEMBER_PORT: u16 = 7400;

/// A free UDP port on host `n`'s own address.
fn member_address(ip: IpAddr) -> Result<SocketAddr, ScenarioError> {
    UdpSocket::bind((ip, 0))
        .and_then(|s| s.local_addr())
        .map_err(|e| ScenarioError::Namespace(format!("cannot bind {ip}: {e}")))
}

pub(crate) async fn bring_up(
    scenario: &Scenario,
    lab: &mut Lab,
    network: Option<&HostNetwork>,
    observer: &mut dyn Observer,
) -> Result<Started, ScenarioError> {
    let wiring = if network.is_some() {
        Wiring::Bridge
    } else {
        Wiring::Loopback
    };
    let address = |host: &str| -> Result<IpAddr, ScenarioError> {
        scenario
            .host_number(host)
            .map(|n| wiring.host_address(n))
            .ok_or_else(|| ScenarioError::invalid("fleet.coordinators", format!("no host {host}")))
    };
    let netns = |host: &str| -> Option<String> {
        network
            .and_then(|n| n.host(host))
            .map(|h| h.netns.name().to_string())
    };
    let preload = Preload::for_scenario(scenario, lab.root(), lab.binaries())?;
    for h in &scenario.hosts {
        preload.prepare(&h.name)?;
    }
    for (i, host) in scenario.coordinators.iter().enumerate() {
        let n = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let listen = match netns(host) {
            Some(_) => SocketAddr::new(address(host)?, MEMBER_PORT),
            None => member_address(address(host)?)?,
        };
        let at = MemberAt {
            netns: netns(host),
            listen: Some(listen),
            env: preload.member_env(host, &lab.layout().coordinator_dir(n)),
        };
        if i == 0 {
            lab.found_at(at).await?;
        } else {
            let token = lab.token(Role::Coordinator, 1).await?;
            let via = lab.member(0)?.listen;
            lab.join_member_at(&token, via, at).await?;
        }
        observer.narrate(&format!(
            "coordinator {} on {host} at {}",
            i + 1,
            lab.member(i)?.listen
        ));
    }
    lab.wait_voters(START_WAIT).await?;
    for c in &scenario.pve_clusters {
        let mut opts = PveClusterOptions::new(c.name.clone(), c.nodes.clone());
        opts.shared_storage = c.shared_storage;
        opts.nodes = c
            .nodes
            .iter()
            .map(|n| {
                let def = scenario.hosts.iter().find(|h| &h.name == n);
                PveNodeOptions {
                    name: n.clone(),
                    cpus: def.map_or(16, |h| h.cpus),
                    memory_gib: def.map_or(64, |h| h.memory_gib),
                }
            })
            .collect();
        lab.add_pve_cluster(&opts).await?;
        observer.narrate(&format!(
            "PVE cluster {}: {}{}",
            c.name,
            c.nodes.join(", "),
            if c.shared_storage {
                " (shared storage \"shared\")"
            } else {
                ""
            }
        ));
    }
    let token = lab
        .token(
            Role::Agent,
            u32::try_from(scenario.hosts.len()).unwrap_or(u32::MAX),
        )
        .await?;
    for h in &scenario.hosts {
        let mut opts =
            HostOptions::new(h.name.clone(), PveAccess::Https).with_bind_address(address(&h.name)?);
        // The agent's own default beat (the lab's tests beat faster): a scenario shows what an
        // operator's fleet does.
        opts.heartbeat_ms = 1000;
        opts.cpus = h.cpus;
        opts.memory_gib = h.memory_gib;
        opts.labels = h.labels.clone();
        opts.pve_cluster = h.pve_cluster.clone();
        if let Some(ns) = netns(&h.name) {
            // VIPs held for real: addresses on the host's vmbr0, answered by its kernel.
            opts = opts.in_netns(ns).with_vip_holding(VipHolding::Host);
        }
        for (key, value) in preload.agent_env(&h.name) {
            opts = opts.with_agent_env(&key, &value);
        }
        let i = lab.add_agent(&opts, &token).await?;
        observer.narrate(&format!(
            "agent {} (host id {}) from {}",
            h.name,
            lab.agent(i)?.node_id,
            address(&h.name)?
        ));
    }
    lab.wait_hosts_online(START_WAIT).await?;
    let client = lab.client()?;
    apply(&client, scenario).await?;
    observer.narrate(&format!(
        "applied {} VM(s); waiting for their desired state",
        scenario.vms_at_start().count()
    ));
    let mut sims = Vec::new();
    for c in lab.pve_clusters() {
        sims.push(SimSource {
            label: c.name.clone(),
            control: c.control()?,
            standalone: None,
        });
    }
    for (i, a) in lab.agents().iter().enumerate() {
        if a.pve_cluster.is_none() {
            sims.push(SimSource {
                label: a.host.clone(),
                control: lab.pve_control(i)?,
                standalone: Some(a.host.clone()),
            });
        }
    }
    converge(&client, scenario, &sims).await?;
    if !scenario.start_on.is_empty() {
        place_at_start(&client, scenario).await?;
        observer.narrate(&format!(
            "placed {} VM(s) where the scenario starts them",
            scenario.start_on.len()
        ));
        converge(&client, scenario, &sims).await?;
    }
    Ok(Started {
        client,
        sims,
        startup: Duration::ZERO,
    })
}

async fn apply(client: &AdminClient, scenario: &Scenario) -> Result<(), ScenarioError> {
    let fleet = &scenario.fleet;
    let fail = |what: String, e: client::ClientError| ScenarioError::Start {
        source: LabError::NoSuchPart(format!("applying {what}: {e}")),
    };
    for spec in &fleet.pool {
        client
            .call(&PoolApply { spec: spec.clone() })
            .await
            .map_err(|e| fail(format!("pool {}", spec.name), e))?;
    }
    let mut ranges = fleet.vmid_range.clone();
    if ranges.is_empty() {
        ranges.push(VmidRangeSpec {
            name: "scenario".into(),
            start: DEFAULT_RANGE.0,
            end: DEFAULT_RANGE.1,
        });
    }
    for spec in ranges {
        let name = spec.name.clone();
        client
            .call(&VmidRangeApply { spec })
            .await
            .map_err(|e| fail(format!("vmid_range {name}"), e))?;
    }
    for spec in &fleet.vip {
        client
            .call(&VipApply { spec: spec.clone() })
            .await
            .map_err(|e| fail(format!("vip {}", spec.name), e))?;
    }
    // After the ranges: the settings may name the default one.
    if let Some(settings) = &fleet.settings {
        client
            .call(&SettingsPut {
                settings: settings.clone(),
            })
            .await
            .map_err(|e| fail("settings".to_string(), e))?;
    }
    for spec in scenario.vms_at_start() {
        client
            .call(&VmApply { spec: spec.clone() })
            .await
            .map_err(|e| fail(format!("vm {}", spec.name), e))?;
    }
    Ok(())
}

/// Moves every VM of `start_on` to its host (an operator's `vm migrate --to`) and waits until
/// each is there with no move under way.
async fn place_at_start(client: &AdminClient, scenario: &Scenario) -> Result<(), ScenarioError> {
    let fail = |what: String| ScenarioError::Start {
        source: LabError::NoSuchPart(what),
    };
    for (vm, host) in &scenario.start_on {
        if let Err(e) = client
            .call(&VmMigrate {
                name: vm.clone(),
                to: Some(host.clone()),
            })
            .await
        {
            // Already there: nothing to move ("VM web-1 is on pve-b already").
            if !e.to_string().contains("already") {
                return Err(fail(format!("placing {vm} on {host} at the start: {e}")));
            }
        }
    }
    let deadline = Instant::now() + CONVERGE_WAIT;
    loop {
        let hosts = client
            .call(&HostList {
                read: ReadMode::Linearizable,
            })
            .await
            .ok();
        let vms = client
            .call(&VmList {
                read: ReadMode::Linearizable,
            })
            .await
            .ok();
        let pending: Vec<String> = match (hosts, vms) {
            (Some(hosts), Some(vms)) => scenario
                .start_on
                .iter()
                .filter(|(vm, host)| {
                    let id = hosts.hosts.iter().find(|h| &h.name == *host).map(|h| h.id);
                    let there = vms
                        .vms
                        .iter()
                        .find(|r| &r.spec.name == *vm)
                        .is_some_and(|r| r.assignment.host.is_some() && r.assignment.host == id);
                    !there || vms.migrations.contains_key(*vm)
                })
                .map(|(vm, host)| format!("{vm} not yet on {host}"))
                .collect(),
            _ => vec!["the fleet did not answer".to_string()],
        };
        if pending.is_empty() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(fail(format!(
                "the VMs were not placed within {} s: {}",
                CONVERGE_WAIT.as_secs(),
                pending.join("; ")
            )));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Waits until every VM is in its desired state in the fleet, and the running ones run once
/// in PVE.
async fn converge(
    client: &AdminClient,
    scenario: &Scenario,
    sims: &[SimSource],
) -> Result<(), ScenarioError> {
    let deadline = Instant::now() + CONVERGE_WAIT;
    loop {
        let mut running: BTreeMap<String, usize> = BTreeMap::new();
        for s in sims {
            if let Ok(vms) = s.control.vms().await {
                for v in vms.into_iter().filter(|v| v.running && !v.template) {
                    *running.entry(v.name.unwrap_or_default()).or_default() += 1;
                }
            }
        }
        let pending: Vec<String> = match client
            .call(&VmList {
                read: ReadMode::Linearizable,
            })
            .await
        {
            Ok(reply) => scenario
                .vms_at_start()
                .filter_map(|spec| {
                    let rec = reply.vms.iter().find(|r| r.spec.name == spec.name);
                    let want = match spec.state {
                        DesiredState::Running => (VmPhase::Running, 1),
                        DesiredState::Stopped => (VmPhase::Stopped, 0),
                    };
                    let runs = running.get(&spec.name).copied().unwrap_or(0);
                    match rec {
                        Some(r) if r.status.phase == want.0 && runs == want.1 => None,
                        Some(r) => Some(format!(
                            "{} {} ({} in PVE){}",
                            spec.name,
                            r.status.phase,
                            runs,
                            if r.status.message.is_empty() {
                                String::new()
                            } else {
                                format!(": {}", r.status.message)
                            }
                        )),
                        None => Some(format!("{} not in the fleet", spec.name)),
                    }
                })
                .collect(),
            Err(e) => vec![format!("the fleet did not answer: {e}")],
        };
        if pending.is_empty() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(ScenarioError::NotConverged {
                secs: CONVERGE_WAIT.as_secs(),
                pending: pending.join("; "),
            });
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
