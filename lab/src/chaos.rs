//! The seeded chaos campaign behind `pvefleet-lab sim chaos --seed S --duration D`:
//! faults drawn at random from a seed, written as an ordinary scenario file and played by the
//! scenario runner ([`crate::scenario`]), which checks its invariants on every sample while
//! writing clients run beside the faults. Pure: the same seed and duration always give the
//! same file, so a failing run replays from its seed (or from the file it printed, with
//! `pvefleet-lab sim run`).
//!
//! ```text
//!  seed ─StdRng─▶ schedule: every 2–9 s a fault drawn by weight (kinds below), on a host
//!                 not already faulted; each fault healed 2–20 s later, all before the end
//!        ─▶ scenario text: 5 hosts (3 members), 6 VMs, 1 VIP, 3 clients, the events,
//!           every VM running and every host online at the end (held 20 s)
//!        ─▶ lab::scenario::parse ─▶ lab::scenario::run (invariants 1–9 on every sample)
//! ```
//!
//! The fleet never loses more than one coordinator member at a time to the campaign's own
//! faults and never more than two hosts at once, so a majority and a place for every HA guest
//! exist at every instant, and the liveness rules (a VIP held, no healthy host marked
//! unreachable, every guest back by the end) must hold. docs/chaos.md has the kinds, the
//! rules and the campaign's figures.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The hosts of the campaign's fleet; the first three run the coordinator members.
pub const HOSTS: [&str; 5] = ["pve-a", "pve-b", "pve-c", "pve-d", "pve-e"];
/// How many of [`HOSTS`] run a member.
const MEMBERS: usize = 3;
/// The VMs (all HA, running); `web-*` and `db-1` are placed freely.
pub const VMS: [&str; 6] = ["web-1", "web-2", "web-3", "web-4", "db-1", "db-2"];
/// When the first fault comes (the clients have started, the fleet has settled).
const FIRST_FAULT_MS: u64 = 5_000;
/// How long before the end the last fault is healed.
const QUIET_END_MS: u64 = 10_000;

/// A kind of fault the campaign draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A host's links cut both ways, then healed.
    Partition,
    /// One direction of a host's links cut, then healed.
    OneWayPartition,
    /// A host cut and healed 3 to 5 times, 1 to 3 s each.
    Flapping,
    /// The link between two hosts cut, then healed.
    LinkCut,
    /// 10 to 40 % of a host's packets lost, then healed.
    PacketLoss,
    /// Every packet between one host and the others 5 to 40 ms late, each way, then on time
    /// again (netem's `delay`, made with NFQUEUE). A round trip stays under the 100 ms Raft
    /// deadline: a slower leader link is an open finding (tests/chaos-findings).
    LinkDelay,
    /// SIGKILL of an agent, restarted later.
    AgentKill,
    /// SIGSTOP of an agent, SIGCONT later.
    AgentFreeze,
    /// SIGKILL of a coordinator member (a named one, or the leader's), restarted later.
    MemberKill,
    /// SIGTERM of a coordinator member, restarted later.
    MemberStop,
    /// A host loses power (its guests, agent, member), powered on later.
    PowerOff,
    /// A host is reset (power off and on at once).
    Reset,
    /// A VM's next start fails in PVE, and the VM is stopped and started.
    StartFailure,
    /// A VM's next migration fails in PVE, and the VM is moved.
    MigrationFailure,
    /// A VM's PVE config gets a `backup` lock, removed later.
    Lock,
    /// An operator's move of a VM to a host, or to the scheduler's choice.
    Migrate,
    /// A host in maintenance (its guests drained), then out of it.
    Maintenance,
    /// A host's wall clock steps 30 s to 4 min ahead or back (its agent's and member's), then
    /// back to where it was.
    ClockStep,
    /// Every journal sync of a coordinator member (a named one, or the leader's) takes 0.1 to
    /// 1.5 s longer, then the disk is fine again.
    SlowDisk,
    /// Every journal sync of a coordinator member (a named one, or the leader's) fails: the
    /// member stops at its next write; the disk is fine again later and the member started.
    FailingDisk,
}

impl Kind {
    /// Every kind with its weight (how often it is drawn).
    pub const WEIGHTS: [(Kind, u32); 20] = [
        (Kind::Partition, 8),
        (Kind::OneWayPartition, 6),
        (Kind::Flapping, 4),
        (Kind::LinkCut, 6),
        (Kind::PacketLoss, 6),
        (Kind::LinkDelay, 5),
        (Kind::AgentKill, 8),
        (Kind::AgentFreeze, 6),
        (Kind::MemberKill, 8),
        (Kind::MemberStop, 4),
        (Kind::PowerOff, 6),
        (Kind::Reset, 4),
        (Kind::StartFailure, 4),
        (Kind::MigrationFailure, 3),
        (Kind::Lock, 3),
        (Kind::Migrate, 5),
        (Kind::Maintenance, 3),
        (Kind::ClockStep, 4),
        (Kind::SlowDisk, 3),
        (Kind::FailingDisk, 3),
    ];

    /// Its name in the figures.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Partition => "partition",
            Kind::OneWayPartition => "one-way partition",
            Kind::Flapping => "flapping partition",
            Kind::LinkCut => "link cut",
            Kind::PacketLoss => "packet loss",
            Kind::LinkDelay => "link delay",
            Kind::AgentKill => "agent SIGKILL",
            Kind::AgentFreeze => "agent SIGSTOP",
            Kind::MemberKill => "member SIGKILL",
            Kind::MemberStop => "member SIGTERM",
            Kind::PowerOff => "host power-off",
            Kind::Reset => "host reset",
            Kind::StartFailure => "PVE start failure",
            Kind::MigrationFailure => "PVE migration failure",
            Kind::Lock => "PVE lock",
            Kind::Migrate => "operator move",
            Kind::Maintenance => "maintenance drain",
            Kind::ClockStep => "clock step",
            Kind::SlowDisk => "slow member disk",
            Kind::FailingDisk => "failing member disk",
        }
    }

    /// Whether it takes a host out of the fleet's reach (power, agent or links): at most two
    /// such hosts at once.
    fn takes_host(self) -> bool {
        !matches!(
            self,
            Kind::MemberKill
                | Kind::MemberStop
                | Kind::SlowDisk
                | Kind::FailingDisk
                | Kind::ClockStep
                | Kind::StartFailure
                | Kind::MigrationFailure
                | Kind::Lock
                | Kind::Migrate
        )
    }
}

/// One event of the schedule: its time and its `[[event]]` keys after `at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// When, ms after t=0.
    pub at_ms: u64,
    /// The keys, in file order (`action = "partition"`, `host = "pve-b"`).
    pub keys: Vec<(&'static str, String)>,
}

/// A step while drawing: it may act on the host another step acted on (`@event[N]`, known
/// once the steps are in file order).
struct Draft {
    step: Step,
    /// Its number among the drafts.
    id: usize,
    /// The draft whose host it acts on.
    host_of: Option<usize>,
}

/// A drawn campaign.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    /// The seed.
    pub seed: u64,
    /// How long the faults go on.
    pub duration: Duration,
    /// The events, in time order (a fault and its end are two steps).
    pub steps: Vec<Step>,
    /// The faults drawn, by kind (a flapping partition counts each cut).
    pub faults: BTreeMap<Kind, u32>,
}

/// What is busy until when, while drawing.
#[derive(Default)]
struct Busy {
    /// Host → when its fault ends.
    hosts: BTreeMap<&'static str, u64>,
    /// When the member fault under way ends (at most one member down at a time).
    member_until: u64,
    /// VM → when its fault ends.
    vms: BTreeMap<&'static str, u64>,
    /// Host → when its clock is back.
    clocks: BTreeMap<&'static str, u64>,
}

impl Busy {
    fn host_free(&self, h: &str, at: u64) -> bool {
        self.hosts.get(h).is_none_or(|until| *until <= at)
    }

    fn hosts_taken(&self, at: u64) -> usize {
        self.hosts.values().filter(|until| **until > at).count()
    }

    fn vm_free(&self, vm: &str, at: u64) -> bool {
        self.vms.get(vm).is_none_or(|until| *until <= at)
    }
}

fn pick<'a, T>(rng: &mut StdRng, items: &'a [T]) -> Option<&'a T> {
    if items.is_empty() {
        return None;
    }
    items.get(rng.random_range(0..items.len()))
}

fn kind(rng: &mut StdRng) -> Kind {
    let total: u32 = Kind::WEIGHTS.iter().map(|(_, w)| w).sum();
    let mut roll = rng.random_range(0..total);
    for (k, w) in Kind::WEIGHTS {
        if roll < w {
            return k;
        }
        roll -= w;
    }
    Kind::Partition
}

fn step(at_ms: u64, keys: &[(&'static str, &str)]) -> Step {
    Step {
        at_ms,
        keys: keys.iter().map(|(k, v)| (*k, (*v).to_string())).collect(),
    }
}

/// `action` on `host` at `at_ms`.
fn on_host(at_ms: u64, action: &str, host: &str) -> Step {
    step(at_ms, &[("action", action), ("host", host)])
}

/// The drafts in file order (by time, stably), their `@event[N]` references resolved.
fn in_file_order(mut drafts: Vec<Draft>) -> Vec<Step> {
    drafts.sort_by_key(|d| d.step.at_ms);
    let position: BTreeMap<usize, usize> =
        drafts.iter().enumerate().map(|(i, d)| (d.id, i)).collect();
    drafts
        .into_iter()
        .map(|mut d| {
            if let Some(n) = d.host_of.and_then(|id| position.get(&id)) {
                d.step.keys.push(("host", format!("@event[{n}]")));
            }
            d.step
        })
        .collect()
}

/// Draws the campaign of `seed` lasting `duration` (at least 30 s).
pub fn draw(seed: u64, duration: Duration) -> Schedule {
    let mut rng = StdRng::seed_from_u64(seed);
    let end = u64::try_from(duration.as_millis())
        .unwrap_or(u64::MAX)
        .max(30_000);
    let last_heal = end - QUIET_END_MS;
    let mut busy = Busy::default();
    let mut drafts: Vec<Draft> = Vec::new();
    let mut faults: BTreeMap<Kind, u32> = BTreeMap::new();
    let mut t = FIRST_FAULT_MS;
    while t + 2_000 < last_heal {
        let k = kind(&mut rng);
        let len = rng.random_range(2_000..20_000).min(last_heal - t);
        let until = t + len;
        if let Some(drawn) = place(&mut rng, k, t, until, last_heal, &mut busy) {
            *faults.entry(k).or_default() += drawn.count;
            let first = drafts.len();
            for (i, (step, host_of)) in drawn.steps.into_iter().enumerate() {
                drafts.push(Draft {
                    step,
                    id: first + i,
                    host_of: host_of.map(|j| first + j),
                });
            }
        }
        t += rng.random_range(2_000..9_000);
    }
    Schedule {
        seed,
        duration: Duration::from_millis(end),
        steps: in_file_order(drafts),
        faults,
    }
}

/// The steps of one fault (each with the step of the same fault whose host it acts on) and
/// how many faults they count for.
struct Drawn {
    steps: Vec<(Step, Option<usize>)>,
    count: u32,
}

/// The steps of a fault of kind `k` from `at` to `until`, on hosts and VMs free then; `None`
/// when nothing is free for it. Nothing lasts beyond `last_heal`.
fn place(
    rng: &mut StdRng,
    k: Kind,
    at: u64,
    until: u64,
    last_heal: u64,
    busy: &mut Busy,
) -> Option<Drawn> {
    let free_hosts: Vec<&'static str> = HOSTS
        .iter()
        .copied()
        .filter(|h| busy.host_free(h, at))
        .collect();
    let member_free = busy.member_until <= at;
    // A host fault on a member's host takes its member too.
    let host_ok = |h: &str| !HOSTS[..MEMBERS].contains(&h) || member_free;
    let host_candidates: Vec<&'static str> = if k.takes_host() && busy.hosts_taken(at) >= 2 {
        Vec::new()
    } else {
        free_hosts.iter().copied().filter(|h| host_ok(h)).collect()
    };
    let take_host = |busy: &mut Busy, h: &'static str, until: u64| {
        busy.hosts.insert(h, until);
        if HOSTS[..MEMBERS].contains(&h) {
            busy.member_until = busy.member_until.max(until);
        }
    };
    let free_vms: Vec<&'static str> = VMS
        .iter()
        .copied()
        .filter(|v| busy.vm_free(v, at))
        .collect();
    let mut out = Vec::new();
    // (step, the step whose host it acts on)
    let mut refers: Vec<(usize, usize)> = Vec::new();
    let mut count = 1;
    match k {
        Kind::Partition
        | Kind::OneWayPartition
        | Kind::PacketLoss
        | Kind::LinkDelay
        | Kind::AgentFreeze => {
            let h = *pick(rng, &host_candidates)?;
            take_host(busy, h, until);
            let start = match k {
                Kind::Partition => on_host(at, "partition", h),
                Kind::OneWayPartition if rng.random_bool(0.5) => on_host(at, "partition-in", h),
                Kind::OneWayPartition => on_host(at, "partition-out", h),
                Kind::PacketLoss => {
                    let loss = rng.random_range(10..=40u8).to_string();
                    step(at, &[("action", "lossy"), ("host", h), ("loss", &loss)])
                }
                Kind::LinkDelay => {
                    let delay = format!("{}ms", rng.random_range(5..=40u32));
                    step(
                        at,
                        &[("action", "delay-link"), ("host", h), ("delay", &delay)],
                    )
                }
                _ => on_host(at, "freeze-agent", h),
            };
            out.push(start);
            let end = if k == Kind::AgentFreeze {
                "thaw-agent"
            } else {
                "heal"
            };
            out.push(on_host(until, end, h));
        }
        Kind::Flapping => {
            let h = *pick(rng, &host_candidates)?;
            let flaps = rng.random_range(3..=5u64);
            let mut t = at;
            count = 0;
            for _ in 0..flaps {
                let cut = rng.random_range(1_000..3_000);
                let gap = rng.random_range(1_000..3_000);
                if t + cut > last_heal {
                    break;
                }
                out.push(on_host(t, "partition", h));
                out.push(on_host(t + cut, "heal", h));
                t += cut + gap;
                count += 1;
            }
            take_host(busy, h, t);
        }
        Kind::LinkCut => {
            let a = *pick(rng, &host_candidates)?;
            let others: Vec<&'static str> = host_candidates
                .iter()
                .copied()
                .filter(|h| *h != a)
                .collect();
            let b = *pick(rng, &others)?;
            if busy.hosts_taken(at) > 0 {
                return None;
            }
            take_host(busy, a, until);
            take_host(busy, b, until);
            out.push(step(
                at,
                &[("action", "cut-link"), ("host", a), ("peer", b)],
            ));
            out.push(on_host(until, "heal", a));
        }
        Kind::AgentKill => {
            let h = *pick(rng, &host_candidates)?;
            take_host(busy, h, until);
            out.push(on_host(at, "kill-agent", h));
            out.push(on_host(until, "restart-agent", h));
        }
        Kind::MemberKill | Kind::MemberStop | Kind::SlowDisk | Kind::FailingDisk => {
            if !member_free {
                return None;
            }
            let leader = k != Kind::MemberStop && rng.random_bool(0.5);
            let delay = format!("{}ms", rng.random_range(100..=1_500u32));
            let (start, end): (Vec<(&'static str, &str)>, &str) = match k {
                Kind::MemberKill => (vec![("action", "kill-coordinator")], "restart-coordinator"),
                Kind::MemberStop => (vec![("action", "stop-coordinator")], "restart-coordinator"),
                Kind::SlowDisk => (
                    vec![("action", "slow-disk"), ("delay", &delay)],
                    "heal-disk",
                ),
                _ => (vec![("action", "fail-disk")], "heal-disk"),
            };
            let on = |h: &'static str| {
                let mut keys = start.clone();
                keys.insert(1, ("host", h));
                keys
            };
            if leader {
                // Its host is known only when played: no other member may be down then.
                if HOSTS[..MEMBERS].iter().any(|h| !busy.host_free(h, at)) {
                    return None;
                }
                busy.member_until = until;
                out.push(step(at, &on("@leader")));
                // Its host: the one the fault acted on (`@event[N]`, filled in file order).
                out.push(step(until, &[("action", end)]));
                refers.push((1, 0));
            } else {
                let members: Vec<&'static str> = HOSTS[..MEMBERS]
                    .iter()
                    .copied()
                    .filter(|h| busy.host_free(h, at))
                    .collect();
                let h = *pick(rng, &members)?;
                busy.member_until = until;
                out.push(step(at, &on(h)));
                out.push(on_host(until, end, h));
            }
        }
        Kind::ClockStep => {
            let free: Vec<&'static str> = HOSTS
                .iter()
                .copied()
                .filter(|h| busy.clocks.get(h).is_none_or(|t| *t <= at))
                .collect();
            let h = *pick(rng, &free)?;
            busy.clocks.insert(h, until);
            let secs = rng.random_range(30..=240i64) * if rng.random_bool(0.5) { 1 } else { -1 };
            let (there, back) = (format!("{secs}s"), format!("{}s", -secs));
            out.push(step(
                at,
                &[("action", "clock-step"), ("host", h), ("by", &there)],
            ));
            out.push(step(
                until,
                &[("action", "clock-step"), ("host", h), ("by", &back)],
            ));
        }
        Kind::PowerOff | Kind::Reset => {
            let h = *pick(rng, &host_candidates)?;
            if k == Kind::Reset {
                // Down for the reboot and the agent's return.
                take_host(busy, h, at + 10_000);
                out.push(on_host(at, "reset", h));
            } else {
                take_host(busy, h, until);
                out.push(on_host(at, "power-off", h));
                out.push(on_host(until, "power-on", h));
            }
        }
        Kind::StartFailure => {
            let vm = *pick(rng, &free_vms)?;
            busy.vms.insert(vm, at + 8_000);
            let fail = vec![("action", "fail-start"), ("vm", vm), ("count", "1")];
            out.push(step(at, &fail));
            out.push(step(
                at + 1_000,
                &[("action", "vm-stop"), ("vm", vm), ("refusal", "allowed")],
            ));
            out.push(step(at + 6_000, &[("action", "vm-start"), ("vm", vm)]));
        }
        Kind::MigrationFailure => {
            let vm = *pick(rng, &free_vms)?;
            busy.vms.insert(vm, at + 5_000);
            let fail = vec![("action", "fail-migrate"), ("vm", vm), ("count", "1")];
            out.push(step(at, &fail));
            out.push(step(
                at + 500,
                &[("action", "vm-migrate"), ("vm", vm), ("refusal", "allowed")],
            ));
        }
        Kind::Lock => {
            let vm = *pick(rng, &free_vms)?;
            busy.vms.insert(vm, until);
            let lock = vec![("action", "lock"), ("vm", vm), ("lock", "backup")];
            out.push(step(at, &lock));
            out.push(step(until, &[("action", "unlock"), ("vm", vm)]));
        }
        Kind::Migrate => {
            let vm = *pick(rng, &free_vms)?;
            busy.vms.insert(vm, at + 5_000);
            let to: Vec<&'static str> = free_hosts.clone();
            match pick(rng, &to).filter(|_| rng.random_bool(0.7)) {
                Some(h) => out.push(step(
                    at,
                    &[
                        ("action", "vm-migrate"),
                        ("vm", vm),
                        ("host", h),
                        ("refusal", "allowed"),
                    ],
                )),
                None => out.push(step(
                    at,
                    &[("action", "vm-migrate"), ("vm", vm), ("refusal", "allowed")],
                )),
            }
        }
        Kind::Maintenance => {
            // A drain needs room elsewhere: only when no other host is taken.
            if busy.hosts_taken(at) > 0 {
                return None;
            }
            let h = *pick(rng, &free_hosts)?;
            busy.hosts.insert(h, until);
            // An operator's calls: the fleet may refuse them (a host not online); a host left
            // in maintenance fails the end's expectations.
            for (t, action) in [(at, "maintenance-enable"), (until, "maintenance-disable")] {
                out.push(step(
                    t,
                    &[("action", action), ("host", h), ("refusal", "allowed")],
                ));
            }
        }
    }
    if count == 0 {
        return None;
    }
    let steps = out
        .into_iter()
        .enumerate()
        .map(|(i, s)| (s, refers.iter().find(|(j, _)| *j == i).map(|(_, r)| *r)))
        .collect();
    Some(Drawn { steps, count })
}

/// The fleet every campaign runs: five hosts in one PVE cluster with shared storage, three
/// members, the VMs of [`VMS`], one VIP any host may hold, three writing clients.
const FLEET: &str = r#"[fleet]
coordinators = ["pve-a", "pve-b", "pve-c"]
clients = 3
boot_after_reset = "3s"

[[pve_cluster]]
name = "chaos"
nodes = ["pve-a", "pve-b", "pve-c", "pve-d", "pve-e"]

[[host]]
name = "pve-a"
[[host]]
name = "pve-b"
[[host]]
name = "pve-c"
[[host]]
name = "pve-d"
[[host]]
name = "pve-e"

[[vip]]
name = "front"
address = "10.20.0.10/24"
interface = "vmbr0"
"#;

impl Schedule {
    /// The campaign as a scenario file (`pvefleet-lab sim run` plays it as `sim chaos` does).
    pub fn scenario_text(&self) -> String {
        let secs = self.duration.as_secs();
        let mut text = format!(
            "# pvefleet-lab sim chaos --seed {seed} --duration {secs}s (lab::chaos): replay with\n\
             # `pvefleet-lab sim chaos --seed {seed} --duration {secs}s` or `pvefleet-lab sim run FILE`.\n\
             name = \"chaos-{seed}\"\n\
             description = \"Seeded chaos campaign {seed}: {n} faults over {secs} s\"\n\
             timeout = \"{timeout}s\"\n\
             hold = \"20s\"\n\n{FLEET}",
            seed = self.seed,
            n = self.faults.values().sum::<u32>(),
            timeout = secs + 240,
        );
        for vm in VMS {
            let _ = write!(
                text,
                "\n[[vm]]\nname = \"{vm}\"\nmemory_mib = 1024\nha = true\n\
                 disks = [{{ slot = \"scsi0\", storage = \"shared\", size_gib = 8 }}]\n"
            );
        }
        for s in &self.steps {
            let _ = write!(
                text,
                "\n[[event]]\nat = \"{}.{:03}s\"\n",
                s.at_ms / 1000,
                s.at_ms % 1000
            );
            for (k, v) in &s.keys {
                if *k == "count" || *k == "loss" {
                    let _ = writeln!(text, "{k} = {v}");
                } else {
                    let _ = writeln!(text, "{k} = \"{v}\"");
                }
            }
        }
        // Liveness at the end: every guest back, every host back.
        for vm in VMS {
            let _ = write!(
                text,
                "\n[[expect]]\nvm = \"{vm}\"\nphase = \"running\"\npve = \"running\"\n"
            );
        }
        for h in HOSTS {
            let _ = write!(text, "\n[[expect]]\nhost = \"{h}\"\nstate = \"online\"\n");
        }
        text
    }

    /// How many faults were drawn.
    pub fn fault_count(&self) -> u32 {
        self.faults.values().sum()
    }

    /// The faults by kind, one line each (`  partition  12`).
    pub fn figures(&self) -> String {
        let mut out = String::new();
        for (k, n) in &self.faults {
            let _ = writeln!(out, "  {:<22} {n:>5}", k.name());
        }
        let _ = writeln!(out, "  {:<22} {:>5}", "total", self.fault_count());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_always_draws_the_same_campaign_and_another_seed_another() {
        let d = Duration::from_secs(300);
        assert_eq!(draw(7, d), draw(7, d));
        assert_ne!(draw(7, d).steps, draw(8, d).steps);
    }

    #[test]
    fn every_campaign_is_a_valid_scenario_with_its_faults_healed_before_the_end() {
        for seed in 0..40 {
            let s = draw(seed, Duration::from_secs(180));
            let scenario = crate::scenario::parse(&s.scenario_text())
                .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", s.scenario_text()));
            assert_eq!(scenario.clients, 3);
            assert!(s.fault_count() >= 10, "seed {seed}: {}", s.fault_count());
            let last = s.steps.iter().map(|x| x.at_ms).max().unwrap_or(0);
            assert!(
                last <= 180_000 - QUIET_END_MS + 10_000,
                "seed {seed}: {last}"
            );
            // Every cut is healed, every stopped thing started again.
            let count = |a: &str| {
                s.steps
                    .iter()
                    .filter(|x| x.keys.first().is_some_and(|(_, v)| v == a))
                    .count()
            };
            let cuts = count("partition")
                + count("partition-in")
                + count("partition-out")
                + count("cut-link")
                + count("lossy")
                + count("delay-link");
            assert_eq!(cuts, count("heal"), "seed {seed}");
            assert_eq!(count("kill-agent"), count("restart-agent"), "seed {seed}");
            assert_eq!(count("freeze-agent"), count("thaw-agent"), "seed {seed}");
            assert_eq!(count("power-off"), count("power-on"), "seed {seed}");
            assert_eq!(
                count("kill-coordinator") + count("stop-coordinator"),
                count("restart-coordinator"),
                "seed {seed}"
            );
            assert_eq!(count("lock"), count("unlock"), "seed {seed}");
            assert_eq!(
                count("slow-disk") + count("fail-disk"),
                count("heal-disk"),
                "seed {seed}"
            );
            // Every clock is back where it was.
            let mut clocks: BTreeMap<String, i64> = BTreeMap::new();
            for x in s.steps.iter().filter(|x| x.keys[0].1 == "clock-step") {
                let key = |k: &str| x.keys.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone());
                let by: i64 = key("by")
                    .and_then(|b| b.trim_end_matches('s').parse().ok())
                    .unwrap_or(0);
                *clocks.entry(key("host").unwrap_or_default()).or_default() += by;
            }
            assert!(clocks.values().all(|o| *o == 0), "seed {seed}: {clocks:?}");
        }
    }

    #[test]
    fn at_most_one_member_and_two_hosts_are_out_at_once() {
        for seed in 0..40 {
            let s = draw(seed, Duration::from_secs(600));
            // Replay the steps: which hosts and members are out after each.
            let mut out_hosts: BTreeMap<String, u32> = BTreeMap::new();
            let mut members_out = 0i32;
            for x in &s.steps {
                let action = x.keys[0].1.as_str();
                let host = x
                    .keys
                    .iter()
                    .find(|(k, _)| *k == "host")
                    .map(|(_, v)| v.clone());
                let member_host = host
                    .as_deref()
                    .is_some_and(|h| HOSTS[..MEMBERS].contains(&h));
                match action {
                    "kill-coordinator" | "stop-coordinator" | "slow-disk" | "fail-disk" => {
                        members_out += 1
                    }
                    "restart-coordinator" | "heal-disk" => members_out -= 1,
                    "partition" | "partition-in" | "partition-out" | "lossy" | "delay-link"
                    | "power-off" | "freeze-agent" | "kill-agent" => {
                        *out_hosts
                            .entry(host.clone().unwrap_or_default())
                            .or_default() += 1;
                        if member_host {
                            members_out += 1;
                        }
                    }
                    "heal" | "power-on" | "thaw-agent" | "restart-agent" => {
                        if let Some(n) = out_hosts.get_mut(&host.clone().unwrap_or_default()) {
                            *n = n.saturating_sub(1);
                        }
                        if member_host
                            && out_hosts.get(&host.clone().unwrap_or_default()) == Some(&0)
                        {
                            members_out -= 1;
                        }
                    }
                    _ => {}
                }
                assert!(
                    members_out <= 1,
                    "seed {seed} at {} ms: {members_out}",
                    x.at_ms
                );
                let hosts_out = out_hosts.values().filter(|n| **n > 0).count();
                assert!(
                    hosts_out <= 2,
                    "seed {seed} at {} ms: {out_hosts:?}",
                    x.at_ms
                );
            }
        }
    }

    #[test]
    fn an_hour_draws_more_than_five_hundred_faults_of_every_kind() {
        let s = draw(27, Duration::from_secs(3600));
        assert!(s.fault_count() >= 500, "{}", s.figures());
        crate::scenario::parse(&s.scenario_text()).expect("an hour's campaign is a scenario");
        for (k, _) in Kind::WEIGHTS {
            assert!(
                s.faults.get(&k).is_some_and(|n| *n > 0),
                "{k:?}:\n{}",
                s.figures()
            );
        }
    }
}
