//! A scenario as the runner plays it, once its file was read and checked ([`super::file`]):
//! the fleet to start, the events to play at their times, the expectations to meet.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use protocol::agent::LeaveKind;
use protocol::fleet::{HostState, VmPhase};
use protocol::spec::{FleetSpecFile, HaState};
use serde::Serialize;

/// A checked scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Its name.
    pub name: String,
    /// What it shows, for people.
    pub description: String,
    /// How long after t=0 the run may last.
    pub timeout: Duration,
    /// How long every expectation must hold (after the last event) before the run ends.
    pub hold: Duration,
    /// The agents' lease, when the scenario sets it (`run --lease-secs`).
    pub lease_secs: Option<u64>,
    /// The hosts that also run a coordinator member; member `i` runs on `coordinators[i]`.
    pub coordinators: Vec<String>,
    /// Clients writing during the run (`[fleet] clients`): register writes and reads, address
    /// allocations, their history checked for linearizability at the end.
    pub clients: u32,
    /// How long a host whose guard reset it takes to boot before its agent runs again
    /// (`[fleet] boot_after_reset`); `None`: it stays down until an event starts its agent.
    pub boot_after_reset: Option<Duration>,
    /// The simulated PVE clusters.
    pub pve_clusters: Vec<PveClusterDef>,
    /// The hosts, in file order (host `i` has the address `127.0.1.(i+1)`).
    pub hosts: Vec<HostDef>,
    /// The VMs and the resources they draw from.
    pub fleet: FleetSpecFile,
    /// VMs moved to a chosen host before t=0 (`[start_on]`: VM name → host).
    pub start_on: BTreeMap<String, String>,
    /// The events, in the order they are played (by time, then file order).
    pub events: Vec<ScenarioEvent>,
    /// The expectations, in file order.
    pub expects: Vec<Expectation>,
}

/// A simulated PVE cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PveClusterDef {
    /// Its name.
    pub name: String,
    /// Its nodes (host names).
    pub nodes: Vec<String>,
    /// Whether a storage `shared` is on every node.
    pub shared_storage: bool,
}

/// A host: a PVE node with a node agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostDef {
    /// The PVE node name.
    pub name: String,
    /// The PVE cluster it is a node of; `None`: a standalone node.
    pub pve_cluster: Option<String>,
    /// Logical CPUs.
    pub cpus: u32,
    /// Memory in GiB.
    pub memory_gib: u64,
    /// Labels placement matches.
    pub labels: BTreeMap<String, String>,
}

/// One event of the scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioEvent {
    /// Its index in the file (`event[i]`).
    pub index: usize,
    /// When, after t=0.
    pub at: Duration,
    /// What.
    pub action: Action,
    /// Whether the fleet may or must refuse it (an operator's call).
    pub refusal: Refusal,
}

/// Whether an operator's call may be refused (`refusal` of an event).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Refusal {
    /// It must be accepted: a refusal fails the run.
    #[default]
    Never,
    /// It may be refused (a random operator's call in a chaos campaign).
    Allowed,
    /// It must be refused: an acceptance fails the run.
    Expected,
}

/// The host an event acts on, resolved when the event is played.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// A host by name.
    Host(String),
    /// `@leader`: the host of the coordinator member leading then.
    Leader,
    /// `@vm:NAME`: the host the fleet has VM `NAME` on then.
    HostOf(String),
    /// `@event[N]`: the host event `N` acted on.
    Event(usize),
    /// `@vip:NAME`: the host the fleet has VIP `NAME`'s ownership on then.
    VipOwner(String),
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Host(h) => f.write_str(h),
            Target::Leader => f.write_str("@leader"),
            Target::HostOf(vm) => write!(f, "@vm:{vm}"),
            Target::Event(i) => write!(f, "@event[{i}]"),
            Target::VipOwner(vip) => write!(f, "@vip:{vip}"),
        }
    }
}

/// What an event does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// The host loses power: its agent (and member) die, its PVE node and guests go off.
    PowerOff(Target),
    /// The host boots again: its PVE node comes on, its agent (and member) start.
    PowerOn(Target),
    /// Power-off then power-on at once.
    Reset(Target),
    /// The host's fleet links are cut (its member and agent reach no other host).
    Partition(Target),
    /// One direction of the host's fleet links is cut: `inbound` (it hears no other host) or
    /// outbound (no other host hears it).
    PartitionOneWay(Target, bool),
    /// The one link between two hosts is cut, both ways.
    CutLink(Target, Target),
    /// A share (percent) of the packets between the host and every other host is lost.
    Lossy(Target, u8),
    /// Every packet between the host and every other host is held this many ms longer, each
    /// way (netem's `delay`; hosts in namespaces of their own only).
    DelayLink(Target, u32),
    /// Every fault on one host's links ends (cut, one-way, link, loss), or on every host's
    /// (`None`).
    Heal(Option<Target>),
    /// SIGKILL of the host's agent (its PVE node and guests keep running).
    KillAgent(Target),
    /// The host's agent runs again.
    RestartAgent(Target),
    /// The host's agent is stopped as systemd stops it for a package upgrade (SIGTERM; it says
    /// "restart" on its last beats); `restart-agent` starts it again.
    StopAgent(Target),
    /// The host is shut down cleanly (`reboot` or `poweroff`): its agent is told why and
    /// stopped (SIGTERM; it waits for the shutdown policy's answer, a drain included), then
    /// the host goes off as at a power-off. `power-on` boots it again.
    Shutdown(Target, LeaveKind),
    /// SIGSTOP of the host's agent.
    FreezeAgent(Target),
    /// SIGCONT of the host's agent.
    ThawAgent(Target),
    /// The wall clock of the host's agent steps by this many seconds (negative: back); its
    /// monotonic clock runs on (libfaketime in the agent's process).
    ClockStep(Target, i64),
    /// Every sync of the journal of the coordinator member on the host takes this many
    /// milliseconds longer (a dying disk; the disk-fault library in the member's process).
    SlowDisk(Target, u32),
    /// Every sync of the journal of the coordinator member on the host fails with `EIO`: the
    /// member stops at its next write, as it must rather than run on a store it cannot trust.
    FailDisk(Target),
    /// The member's disk is fine again; the member, if it is not running (its failing disk
    /// stopped it), is started again, as systemd's `Restart=on-failure` starts it.
    HealDisk(Target),
    /// SIGKILL of the coordinator member on the host.
    KillCoordinator(Target),
    /// The coordinator member on the host runs again.
    RestartCoordinator(Target),
    /// The coordinator member on the host is stopped gracefully (SIGTERM, as systemd stops
    /// it); `restart-coordinator` starts it again.
    StopCoordinator(Target),
    /// The next `count` starts of VM `vm` fail in PVE (in every simulator of the scenario).
    FailStart {
        /// The VM.
        vm: String,
        /// How many starts fail.
        count: u32,
    },
    /// VM `vm`'s PVE config gets `lock: <lock>`.
    Lock {
        /// The VM.
        vm: String,
        /// The lock (`backup`, `create`, ...).
        lock: String,
    },
    /// VM `vm`'s PVE config loses its `lock:` (the backup ended).
    Unlock {
        /// The VM.
        vm: String,
    },
    /// VM `vm` is put under PVE's own HA manager with `state`.
    PveHa {
        /// The VM.
        vm: String,
        /// PVE's HA resource state.
        state: String,
    },
    /// The next `count` migrations of VM `vm` fail in PVE (in every simulator).
    FailMigrate {
        /// The VM.
        vm: String,
        /// How many migrations fail.
        count: u32,
    },
    /// `pvefleet vm migrate VM [--to HOST]`.
    VmMigrate {
        /// The VM.
        vm: String,
        /// The target host; `None`: the scheduler's choice.
        to: Option<Target>,
    },
    /// `pvefleet host maintenance enable HOST`.
    MaintenanceEnable(Target),
    /// `pvefleet host maintenance disable HOST`.
    MaintenanceDisable(Target),
    /// `pvefleet vm start`.
    VmStart {
        /// The VM.
        vm: String,
    },
    /// `pvefleet vm stop`.
    VmStop {
        /// The VM.
        vm: String,
    },
    /// VM `vm` of the file is applied (`pvefleet vm apply`): a VM named by this action is not
    /// applied at the start.
    VmApply {
        /// The VM.
        vm: String,
    },
    /// `pvefleet vm delete`.
    VmDelete {
        /// The VM.
        vm: String,
    },
    /// The VM's spec is applied again with `[vm.ha] state` changed (its power follows:
    /// `started` runs it, `stopped` and `disabled` stop it).
    VmHa {
        /// The VM.
        vm: String,
        /// The new HA state.
        state: HaState,
    },
}

impl Action {
    /// Its name in the file (`power-off`).
    pub fn name(&self) -> &'static str {
        match self {
            Action::PowerOff(_) => "power-off",
            Action::PowerOn(_) => "power-on",
            Action::Reset(_) => "reset",
            Action::Partition(_) => "partition",
            Action::PartitionOneWay(_, true) => "partition-in",
            Action::PartitionOneWay(_, false) => "partition-out",
            Action::CutLink(..) => "cut-link",
            Action::Lossy(..) => "lossy",
            Action::DelayLink(..) => "delay-link",
            Action::Heal(_) => "heal",
            Action::KillAgent(_) => "kill-agent",
            Action::RestartAgent(_) => "restart-agent",
            Action::StopAgent(_) => "stop-agent",
            Action::Shutdown(..) => "shutdown",
            Action::FreezeAgent(_) => "freeze-agent",
            Action::ThawAgent(_) => "thaw-agent",
            Action::ClockStep(..) => "clock-step",
            Action::SlowDisk(..) => "slow-disk",
            Action::FailDisk(_) => "fail-disk",
            Action::HealDisk(_) => "heal-disk",
            Action::KillCoordinator(_) => "kill-coordinator",
            Action::RestartCoordinator(_) => "restart-coordinator",
            Action::StopCoordinator(_) => "stop-coordinator",
            Action::FailStart { .. } => "fail-start",
            Action::FailMigrate { .. } => "fail-migrate",
            Action::VmMigrate { .. } => "vm-migrate",
            Action::MaintenanceEnable(_) => "maintenance-enable",
            Action::MaintenanceDisable(_) => "maintenance-disable",
            Action::Lock { .. } => "lock",
            Action::Unlock { .. } => "unlock",
            Action::PveHa { .. } => "pve-ha",
            Action::VmStart { .. } => "vm-start",
            Action::VmStop { .. } => "vm-stop",
            Action::VmHa { .. } => "vm-ha",
            Action::VmApply { .. } => "vm-apply",
            Action::VmDelete { .. } => "vm-delete",
        }
    }

    /// The host it acts on, for host actions.
    pub fn target(&self) -> Option<&Target> {
        match self {
            Action::PowerOff(t)
            | Action::PowerOn(t)
            | Action::Reset(t)
            | Action::Partition(t)
            | Action::PartitionOneWay(t, _)
            | Action::CutLink(t, _)
            | Action::Lossy(t, _)
            | Action::DelayLink(t, _)
            | Action::StopCoordinator(t)
            | Action::KillAgent(t)
            | Action::RestartAgent(t)
            | Action::StopAgent(t)
            | Action::Shutdown(t, _)
            | Action::FreezeAgent(t)
            | Action::ThawAgent(t)
            | Action::ClockStep(t, _)
            | Action::SlowDisk(t, _)
            | Action::FailDisk(t)
            | Action::HealDisk(t)
            | Action::KillCoordinator(t)
            | Action::RestartCoordinator(t)
            | Action::MaintenanceEnable(t)
            | Action::MaintenanceDisable(t) => Some(t),
            Action::Heal(t) | Action::VmMigrate { to: t, .. } => t.as_ref(),
            _ => None,
        }
    }

    /// The second host of a `cut-link`.
    pub fn peer(&self) -> Option<&Target> {
        match self {
            Action::CutLink(_, p) => Some(p),
            _ => None,
        }
    }

    /// The VM it acts on, for VM actions.
    pub fn vm(&self) -> Option<&str> {
        match self {
            Action::FailStart { vm, .. }
            | Action::FailMigrate { vm, .. }
            | Action::VmMigrate { vm, .. }
            | Action::Lock { vm, .. }
            | Action::Unlock { vm }
            | Action::PveHa { vm, .. }
            | Action::VmStart { vm }
            | Action::VmStop { vm }
            | Action::VmApply { vm }
            | Action::VmDelete { vm }
            | Action::VmHa { vm, .. } => Some(vm),
            _ => None,
        }
    }

    /// Whether the host loses its guests or its links: the events recovery figures measure.
    pub fn loses_host(&self) -> bool {
        matches!(
            self,
            Action::PowerOff(_) | Action::Partition(_) | Action::Shutdown(..)
        )
    }

    /// The event in words, with the host it acted on when that is known (`power-off pve-b`,
    /// `fail-start web-1 x3`).
    pub fn describe(&self, host: Option<&str>) -> String {
        let target = |t: &Target| match (t, host) {
            (Target::Host(h), _) => h.clone(),
            (t, Some(h)) => format!("{h} ({t})"),
            (t, None) => t.to_string(),
        };
        match self {
            Action::Heal(None) => "heal (every host)".to_string(),
            Action::FailStart { vm, count } => format!("fail-start {vm} (next {count} starts)"),
            Action::FailMigrate { vm, count } => {
                format!("fail-migrate {vm} (next {count} migrations)")
            }
            Action::VmMigrate { vm, to: None } => format!("vm-migrate {vm}"),
            Action::VmMigrate { vm, to: Some(t) } => format!("vm-migrate {vm} to {}", target(t)),
            Action::Lock { vm, lock } => format!("lock {vm} ({lock})"),
            Action::PveHa { vm, state } => format!("pve-ha {vm} (PVE HA state {state})"),
            Action::VmHa { vm, state } => format!("vm-ha {vm} (HA state {state})"),
            Action::VmStart { vm }
            | Action::VmStop { vm }
            | Action::Unlock { vm }
            | Action::VmApply { vm }
            | Action::VmDelete { vm } => format!("{} {vm}", self.name()),
            Action::Shutdown(t, kind) => format!("shutdown {} ({})", target(t), kind.describe()),
            Action::CutLink(a, b) => format!("cut-link {} - {b}", target(a)),
            Action::Lossy(t, pct) => format!("lossy {} ({pct} % loss)", target(t)),
            Action::DelayLink(t, ms) => format!("delay-link {} (+{ms} ms each way)", target(t)),
            Action::ClockStep(t, secs) => format!("clock-step {} ({secs:+} s)", target(t)),
            Action::SlowDisk(t, ms) => format!("slow-disk {} (+{ms} ms per sync)", target(t)),
            other => match other.target() {
                Some(t) => format!("{} {}", other.name(), target(t)),
                None => other.name().to_string(),
            },
        }
    }
}

/// A host named in an expectation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HostRef {
    /// By name.
    Name(String),
    /// `@event[N]`: the host event `N` acted on.
    Event(usize),
}

impl fmt::Display for HostRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostRef::Name(h) => f.write_str(h),
            HostRef::Event(i) => write!(f, "@event[{i}]"),
        }
    }
}

/// Whether a VM runs in PVE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PveState {
    /// Running on exactly one node.
    Running,
    /// Running nowhere.
    Stopped,
}

/// One expectation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expectation {
    /// Its index in the file (`expect[i]`).
    pub index: usize,
    /// With [`During::Once`]: `None` holds at the end, `Some(t)` is checked on the first
    /// sample at or after `t`. Otherwise the start of the window (`None`: t=0).
    pub at: Option<Duration>,
    /// Over which samples it is judged.
    pub during: During,
    /// What must hold.
    pub check: Check,
}

/// Over which samples an expectation is judged (`during` in the file).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum During {
    /// Once: at `at`, or at the end.
    #[default]
    Once,
    /// On every sample from `at` (or t=0) to the end.
    Throughout,
    /// On no sample from `at` (or t=0) to the end.
    Never,
}

/// What an expectation checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// About one VM; every key given must hold.
    Vm {
        /// The VM.
        vm: String,
        /// Its fleet phase.
        phase: Option<VmPhase>,
        /// Whether it runs in PVE.
        pve: Option<PveState>,
        /// Where it is (its PVE node while it runs, else its fleet host).
        on_host: Option<HostRef>,
        /// Where it is not.
        on_host_not: Vec<HostRef>,
        /// The node whose directory in PVE holds its config.
        pve_node: Option<HostRef>,
        /// Whether the fleet has a recovery under way for it.
        recovering: Option<bool>,
        /// Whether its fleet host differs from the one it had at t=0.
        moved: Option<bool>,
    },
    /// About one host.
    Host {
        /// The host.
        host: HostRef,
        /// Its fleet state.
        state: Option<HostState>,
        /// At least this many fleet VMs have it as their host.
        min_vms: Option<usize>,
        /// At most this many fleet VMs have it as their host.
        max_vms: Option<usize>,
    },
    /// Fleet events after t=0 whose `kind subject: message` contains `text`: at least `min`
    /// and at most `max` of them, and, with `before`, the first of them earlier than the first
    /// containing `before` (or that one never came).
    Events {
        /// The text.
        text: String,
        /// At least this many (1 unless given).
        min: usize,
        /// At most this many.
        max: Option<usize>,
        /// The text of the events they come before.
        before: Option<String>,
    },
    /// Which coordinator member leads (its host), as the admin API says.
    Leader {
        /// It leads.
        on: Option<HostRef>,
        /// It does not lead (and some member does).
        not: Vec<HostRef>,
    },
    /// A VIP's holder, as the leader reports it.
    Vip {
        /// The VIP.
        vip: String,
        /// Its holder.
        holder: Option<HostRef>,
        /// Whether some host holds it.
        held: Option<bool>,
    },
}

impl Check {
    /// The expectation in words (`vm web-1 phase running, not on pve-b`).
    pub fn describe(&self) -> String {
        match self {
            Check::Vm {
                vm,
                phase,
                pve,
                on_host,
                on_host_not,
                pve_node,
                recovering,
                moved,
            } => {
                let mut parts = vec![format!("vm {vm}")];
                if let Some(p) = phase {
                    parts.push(format!("phase {p}"));
                }
                if let Some(p) = pve {
                    let p = match p {
                        PveState::Running => "running in PVE",
                        PveState::Stopped => "running nowhere in PVE",
                    };
                    parts.push(p.to_string());
                }
                if let Some(h) = on_host {
                    parts.push(format!("on {h}"));
                }
                if !on_host_not.is_empty() {
                    let hosts: Vec<String> = on_host_not.iter().map(HostRef::to_string).collect();
                    parts.push(format!("not on {}", hosts.join(" or ")));
                }
                if let Some(n) = pve_node {
                    parts.push(format!("config on {n} in PVE"));
                }
                if let Some(r) = recovering {
                    parts.push(if *r { "recovering" } else { "not recovering" }.to_string());
                }
                if let Some(m) = moved {
                    parts.push(if *m { "moved" } else { "not moved" }.to_string());
                }
                parts.join(", ")
            }
            Check::Host {
                host,
                state,
                min_vms,
                max_vms,
            } => {
                let mut parts = vec![format!("host {host}")];
                if let Some(s) = state {
                    parts.push(format!("state {s}"));
                }
                if let Some(n) = min_vms {
                    parts.push(format!("at least {n} VMs"));
                }
                if let Some(n) = max_vms {
                    parts.push(format!("at most {n} VMs"));
                }
                parts.join(", ")
            }
            Check::Events {
                text,
                min,
                max,
                before,
            } => {
                let mut out = match (min, max) {
                    (1, None) => format!("a fleet event contains {text:?}"),
                    (n, None) => format!("at least {n} fleet events contain {text:?}"),
                    (n, Some(m)) if n == m => format!("exactly {n} fleet events contain {text:?}"),
                    (n, Some(m)) => format!("{n} to {m} fleet events contain {text:?}"),
                };
                if let Some(b) = before {
                    out.push_str(&format!(", the first before any containing {b:?}"));
                }
                out
            }
            Check::Leader { on, not } => {
                let mut parts = vec!["the leader".to_string()];
                if let Some(h) = on {
                    parts.push(format!("on {h}"));
                }
                if !not.is_empty() {
                    let hosts: Vec<String> = not.iter().map(HostRef::to_string).collect();
                    parts.push(format!("not on {}", hosts.join(" or ")));
                }
                parts.join(" ")
            }
            Check::Vip { vip, holder, held } => {
                let mut parts = vec![format!("vip {vip}")];
                if let Some(h) = holder {
                    parts.push(format!("held by {h}"));
                }
                if let Some(h) = held {
                    parts.push(if *h { "held" } else { "held by nobody" }.to_string());
                }
                parts.join(", ")
            }
        }
    }
}

impl Scenario {
    /// Host `name`'s number: its address is `127.0.1.<number>`.
    pub fn host_number(&self, name: &str) -> Option<u32> {
        let i = self.hosts.iter().position(|h| h.name == name)?;
        u32::try_from(i + 1).ok()
    }

    /// The first partition event (`event[i]`), if any: such a scenario needs a namespace.
    pub fn first_partition(&self) -> Option<&ScenarioEvent> {
        self.events.iter().find(|e| {
            matches!(
                e.action,
                Action::Partition(_)
                    | Action::PartitionOneWay(..)
                    | Action::CutLink(..)
                    | Action::Lossy(..)
                    | Action::DelayLink(..)
                    | Action::Heal(_)
            )
        })
    }

    /// Whether its hosts need namespaces of their own: VIPs held for real, or a link delay.
    pub fn wants_host_namespaces(&self) -> bool {
        !self.fleet.vip.is_empty()
            || self
                .events
                .iter()
                .any(|e| matches!(e.action, Action::DelayLink(..)))
    }

    /// The names of its VMs.
    pub fn vm_names(&self) -> Vec<String> {
        self.fleet.vm.iter().map(|v| v.name.clone()).collect()
    }

    /// Whether VM `name` is applied by a `vm-apply` event rather than at the start.
    pub fn applied_later(&self, name: &str) -> bool {
        self.events
            .iter()
            .any(|e| matches!(&e.action, Action::VmApply { vm } if vm == name))
    }

    /// The VMs applied at the start.
    pub fn vms_at_start(&self) -> impl Iterator<Item = &protocol::spec::VmSpec> {
        self.fleet
            .vm
            .iter()
            .filter(|v| !self.applied_later(&v.name))
    }
}
