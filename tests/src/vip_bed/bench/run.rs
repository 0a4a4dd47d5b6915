//! The runs of the VIP failover benchmark (`tests/benches/vip_failover.rs`): the
//! pvefleet testbed and keepalived on the same kind of namespace network, one after the other
//! on the same machine, each put through its faults round after round, VRRP dropped between
//! the hosts, and (pvefleet) a long run without fault under a CPU hog. The figures are
//! printed by [`tables`](super::tables); nothing here is a verdict.
//!
//! Its settings come from the environment, so `make bench` runs the full benchmark and a
//! developer can shorten it: `PVEFLEET_BENCH_ROUNDS` (rounds per fault, 10),
//! `PVEFLEET_BENCH_HOG_SECS` (600), `PVEFLEET_BENCH_SEED` (the random fault phase; from the
//! clock when not given, printed either way).

use std::time::Duration;

use super::hog::{CpuTimes, Hog};
use super::keepalived::VrrpSettings;
use super::keepalived_bed::{KeepalivedBed, KeepalivedFault};
use super::no_fault::{Watched, watch};
use super::phase::Phase;
use super::rounds::{Series, pvefleet};
use super::split_brain::filter_vrrp;
use crate::vip_bed::error::BedError;
use crate::vip_bed::faults::Fault;
use crate::vip_bed::record::Stats;
use crate::vip_bed::{BedOptions, VipBed};

/// pvefleet's faults, in the order played.
pub const PVEFLEET_FAULTS: [Fault; 6] = [
    Fault::HostDeath,
    Fault::AgentKill,
    Fault::AgentStop,
    Fault::AgentTerm,
    Fault::Move,
    Fault::LeaderKill,
];
/// The longest random delay before a fault.
pub const MAX_DELAY: Duration = Duration::from_millis(250);
/// How long VRRP is dropped: longer than keepalived's default master-down interval (3 adverts
/// of 1 s plus the skew), so every backup has time to promote itself.
pub const SPLIT_HOLD: Duration = Duration::from_secs(6);
/// How long each testbed is watched without fault before its rounds: the probes' own floor.
pub const BASELINE: Duration = Duration::from_secs(5);
/// How often the leader is asked for the VIP's epoch during a watch.
const POLL: Duration = Duration::from_secs(1);
/// Busy threads per core of the hog.
const HOG_PER_CORE: usize = 2;
/// The subnets of the two kinds of testbed (each in its own namespaces; apart for clarity).
const PVEFLEET_SUBNET: u8 = 63;
const KEEPALIVED_SUBNET: u8 = 64;

/// Why the benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Not run as root.
    #[error(
        "needs root (network namespaces, nftables, keepalived): run `make bench` as root; \
         not skipped, so that a missing figure is never mistaken for a measured one"
    )]
    NotRoot,
    /// A setting in the environment is not a number it can use.
    #[error("{name}={value:?}: {why}")]
    Setting {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
        /// What it must be.
        why: &'static str,
    },
    /// A testbed failed (boxed: a testbed's error is large and this one is returned often).
    #[error(transparent)]
    Bed(Box<BedError>),
}

impl From<BedError> for BenchError {
    fn from(e: BedError) -> BenchError {
        BenchError::Bed(Box::new(e))
    }
}

/// Fails unless the benchmark runs as root.
///
/// # Errors
/// [`BenchError::NotRoot`].
pub fn require_root() -> Result<(), BenchError> {
    if rustix::process::geteuid().is_root() {
        Ok(())
    } else {
        Err(BenchError::NotRoot)
    }
}

/// What one run is asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Rounds per fault.
    pub rounds: usize,
    /// How long the hog runs.
    pub hog: Duration,
    /// The seed of the random fault phase.
    pub seed: u64,
    /// Whether the seed was given (`PVEFLEET_BENCH_SEED`) or taken from the clock.
    pub seed_given: bool,
}

fn setting(name: &'static str, why: &'static str) -> Result<Option<u64>, BenchError> {
    match std::env::var(name) {
        Ok(value) => match value.trim().parse::<u64>() {
            Ok(n) if n > 0 || name == "PVEFLEET_BENCH_SEED" => Ok(Some(n)),
            _ => Err(BenchError::Setting { name, value, why }),
        },
        Err(_) => Ok(None),
    }
}

impl Settings {
    /// From the environment, with the defaults of `make bench`.
    ///
    /// # Errors
    /// [`BenchError::Setting`] for a value that is not a positive number.
    pub fn from_env() -> Result<Settings, BenchError> {
        let rounds = setting("PVEFLEET_BENCH_ROUNDS", "a positive number of rounds")?;
        let hog = setting("PVEFLEET_BENCH_HOG_SECS", "a positive number of seconds")?;
        let seed = setting("PVEFLEET_BENCH_SEED", "a number")?;
        Ok(Settings {
            rounds: rounds.map_or(10, |n| usize::try_from(n).unwrap_or(usize::MAX)),
            hog: Duration::from_secs(hog.unwrap_or(600)),
            seed: seed.unwrap_or_else(Phase::clock_seed),
            seed_given: seed.is_some(),
        })
    }
}

/// The testbed options of both kinds of testbed: the VIP testbed's defaults (4 hosts, 3
/// coordinators, the same probes), each on its own subnet.
pub fn bed_options(keepalived: bool) -> BedOptions {
    BedOptions {
        subnet: if keepalived {
            KEEPALIVED_SUBNET
        } else {
            PVEFLEET_SUBNET
        },
        ..BedOptions::default()
    }
}

/// The no-fault run under the hog.
#[derive(Debug, Clone, PartialEq)]
pub struct HogRun {
    /// Busy threads.
    pub threads: usize,
    /// Cores of the machine.
    pub cores: usize,
    /// The benchmark's niceness (the hog's).
    pub nice: Option<i32>,
    /// How busy the machine was, in percent of all cores.
    pub busy: f64,
    /// What the watch saw.
    pub watched: Watched,
}

/// What the pvefleet testbed showed.
#[derive(Debug, Clone, PartialEq)]
pub struct PvefleetRun {
    /// Its options.
    pub opts: BedOptions,
    /// A watch without fault before the rounds.
    pub baseline: Watched,
    /// Each fault's rounds.
    pub series: Vec<(Fault, Series)>,
    /// VRRP dropped between the hosts.
    pub split: Stats,
    /// The hog run.
    pub hog: HogRun,
    /// The whole run.
    pub whole: Stats,
}

/// What one keepalived testbed showed.
#[derive(Debug, Clone, PartialEq)]
pub struct KeepalivedRun {
    /// Its configuration.
    pub settings: VrrpSettings,
    /// Its hosts.
    pub hosts: usize,
    /// The record over a while without fault before the rounds.
    pub baseline: Stats,
    /// Each fault's rounds.
    pub series: Vec<(KeepalivedFault, Series)>,
    /// VRRP dropped between the hosts.
    pub split: Stats,
    /// The whole run.
    pub whole: Stats,
}

/// The pvefleet testbed: baseline, `settings.rounds` rounds of each of [`PVEFLEET_FAULTS`],
/// VRRP dropped, then the hog run. `progress` is told of each step (for a long run's log).
///
/// # Errors
/// [`BenchError::Bed`] if the testbed cannot start or stops working; a round that does not
/// play out is kept in its series with its problems instead.
pub fn run_pvefleet(
    settings: &Settings,
    phase: &mut Phase,
    progress: &mut dyn FnMut(String),
) -> Result<PvefleetRun, BenchError> {
    let opts = bed_options(false);
    progress("pvefleet: starting the testbed".into());
    let mut bed = VipBed::start(opts.clone())?;
    let baseline = watch(&mut bed, BASELINE, POLL)?;
    let mut series = Vec::new();
    for fault in PVEFLEET_FAULTS {
        let s = pvefleet(&mut bed, fault, settings.rounds, phase);
        progress(format!("pvefleet: {fault}: {}", round_line(&s)));
        series.push((fault, s));
    }
    progress("pvefleet: VRRP dropped".into());
    let split = filter_vrrp(bed.network(), &bed.record, SPLIT_HOLD)?;
    let since = bed.record.now();
    bed.wait_settled("one holder after VRRP is allowed", since, None, false)?;
    progress(format!("pvefleet: hog for {:?}", settings.hog));
    let hog = hog_run(&mut bed, settings.hog)?;
    let whole = bed.record.stats(Duration::ZERO, bed.record.now());
    Ok(PvefleetRun {
        opts,
        baseline,
        series,
        split,
        hog,
        whole,
    })
}

fn round_line(series: &Series) -> String {
    let outages: Vec<String> = series
        .rounds
        .iter()
        .map(|r| {
            if r.played() {
                format!("{} ms", r.fault.tcp_gap.as_millis())
            } else {
                format!("FAILED ({})", r.problems.join("; "))
            }
        })
        .collect();
    outages.join(", ")
}

fn hog_run(bed: &mut VipBed, length: Duration) -> Result<HogRun, BenchError> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let nice = rustix::process::getpriority_process(None).ok();
    let before = CpuTimes::now()?;
    let hog = Hog::start(cores * HOG_PER_CORE, length + POLL)?;
    let threads = hog.threads();
    let watched = watch(bed, length, POLL);
    drop(hog);
    let busy = CpuTimes::now()?.busy_since(before);
    Ok(HogRun {
        threads,
        cores,
        nice,
        busy,
        watched: watched?,
    })
}

/// A keepalived testbed with `vrrp`: baseline, `settings.rounds` rounds of each
/// [`KeepalivedFault`], VRRP dropped.
///
/// # Errors
/// [`BenchError::Bed`] as [`run_pvefleet`].
pub fn run_keepalived(
    vrrp: VrrpSettings,
    settings: &Settings,
    phase: &mut Phase,
    progress: &mut dyn FnMut(String),
) -> Result<KeepalivedRun, BenchError> {
    progress(format!("{}: starting the testbed", vrrp.name()));
    let opts = bed_options(true);
    let hosts = opts.hosts;
    let mut bed = KeepalivedBed::start(opts, vrrp)?;
    let from = bed.record.now();
    std::thread::sleep(BASELINE);
    bed.check()?;
    let baseline = bed.record.stats(from, bed.record.now());
    let mut series = Vec::new();
    for fault in KeepalivedFault::ALL {
        let s = bed.rounds(fault, settings.rounds, phase);
        progress(format!("{}: {fault}: {}", vrrp.short(), round_line(&s)));
        series.push((fault, s));
    }
    progress(format!("{}: VRRP dropped", vrrp.short()));
    let split = filter_vrrp(bed.network(), &bed.record, SPLIT_HOLD)?;
    bed.settle("one master after VRRP is allowed")?;
    let whole = bed.record.stats(Duration::ZERO, bed.record.now());
    Ok(KeepalivedRun {
        settings: vrrp,
        hosts,
        baseline,
        series,
        split,
        whole,
    })
}
