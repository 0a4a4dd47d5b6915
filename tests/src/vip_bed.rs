//! The VIP testbed: a fleet in network namespaces, launched by `lab`, holding one
//! VIP for real, probed from a client and sampled on every host, while faults are played on
//! the VIP's owner. Rule 5 of docs/design/vips.md is checked throughout: at no instant do two
//! hosts answer for the VIP or hold it.
//!
//! ```text
//!  client ns: ARP prober (who has VIP?) ─┐          ┌─ h1 ns: coordinator 1, agent h1, responder
//!             TCP prober (VIP:PORT) ─────┼── br0 ───┼─ h2 ns: coordinator 2, agent h2, responder
//!             pvefleet CLI ──────────────┘ (sw ns)  ├─ h3 ns: coordinator 3, agent h3, responder
//!                                                    └─ h4 ns: agent h4, responder
//!  holder sampler: one netlink socket per host ns ─▶ is the VIP on a host's vmbr0?
//!  everything timed on one clock ─▶ Record ─▶ per fault: outage, most answerers, most holders
//! ```
//!
//! Agents run on the lab platform beside a `pve-sim` process each, with `vip_holding = "host"`: simulated guests, real
//! addresses. Nothing leaves the namespaces, which are removed when the testbed is dropped
//! (processes first), even when a test fails. Needs root, iproute2 and nftables. The pieces
//! ([`netns`], [`network`], the probes, [`sampler`], [`record`], [`faults`]) are usable on
//! their own, by a benchmark binary as well as by the tests.

pub mod arp_probe;
pub mod bench;
pub mod error;
pub mod faults;
pub mod member_metrics;
pub mod netns;
pub mod network;
mod options;
pub mod record;
pub mod report;
pub mod responder;
pub mod sampler;
pub mod tcp_probe;
pub(crate) mod watchers;
pub mod worker;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lab::binaries::CLI;
use lab::{HostOptions, Lab, MemberAt, Part, PveAccess, VipHolding};
use node_agent::vip::addresses::VipAddresses;
use protocol::admin::{VipStatusEntry, VipStatusReply};

use crate::test_lab::{install_crypto, test_lab_options, test_runtime};
use error::{BedError, io};
use netns::unique_prefix;
use network::Network;
use record::Record;
use worker::Worker;

pub use options::BedOptions;

/// A running testbed. Dropping it stops the probes, kills the processes, then removes the
/// namespaces.
pub struct VipBed {
    // Declared in teardown order: threads, processes (the lab, then its runtime), namespaces,
    // files.
    watchers: Vec<Worker>,
    responders: Vec<Option<Worker>>,
    lab: Lab,
    rt: tokio::runtime::Runtime,
    /// The timeline every probe and fault writes to.
    pub record: Arc<Record>,
    network: Network,
    dir: tempfile::TempDir,
    opts: BedOptions,
}

impl VipBed {
    /// Makes the namespaces, starts the members, the agents, the responders, the probes and
    /// the sampler, applies the VIP (every host eligible) and waits until one host holds and
    /// answers for it.
    ///
    /// # Errors
    /// [`BedError`] naming the step that failed; what was started is stopped and removed.
    pub fn start(opts: BedOptions) -> Result<VipBed, BedError> {
        if opts.hosts < 3 || opts.coordinators == 0 || opts.coordinators > opts.hosts {
            return Err(BedError::NoSuch(format!(
                "{} hosts and {} coordinators: at least 3 hosts, 1 to {} coordinators",
                opts.hosts, opts.coordinators, opts.hosts
            )));
        }
        install_crypto();
        let network = Network::create(&unique_prefix(), opts.hosts, opts.subnet)?;
        let dir = tempfile::tempdir().map_err(io("a directory for the testbed"))?;
        let lab = Lab::new(test_lab_options(dir.path(), "vipbed"))?;
        let names: Vec<String> = network.hosts.iter().map(|h| h.name.clone()).collect();
        let macs = network.hosts.iter().map(|h| h.mac).collect();
        let mut bed = VipBed {
            watchers: Vec::new(),
            responders: Vec::new(),
            lab,
            rt: test_runtime(),
            record: Arc::new(Record::new(names, macs)),
            network,
            dir,
            opts,
        };
        for i in 0..bed.opts.hosts {
            let responder = bed.responder(i)?;
            bed.responders.push(Some(responder));
        }
        bed.start_members()?;
        bed.start_agents()?;
        bed.start_watchers()?;
        bed.apply_vip()?;
        let since = bed.record.now();
        bed.wait_settled("the VIP held by one host", since, None, false)?;
        Ok(bed)
    }

    fn responder(&self, i: usize) -> Result<Worker, BedError> {
        let host = &self.network.hosts[i];
        responder::spawn(host.netns.name(), &host.name, self.opts.port)
    }

    fn member_at(&self, i: usize) -> MemberAt {
        let host = &self.network.hosts[i];
        MemberAt {
            netns: Some(host.netns.name().to_string()),
            listen: Some(SocketAddr::from((host.address, self.opts.member_port))),
            env: Vec::new(),
        }
    }

    fn start_members(&mut self) -> Result<(), BedError> {
        let at = self.member_at(0);
        self.rt.block_on(self.lab.found_at(at))?;
        for i in 1..self.opts.coordinators {
            let token = self.token("coordinator")?;
            let via = self.lab.member(0)?.listen;
            let at = self.member_at(i);
            self.rt.block_on(self.lab.join_member_at(&token, via, at))?;
        }
        self.wait_leader(self.opts.start)
    }

    fn start_agents(&mut self) -> Result<(), BedError> {
        for i in 0..self.opts.hosts {
            let host = &self.network.hosts[i];
            let opts = HostOptions::new(host.name.clone(), PveAccess::Https)
                .in_netns(host.netns.name())
                .with_vip_holding(VipHolding::Host);
            let token = self.token("agent")?;
            self.rt.block_on(self.lab.add_agent(&opts, &token))?;
        }
        Ok(())
    }

    fn start_watchers(&mut self) -> Result<(), BedError> {
        let started = watchers::start(&self.network, &self.opts, &self.record, sampler::spawn)?;
        self.watchers.extend(started);
        Ok(())
    }

    fn apply_vip(&self) -> Result<(), BedError> {
        let addressing = self.network.addressing();
        let file = self.dir.path().join("vip.toml");
        let text = format!(
            "[[vip]]\nname = \"{}\"\naddress = \"{}/{}\"\ninterface = \"vmbr0\"\n",
            self.opts.vip,
            addressing.vip(),
            addressing.prefix_len()
        );
        std::fs::write(&file, text).map_err(io(format!("write {}", file.display())))?;
        self.cli(&["vip", "apply", "-f", &file.display().to_string()])
            .map(drop)
    }

    /// The testbed's options.
    pub fn options(&self) -> &BedOptions {
        &self.opts
    }

    /// The network.
    pub fn network(&self) -> &Network {
        &self.network
    }

    /// The launcher (members are hosts `0..coordinators`, agent `i` is host `i`).
    pub fn lab(&mut self) -> &mut Lab {
        &mut self.lab
    }

    /// Runs a future of the launcher on the testbed's runtime.
    pub fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    /// Where the lab keeps its logs.
    pub fn logs(&self) -> std::path::PathBuf {
        self.lab.layout().logs()
    }

    /// The member running in host `i`'s namespace, if one does.
    pub fn member_of_host(&self, i: usize) -> Option<usize> {
        (i < self.opts.coordinators).then_some(i)
    }

    /// `pvefleet ARGS` in the client namespace with `--output json`; its JSON.
    ///
    /// # Errors
    /// [`BedError::Cli`] if it fails or prints no JSON.
    pub fn cli(&self, args: &[&str]) -> Result<serde_json::Value, BedError> {
        let program = self.lab.binaries().path(CLI)?;
        let failed = |reason: String| BedError::Cli {
            args: args.join(" "),
            reason,
        };
        let out = self
            .network
            .client
            .command(&program)
            .arg("--config")
            .arg(self.lab.cli_config())
            .args(["--output", "json", "--timeout", "10"])
            .args(args)
            .output()
            .map_err(|e| failed(e.to_string()))?;
        if !out.status.success() {
            return Err(failed(format!(
                "{}: {}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        serde_json::from_slice(&out.stdout).map_err(|e| {
            failed(format!(
                "not JSON ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            ))
        })
    }

    fn token(&self, role: &str) -> Result<String, BedError> {
        let v = self.cli(&["token", "create", "--role", role, "--uses", "1"])?;
        v["token"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| BedError::Cli {
                args: "token create".into(),
                reason: format!("no token in {v}"),
            })
    }

    /// The VIP as the leader sees it (`pvefleet vip ls`).
    ///
    /// # Errors
    /// [`BedError::Cli`].
    pub fn vip_status(&self) -> Result<VipStatusEntry, BedError> {
        let v = self.cli(&["vip", "ls"])?;
        let reply: VipStatusReply = serde_json::from_value(v).map_err(|e| BedError::Cli {
            args: "vip ls".into(),
            reason: format!("not a VIP status: {e}"),
        })?;
        reply
            .vips
            .into_iter()
            .find(|e| e.vip.spec.name == self.opts.vip)
            .ok_or_else(|| BedError::NoSuch(format!("no VIP {}", self.opts.vip)))
    }

    /// The member index of the leader (`pvefleet cluster status`).
    ///
    /// # Errors
    /// [`BedError::Cli`], or [`BedError::NoSuch`] without a leader.
    pub fn leader(&self) -> Result<usize, BedError> {
        let v = self.cli(&["cluster", "status"])?;
        let id = v["leader"]
            .as_u64()
            .ok_or_else(|| BedError::NoSuch("no leader".into()))?;
        self.lab
            .members()
            .iter()
            .position(|m| m.node_id == id)
            .ok_or_else(|| BedError::NoSuch(format!("leader {id} is not a member of the lab")))
    }

    /// Waits until there is a leader.
    ///
    /// # Errors
    /// [`BedError::Timeout`].
    pub fn wait_leader(&self, timeout: Duration) -> Result<(), BedError> {
        let deadline = Instant::now() + timeout;
        loop {
            let e = match self.leader() {
                Ok(_) => return Ok(()),
                Err(e) => e,
            };
            if Instant::now() > deadline {
                return Err(BedError::Timeout {
                    what: "a leader".into(),
                    after: timeout,
                    last: e.to_string(),
                });
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Fails if a probe, the sampler or a responder stopped on its own.
    ///
    /// # Errors
    /// What stopped it.
    pub fn check_watchers(&mut self) -> Result<(), BedError> {
        for w in self
            .watchers
            .iter_mut()
            .chain(self.responders.iter_mut().flatten())
        {
            w.check()?;
        }
        Ok(())
    }

    /// Waits until one host alone holds and answers for the VIP, by what was recorded since
    /// `since` ([`Record::agreed_holder`]) and by the leader (it names that host the owner, held,
    /// and, unless `allow_excused`, every host eligible again); that host. `not`: a host that
    /// must not be it (the one a fault hit).
    ///
    /// # Errors
    /// [`BedError::Timeout`] after [`BedOptions::settle`] with what was seen last.
    pub fn wait_settled(
        &mut self,
        what: &str,
        since: Duration,
        not: Option<usize>,
        allow_excused: bool,
    ) -> Result<usize, BedError> {
        let timeout = self.opts.settle;
        let deadline = Instant::now() + timeout;
        loop {
            self.check_watchers()?;
            let seen = match self.record.agreed_holder(since, allow_excused) {
                Ok(h) if Some(h) == not => Err(format!("{} still holds it", self.name(h))),
                Ok(h) => self.leader_agrees(h, allow_excused).map(|()| h),
                Err(e) => Err(e),
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
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    fn leader_agrees(&self, holder: usize, allow_excused: bool) -> Result<(), String> {
        let status = self.vip_status().map_err(|e| e.to_string())?;
        let name = self.name(holder);
        if status.owner_name.as_deref() != Some(name) || !status.held {
            return Err(format!(
                "the leader says owner {:?}, held {}",
                status.owner_name, status.held
            ));
        }
        if !status.hosts.iter().any(|h| h.host == name && h.eligible) {
            return Err(format!("the leader says {name} is not eligible"));
        }
        let ineligible: Vec<&str> = status
            .hosts
            .iter()
            .filter(|h| !h.eligible)
            .map(|h| h.host.as_str())
            .collect();
        if !allow_excused && !ineligible.is_empty() {
            return Err(format!("not eligible yet: {}", ineligible.join(", ")));
        }
        Ok(())
    }

    /// Host `i`'s name.
    pub fn name(&self, i: usize) -> &str {
        self.network.hosts.get(i).map_or("?", |h| h.name.as_str())
    }

    /// Stops host `i`'s responder (it died with its host).
    pub fn stop_responder(&mut self, i: usize) -> Result<(), BedError> {
        match self.responders.get_mut(i).and_then(Option::take) {
            Some(w) => w.finish(),
            None => Ok(()),
        }
    }

    /// Starts host `i`'s responder again.
    ///
    /// # Errors
    /// [`BedError::Io`].
    pub fn start_responder(&mut self, i: usize) -> Result<(), BedError> {
        if self.responders.get(i).is_some_and(Option::is_none) {
            let w = self.responder(i)?;
            self.responders[i] = Some(w);
        }
        Ok(())
    }

    /// Removes every address carrying pvefleet's marker from host `i` and flushes its
    /// nftables ruleset: what a reboot leaves of a host's VIP state (nothing).
    ///
    /// # Errors
    /// [`BedError`] from netlink or nft.
    pub fn wipe_host(&self, i: usize) -> Result<(), BedError> {
        let host = &self.network.hosts[i];
        let name = host.name.clone();
        let thread = netns::spawn_in(host.netns.name(), "vip-wipe", move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(io("a runtime"))?;
            rt.block_on(async {
                let vips = VipAddresses::connect().map_err(|source| BedError::Addresses {
                    host: name.clone(),
                    source,
                })?;
                vips.sweep(&[])
                    .await
                    .map(drop)
                    .map_err(|source| BedError::Addresses { host: name, source })
            })
        })?;
        thread
            .join()
            .map_err(|_| BedError::NoSuch("the wipe thread panicked".into()))??;
        Ok(host.netns.nft("flush ruleset\n")?)
    }

    /// Starts part `part` again (a member or an agent that was killed or stopped).
    ///
    /// # Errors
    /// [`BedError::Lab`].
    pub fn start_part(&mut self, part: Part) -> Result<(), BedError> {
        match part {
            Part::Member(i) => self.rt.block_on(self.lab.start_member(i))?,
            Part::Agent(i) => self.rt.block_on(self.lab.start_agent(i))?,
        }
        Ok(())
    }

    /// Where the testbed keeps its files.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}
