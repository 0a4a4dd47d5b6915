//! The faults played on the VIP's owner, each in turn: injected, given time to take effect
//! (another host takes over, or nothing changes), restored, and settled again; the window from
//! the injection to the final settle is read from the record ([`Record::stats`]).
//!
//! | fault | injected on the owner | restored | expected |
//! |---|---|---|---|
//! | VRRP filtered | every host drops IP protocol 112 | rules removed | nothing changes |
//! | leader SIGKILL | the leading coordinator killed | restarted | no move, no outage |
//! | vip move | `pvefleet vip move` to the next host | - | that host holds it |
//! | agent SIGTERM | its agent stops gracefully | restarted | hand-over |
//! | interface down | `vmbr0` down (agent not ready) | up | hand-over |
//! | cut off | UDP to/from the other coordinators dropped | rules removed | lease ends, hand-over |
//! | agent SIGKILL | its agent killed | restarted | the gate closes at lease end, take-over |
//! | agent SIGSTOP | its agent frozen | SIGCONT | as SIGKILL |
//! | host death | every process killed, link down | wiped (a reboot), up, restarted | take-over |
//! | member restart, then loss | a member restarted while the owner's link to it is late, then another member killed | restarted | one holder, the owner or its standby |
//!
//! [`Record::stats`]: super::record::Record::stats

use std::fmt;
use std::time::Duration;

use lab::{Part, Stopped};

use super::VipBed;
use super::error::BedError;
use super::record::{Excuse, Stats};

/// How long the faults that should change nothing are watched.
const OBSERVE: Duration = Duration::from_secs(3);
/// The nftables table of the testbed's own rules (never the agent's gate tables).
const TABLE: &str = "pvf_bed";

/// A fault on the VIP's owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Every host drops IP protocol 112 (VRRP): must change nothing for pvefleet.
    VrrpFiltered,
    /// The leading coordinator is SIGKILLed: the promises are every member's, so no outage.
    LeaderKill,
    /// `pvefleet vip move NAME HOST` to the next host.
    Move,
    /// `pvefleet host maintenance enable OWNER`: the owner hands over gracefully; `disable`
    /// after.
    Maintenance,
    /// The owner's agent stops gracefully (SIGTERM): it hands over.
    AgentTerm,
    /// The owner's `vmbr0` goes down: its agent reports it not ready, the leader hands over.
    InterfaceDown,
    /// The owner cannot reach the other coordinators (UDP dropped) but the client reaches it.
    CutOff,
    /// The owner's agent is SIGKILLed: its address stays, the gate must silence it.
    AgentKill,
    /// The owner's agent is frozen (SIGSTOP), thawed after the take-over.
    AgentStop,
    /// The owner host dies: every process of it killed, its link down.
    HostDeath,
    /// Two member faults back to back, the owner left alone: a member (not the leader) is
    /// restarted while the owner's packets to it are dropped for `late_link_ms` (an agent's
    /// link to a restarted member comes back only after its handshake times out, so the
    /// standby's may come back first), then `then_ms` after the link is back another member
    /// that backs the owner is killed: the leader, or the other one. Not in [`Fault::ALL`]:
    /// it needs the owner on a host that runs no member.
    MemberRestartThenLoss {
        /// Kill the leader (else the member that is neither restarted nor leading).
        kill_leader: bool,
        /// How long the owner's link to the restarted member stays cut after its restart.
        late_link_ms: u64,
        /// How long after the link is back the second member is killed.
        then_ms: u64,
    },
}

impl Fault {
    /// Every fault, in the order the test plays them.
    pub const ALL: [Fault; 10] = [
        Fault::VrrpFiltered,
        Fault::LeaderKill,
        Fault::Move,
        Fault::Maintenance,
        Fault::AgentTerm,
        Fault::InterfaceDown,
        Fault::CutOff,
        Fault::AgentKill,
        Fault::AgentStop,
        Fault::HostDeath,
    ];

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Fault::VrrpFiltered => "VRRP filtered",
            Fault::LeaderKill => "leader SIGKILL",
            Fault::Move => "vip move",
            Fault::Maintenance => "host maintenance",
            Fault::AgentTerm => "agent SIGTERM",
            Fault::InterfaceDown => "interface down",
            Fault::CutOff => "cut off",
            Fault::AgentKill => "agent SIGKILL",
            Fault::AgentStop => "agent SIGSTOP",
            Fault::HostDeath => "host death",
            Fault::MemberRestartThenLoss {
                kill_leader: true, ..
            } => "member restart, then leader loss",
            Fault::MemberRestartThenLoss {
                kill_leader: false, ..
            } => "member restart, then member loss",
        }
    }

    /// What the fault is to do to the ownership.
    fn effect(self) -> Effect {
        match self {
            Fault::VrrpFiltered => Effect::Stays,
            // Expected to stay (the promises survive the leader); a move is reported, not
            // failed: the point is to measure the outage.
            Fault::LeaderKill => Effect::Either,
            // The owner keeps it if the members' promises came back together before the
            // loss, else its standby takes it over: either way one host holds it.
            Fault::MemberRestartThenLoss { .. } => Effect::Either,
            _ => Effect::HandsOver,
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a fault did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultReport {
    /// The fault.
    pub fault: Fault,
    /// The owner it hit.
    pub owner: Option<String>,
    /// Who held the VIP once the fault took effect.
    pub taken_by: Option<String>,
    /// Who held it at the end, after the restore.
    pub after: Option<String>,
    /// The window from the injection to the final settle.
    pub stats: Stats,
    /// What changed in that window, one line per change ([`Record::changes`]).
    ///
    /// [`Record::changes`]: super::record::Record::changes
    pub changes: Vec<String>,
    /// What went wrong (empty: as expected).
    pub problems: Vec<String>,
}

impl FaultReport {
    /// Whether the invariant held throughout and the fault played out as expected.
    pub fn passed(&self) -> bool {
        self.problems.is_empty()
            && self.stats.max_answerers <= 1
            && self.stats.max_holders <= 1
            && self.stats.first_violation.is_none()
    }
}

/// What a fault is to do to the ownership.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Effect {
    /// The owner keeps the VIP.
    Stays,
    /// Whoever holds it once things settle.
    Either,
    /// Another host takes it over.
    HandsOver,
}

/// What an injection changed, for its restore.
enum Injected {
    Nothing,
    Member(usize),
    Target(usize),
}

impl VipBed {
    /// Plays `fault` on the current owner and restores what it broke; what it showed.
    pub fn exercise(&mut self, fault: Fault) -> FaultReport {
        let mut report = FaultReport {
            fault,
            owner: None,
            taken_by: None,
            after: None,
            stats: Stats::default(),
            changes: Vec::new(),
            problems: Vec::new(),
        };
        let now = self.record.now();
        let owner = match self.wait_settled("one holder before the fault", now, None, false) {
            Ok(owner) => owner,
            Err(e) => {
                report.problems.push(e.to_string());
                return report;
            }
        };
        report.owner = Some(self.name(owner).to_string());
        // Where the leader is matters to some faults (a cut-off owner hosting it): said.
        let leader = match self.leader() {
            Ok(m) => format!("leader: coordinator {} on {}", m + 1, self.name(m)),
            Err(e) => format!("leader unknown: {e}"),
        };
        let from = self
            .record
            .mark(format!("{fault}: on {} ({leader})", self.name(owner)));
        let injected = match self.inject(fault, owner) {
            Ok(injected) => Some(injected),
            Err(e) => {
                report.problems.push(format!("injecting: {e}"));
                None
            }
        };
        if let Some(injected) = &injected {
            match self.await_effect(fault, owner, from, injected) {
                Ok(holder) => report.taken_by = Some(self.name(holder).to_string()),
                Err(e) => report.problems.push(format!("while faulted: {e}")),
            }
        }
        let restored = self.record.mark(format!("{fault}: restore"));
        if let Err(e) = self.restore(fault, owner, injected.unwrap_or(Injected::Nothing)) {
            report.problems.push(format!("restoring: {e}"));
        }
        match self.wait_settled("one holder after the restore", restored, None, false) {
            Ok(holder) => report.after = Some(self.name(holder).to_string()),
            Err(e) => report.problems.push(format!("after the restore: {e}")),
        }
        let to = self.record.mark(format!("{fault}: settled"));
        report.stats = self.record.stats(from, to);
        report.changes = self.record.changes(from, to);
        report
    }

    fn inject(&mut self, fault: Fault, owner: usize) -> Result<Injected, BedError> {
        match fault {
            Fault::VrrpFiltered => {
                let script = format!(
                    "table inet {TABLE} {{
  chain input {{ type filter hook input priority -10; policy accept; meta l4proto 112 drop; }}
  chain output {{ type filter hook output priority -10; policy accept; meta l4proto 112 drop; }}
}}
"
                );
                for host in &self.network.hosts {
                    host.netns.nft(&script)?;
                }
            }
            Fault::LeaderKill => {
                let leader = self.leader()?;
                self.rt.block_on(self.lab.kill(Part::Member(leader)));
                return Ok(Injected::Member(leader));
            }
            Fault::Move => {
                let target = (owner + 1) % self.network.hosts.len();
                let (vip, to) = (self.opts.vip.clone(), self.name(target).to_string());
                self.cli(&["vip", "move", &vip, &to])?;
                return Ok(Injected::Target(target));
            }
            Fault::Maintenance => {
                let host = self.name(owner).to_string();
                self.cli(&["host", "maintenance", "enable", &host])?;
            }
            Fault::AgentTerm => {
                if let Some(Stopped::Killed) =
                    self.rt.block_on(self.lab.terminate(Part::Agent(owner)))
                {
                    return Err(BedError::NoSuch(
                        "the agent did not exit on SIGTERM and was killed".into(),
                    ));
                }
            }
            Fault::InterfaceDown => self.network.set_bridge(owner, false)?,
            Fault::CutOff => {
                let others: Vec<String> = (0..self.opts.coordinators)
                    .filter(|i| *i != owner)
                    .map(|i| self.network.hosts[i].address.to_string())
                    .collect();
                let script = format!(
                    "table inet {TABLE} {{
  set coordinators {{ type ipv4_addr; elements = {{ {} }}; }}
  chain input {{ type filter hook input priority -10; policy accept; ip saddr @coordinators meta l4proto udp drop; }}
  chain output {{ type filter hook output priority -10; policy accept; ip daddr @coordinators meta l4proto udp drop; }}
}}
",
                    others.join(", ")
                );
                self.network.hosts[owner].netns.nft(&script)?;
            }
            Fault::AgentKill => {
                self.record.excuse(owner, Excuse::Yes);
                self.rt.block_on(self.lab.kill(Part::Agent(owner)));
            }
            Fault::AgentStop => {
                self.record.excuse(owner, Excuse::Yes);
                self.rt.block_on(self.lab.pause(Part::Agent(owner)))?;
            }
            Fault::MemberRestartThenLoss {
                kill_leader,
                late_link_ms,
                then_ms,
            } => {
                let killed = self.restart_then_pick(owner, kill_leader, late_link_ms, then_ms)?;
                self.record.mark(format!(
                    "kill coordinator {} on {}",
                    killed + 1,
                    self.name(killed)
                ));
                self.rt.block_on(self.lab.kill(Part::Member(killed)));
                return Ok(Injected::Member(killed));
            }
            Fault::HostDeath => {
                self.record.excuse(owner, Excuse::Yes);
                self.rt.block_on(self.lab.kill(Part::Agent(owner)));
                if let Some(m) = self.member_of_host(owner) {
                    self.rt.block_on(self.lab.kill(Part::Member(m)));
                }
                self.network.set_uplink(owner, false)?;
                self.stop_responder(owner)?;
            }
        }
        Ok(Injected::Nothing)
    }

    /// The first half of [`Fault::MemberRestartThenLoss`]: restarts a member that neither leads
    /// nor runs on the owner's host while the owner's packets to and from it are dropped,
    /// lets the link back after `late_link_ms`, waits `then_ms`; the member to kill next.
    fn restart_then_pick(
        &mut self,
        owner: usize,
        kill_leader: bool,
        late_link_ms: u64,
        then_ms: u64,
    ) -> Result<usize, BedError> {
        if self.member_of_host(owner).is_some() {
            return Err(BedError::NoSuch(format!(
                "the owner {} runs a member: this fault needs it on a host without one",
                self.name(owner)
            )));
        }
        let leader = self.leader()?;
        let others: Vec<usize> = (0..self.opts.coordinators)
            .filter(|m| *m != leader)
            .collect();
        let (Some(&restarted), Some(&other)) = (others.first(), others.get(1)) else {
            return Err(BedError::NoSuch("this fault needs three members".into()));
        };
        let killed = if kill_leader { leader } else { other };
        let address = self.network.hosts[restarted].address;
        let block = late_link_ms > 0;
        let script = format!(
            "table inet {TABLE} {{
  chain input {{ type filter hook input priority -10; policy accept; ip saddr {address} meta l4proto udp drop; }}
  chain output {{ type filter hook output priority -10; policy accept; ip daddr {address} meta l4proto udp drop; }}
}}
"
        );
        if block {
            self.network.hosts[owner].netns.nft(&script)?;
        }
        self.record.mark(format!(
            "restart coordinator {} on {}, its link from {} late by {late_link_ms} ms",
            restarted + 1,
            self.name(restarted),
            self.name(owner)
        ));
        self.rt.block_on(self.lab.kill(Part::Member(restarted)));
        let started = self.start_part(Part::Member(restarted));
        std::thread::sleep(Duration::from_millis(late_link_ms));
        let unblocked = if block {
            self.network.hosts[owner]
                .netns
                .nft(&format!("delete table inet {TABLE}\n"))
        } else {
            Ok(())
        };
        started?;
        unblocked?;
        let promises = self.describe_promises();
        self.record
            .mark(format!("{}'s link back; {promises}", self.name(owner)));
        std::thread::sleep(Duration::from_millis(then_ms));
        let promises = self.describe_promises();
        self.record.mark(format!("before the loss: {promises}"));
        Ok(killed)
    }

    /// Moves the VIP to host `host` (`pvefleet vip move`) and waits until it holds it with a
    /// standby recorded.
    ///
    /// # Errors
    /// [`BedError::Timeout`] after [`BedOptions::settle`](super::BedOptions::settle).
    pub fn settle_on(&mut self, host: usize) -> Result<(), BedError> {
        let (vip, name) = (self.opts.vip.clone(), self.name(host).to_string());
        self.cli(&["vip", "move", &vip, &name])?;
        let deadline = std::time::Instant::now() + self.opts.settle;
        loop {
            let status = self.vip_status()?;
            if status.owner_name.as_deref() == Some(name.as_str())
                && status.held
                && status.vip.standby.is_some()
            {
                return Ok(());
            }
            if std::time::Instant::now() > deadline {
                return Err(BedError::Timeout {
                    what: format!("the VIP held by {name} with a standby"),
                    after: self.opts.settle,
                    last: format!("{status:?}"),
                });
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Waits for the fault's effect; the host holding the VIP then.
    fn await_effect(
        &mut self,
        fault: Fault,
        owner: usize,
        from: Duration,
        injected: &Injected,
    ) -> Result<usize, BedError> {
        let effect = fault.effect();
        if effect != Effect::HandsOver {
            // Nothing is to happen: watch for a while (a deliberate wait, not a poll), then
            // one host must hold and answer, the owner if it must stay.
            std::thread::sleep(OBSERVE);
            let holder = self.wait_settled("one host holding", from, None, true)?;
            if effect == Effect::Stays && holder != owner {
                return Err(BedError::NoSuch(format!(
                    "the VIP moved from {} to {}",
                    self.name(owner),
                    self.name(holder)
                )));
            }
            return Ok(holder);
        }
        let holder = self.wait_settled("another host holding", from, Some(owner), true)?;
        if let Injected::Target(target) = injected
            && holder != *target
        {
            return Err(BedError::NoSuch(format!(
                "moved to {} instead of {}",
                self.name(holder),
                self.name(*target)
            )));
        }
        Ok(holder)
    }

    fn restore(&mut self, fault: Fault, owner: usize, injected: Injected) -> Result<(), BedError> {
        let drop_table = format!("delete table inet {TABLE}\n");
        match fault {
            Fault::VrrpFiltered => {
                for host in &self.network.hosts {
                    host.netns.nft(&drop_table)?;
                }
            }
            Fault::LeaderKill | Fault::MemberRestartThenLoss { .. } => {
                if let Injected::Member(m) = injected {
                    self.start_part(Part::Member(m))?;
                }
                self.wait_leader(self.opts.settle)?;
            }
            Fault::Move => {}
            Fault::Maintenance => {
                let host = self.name(owner).to_string();
                self.cli(&["host", "maintenance", "disable", &host])?;
            }
            Fault::AgentTerm => self.start_part(Part::Agent(owner))?,
            Fault::AgentKill => {
                self.record.excuse(owner, Excuse::UntilGone);
                self.start_part(Part::Agent(owner))?;
            }
            Fault::InterfaceDown => self.network.set_bridge(owner, true)?,
            Fault::CutOff => self.network.hosts[owner].netns.nft(&drop_table)?,
            Fault::AgentStop => {
                self.record.excuse(owner, Excuse::UntilGone);
                self.rt.block_on(self.lab.resume(Part::Agent(owner)))?;
            }
            Fault::HostDeath => {
                // A host comes back from the dead without the addresses and rules it had.
                self.wipe_host(owner)?;
                self.record.excuse(owner, Excuse::UntilGone);
                self.network.set_uplink(owner, true)?;
                self.start_responder(owner)?;
                if let Some(m) = self.member_of_host(owner) {
                    self.start_part(Part::Member(m))?;
                }
                self.start_part(Part::Agent(owner))?;
                self.wait_leader(self.opts.settle)?;
            }
        }
        Ok(())
    }
}
