//! keepalived on the VIP testbed's network, for the benchmark's comparison: the same
//! namespaces ([`Network`]), the same client probes, responders and [`Record`] as the pvefleet
//! testbed, no pvefleet process, and one [`Keepalived`] per host holding the VIP on `vmbr0`
//! (host `i` with priority `150 − 10·i`, so `h1` is elected and preempts when it comes back).
//! Holders are sampled by [`any_sampler`]: keepalived's addresses carry no
//! pvefleet marker.
//!
//! Its faults hit the master:
//!
//! | fault | injected | restored |
//! |---|---|---|
//! | master host death | its keepalived and VRRP child SIGKILLed at once, its link down | the VIP wiped (a reboot), link up, keepalived started |
//! | graceful stop | SIGTERM: priority-0 advert, VIP removed | keepalived started |
//!
//! Like the pvefleet testbed, nothing leaves the namespaces, which are removed when it is
//! dropped (keepalived processes first), even when the benchmark fails.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::any_sampler;
use super::keepalived::{Keepalived, VrrpSettings, config};
use super::phase::Phase;
use super::rounds::{RoundOutcome, Series};
use crate::vip_bed::error::{BedError, io};
use crate::vip_bed::netns::unique_prefix;
use crate::vip_bed::network::Network;
use crate::vip_bed::record::{Excuse, Record};
use crate::vip_bed::worker::Worker;
use crate::vip_bed::{BedOptions, responder, watchers};

/// How long a stopping keepalived may take to exit.
const STOP_GRACE: Duration = Duration::from_secs(10);
/// How often a settle is looked at.
const SETTLE_POLL: Duration = Duration::from_millis(20);

/// A fault on keepalived's master.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeepalivedFault {
    /// The master's host dies: keepalived killed (nothing sent), its link down.
    HostDeath,
    /// The master's keepalived stops gracefully (SIGTERM: it sends priority 0).
    GracefulStop,
}

impl KeepalivedFault {
    /// Both, in the order played.
    pub const ALL: [KeepalivedFault; 2] =
        [KeepalivedFault::HostDeath, KeepalivedFault::GracefulStop];

    /// Its name in the tables.
    pub fn name(self) -> &'static str {
        match self {
            KeepalivedFault::HostDeath => "master host death",
            KeepalivedFault::GracefulStop => "graceful stop (SIGTERM)",
        }
    }
}

impl fmt::Display for KeepalivedFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which host a settle waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// This one.
    Host(usize),
    /// Any but this one.
    Not(usize),
}

/// A running keepalived testbed. Dropping it stops the probes, kills keepalived, then removes
/// the namespaces.
pub struct KeepalivedBed {
    // Declared in teardown order: threads, processes, namespaces, files.
    watchers: Vec<Worker>,
    daemons: Vec<Option<Keepalived>>,
    responders: Vec<Option<Worker>>,
    /// The timeline every probe and fault writes to.
    pub record: Arc<Record>,
    network: Network,
    dir: tempfile::TempDir,
    opts: BedOptions,
    settings: VrrpSettings,
}

impl KeepalivedBed {
    /// Makes the network of `opts` (its hosts, subnet, port and probe timings; the
    /// coordinator fields are not used), starts the responders, the probes, the sampler and
    /// one keepalived per host with `settings`, and waits until `h1` alone holds and answers.
    ///
    /// # Errors
    /// [`BedError`] naming the step that failed; what was started is stopped and removed.
    pub fn start(opts: BedOptions, settings: VrrpSettings) -> Result<KeepalivedBed, BedError> {
        if opts.hosts < 2 {
            return Err(BedError::NoSuch(format!(
                "{} hosts: keepalived needs a backup",
                opts.hosts
            )));
        }
        let network = Network::create(&unique_prefix(), opts.hosts, opts.subnet)?;
        let dir = tempfile::tempdir().map_err(io("a directory for the keepalived testbed"))?;
        let names: Vec<String> = network.hosts.iter().map(|h| h.name.clone()).collect();
        let macs = network.hosts.iter().map(|h| h.mac).collect();
        let mut bed = KeepalivedBed {
            watchers: Vec::new(),
            daemons: Vec::new(),
            responders: Vec::new(),
            record: Arc::new(Record::new(names, macs)),
            network,
            dir,
            opts,
            settings,
        };
        for i in 0..bed.opts.hosts {
            let responder = bed.responder(i)?;
            bed.responders.push(Some(responder));
        }
        bed.start_watchers()?;
        for i in 0..bed.opts.hosts {
            let daemon = bed.keepalived(i)?;
            bed.daemons.push(Some(daemon));
        }
        let since = bed.record.now();
        bed.wait_settled("h1 master", since, Expect::Host(0), false)?;
        Ok(bed)
    }

    /// Its configuration.
    pub fn settings(&self) -> VrrpSettings {
        self.settings
    }

    /// The network.
    pub fn network(&self) -> &Network {
        &self.network
    }

    /// Host `i`'s name.
    pub fn name(&self, i: usize) -> &str {
        self.network.hosts.get(i).map_or("?", |h| h.name.as_str())
    }

    /// Host `i`'s VRRP priority: 150 for `h1`, 10 less for each next host (at least 1).
    pub fn priority(i: usize) -> u8 {
        u8::try_from(150usize.saturating_sub(10 * i))
            .unwrap_or(1)
            .max(1)
    }

    fn responder(&self, i: usize) -> Result<Worker, BedError> {
        let host = &self.network.hosts[i];
        responder::spawn(host.netns.name(), &host.name, self.opts.port)
    }

    fn keepalived(&self, i: usize) -> Result<Keepalived, BedError> {
        let host = &self.network.hosts[i];
        let addressing = self.network.addressing();
        let text = config(
            &host.name,
            Self::priority(i),
            addressing.vip(),
            addressing.prefix_len(),
            self.settings,
        );
        Keepalived::spawn(&host.netns, &host.name, self.dir.path(), &text)
    }

    fn start_watchers(&mut self) -> Result<(), BedError> {
        let started = watchers::start(&self.network, &self.opts, &self.record, any_sampler::spawn)?;
        self.watchers.extend(started);
        Ok(())
    }

    /// Fails if a probe, the sampler, a responder or a keepalived stopped on its own.
    ///
    /// # Errors
    /// What stopped it (a keepalived's with the end of its log).
    pub fn check(&mut self) -> Result<(), BedError> {
        for w in self
            .watchers
            .iter_mut()
            .chain(self.responders.iter_mut().flatten())
        {
            w.check()?;
        }
        for (i, daemon) in self.daemons.iter_mut().enumerate() {
            if let Some(d) = daemon
                && let Some(status) = d.exited()?
            {
                return Err(BedError::NoSuch(format!(
                    "keepalived of h{} exited ({status}): {}",
                    i + 1,
                    d.log_tail(10)
                )));
            }
        }
        Ok(())
    }

    /// The host keepalived elects: the highest priority with keepalived running.
    fn elected(&self) -> Option<usize> {
        self.daemons.iter().position(Option::is_some)
    }

    /// Waits until one host alone holds and answers for the VIP by what was recorded since
    /// `since`, and it is the one `expect` asks for; that host.
    fn wait_settled(
        &mut self,
        what: &str,
        since: Duration,
        expect: Expect,
        allow_excused: bool,
    ) -> Result<usize, BedError> {
        let timeout = self.opts.settle;
        let deadline = Instant::now() + timeout;
        loop {
            self.check()?;
            let seen = match self.record.agreed_holder(since, allow_excused) {
                Ok(h) if expect == Expect::Not(h) => {
                    Err(format!("{} still holds it", self.name(h)))
                }
                Ok(h) if matches!(expect, Expect::Host(e) if e != h) => {
                    Err(format!("{} holds it", self.name(h)))
                }
                other => other,
            };
            match seen {
                Ok(h) => return Ok(h),
                Err(last) if Instant::now() > deadline => {
                    return Err(BedError::Timeout {
                        what: what.into(),
                        after: timeout,
                        last,
                    });
                }
                Err(_) => std::thread::sleep(SETTLE_POLL),
            }
        }
    }

    /// Waits until keepalived's elected host alone holds and answers (after a restore: the
    /// restored master preempts).
    ///
    /// # Errors
    /// [`BedError::Timeout`].
    pub fn settle(&mut self, what: &str) -> Result<usize, BedError> {
        let elected = self
            .elected()
            .ok_or_else(|| BedError::NoSuch("no keepalived runs".into()))?;
        let since = self.record.now();
        self.wait_settled(what, since, Expect::Host(elected), false)
    }

    /// Plays `fault` `rounds` times, each after the elected master settled and a delay from
    /// `phase`.
    pub fn rounds(&mut self, fault: KeepalivedFault, rounds: usize, phase: &mut Phase) -> Series {
        Series {
            fault: fault.name().to_string(),
            rounds: (0..rounds).map(|_| self.round(fault, phase)).collect(),
        }
    }

    fn round(&mut self, fault: KeepalivedFault, phase: &mut Phase) -> RoundOutcome {
        let mut outcome = RoundOutcome {
            delay: phase.next_delay(),
            ..RoundOutcome::default()
        };
        let owner = match self.settle("the master before the round") {
            Ok(owner) => owner,
            Err(e) => {
                outcome.problems.push(format!("before the round: {e}"));
                return outcome;
            }
        };
        outcome.owner = Some(self.name(owner).to_string());
        std::thread::sleep(outcome.delay);
        let from = self
            .record
            .mark(format!("{fault}: on {}", self.name(owner)));
        match self.inject(fault, owner) {
            Ok(()) => {
                outcome.injected = true;
                match self.wait_settled("another master", from, Expect::Not(owner), true) {
                    Ok(h) => outcome.taken_by = Some(self.name(h).to_string()),
                    Err(e) => outcome.problems.push(format!("while faulted: {e}")),
                }
            }
            Err(e) => outcome.problems.push(format!("injecting: {e}")),
        }
        let restore = self.record.mark(format!("{fault}: restore"));
        if let Err(e) = self.restore(fault, owner) {
            outcome.problems.push(format!("restoring: {e}"));
        }
        if let Err(e) = self.settle("the first host master again") {
            outcome.problems.push(format!("after the restore: {e}"));
        }
        let settled = self.record.mark(format!("{fault}: settled"));
        outcome.fault = self.record.stats(from, restore);
        outcome.restore = self.record.stats(restore, settled);
        outcome
    }

    fn inject(&mut self, fault: KeepalivedFault, owner: usize) -> Result<(), BedError> {
        let daemon = self
            .daemons
            .get_mut(owner)
            .and_then(Option::take)
            .ok_or_else(|| BedError::NoSuch(format!("no keepalived on {}", self.name(owner))))?;
        match fault {
            KeepalivedFault::HostDeath => {
                // Its address stays where it was: stale, not held (the host answers nothing).
                self.record.excuse(owner, Excuse::Yes);
                daemon.kill()?;
                self.network.set_uplink(owner, false)?;
                if let Some(w) = self.responders.get_mut(owner).and_then(Option::take) {
                    w.finish()?;
                }
            }
            KeepalivedFault::GracefulStop => {
                daemon.terminate(STOP_GRACE)?;
            }
        }
        Ok(())
    }

    fn restore(&mut self, fault: KeepalivedFault, owner: usize) -> Result<(), BedError> {
        if fault == KeepalivedFault::HostDeath {
            // A host comes back from the dead without the address it had.
            let vip = format!("{}/32", self.network.addressing().vip());
            self.network.hosts[owner]
                .netns
                .ip(&["address", "flush", "dev", "vmbr0", "to", &vip])?;
            self.record.excuse(owner, Excuse::UntilGone);
            self.network.set_uplink(owner, true)?;
            if self.responders.get(owner).is_some_and(Option::is_none) {
                let w = self.responder(owner)?;
                self.responders[owner] = Some(w);
            }
        }
        if self.daemons.get(owner).is_some_and(Option::is_none) {
            let daemon = self.keepalived(owner)?;
            self.daemons[owner] = Some(daemon);
        }
        Ok(())
    }
}
