//! What `vm apply --wait` watches, as pure functions of the VM records: whether each applied VM
//! is in its desired state at (at least) the generation the apply produced, and the one-line
//! report printed on stderr whenever it changes:
//!
//! ```text
//! 3/12 running, 2 provisioning, 6 waiting for IPs, 1 failed: web-3: ensure failed at step clone ...
//! ```
//!
//! A VM is done when its agent observed the applied generation, it runs (or is stopped, when
//! desired so), and, if it has NICs whose addresses can be known (pool or static, or DHCP with
//! the guest agent), it reports its addresses.
//!
//! `pvefleet apply --wait` (a whole fleet file, often many VMs) reports the same standing as
//! the stages the VMs pass, counted ([`Progress::stage_line`]):
//!
//! ```text
//! placed 1000/1000, created 700/1000, running 412/1000
//! ```

use std::collections::BTreeMap;

use protocol::fleet::{ConditionKind, VmPhase, VmRecord};
use protocol::spec::{DesiredState, NicIp, VmSpec};

/// One VM the wait is for: its name and the generation its apply produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitGoal {
    /// The VM's name.
    pub name: String,
    /// The generation the apply answered.
    pub generation: u64,
}

/// Where one VM stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VmProgress {
    /// In its desired state at the applied generation (or a later one).
    Done,
    /// On its way; the label says where (`provisioning`, `waiting for IPs`, ...).
    Waiting(&'static str),
    /// Its last operation failed (the fleet retries with back-off); the VM's message.
    Failed(String),
    /// Deleted or being deleted: it will never be ready.
    Gone(&'static str),
}

/// Labels of waiting VMs, in the order a new VM passes them.
const ORDER: [&str; 9] = [
    "pending",
    "scheduled",
    "provisioning",
    "updating",
    "starting",
    "stopping",
    "waiting for IPs",
    "unknown",
    "deleting",
];

/// Longest failure message shown on the progress line (the final error shows it whole).
const LINE_MESSAGE_MAX: usize = 160;

/// Whether the VM's addresses can be known once it runs: from the fleet (pool, static) or
/// from its guest agent (DHCP).
pub fn expects_addresses(spec: &VmSpec) -> bool {
    spec.nics.iter().any(|n| match &n.ip {
        Some(NicIp::Pool(_) | NicIp::Static { .. }) => true,
        Some(NicIp::Dhcp) => spec.agent,
        None => false,
    })
}

/// Where the VM `vm` (`None`: not in the fleet) stands against the applied `generation`.
pub fn judge(generation: u64, vm: Option<&VmRecord>) -> VmProgress {
    let Some(vm) = vm else {
        return VmProgress::Gone("no longer exists");
    };
    if vm.deleting || vm.status.phase == VmPhase::Deleting {
        return VmProgress::Gone("is being deleted");
    }
    let current = vm.status.observed_generation >= generation;
    let ready_condition = vm
        .status
        .conditions
        .iter()
        .find(|c| c.kind == ConditionKind::Ready)
        .map(|c| c.status);
    let addressed = !vm.status.ips.is_empty() && ready_condition != Some(false);
    match (vm.status.phase, vm.spec.state) {
        (VmPhase::Failed, _) => VmProgress::Failed(one_line(&vm.status.message)),
        (VmPhase::Running | VmPhase::Stopped, _) if !current => VmProgress::Waiting("updating"),
        (VmPhase::Running, DesiredState::Running) => {
            if expects_addresses(&vm.spec) && !addressed {
                VmProgress::Waiting("waiting for IPs")
            } else {
                VmProgress::Done
            }
        }
        (VmPhase::Stopped, DesiredState::Stopped) => VmProgress::Done,
        (VmPhase::Running, DesiredState::Stopped) => VmProgress::Waiting("stopping"),
        (VmPhase::Stopped, DesiredState::Running) => VmProgress::Waiting("starting"),
        (VmPhase::Pending, _) => VmProgress::Waiting("pending"),
        (VmPhase::Scheduled, _) => VmProgress::Waiting("scheduled"),
        (VmPhase::Provisioning, _) => VmProgress::Waiting("provisioning"),
        (VmPhase::Unknown, _) => VmProgress::Waiting("unknown"),
        (VmPhase::Deleting, _) => VmProgress::Waiting("deleting"),
    }
}

/// A message on one line, whitespace runs folded.
fn one_line(text: &str) -> String {
    let folded = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if folded.is_empty() {
        "failed (no message)".to_string()
    } else {
        folded
    }
}

fn shortened(text: &str) -> String {
    if text.chars().count() <= LINE_MESSAGE_MAX {
        return text.to_string();
    }
    let mut short: String = text.chars().take(LINE_MESSAGE_MAX - 1).collect();
    short.push('…');
    short
}

/// Every applied VM's standing at one poll.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// Each VM, in apply order.
    pub vms: Vec<(String, VmProgress)>,
    /// Whether some applied VM is desired stopped (the report then says `done`, not `running`).
    pub some_stopped: bool,
    /// How many applied VMs have a host.
    pub placed: usize,
    /// How many applied VMs exist on their host.
    pub created: usize,
}

/// Whether the VM has a host (and is not being deleted).
fn is_placed(vm: &VmRecord) -> bool {
    !vm.deleting && vm.assignment.host.is_some()
}

/// Whether the VM exists on its host: its agent said so, or it runs or is stopped there.
fn is_created(vm: &VmRecord) -> bool {
    let said = vm
        .status
        .conditions
        .iter()
        .any(|c| c.kind == ConditionKind::Created && c.status);
    is_placed(vm) && (said || matches!(vm.status.phase, VmPhase::Running | VmPhase::Stopped))
}

impl Progress {
    /// The standing of every goal among `vms` (the fleet's VM list).
    pub fn of(goals: &[WaitGoal], vms: &[VmRecord]) -> Progress {
        let by_name: BTreeMap<&str, &VmRecord> =
            vms.iter().map(|v| (v.spec.name.as_str(), v)).collect();
        let mut some_stopped = false;
        let (mut placed, mut created) = (0, 0);
        let vms = goals
            .iter()
            .map(|goal| {
                let vm = by_name.get(goal.name.as_str()).copied();
                some_stopped |= vm.is_some_and(|v| v.spec.state == DesiredState::Stopped);
                placed += usize::from(vm.is_some_and(is_placed));
                created += usize::from(vm.is_some_and(is_created));
                (goal.name.clone(), judge(goal.generation, vm))
            })
            .collect();
        Progress {
            vms,
            some_stopped,
            placed,
            created,
        }
    }

    /// How many VMs are done.
    pub fn done(&self) -> usize {
        self.vms
            .iter()
            .filter(|(_, p)| *p == VmProgress::Done)
            .count()
    }

    /// Whether every VM is done.
    pub fn is_complete(&self) -> bool {
        self.done() == self.vms.len()
    }

    /// The failed VMs with their messages.
    pub fn failed(&self) -> impl Iterator<Item = (&str, &str)> {
        self.vms.iter().filter_map(|(name, p)| match p {
            VmProgress::Failed(message) => Some((name.as_str(), message.as_str())),
            _ => None,
        })
    }

    /// The VMs that will never be ready, with why.
    pub fn gone(&self) -> impl Iterator<Item = (&str, &'static str)> {
        self.vms.iter().filter_map(|(name, p)| match p {
            VmProgress::Gone(why) => Some((name.as_str(), *why)),
            _ => None,
        })
    }

    fn done_label(&self) -> &'static str {
        if self.some_stopped { "done" } else { "running" }
    }

    /// The one-line report: done count, then waiting VMs by label, then failed ones with the
    /// first one's name and message.
    pub fn line(&self) -> String {
        let mut parts = vec![format!(
            "{}/{} {}",
            self.done(),
            self.vms.len(),
            self.done_label()
        )];
        for label in ORDER {
            let n = self
                .vms
                .iter()
                .filter(|(_, p)| *p == VmProgress::Waiting(label))
                .count();
            if n > 0 {
                parts.push(format!("{n} {label}"));
            }
        }
        self.troubles(&mut parts);
        parts.join(", ")
    }

    /// The one-line report by stage: `placed 9/10, created 7/10, running 5/10`, then the gone
    /// and failed VMs as [`Progress::line`] tells them.
    pub fn stage_line(&self) -> String {
        let total = self.vms.len();
        let mut parts = vec![
            format!("placed {}/{total}", self.placed),
            format!("created {}/{total}", self.created),
            format!("{} {}/{total}", self.done_label(), self.done()),
        ];
        self.troubles(&mut parts);
        parts.join(", ")
    }

    /// The gone and failed VMs, the first one's name and message, as parts of a line.
    fn troubles(&self, parts: &mut Vec<String>) {
        let gone: Vec<_> = self.gone().collect();
        if let Some((name, why)) = gone.first() {
            parts.push(format!("{} gone: {name} {why}", gone.len()));
        }
        let failed: Vec<_> = self.failed().collect();
        if let Some((name, message)) = failed.first() {
            let more = match failed.len() {
                1 => String::new(),
                n => format!(" (and {} more)", n - 1),
            };
            parts.push(format!(
                "{} failed: {name}: {}{more}",
                failed.len(),
                shortened(message)
            ));
        }
    }

    /// One line per VM not done, indented: `  web-3: failed: <message>`.
    pub fn not_done(&self) -> String {
        let mut out = String::new();
        for (name, p) in &self.vms {
            let line = match p {
                VmProgress::Done => continue,
                VmProgress::Waiting(label) => format!("  {name}: {label}\n"),
                VmProgress::Failed(message) => format!("  {name}: failed: {message}\n"),
                VmProgress::Gone(why) => format!("  {name}: {why}\n"),
            };
            out.push_str(&line);
        }
        out
    }
}
