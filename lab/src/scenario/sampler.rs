//! The sampler task: every [`PERIOD`], one [`Sample`] — who answered for each VIP since the
//! previous one (when hosts hold VIPs for real), every simulator's guests (in parallel), then
//! the fleet's VMs, then its hosts (and VIP holders) — and the fleet events
//! since the last round, sent to the runner. A simulator or the fleet that does not answer
//! is recorded as such; the task never fails. A silent fleet is asked again only every
//! [`SILENT_RETRY`], so the simulators (the ground truth of the invariants) are still read
//! every period while it has no leader.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use client::AdminClient;
use protocol::admin::{ClusterStatus, Events, HostList, ReadMode, VipStatus, VmList};
use protocol::fleet::Event;
use tokio::sync::{mpsc, watch};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

use super::sample::{FleetSample, PveSample, Sample, VipAnswerSample};
use crate::sim_control::SimControl;
use crate::vip_probe::VipProbe;

/// How often a sample is taken.
pub const PERIOD: Duration = Duration::from_millis(200);
/// How often a fleet that did not answer is asked again.
pub const SILENT_RETRY: Duration = Duration::from_secs(1);
/// How long such a retry may take (a leader answers in milliseconds).
const RETRY_CALL_TIMEOUT: Duration = Duration::from_millis(300);

/// One simulator of the scenario.
#[derive(Debug, Clone)]
pub struct SimSource {
    /// Its PVE cluster's name, or the standalone host's.
    pub label: String,
    /// Its control client.
    pub control: SimControl,
    /// The host, for a standalone node (skipped while that host is off: a powered-off node's
    /// listener never answers, and its guests are known to be off).
    pub standalone: Option<String>,
}

/// The VIP prober of hosts that hold VIPs for real, and the hosts by the MACs they answer
/// from.
#[derive(Debug)]
pub struct Probe {
    /// The prober.
    pub probe: VipProbe,
    /// Host names by MAC.
    pub hosts: BTreeMap<[u8; 6], String>,
}

impl Probe {
    /// What it saw since the previous call, hosts named.
    fn answers(&self) -> BTreeMap<String, VipAnswerSample> {
        let name = |set: &BTreeSet<[u8; 6]>| -> Vec<String> {
            set.iter()
                .map(|mac| {
                    self.hosts.get(mac).cloned().unwrap_or_else(|| {
                        let hex: Vec<String> = mac.iter().map(|b| format!("{b:02x}")).collect();
                        format!("MAC {}", hex.join(":"))
                    })
                })
                .collect()
        };
        self.probe
            .take()
            .into_iter()
            .map(|(vip, a)| {
                let sample = VipAnswerSample {
                    now: name(&a.now),
                    most: name(&a.most),
                    asked: a.asked,
                };
                (vip, sample)
            })
            .collect()
    }
}

/// What one round read.
#[derive(Debug, Clone)]
pub struct Reading {
    /// The sample.
    pub sample: Sample,
    /// The fleet events since the previous round.
    pub events: Vec<Event>,
}

/// The sampler's clients and where it is.
#[derive(Debug)]
pub struct Sampler {
    /// The VIP prober, when hosts hold VIPs for real.
    pub probe: Option<Probe>,
    /// A client with a short per-call timeout.
    pub client: AdminClient,
    /// The simulators.
    pub sims: Vec<SimSource>,
    /// The standalone hosts that are powered off now.
    pub off: watch::Receiver<BTreeSet<String>>,
    /// Whether to read VIP holders.
    pub vips: bool,
    /// The coordinator members' hosts by node id, when the scenario asks which one leads
    /// (empty: not asked).
    pub members: BTreeMap<u64, String>,
    /// t=0.
    pub t0: Instant,
    /// The last fleet event seen.
    pub since_seq: u64,
    /// While the fleet is silent: when to ask it again.
    pub retry_at: Option<Instant>,
}

impl Sampler {
    /// One round.
    pub async fn read(&mut self) -> Reading {
        let t_ms = i64::try_from(self.t0.elapsed().as_millis()).unwrap_or(i64::MAX);
        // First: the answers up to the moment the sample is dated.
        let answers = self.probe.as_ref().map(Probe::answers).unwrap_or_default();
        let off = self.off.borrow().clone();
        let mut set = JoinSet::new();
        for (i, sim) in self.sims.iter().enumerate() {
            if sim.standalone.as_ref().is_some_and(|h| off.contains(h)) {
                continue;
            }
            let control = sim.control.clone();
            set.spawn(async move { (i, control.vms().await) });
        }
        let mut pve = PveSample::default();
        let mut results = Vec::new();
        while let Some(done) = set.join_next().await {
            if let Ok(r) = done {
                results.push(r);
            }
        }
        results.sort_by_key(|(i, _)| *i);
        for (i, result) in results {
            let label = &self.sims[i].label;
            match result {
                Ok(vms) => pve.add(label, vms),
                Err(_) => pve.unread.push(label.clone()),
            }
        }
        let ask = self.retry_at.is_none_or(|at| Instant::now() >= at);
        let fleet = match (ask, self.retry_at) {
            (false, _) => None,
            (true, None) => self.fleet(&self.client).await,
            (true, Some(_)) => {
                let quick = self.client.clone().with_timeout(RETRY_CALL_TIMEOUT);
                self.fleet(&quick).await
            }
        };
        self.retry_at = match &fleet {
            Some(_) => None,
            None if ask => Some(Instant::now() + SILENT_RETRY),
            None => self.retry_at,
        };
        // A silent fleet is not asked twice: the next sample's simulators must not wait.
        let events = if fleet.is_some() {
            self.events().await
        } else {
            Vec::new()
        };
        Reading {
            sample: Sample {
                t_ms,
                pve,
                fleet,
                answers,
            },
            events,
        }
    }

    /// The fleet: the VMs before the hosts (see [`super::invariants`]).
    async fn fleet(&self, client: &AdminClient) -> Option<FleetSample> {
        let read = ReadMode::Linearizable;
        let vms = client.call(&VmList { read }).await.ok()?;
        let hosts = client.call(&HostList { read }).await.ok()?;
        let vips = if self.vips {
            Some(client.call(&VipStatus { name: None }).await.ok()?)
        } else {
            None
        };
        let mut fleet = FleetSample::from_replies(&vms, &hosts, vips.as_ref());
        if !self.members.is_empty() {
            let status = client.call(&ClusterStatus {}).await.ok()?;
            fleet.leader = status.leader.and_then(|id| self.members.get(&id).cloned());
        }
        Some(fleet)
    }

    async fn events(&mut self) -> Vec<Event> {
        let ask = Events {
            since: self.since_seq,
            limit: None,
            read: ReadMode::Linearizable,
        };
        match self.client.call(&ask).await {
            Ok(reply) => {
                self.since_seq = self.since_seq.max(reply.last_seq);
                reply.events
            }
            Err(_) => Vec::new(),
        }
    }

    /// Samples every [`PERIOD`] into `tx` until the receiver goes.
    pub fn spawn(mut self, tx: mpsc::UnboundedSender<Reading>) -> JoinHandle<()> {
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(PERIOD);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let reading = self.read().await;
                if tx.send(reading).is_err() {
                    return;
                }
            }
        })
    }
}
