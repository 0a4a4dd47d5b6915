//! The `pvefleet` command line: clap's own consistency checks, global flags anywhere, every
//! command's arguments, and the duration parsers behind `--ttl` and `--timeout`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{CommandFactory, Parser};
use cli::args::{
    AdminAddArgs, AdminCommand, AllocCommand, Cli, ClusterCommand, Command, EventsArgs, JoinRole,
    MemberCommand, TokenCommand, VmCommand, parse_duration, parse_timeout,
};
use cli::output::OutputFormat;

fn parse(args: &[&str]) -> Cli {
    let argv = std::iter::once("pvefleet").chain(args.iter().copied());
    Cli::try_parse_from(argv).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn refused(args: &[&str]) -> clap::Error {
    let argv = std::iter::once("pvefleet").chain(args.iter().copied());
    Cli::try_parse_from(argv).expect_err("should be refused")
}

#[test]
fn the_command_definition_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn global_flags_work_before_and_after_the_subcommand() {
    let before = parse(&[
        "--output",
        "json",
        "--stale",
        "--timeout",
        "2.5",
        "vm",
        "ls",
    ]);
    let after = parse(&["vm", "ls", "-o", "json", "--stale", "--timeout", "2500ms"]);
    for cli in [before, after] {
        assert_eq!(cli.output, OutputFormat::Json);
        assert!(cli.stale);
        assert_eq!(cli.timeout, Duration::from_millis(2500));
        assert_eq!(cli.command, Command::Vm(VmCommand::Ls));
    }
}

#[test]
fn defaults_are_tables_linearizable_reads_and_ten_seconds() {
    let cli = parse(&["--config", "/etc/pvefleet.toml", "cluster", "status"]);
    assert_eq!(cli.config, Some(PathBuf::from("/etc/pvefleet.toml")));
    assert_eq!(cli.output, OutputFormat::Table);
    assert!(!cli.stale);
    assert_eq!(cli.timeout, Duration::from_secs(10));
    assert_eq!(cli.command, Command::Cluster(ClusterCommand::Status));
}

#[test]
fn token_create_takes_role_ttl_and_uses() {
    let cli = parse(&[
        "token", "create", "--role", "agent", "--ttl", "7d", "--uses", "3",
    ]);
    let Command::Token(TokenCommand::Create(args)) = cli.command else {
        panic!("{:?}", cli.command);
    };
    assert_eq!(args.role, JoinRole::Agent);
    assert_eq!(args.ttl, Duration::from_secs(7 * 86_400));
    assert_eq!(args.uses, 3);

    let cli = parse(&["token", "create", "--role", "coordinator"]);
    let Command::Token(TokenCommand::Create(args)) = cli.command else {
        panic!("{:?}", cli.command);
    };
    // One use for an hour unless widened.
    assert_eq!((args.ttl, args.uses), (Duration::from_secs(3600), 1));
}

#[test]
fn bad_arguments_are_usage_errors_with_exit_code_2() {
    for args in [
        &["token", "create"][..],
        &["token", "create", "--role", "admin"],
        &["token", "create", "--role", "agent", "--uses", "0"],
        &["token", "create", "--role", "agent", "--ttl", "24"],
        &["member", "remove", "three"],
        &["vm", "apply"],
        &["vm", "launch"],
        &["cluster", "status", "--timeout", "0"],
        &["cluster", "status", "--output", "yaml"],
        &["admin", "add"],
        &["admin", "add", "alice", "--ttl", "30"],
        &["admin", "revoke", "alice"],
        &["admin", "revoke"],
        // Simulated fleets are the lab's program (`pvefleet-lab`), not the product's.
        &["demo"],
        &["sim", "run", "examples/scenarios/power-off.toml"],
        &["sim", "chaos", "--seed", "1"],
    ] {
        let e = refused(args);
        assert_eq!(e.exit_code(), 2, "{args:?}: {e}");
    }
}

#[test]
fn every_command_parses_its_arguments() {
    let cases: Vec<(&[&str], Command)> = vec![
        (&["member", "ls"], Command::Member(MemberCommand::Ls)),
        (
            &["member", "remove", "3"],
            Command::Member(MemberCommand::Remove { id: 3 }),
        ),
        (
            &["token", "revoke", "abc123"],
            Command::Token(TokenCommand::Revoke {
                id: "abc123".into(),
            }),
        ),
        (&["admin", "ls"], Command::Admin(AdminCommand::Ls)),
        (
            &["admin", "list", "--stale"],
            Command::Admin(AdminCommand::Ls),
        ),
        (
            &["admin", "add", "alice"],
            Command::Admin(AdminCommand::Add(AdminAddArgs {
                name: "alice".into(),
                ttl: None,
                out: None,
            })),
        ),
        (
            &[
                "admin",
                "add",
                "ci deploy",
                "--ttl",
                "7d",
                "--out",
                "/tmp/ci",
            ],
            Command::Admin(AdminCommand::Add(AdminAddArgs {
                name: "ci deploy".into(),
                ttl: Some(Duration::from_secs(7 * 86_400)),
                out: Some(PathBuf::from("/tmp/ci")),
            })),
        ),
        (
            &["admin", "revoke", "3"],
            Command::Admin(AdminCommand::Revoke {
                id: 3,
                yes_revoke_myself: false,
            }),
        ),
        (
            &["admin", "revoke", "1", "--yes-revoke-myself"],
            Command::Admin(AdminCommand::Revoke {
                id: 1,
                yes_revoke_myself: true,
            }),
        ),
        (
            &["vm", "show", "web-1"],
            Command::Vm(VmCommand::Show {
                name: "web-1".into(),
            }),
        ),
        (
            &["vm", "rm", "web-1"],
            Command::Vm(VmCommand::Delete {
                name: "web-1".into(),
            }),
        ),
        (
            &["events", "--since", "5", "--limit", "10"],
            Command::Events(EventsArgs {
                since: 5,
                limit: Some(10),
                follow: false,
                max_events: None,
            }),
        ),
        (
            &["events"],
            Command::Events(EventsArgs {
                since: 0,
                limit: None,
                follow: false,
                max_events: None,
            }),
        ),
        (
            &["alloc", "vmid", "web-1"],
            Command::Alloc(AllocCommand::Vmid { vm: "web-1".into() }),
        ),
        (
            &["alloc", "ip", "lan", "test-1"],
            Command::Alloc(AllocCommand::Ip {
                pool: "lan".into(),
                owner: "test-1".into(),
            }),
        ),
        (
            &["alloc", "release", "lan", "10.0.0.11"],
            Command::Alloc(AllocCommand::Release {
                pool: "lan".into(),
                address: "10.0.0.11".parse().unwrap(),
            }),
        ),
    ];
    for (args, expected) in cases {
        assert_eq!(parse(args).command, expected, "{args:?}");
    }
    for resource in ["vm", "pool", "range", "vip"] {
        let cli = parse(&[resource, "apply", "-f", "fleet.toml"]);
        let file = match cli.command {
            Command::Vm(VmCommand::Apply(a)) => a.file,
            Command::Pool(cli::args::PoolCommand::Apply(a)) => a.file,
            Command::Range(cli::args::RangeCommand::Apply(a)) => a.file,
            Command::Vip(cli::args::VipCommand::Apply(a)) => a.file,
            other => panic!("{resource}: {other:?}"),
        };
        assert_eq!(file, PathBuf::from("fleet.toml"));
        parse(&[resource, "ls"]);
        parse(&[resource, "delete", "x"]);
    }
}

#[test]
fn member_add_defaults_to_a_one_hour_token_and_takes_the_new_members_flags() {
    let cli = parse(&["member", "add"]);
    let Command::Member(MemberCommand::Add(args)) = cli.command else {
        panic!("{:?}", cli.command);
    };
    assert_eq!(args.ttl, Duration::from_secs(3600));
    assert_eq!((args.listen, args.data_dir), (None, None));
    let cli = parse(&[
        "member",
        "add",
        "--listen",
        "10.0.0.4:7400",
        "--data-dir",
        "/srv/m4",
        "--ttl",
        "15m",
    ]);
    let Command::Member(MemberCommand::Add(args)) = cli.command else {
        panic!("{:?}", cli.command);
    };
    assert_eq!(args.ttl, Duration::from_secs(900));
    assert_eq!(args.listen.as_deref(), Some("10.0.0.4:7400"));
    assert_eq!(args.data_dir, Some(PathBuf::from("/srv/m4")));
}

#[test]
fn durations_need_a_unit_and_may_combine_parts() {
    let s = Duration::from_secs;
    assert_eq!(parse_duration("90s"), Ok(s(90)));
    assert_eq!(parse_duration("30m"), Ok(s(1800)));
    assert_eq!(parse_duration("24h"), Ok(s(86_400)));
    assert_eq!(parse_duration("7d"), Ok(s(604_800)));
    assert_eq!(parse_duration("1h30m"), Ok(s(5400)));
    assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
    for bad in ["", "24", "h", "1x", "-1h", "1.5h", "99999999999d"] {
        let e = parse_duration(bad).expect_err(bad);
        assert!(e.contains("e.g. 90s, 30m, 24h, 7d"), "{bad}: {e}");
    }
    assert!(parse_duration("0s").unwrap_err().contains("zero"));
}

#[test]
fn timeouts_are_seconds_or_durations_and_positive() {
    assert_eq!(parse_timeout("10"), Ok(Duration::from_secs(10)));
    assert_eq!(parse_timeout("0.25"), Ok(Duration::from_millis(250)));
    assert_eq!(parse_timeout("2m"), Ok(Duration::from_secs(120)));
    for bad in ["0", "-3", "NaN", "inf", "soon"] {
        assert!(parse_timeout(bad).is_err(), "{bad}");
    }
}
