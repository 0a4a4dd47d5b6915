//! The `pvefleet-lab` command line: clap's own consistency checks, `--output` anywhere, the
//! arguments and defaults of `demo`, `sim run` and `sim chaos`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{CommandFactory, Parser};
use cli::output::OutputFormat;
use lab_cli::LabCli;
use lab_cli::args::{DemoArgs, LabCommand, SimChaosArgs, SimCommand, SimRunArgs};

fn parse(args: &[&str]) -> LabCli {
    let argv = std::iter::once("pvefleet-lab").chain(args.iter().copied());
    LabCli::try_parse_from(argv).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn refused(args: &[&str]) -> clap::Error {
    let argv = std::iter::once("pvefleet-lab").chain(args.iter().copied());
    LabCli::try_parse_from(argv).expect_err("should be refused")
}

#[test]
fn the_command_definition_is_consistent() {
    LabCli::command().debug_assert();
}

#[test]
fn the_demo_defaults_to_three_coordinators_five_hosts_and_ten_times_faster_tasks() {
    let cli = parse(&["demo"]);
    assert_eq!(cli.output, OutputFormat::Table);
    assert_eq!(
        cli.command,
        LabCommand::Demo(DemoArgs {
            dir: None,
            coordinators: 3,
            hosts: 5,
            file: None,
            exit_when_ready: false,
            task_speed: 10,
            wait: Duration::from_secs(600),
        })
    );
    let cli = parse(&[
        "--output",
        "json",
        "demo",
        "--dir",
        "/tmp/d",
        "--coordinators",
        "5",
        "--hosts",
        "7",
        "-f",
        "fleet.toml",
        "--exit-when-ready",
        "--task-speed",
        "100",
        "--wait",
        "90s",
    ]);
    assert_eq!(cli.output, OutputFormat::Json);
    assert_eq!(
        cli.command,
        LabCommand::Demo(DemoArgs {
            dir: Some(PathBuf::from("/tmp/d")),
            coordinators: 5,
            hosts: 7,
            file: Some(PathBuf::from("fleet.toml")),
            exit_when_ready: true,
            task_speed: 100,
            wait: Duration::from_secs(90),
        })
    );
}

#[test]
fn sim_run_takes_a_file_a_directory_to_keep_and_a_report() {
    let cli = parse(&[
        "sim",
        "run",
        "power-off.toml",
        "--keep",
        "/tmp/run",
        "--report",
        "r.json",
        "-o",
        "json",
    ]);
    assert_eq!(
        cli.output,
        OutputFormat::Json,
        "--output after the subcommand"
    );
    assert_eq!(
        cli.command,
        LabCommand::Sim(SimCommand::Run(SimRunArgs {
            file: PathBuf::from("power-off.toml"),
            keep: Some(PathBuf::from("/tmp/run")),
            report: Some(PathBuf::from("r.json")),
        }))
    );
}

#[test]
fn sim_chaos_needs_a_seed_and_runs_three_minutes_by_default() {
    assert_eq!(
        parse(&["sim", "chaos", "--seed", "27"]).command,
        LabCommand::Sim(SimCommand::Chaos(SimChaosArgs {
            seed: 27,
            duration: Duration::from_secs(180),
            scenario_out: None,
            dry_run: false,
            keep: None,
            report: None,
        }))
    );
    let LabCommand::Sim(SimCommand::Chaos(args)) = parse(&[
        "sim",
        "chaos",
        "--seed",
        "2027",
        "--duration",
        "1h30m",
        "--scenario-out",
        "c.toml",
        "--dry-run",
    ])
    .command
    else {
        panic!("not sim chaos");
    };
    assert_eq!(args.duration, Duration::from_secs(5400));
    assert_eq!(args.scenario_out, Some(PathBuf::from("c.toml")));
    assert!(args.dry_run);
}

#[test]
fn bad_arguments_are_usage_errors_with_exit_code_2() {
    for args in [
        &["sim", "chaos"][..],
        &["sim", "chaos", "--seed", "-1"],
        &["sim", "chaos", "--seed", "1", "--duration", "90"],
        &["sim", "run"],
        &["demo", "--task-speed", "0"],
        &["demo", "--output", "yaml"],
        // The operator CLI's commands are `pvefleet`'s.
        &["vm", "ls"],
        &["--config", "cli.toml", "demo"],
    ] {
        let e = refused(args);
        assert_eq!(e.exit_code(), 2, "{args:?}: {e}");
    }
}
