//! Running a scenario against real processes: the lab's coordinators and agents with
//! simulated PVE. The effects live here; every decision is one of the pure parts.
//!
//! ```text
//!  bring up: members on 127.0.1.N ─▶ voters ─▶ PVE clusters ─▶ agents (bind 127.0.1.N)
//!            ─▶ hosts online ─▶ apply the fleet ─▶ every VM in its desired state = t=0
//!            (with VIPs, as root: every host in a namespace of its own on a bridge,
//!            10.213.0.N, agents holding VIPs for real, an ARP prober asking who has them)
//!  play:     sampler task ──Reading every 200 ms──▶ timeline · invariants · expectations
//!            events at their times ──▶ Stage (lab faults, nftables, simulator, admin calls)
//!  end:      every expectation held for `hold` after the last event | timeout | Ctrl-C
//!  teardown: always: Lab::stop, the nftables table removed, the directory kept or removed
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use protocol::admin::{Events, ReadMode};
use protocol::spec::DesiredState;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::bring_up::{Started, bring_up};
use super::disturbance::Disturbance;
use super::error::ScenarioError;
use super::expect::{ExpectContext, ExpectResult, evaluate};
use super::figures::recovery_figures;
use super::invariants::{Invariant, Invariants, Violation};
use super::isolation::Isolation;
use super::load::Load;
use super::model::{Action, Check, During, Expectation, Refusal, Scenario, Target};
use super::observer::Observer;
use super::outcome::{End, Outcome};
use super::played::PlayedEvent;
use super::sample::{FleetSample, Sample};
use super::sampler::{Reading, Sampler};
use super::stage::Stage;
use super::timeline::{EntryKind, Timeline, TimelineEntry, fleet_event};
use crate::binaries::Binaries;
use crate::error::LabError;
use crate::host_network::{HostNetwork, PROBE_INTERFACE};
use crate::lab::{Lab, LabOptions, Part};
use crate::partition::{Partitions, Wiring};
use crate::sim_control::SimControl;
use crate::vip_probe::{ProbedVip, VipProbe};

/// The sampler's per-call timeout (a silent fleet must not stall the samples).
const SAMPLE_CALL_TIMEOUT: Duration = Duration::from_millis(800);
/// Whether `action` decides the state of the member on its host (so a pending restart of it
/// is dropped).
fn takes_member(action: &Action) -> bool {
    matches!(
        action,
        Action::StopCoordinator(_)
            | Action::KillCoordinator(_)
            | Action::RestartCoordinator(_)
            | Action::HealDisk(_)
            | Action::PowerOff(_)
            | Action::PowerOn(_)
            | Action::Reset(_)
            | Action::Shutdown(..)
    )
}

/// systemd's RestartSec of the coordinator's unit (packaging/systemd/pvefleet-coordinator.service).
const MEMBER_RESTART_SEC: Duration = Duration::from_secs(5);
/// The hard limit of the whole bring-up (every step has its own wait within it).
const BRING_UP_LIMIT: Duration = Duration::from_secs(300);
/// How a run is made.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The programs.
    pub binaries: Binaries,
    /// Keep the lab's directory (state and logs) here; `None`: a temporary directory,
    /// removed after a passing run.
    pub keep: Option<PathBuf>,
    /// Where the run lives.
    pub isolation: Isolation,
    /// RUST_LOG of every child (their logs go to the lab's `logs/`).
    pub log_filter: String,
}

/// Runs `scenario`: brings its fleet up, plays it, tears it down (always). `stop` turning
/// true interrupts it.
///
/// # Errors
/// [`ScenarioError`] when the run cannot start (no namespace for partitions, a part that does
/// not start, VMs that do not converge); a run that started always ends in an [`Outcome`].
pub async fn run(
    scenario: &Scenario,
    options: &RunOptions,
    observer: &mut dyn Observer,
    stop: watch::Receiver<bool>,
) -> Result<Outcome, ScenarioError> {
    if let Some(e) = scenario.first_partition()
        && let Isolation::Shared { why } = &options.isolation
    {
        return Err(ScenarioError::NoNamespace {
            at: format!("event[{}]", e.index),
            why: why.clone(),
        });
    }
    let mut lab_options = LabOptions::new(options.binaries.clone());
    lab_options.dir.clone_from(&options.keep);
    lab_options.prefix = "pvefleet-sim".to_string();
    lab_options.cluster_id = "sim".to_string();
    lab_options.log_filter.clone_from(&options.log_filter);
    if let Some(secs) = scenario.lease_secs {
        lab_options.member_args = vec!["--lease-secs".to_string(), secs.to_string()];
    }
    let mut lab = Lab::new(lab_options)?;
    observer.narrate(&format!(
        "lab directory {} (logs in {})",
        lab.root().display(),
        lab.layout().logs().display()
    ));
    let mut notes = Vec::new();
    let network = host_network(scenario, &options.isolation, observer, &mut notes);
    let wiring = if network.is_some() {
        Wiring::Bridge
    } else {
        Wiring::Loopback
    };
    let mut partitions = Partitions::new().wired(wiring);
    // An empty table first: nft missing or refused fails the run before anything starts.
    let cuttable = match scenario.first_partition() {
        Some(_) => partitions
            .heal_all()
            .await
            .map_err(|e| ScenarioError::Namespace(format!("nftables: {e}"))),
        None => Ok(()),
    };
    let result = match cuttable {
        Ok(()) => {
            Box::pin(drive(
                scenario,
                &mut lab,
                &mut partitions,
                network.as_ref(),
                observer,
                stop,
            ))
            .await
        }
        Err(e) => Err(e),
    };
    let teardown = lab.stop().await;
    // The namespaces after their processes.
    drop(network);
    if teardown.killed > 0 {
        notes.push(format!(
            "teardown: {} process(es) did not stop on SIGTERM and were killed",
            teardown.killed
        ));
    }
    if let Err(e) = partitions.remove().await {
        notes.push(format!("teardown: the nftables table was not removed: {e}"));
    }
    let passed = result.as_ref().is_ok_and(Outcome::passed);
    let layout = lab.layout().clone();
    let kept = if layout.temporary && passed {
        if !layout.remove_if_temporary() {
            notes.push(format!("could not remove {}", layout.root.display()));
        }
        None
    } else {
        Some(layout.root.clone())
    };
    observer.narrate(&format!(
        "stopped {} processes{}",
        teardown.clean + teardown.killed,
        kept.as_ref().map_or(String::new(), |d| format!(
            "; state and logs kept in {}",
            d.display()
        ))
    ));
    result.map(|mut outcome| {
        outcome.isolation = options.isolation.describe();
        outcome.notes.extend(notes);
        outcome.kept = kept;
        outcome
    })
}

/// The hosts' namespaces when the scenario has VIPs or link delays and the run may make
/// namespaces (root, in a private namespace of its own): its agents then hold the VIPs for
/// real, and a link can be slowed. Otherwise, or when they cannot be made (said in a note),
/// every host shares the run's loopback, VIPs are judged by the fleet's answer, and a
/// `delay-link` fails.
fn host_network(
    scenario: &Scenario,
    isolation: &Isolation,
    observer: &mut dyn Observer,
    notes: &mut Vec<String>,
) -> Option<HostNetwork> {
    if !scenario.wants_host_namespaces() {
        return None;
    }
    let why_not = match isolation {
        Isolation::Namespace { how } if !how.contains("--map-root-user") => None,
        Isolation::Namespace { how } => Some(format!(
            "{how} cannot make namespaces (`ip netns add` needs root)"
        )),
        Isolation::Shared { why } => Some(format!("no private network namespace ({why})")),
    };
    let made = match why_not {
        None => {
            let names: Vec<String> = scenario.hosts.iter().map(|h| h.name.clone()).collect();
            let vips: Vec<String> = scenario
                .fleet
                .vip
                .iter()
                .map(|v| v.address.clone())
                .collect();
            HostNetwork::create(&names, &vips).map_err(|e| e.to_string())
        }
        Some(why) => Err(why),
    };
    match made {
        Ok(network) => {
            observer.narrate(&format!(
                "every host in a network namespace of its own on a bridge (host N = \
                 10.213.0.N): agents hold VIPs on their vmbr0, an ARP prober asks who has them \
                 every {} ms",
                crate::vip_probe::EVERY.as_millis()
            ));
            Some(network)
        }
        Err(why) => {
            let note = format!(
                "hosts share the run's loopback: VIPs judged by the fleet's answer, not held \
                 for real, and links cannot be slowed: {why}"
            );
            observer.narrate(&note);
            notes.push(note);
            None
        }
    }
}

/// How long one event may take: a stuck event must not hold the later ones back (the
/// schedule is the scenario). An agent's stop may wait for a drain; a start waits for its
/// ready line (60 s).
fn event_limit(action: &Action) -> Duration {
    match action {
        Action::StopAgent(_) | Action::Shutdown(..) => Duration::from_secs(330),
        _ => Duration::from_secs(75),
    }
}

/// The VIP prober on the hosts' bridge, with the hosts named by their MACs.
fn start_probe(
    scenario: &Scenario,
    net: &HostNetwork,
) -> Result<super::sampler::Probe, ScenarioError> {
    let vips: Vec<ProbedVip> = scenario
        .fleet
        .vip
        .iter()
        .filter_map(|v| ProbedVip::parse(&v.name, &v.address))
        .collect();
    let probe = VipProbe::start(PROBE_INTERFACE, vips)
        .map_err(|e| ScenarioError::Namespace(format!("the VIP prober: {e}")))?;
    let hosts = net
        .hosts()
        .iter()
        .map(|h| (h.mac, h.name.clone()))
        .collect();
    Ok(super::sampler::Probe { probe, hosts })
}

/// A seed from a scenario's name (FNV-1a): the clients of two runs of one scenario make the
/// same choices.
fn name_seed(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Resolves when `stop` turns true (never if its sender is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    if stop.wait_for(|s| *s).await.is_err() {
        std::future::pending::<()>().await;
    }
}

async fn drive(
    scenario: &Scenario,
    lab: &mut Lab,
    partitions: &mut Partitions,
    network: Option<&HostNetwork>,
    observer: &mut dyn Observer,
    mut stop: watch::Receiver<bool>,
) -> Result<Outcome, ScenarioError> {
    let begun = Instant::now();
    let up = tokio::time::timeout(
        BRING_UP_LIMIT,
        Box::pin(bring_up(scenario, lab, network, observer)),
    );
    let started = tokio::select! {
        r = up => r.map_err(|_| ScenarioError::Deadline { secs: BRING_UP_LIMIT.as_secs() })??,
        () = stopped(&mut stop) => return Err(ScenarioError::Interrupted),
    };
    let startup = Started {
        startup: begun.elapsed(),
        ..started
    };
    Box::pin(play(
        scenario, lab, partitions, network, observer, stop, startup,
    ))
    .await
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// An expectation over a window so far: samples judged, and the first that broke it.
#[derive(Debug, Clone, Default)]
struct Window {
    samples: usize,
    broken: Option<(i64, String)>,
}

/// `during` in words.
fn during_word(d: During) -> &'static str {
    match d {
        During::Once => "once",
        During::Throughout => "throughout",
        During::Never => "never",
    }
}

/// What the play has seen so far.
struct Record {
    samples: Vec<Sample>,
    timeline: Vec<TimelineEntry>,
    violations: Vec<Violation>,
    fleet_events: Vec<String>,
    last_fleet: Option<FleetSample>,
    start_fleet: Option<FleetSample>,
    timed: BTreeMap<usize, ExpectResult>,
    /// The expectations judged over a window (`during`), by index.
    windowed: BTreeMap<usize, Window>,
    silent: usize,
    notes: Vec<String>,
}

impl Record {
    fn judge(
        &self,
        e: &Expectation,
        sample: &Sample,
        hosts: &BTreeMap<usize, String>,
    ) -> ExpectResult {
        let ctx = ExpectContext {
            sample,
            fleet: self.last_fleet.as_ref(),
            start: self.start_fleet.as_ref(),
            event_hosts: hosts,
            fleet_events: &self.fleet_events,
        };
        let (met, seen) = evaluate(&e.check, &ctx);
        ExpectResult {
            index: e.index,
            at_ms: e.at.map(ms),
            text: e.check.describe(),
            met,
            seen,
        }
    }
}

async fn play(
    scenario: &Scenario,
    lab: &mut Lab,
    partitions: &mut Partitions,
    network: Option<&HostNetwork>,
    observer: &mut dyn Observer,
    mut stop: watch::Receiver<bool>,
    started: Started,
) -> Result<Outcome, ScenarioError> {
    let client = started.client;
    let since_seq = client
        .call(&Events {
            since: 0,
            limit: Some(1),
            read: ReadMode::Linearizable,
        })
        .await
        .map_or(0, |r| r.last_seq);
    let t0 = Instant::now();
    let t0_unix = unix_ms();
    let (off_tx, off_rx) = watch::channel(BTreeSet::new());
    let probe = match network {
        Some(net) => Some(start_probe(scenario, net)?),
        None => None,
    };
    let sampler = Sampler {
        probe,
        client: client.clone().with_timeout(SAMPLE_CALL_TIMEOUT),
        sims: started.sims.clone(),
        off: off_rx,
        vips: !scenario.fleet.vip.is_empty(),
        members: if scenario
            .expects
            .iter()
            .any(|e| matches!(e.check, Check::Leader { .. }))
        {
            lab.members()
                .iter()
                .zip(&scenario.coordinators)
                .map(|(m, host)| (m.node_id, host.clone()))
                .collect()
        } else {
            BTreeMap::new()
        },
        t0,
        since_seq,
        retry_at: None,
    };
    let (tx, mut rx) = mpsc::unbounded_channel::<Reading>();
    let sampling = sampler.spawn(tx);
    let load = if scenario.clients > 0 {
        let load = Load::start(scenario.clients, name_seed(&scenario.name), &client, || {
            lab.client().ok()
        })
        .await
        .map_err(ScenarioError::Clients)?;
        observer.narrate(&format!(
            "{} clients write and read registers and allocate addresses",
            scenario.clients
        ));
        Some(load)
    } else {
        None
    };
    let mut disturbance = Disturbance::default();
    // Agents to start again once their host has booted: (when, agent, host).
    let mut boots: Vec<(Instant, usize, String)> = Vec::new();
    // Members a failure stopped, and when systemd starts them again.
    let mut restarts: Vec<(Instant, usize)> = Vec::new();
    let mut stage = Stage {
        lab,
        scenario,
        client: client.clone(),
        partitions,
        network,
        delays: BTreeMap::new(),
        off: off_tx,
        sims: started
            .sims
            .iter()
            .map(|s| (s.label.clone(), s.control.clone()))
            .collect::<BTreeMap<String, SimControl>>(),
        pve_ha: BTreeMap::new(),
        event_hosts: BTreeMap::new(),
        clock_offsets: BTreeMap::new(),
    };
    let stopped_at_start: BTreeSet<String> = scenario
        .fleet
        .vm
        .iter()
        .filter(|v| {
            v.state == DesiredState::Stopped
                || matches!(
                    v.ha.state,
                    Some(protocol::spec::HaState::Stopped | protocol::spec::HaState::Disabled)
                )
        })
        .map(|v| v.name.clone())
        .collect();
    let mut invariants = Invariants::new(scenario.vm_names(), &stopped_at_start);
    let mut timeline = Timeline::new();
    let mut rec = Record {
        samples: Vec::new(),
        timeline: Vec::new(),
        violations: Vec::new(),
        fleet_events: Vec::new(),
        last_fleet: None,
        start_fleet: None,
        timed: BTreeMap::new(),
        windowed: BTreeMap::new(),
        silent: 0,
        notes: Vec::new(),
    };
    let emit = |rec: &mut Record, observer: &mut dyn Observer, e: TimelineEntry| {
        observer.entry(&e);
        rec.timeline.push(e);
    };
    observer.narrate(&format!(
        "every VM is in its desired state after {:.1} s: t=0",
        started.startup.as_secs_f64()
    ));
    let deadline = t0 + scenario.timeout;
    let mut next = 0;
    let mut played: Vec<PlayedEvent> = Vec::new();
    let mut last_played_ms = 0;
    let mut met_since: Option<i64> = None;
    let end = loop {
        let next_at = scenario.events.get(next).map(|e| t0 + e.at);
        tokio::select! {
            biased;
            () = stopped(&mut stop) => break End::Interrupted,
            () = tokio::time::sleep_until(deadline) => break End::Timeout,
            () = tokio::time::sleep_until(next_at.unwrap_or(deadline)), if next_at.is_some() => {
                let Some(event) = scenario.events.get(next) else { continue };
                next += 1;
                let t_ms = ms(t0.elapsed());
                last_played_ms = t_ms;
                let remaining = deadline.saturating_duration_since(Instant::now());
                let limit = remaining.min(event_limit(&event.action));
                let acted = tokio::time::timeout(limit, stage.play(event.index, &event.action))
                    .await
                    .unwrap_or_else(|_| Err(format!("not done within {} s", limit.as_secs())));
                let host = acted.as_ref().ok().and_then(|a| a.host.clone());
                let peer = acted.as_ref().ok().and_then(|a| a.peer.clone());
                if acted.is_ok() {
                    disturbance.played(t_ms, &event.action, host.as_deref(), peer.as_deref());
                }
                // An event that starts, stops or kills the member (or its host) takes it over
                // from the restart systemd would make: a member stopped by an operator stays
                // stopped, as after `systemctl stop`.
                if let Some(m) = host
                    .as_deref()
                    .and_then(|h| scenario.coordinators.iter().position(|c| c == h))
                    && takes_member(&event.action)
                {
                    restarts.retain(|(_, i)| *i != m);
                }
                let text = event.action.describe(host.as_deref());
                let (error, refused) = match (acted, event.refusal) {
                    (Ok(_), Refusal::Expected) => (
                        Some("accepted, but the scenario expected the fleet to refuse it".to_string()),
                        None,
                    ),
                    (Ok(_), _) => (None, None),
                    (Err(e), Refusal::Never) => (Some(e), None),
                    (Err(e), Refusal::Allowed | Refusal::Expected) => (None, Some(e)),
                };
                let line = match (&error, &refused) {
                    (Some(e), _) => format!("event[{}] {text} FAILED: {e}", event.index),
                    (None, Some(r)) => format!("event[{}] {text}: refused: {r}", event.index),
                    (None, None) => format!("event[{}] {text}", event.index),
                };
                emit(&mut rec, observer, TimelineEntry::new(t_ms, EntryKind::Scenario, line));
                played.push(PlayedEvent {
                    index: event.index,
                    t_ms,
                    action: event.action.name().to_string(),
                    host,
                    vm: event.action.vm().map(str::to_string),
                    text,
                    error,
                    refused,
                });
            }
            reading = rx.recv() => {
                let Some(reading) = reading else { break End::Timeout };
                let sample = reading.sample;
                for ev in &reading.events {
                    if load.is_some() && super::load::own_subject(&ev.subject) {
                        continue;
                    }
                    rec.fleet_events.push(format!("{} {}: {}", ev.kind, ev.subject, ev.message));
                    emit(&mut rec, observer, fleet_event(ev, t0_unix));
                }
                for e in timeline.observe(&sample) {
                    emit(&mut rec, observer, e);
                }
                for v in invariants.observe(&sample, &disturbance) {
                    let text = format!("VIOLATION {}: {}", v.invariant, v.detail);
                    emit(&mut rec, observer, TimelineEntry::new(v.t_ms, EntryKind::Violation, text));
                    rec.violations.push(v);
                }
                if let Err(e) = stage.lab.check_alive() {
                    let text = match &e {
                        LabError::NotReady { what, problem, .. } => format!("{what} {problem}"),
                        other => other.to_string(),
                    };
                    rec.notes.push(format!("{} {text}", super::duration::seconds(sample.t_ms)));
                    emit(&mut rec, observer, TimelineEntry::new(sample.t_ms, EntryKind::Note, text));
                    // An agent gone on its own: its guard reset the host (or it crashed). The
                    // host boots again and systemd starts the agent, as on a real host.
                    for i in stage.lab.exited_agents() {
                        if let Some(host) = stage.lab.agents().get(i).map(|a| a.host.clone()) {
                            disturbance.played(sample.t_ms, &Action::KillAgent(Target::Host(host.clone())), Some(&host), None);
                            if let Some(delay) = scenario.boot_after_reset {
                                boots.push((Instant::now() + delay, i, host));
                            }
                        }
                    }
                    // A member gone on its own (its disk failed): systemd's Restart=on-failure
                    // starts it again after RestartSec (5 s), as on a real host.
                    for i in stage.lab.exited_members() {
                        if scenario.boot_after_reset.is_some() {
                            restarts.push((Instant::now() + MEMBER_RESTART_SEC, i));
                        }
                    }
                    stage.lab.forget_exited();
                }
                let now = Instant::now();
                let (due, later): (Vec<_>, Vec<_>) = restarts.drain(..).partition(|(at, _)| *at <= now);
                restarts = later;
                for (_, i) in due {
                    let host = scenario.coordinators.get(i).cloned().unwrap_or_default();
                    if stage.lab.runs(Part::Member(i)) || disturbance.is_off(&host) {
                        continue;
                    }
                    let text = match stage.lab.spawn_member(i) {
                        Ok(()) => format!("coordinator {} on {host} restarted by systemd (Restart=on-failure)", i + 1),
                        Err(e) => format!("coordinator {} on {host} did not restart: {e}", i + 1),
                    };
                    emit(&mut rec, observer, TimelineEntry::new(sample.t_ms, EntryKind::Note, text));
                }
                let (due, later): (Vec<_>, Vec<_>) = boots.drain(..).partition(|(at, _, _)| *at <= now);
                boots = later;
                for (_, i, host) in due {
                    if stage.lab.runs(Part::Agent(i)) || disturbance.is_off(&host) {
                        continue;
                    }
                    if let Some(net) = stage.network
                        && let Err(e) = net.wipe(&host)
                    {
                        let text = format!("host {host} booted: its VIP state was not wiped: {e}");
                        emit(&mut rec, observer, TimelineEntry::new(sample.t_ms, EntryKind::Note, text));
                    }
                    let text = match stage.lab.spawn_agent(i) {
                        Ok(()) => format!("host {host} booted after its reset: agent started"),
                        Err(e) => format!("host {host} booted after its reset: its agent did not start: {e}"),
                    };
                    disturbance.played(sample.t_ms, &Action::RestartAgent(Target::Host(host.clone())), Some(&host), None);
                    emit(&mut rec, observer, TimelineEntry::new(sample.t_ms, EntryKind::Note, text));
                }
                match &sample.fleet {
                    Some(f) => {
                        rec.last_fleet = Some(f.clone());
                        if rec.start_fleet.is_none() {
                            rec.start_fleet = Some(f.clone());
                        }
                    }
                    None => rec.silent += 1,
                }
                // Over a window: the first sample that breaks it is its verdict.
                for e in scenario.expects.iter().filter(|e| e.during != During::Once) {
                    let from = e.at.map_or(0, ms);
                    if sample.t_ms < from || rec.windowed.get(&e.index).is_some_and(|w| w.broken.is_some()) {
                        continue;
                    }
                    let result = rec.judge(e, &sample, &stage.event_hosts);
                    let w = rec.windowed.entry(e.index).or_default();
                    w.samples += 1;
                    let broken = match e.during {
                        During::Throughout => !result.met,
                        _ => result.met,
                    };
                    if broken {
                        let text = format!(
                            "expect[{}] {} ({}): broken ({})",
                            e.index,
                            result.text,
                            during_word(e.during),
                            result.seen
                        );
                        emit(&mut rec, observer, TimelineEntry::new(sample.t_ms, EntryKind::Note, text));
                        if let Some(w) = rec.windowed.get_mut(&e.index) {
                            w.broken = Some((sample.t_ms, result.seen));
                        }
                    }
                }
                for e in scenario.expects.iter().filter(|e| e.during == During::Once && e.at.is_some_and(|at| ms(at) <= sample.t_ms)) {
                    if !rec.timed.contains_key(&e.index) {
                        let result = rec.judge(e, &sample, &stage.event_hosts);
                        let text = format!(
                            "expect[{}] {}: {} ({})",
                            e.index,
                            result.text,
                            if result.met { "met" } else { "UNMET" },
                            result.seen
                        );
                        emit(&mut rec, observer, TimelineEntry::new(sample.t_ms, EntryKind::Note, text));
                        rec.timed.insert(e.index, result);
                    }
                }
                let after_last = next == scenario.events.len() && sample.t_ms >= last_played_ms;
                let all_timed = scenario.expects.iter().all(|e| {
                    e.during != During::Once || e.at.is_none() || rec.timed.contains_key(&e.index)
                });
                let holds = scenario
                    .expects
                    .iter()
                    .filter(|e| e.during == During::Once && e.at.is_none())
                    .all(|e| rec.judge(e, &sample, &stage.event_hosts).met);
                rec.samples.push(sample);
                let t = rec.samples.last().map_or(0, |s| s.t_ms);
                if after_last && holds {
                    let since = *met_since.get_or_insert(t);
                    if all_timed && t - since >= ms(scenario.hold) {
                        break End::ExpectationsMet;
                    }
                } else {
                    met_since = None;
                }
            }
        }
    };
    sampling.abort();
    let end_ms = ms(t0.elapsed());
    let clients_note = match load {
        Some(load) => {
            let verdict = load.finish(&client, end_ms).await;
            for v in &verdict.violations {
                let text = format!("VIOLATION {}: {}", v.invariant, v.detail);
                emit(
                    &mut rec,
                    observer,
                    TimelineEntry::new(v.t_ms, EntryKind::Violation, text),
                );
            }
            rec.violations.extend(verdict.violations);
            format!("{} writing clients: {}", scenario.clients, verdict.summary)
        }
        None => "no writing clients in the scenario ([fleet] clients)".to_string(),
    };
    client.close().await;
    let last = rec.samples.last().cloned().unwrap_or(Sample {
        t_ms: end_ms,
        pve: Default::default(),
        fleet: None,
        answers: BTreeMap::new(),
    });
    let mut expectations = Vec::new();
    for e in &scenario.expects {
        if e.during != During::Once {
            let mut result = rec.judge(e, &last, &stage.event_hosts);
            result.text = format!("{} ({})", result.text, during_word(e.during));
            result.at_ms = e.at.map(ms);
            let w = rec.windowed.get(&e.index).cloned().unwrap_or_default();
            (result.met, result.seen) = match w.broken {
                Some((t, seen)) => (false, format!("at {}: {seen}", super::duration::seconds(t))),
                None if w.samples == 0 => (false, "no sample in its window".to_string()),
                None => (
                    true,
                    format!("held on all {} samples of its window", w.samples),
                ),
            };
            expectations.push(result);
            continue;
        }
        let result = match (e.at, rec.timed.get(&e.index)) {
            (None, _) => rec.judge(e, &last, &stage.event_hosts),
            (Some(_), Some(r)) => r.clone(),
            (Some(at), None) => ExpectResult {
                index: e.index,
                at_ms: Some(ms(at)),
                text: e.check.describe(),
                met: false,
                seen: "the run ended before that time".to_string(),
            },
        };
        expectations.push(result);
    }
    for e in scenario.events.iter().skip(next) {
        played.push(PlayedEvent {
            index: e.index,
            t_ms: ms(e.at),
            action: e.action.name().to_string(),
            host: None,
            vm: e.action.vm().map(str::to_string),
            text: e.action.describe(None),
            error: Some("not played: the run ended first".to_string()),
            refused: None,
        });
    }
    let mut observed = vec![];
    let unread = rec
        .samples
        .iter()
        .filter(|s| !s.pve.unread.is_empty())
        .count();
    if unread > 0 {
        observed.push((
            Invariant::OneRunner,
            format!("{unread} sample(s) could not read every simulator"),
        ));
    }
    observed.push((Invariant::Linearizable, clients_note.clone()));
    observed.push((Invariant::AcknowledgedWrites, clients_note));
    observed.push((
        Invariant::HealthyHostReachable,
        format!(
            "hosts the run left alone for {} s (power, agent, links); member kills and stops \
             disturb no host",
            super::invariants::HEALTHY_WINDOW_MS / 1000
        ),
    ));
    // Hosts holding VIPs for real: the samples carry who answered ARP.
    let asked: u64 = rec
        .samples
        .iter()
        .flat_map(|s| s.answers.values())
        .map(|a| u64::from(a.asked))
        .sum();
    let real = network.is_some();
    if !scenario.fleet.vip.is_empty() {
        observed.push((
            Invariant::VipHeld,
            if real {
                format!(
                    "hosts answering ARP for it ({asked} requests), at most {} s without one \
                     while the fleet answers and a healthy online host is admitted",
                    super::invariants::VIP_UNHELD_BOUND_MS / 1000
                )
            } else {
                format!(
                    "holders as the leader reports them, at most {} s without one while the \
                     fleet answers and a healthy online host is admitted",
                    super::invariants::VIP_UNHELD_BOUND_MS / 1000
                )
            },
        ));
    }
    observed.push((
        Invariant::OneVipOwner,
        if scenario.fleet.vip.is_empty() {
            "no VIP in the scenario".to_string()
        } else if real {
            format!(
                "VIPs held for real on the hosts' vmbr0 (a namespace each): never two hosts \
                 answering one of {asked} ARP requests, and one replicated owner per VIP"
            )
        } else {
            "holders as the admin API reports them (one replicated owner per VIP): the lab's \
             agents only simulate holding, so a second holder on a host is not observable here"
                .to_string()
        },
    ));
    for h in &scenario.hosts {
        if h.pve_cluster.is_none() && h.memory_gib != 64 {
            rec.notes.push(format!(
                "host {}: a standalone simulated node has 64 GiB (the lab's PveNode), not the \
                 {} GiB of the file",
                h.name, h.memory_gib
            ));
        }
    }
    rec.timeline.sort_by_key(|e| e.t_ms);
    let figures = recovery_figures(&played, &rec.samples);
    Ok(Outcome {
        scenario: scenario.name.clone(),
        description: scenario.description.clone(),
        isolation: String::new(),
        hosts: scenario.hosts.iter().map(|h| h.name.clone()).collect(),
        vms: scenario.vm_names(),
        startup_ms: u64::try_from(started.startup.as_millis()).unwrap_or(u64::MAX),
        end_ms,
        end,
        samples: rec.samples.len(),
        fleet_silent_samples: rec.silent,
        events: played,
        timeline: rec.timeline,
        invariants: Outcome::verdicts(&rec.violations, &observed),
        violations: rec.violations,
        expectations,
        figures,
        kept: None,
        notes: rec.notes,
    })
}
