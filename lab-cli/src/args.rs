//! The `pvefleet-lab` command line (clap derive): `--output`, `demo`, and the `sim` scenarios.
//! Durations parse as the operator CLI's (`cli::args::parse_duration`: `90s`, `3m`, `1h30m`).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use cli::args::parse_duration;
use cli::output::OutputFormat;
use daemon::generate::Generate;

/// The pvefleet lab: whole fleets on this machine, with the PVE hosts simulated (coordinators
/// and node agents run as real processes): a demo, HA scenarios and chaos campaigns.
#[derive(Debug, Clone, PartialEq, Eq, Parser)]
#[command(
    name = "pvefleet-lab",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct LabCli {
    /// How to print results: text for people, one JSON document for scripts.
    #[arg(long, short = 'o', global = true, value_enum, default_value_t = OutputFormat::Table)]
    pub output: OutputFormat,
    /// Print the man page or a completion script on stdout (for packaging).
    #[arg(long, hide = true, value_enum, value_name = "KIND")]
    pub generate: Option<Generate>,
    /// What to do.
    #[command(subcommand)]
    pub command: LabCommand,
}

/// What the lab starts.
#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum LabCommand {
    /// Start a whole simulated fleet on this machine (3 coordinators, 5 simulated PVE hosts),
    /// apply the example fleet and keep it running until Ctrl-C.
    Demo(DemoArgs),
    /// HA scenarios: try a failure on a simulated fleet before it happens for real.
    #[command(subcommand)]
    Sim(SimCommand),
}

/// `pvefleet-lab sim ...`
#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum SimCommand {
    /// Run a scenario file against real coordinator and agent processes with simulated PVE:
    /// print the timeline, check the safety invariants on every sample, judge the
    /// expectations (exit 0 passed, 1 violation or unmet expectation, 2 bad file or could
    /// not start). Format: docs/scenarios.md.
    Run(SimRunArgs),
    /// A seeded chaos campaign: random faults drawn from SEED (partitions, one-way and
    /// flapping cuts, link cuts, packet loss, agent and member kills, stops and freezes,
    /// power-offs and resets, clock steps, slow and failing member disks, PVE task failures
    /// and locks, moves, drains) on a five-host
    /// fleet while clients write, every invariant checked on every sample and the client
    /// history checked for linearizability. The same seed and duration replay the same
    /// faults. Exit as `sim run`. docs/chaos.md.
    Chaos(SimChaosArgs),
}

/// `pvefleet-lab sim chaos`
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub struct SimChaosArgs {
    /// The seed the faults are drawn from.
    #[arg(long, value_name = "SEED")]
    pub seed: u64,
    /// How long the faults go on (the run adds the bring-up and 20 s of calm at the end).
    #[arg(long, value_name = "DURATION", default_value = "3m", value_parser = parse_duration)]
    pub duration: Duration,
    /// Write the campaign as a scenario file to FILE before running it (`sim run FILE`
    /// replays it).
    #[arg(long, value_name = "FILE")]
    pub scenario_out: Option<PathBuf>,
    /// Print the scenario file and the faults by kind, and run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Keep the lab's directory (state and logs of every process) in DIR (new or empty).
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// Also write the outcome as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
}

/// `pvefleet-lab sim run`
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub struct SimRunArgs {
    /// The scenario file (TOML).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Keep the lab's directory (state and logs of every process) in DIR (new or empty).
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// Also write the outcome as JSON to FILE (the web dashboard lists the reports of its
    /// scenario_dir, newest first).
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
}

/// `pvefleet-lab demo`
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub struct DemoArgs {
    /// Where the demo keeps its state (default: a new temporary directory, removed at exit).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Coordinator members to start (3 or 5).
    #[arg(long, default_value_t = 3)]
    pub coordinators: u32,
    /// Simulated PVE hosts to start, one agent each.
    #[arg(long, default_value_t = 5)]
    pub hosts: u32,
    /// The fleet file to apply (default: the shipped example fleet).
    #[arg(long, short = 'f', value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Stop once every VM is running instead of waiting for Ctrl-C (for scripts and tests).
    #[arg(long)]
    pub exit_when_ready: bool,
    /// How many times faster than on real hardware the simulated PVE tasks (clones, starts,
    /// guest agents coming up) run; 1 is realistic.
    #[arg(long, value_name = "N", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub task_speed: u32,
    /// Give up (and stop everything) if the fleet is not ready within this long.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
    pub wait: Duration,
}
