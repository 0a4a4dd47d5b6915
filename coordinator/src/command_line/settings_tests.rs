#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use std::net::SocketAddr;
use std::time::Duration;

use clap::Parser;

use super::*;
use crate::command_line::args::{Args, Cmd};

const SHOWN: &str = "/etc/pvefleet/coordinator.toml";

fn flags(extra: &[&str]) -> RunFlags {
    let argv = ["pvefleet-coordinator", "run"].iter().chain(extra);
    match Args::try_parse_from(argv).unwrap().command {
        Cmd::Run(flags) => flags,
        other => panic!("{other:?}"),
    }
}

fn resolve(
    extra: &[&str],
    file: &CoordinatorConfig,
    recorded: Option<SocketAddr>,
) -> Result<RunSettings, SettingsError> {
    let at = FileInForce { file, shown: SHOWN };
    RunSettings::resolve(&flags(extra), at, recorded)
}

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

#[test]
fn without_flags_file_or_record_the_defaults_serve() {
    let s = resolve(&[], &CoordinatorConfig::default(), None).unwrap();
    assert_eq!(s.control.lease, crate::config::DEFAULT_LEASE);
    assert_eq!(s.control.resync, crate::config::DEFAULT_RESYNC);
    assert_eq!(s.config.http, Some(addr("127.0.0.1:0")));
    assert_eq!(s.config.data_dir, CoordinatorConfig::default().data_dir);
    assert!(s.config.dashboard.is_none());
}

#[test]
fn a_flag_wins_over_the_file_the_file_over_the_record() {
    let mut file = CoordinatorConfig {
        http: Some(addr("127.0.0.1:9001")),
        lease_secs: 20,
        resync_secs: 40,
        ..CoordinatorConfig::default()
    };
    let recorded = Some(addr("127.0.0.1:9002"));
    let s = resolve(
        &["--http", "127.0.0.1:9000", "--lease-secs", "5"],
        &file,
        recorded,
    )
    .unwrap();
    assert_eq!(s.config.http, Some(addr("127.0.0.1:9000")));
    assert_eq!(s.control.lease, Duration::from_secs(5));
    assert_eq!(s.control.resync, Duration::from_secs(40), "the file's");
    let s = resolve(&[], &file, recorded).unwrap();
    assert_eq!(s.config.http, Some(addr("127.0.0.1:9001")));
    assert_eq!(s.control.lease, Duration::from_secs(20));
    file.http = None;
    let s = resolve(&[], &file, recorded).unwrap();
    assert_eq!(s.config.http, recorded, "the record's");
    let s = resolve(&["--data-dir", "/srv/c1"], &file, None).unwrap();
    assert_eq!(s.config.data_dir, std::path::PathBuf::from("/srv/c1"));
}

#[test]
fn a_bad_value_is_refused_with_where_it_came_from() {
    let file = CoordinatorConfig {
        lease_secs: 30,
        resync_secs: 20,
        ..CoordinatorConfig::default()
    };
    let e = resolve(&[], &file, None).unwrap_err();
    assert_eq!(e.source_of_value, format!("resync_secs = 20 in {SHOWN}"));
    assert!(e.reason.contains("at least the lease"), "{e}");
    let e = resolve(&["--resync-secs", "5"], &CoordinatorConfig::default(), None).unwrap_err();
    assert_eq!(e.source_of_value, "--resync-secs 5");
    // Agents honour at most 60 s: clap refuses more on the command line, the settings refuse
    // it from a file that was not checked.
    assert!(Args::try_parse_from(["pvefleet-coordinator", "run", "--lease-secs", "61"]).is_err());
    let file = CoordinatorConfig {
        lease_secs: 90,
        resync_secs: 90,
        ..CoordinatorConfig::default()
    };
    let e = resolve(&[], &file, None).unwrap_err();
    assert_eq!(e.source_of_value, format!("lease_secs = 90 in {SHOWN}"));
    assert!(e.to_string().contains("1 s to 60 s"), "{e}");
}

#[test]
fn a_dashboard_flag_alone_serves_one_with_the_member_certificate() {
    let s = resolve(
        &[
            "--dashboard",
            "127.0.0.1:8443",
            "--scenario-dir",
            "/srv/runs",
        ],
        &CoordinatorConfig::default(),
        None,
    )
    .unwrap();
    let d = s.config.dashboard.unwrap();
    assert_eq!(d.listen, addr("127.0.0.1:8443"));
    assert_eq!(d.cert, DashboardCert::Member);
    assert_eq!(d.scenario_dir, std::path::PathBuf::from("/srv/runs"));
}
